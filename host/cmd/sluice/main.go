// Command sluice is the Sluice worker and its command-line client; see
// doc.go.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"

	"github.com/sluice-io/sluice/host/cli"
	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// Version is the Sluice release; release builds set it with
// -ldflags "-X main.Version=1.2.3".
var Version = "0.1.0-dev"

// gcPercent is the worker's garbage collection target unless GOGC is set.
// A worker moves data: it allocates a lot of short-lived memory (fetched and
// polled batches) next to a small live heap, so Go's default (collect when
// the heap doubles) collects dozens of times a second under load, and each
// collection also empties the buffer pools the Kafka client reuses. Letting
// the heap grow to four times its live size cuts the worker's CPU per
// record by about a fifth in the benchmarks, for some tens of MiB more RSS.
const gcPercent = 300

// Exit statuses of the worker commands: those of connect-standalone and
// connect-distributed, whose scripts and supervisors may tell them apart.
const (
	exitOK = 0
	// exitWorkerUsage: standalone or distributed without a worker file
	// (or with a flag they do not have), as Kafka's print their usage.
	exitWorkerUsage = 1
	// exitWorker: Kafka's "Stopping due to error": the worker's config,
	// its start, its Kafka cluster.
	exitWorker = 2
	// exitConnector: Kafka's "Stopping after connector error": a connector
	// file, or creating its connector.
	exitConnector = 3
	// exitUsage: a command line of Sluice's own commands (dev, an
	// unknown command), as the CLI's (cli.ExitUsage).
	exitUsage = 2
)

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := wire.StartProfile("worker")
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	stopProfile()
	os.Exit(code)
}

const usage = `Usage: sluice <command> [arguments]

Worker:
  standalone WORKER.properties [CONNECTOR.properties|CONNECTOR.json ...]
                 run a standalone worker, as connect-standalone does
  distributed WORKER.properties
                 run a worker of a distributed cluster, as connect-distributed does
  dev [--demo=false] [--rest 127.0.0.1:8083] [--plugin-path DIR[,DIR]]
                 an embedded Kafka broker, a worker and a demo pipeline:
                 no Kafka, Java or config file needed
  version        print the version

Client of a worker's REST API (--url, default $SLUICE_URL or http://localhost:8083):
  connectors, plugins, validate, loggers    (sluice help for the details)
`

// run dispatches one command line (without the binary name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch cmd := args[0]; {
	case cmd == "standalone":
		return runStandalone(ctx, args[1:], stdout, stderr)
	case cmd == "distributed":
		return runDistributed(ctx, args[1:], stdout, stderr)
	case cmd == "dev":
		return runDev(ctx, args[1:], stdout, stderr)
	case cmd == "version" || cmd == "--version":
		fmt.Fprintf(stdout, "sluice %s%s\n", Version, commitSuffix())
		return exitOK
	case cmd == "help" || cmd == "-h" || cmd == "--help":
		fmt.Fprint(stdout, usage)
		fmt.Fprintln(stdout)
		return cli.Run(ctx, []string{"help"}, stdout, stderr)
	case slices.Contains(cli.Commands, cmd) || cmd == "connector":
		return cli.Run(ctx, args, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "sluice: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
}

// Commit is the revision the binary was built from, as `make build` sets it
// (-ldflags "-X main.Commit=..."): Go records it only where VCS stamping is
// on, and machines that turn it off (GOFLAGS=-buildvcs=false) are common.
var Commit = ""

// commit is the VCS revision the binary was built from: Commit, or what Go
// recorded; "" when neither knows it.
func commit() string {
	if Commit != "" {
		return Commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return rev
}

func commitSuffix() string {
	if c := commit(); c != "" {
		return " (" + c + ")"
	}
	return ""
}

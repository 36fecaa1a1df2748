package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/configprovider"
	"github.com/sluice-io/sluice/host/worker"
)

// shutdownTimeout bounds a worker's shutdown after SIGINT/SIGTERM: the
// tasks' drain (task.shutdown.graceful.timeout.ms) fits well within it.
const shutdownTimeout = 60 * time.Second

// runStandalone is connect-standalone: the worker properties, then the
// connector files, created one after the other before the worker reports
// ready. A failure on the way ends the process with a message naming the
// file, the line or the setting, and connect-standalone's status: 2 for
// the worker (its config, its start), 3 for a connector (its file, its
// creation).
func runStandalone(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice standalone", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice standalone WORKER.properties [CONNECTOR.properties|CONNECTOR.json ...]")
		fmt.Fprintln(fs.Output(), "Worker properties may be overridden by CONNECT_* environment variables (CONNECT_BOOTSTRAP_SERVERS sets bootstrap.servers).")
	}
	// Connector files follow the worker file: there, only --help asks for
	// help, as in connect-standalone; a file may be named -h.
	if ok, code := parseFlags(fs, args, stdout, "--help"); !ok {
		return code
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return exitWorkerUsage
	}
	cfg, err := configprovider.LoadWorker(ctx, fs.Arg(0), os.Environ(), true)
	if err != nil {
		fmt.Fprintf(stderr, "sluice standalone: %v\n", err)
		return exitWorker
	}
	// Read every connector file first: a typo in the last one should not
	// cost a worker start.
	paths := fs.Args()[1:]
	files := make([]*config.ConnectorFile, len(paths))
	seen := map[string]string{} // connector name -> file
	for i, p := range paths {
		if files[i], err = config.ReadConnectorFile(p); err != nil {
			fmt.Fprintf(stderr, "sluice standalone: %v\n", err)
			return exitConnector
		}
		// Connectors are created without replacing one another, so
		// a second file with a name fails; say so before starting.
		if prev, ok := seen[files[i].Name]; ok {
			fmt.Fprintf(stderr, "sluice standalone: %s: Connector %s already exists (created from %s)\n", p, files[i].Name, prev)
			return exitConnector
		}
		seen[files[i].Name] = p
	}
	w, err := worker.NewStandalone(cfg, worker.Options{Version: Version, Commit: commit(), LogOutput: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "sluice standalone: %v\n", err)
		return exitWorker
	}
	return serve(ctx, w, files, paths, stderr, hooks{})
}

// parseFlags parses a worker command's arguments. Help asked for (-h,
// -help or --help where a flag may be, or one of helpArgs among the
// arguments after the flags) prints the usage on stdout and returns exitOK;
// a mistake prints on stderr (fs's output) and returns exitUsage. Elsewhere
// -h is an argument: a connector file, or a flag's value. ok is whether the
// command goes on.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer, helpArgs ...string) (ok bool, code int) {
	errOut := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(errOut)
	if errors.Is(err, flag.ErrHelp) || (err == nil && slices.ContainsFunc(fs.Args(), func(a string) bool { return slices.Contains(helpArgs, a) })) {
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(errOut)
		return false, exitOK
	}
	if err != nil {
		errOut.Write(buf.Bytes())
		return false, exitUsage
	}
	return true, exitOK
}

// hooks let a command act at points of serve; nil hooks do nothing.
type hooks struct {
	// started runs once the worker listens, before the connectors exist.
	started func() error
	// ready runs once the worker is ready.
	ready func() error
}

// serve starts w, creates the connectors, reports ready and runs until ctx
// ends; then it shuts the worker down.
func serve(ctx context.Context, w *worker.Worker, files []*config.ConnectorFile, paths []string, stderr io.Writer, h hooks) int {
	shutdown := func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := w.Shutdown(sctx); err != nil {
			fmt.Fprintf(stderr, "sluice: shutdown: %v\n", err)
		}
	}
	if err := w.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "sluice: start the worker: %v\n", err)
		shutdown()
		return exitWorker
	}
	if h.started != nil {
		if err := h.started(); err != nil {
			fmt.Fprintf(stderr, "sluice: %v\n", err)
			shutdown()
			return exitConnector
		}
	}
	if err := w.AddConnectors(ctx, files, paths); err != nil {
		fmt.Fprintf(stderr, "sluice: %v\n", err)
		shutdown()
		return exitConnector
	}
	w.MarkReady()
	if h.ready != nil {
		if err := h.ready(); err != nil {
			fmt.Fprintf(stderr, "sluice: %v\n", err)
			shutdown()
			return exitConnector
		}
	}
	w.Logger().Info("worker ready", "rest", w.RESTAddrs())
	<-ctx.Done()
	w.Logger().Info("shutting down")
	shutdown()
	return exitOK
}

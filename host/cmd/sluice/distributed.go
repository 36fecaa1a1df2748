package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sluice-io/sluice/host/configprovider"
	"github.com/sluice-io/sluice/host/worker"
)

// runDistributed is connect-distributed: one worker of a cluster named by
// group.id, with connectors, statuses and offsets on the config, status and
// offset topics. Connectors are created through the REST API of any worker.
func runDistributed(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice distributed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice distributed WORKER.properties")
		fmt.Fprintln(fs.Output(), "group.id, config.storage.topic, offset.storage.topic and status.storage.topic are required.")
		fmt.Fprintln(fs.Output(), "Worker properties may be overridden by CONNECT_* environment variables (CONNECT_GROUP_ID sets group.id).")
	}
	// Nothing may follow the worker file: -h there can only ask for help.
	if ok, code := parseFlags(fs, args, stdout, "-h", "-help", "--help"); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitWorkerUsage
	}
	cfg, err := configprovider.LoadWorker(ctx, fs.Arg(0), os.Environ(), false)
	if err != nil {
		fmt.Fprintf(stderr, "sluice distributed: %v\n", err)
		return exitWorker
	}
	w, err := worker.NewDistributed(cfg, worker.Options{Version: Version, Commit: commit(), LogOutput: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "sluice distributed: %v\n", err)
		return exitWorker
	}
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
	w.Logger().Info("worker ready", "rest", w.RESTAddrs())
	<-ctx.Done()
	w.Logger().Info("shutting down")
	shutdown()
	return exitOK
}

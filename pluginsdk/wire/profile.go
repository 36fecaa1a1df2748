package wire

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
)

// StartProfile starts a CPU profile of this process into
// $SLUICE_PROFILE_DIR/<name>-<pid>.cpu.pprof when that variable is set, and
// returns the function that ends it and writes the file. Unset, it does
// nothing. Worker and plugins both use it, so that one benchmark run leaves
// the profiles of every process of the pipeline side by side. With
// SLUICE_TRACE set too (EnvTrace), an execution trace goes next to the
// profile as <name>-<pid>.trace.
func StartProfile(name string) (stop func()) {
	dir := os.Getenv(EnvProfileDir)
	if dir == "" {
		return func() {}
	}
	base := filepath.Join(dir, fmt.Sprintf("%s-%d", name, os.Getpid()))
	stopCPU := startRecording("cpu profile", base+".cpu.pprof", pprof.StartCPUProfile, pprof.StopCPUProfile)
	stopTrace := func() {}
	if v := os.Getenv(EnvTrace); v != "" && v != "0" {
		stopTrace = startRecording("execution trace", base+".trace", trace.Start, trace.Stop)
	}
	return func() {
		stopTrace()
		stopCPU()
	}
}

// startRecording creates path, starts a recording into it with start and
// returns what ends it with end and closes the file. Failures are only
// reported on stderr: a missing profile must not stop a worker or plugin.
// A recording that could not start (one is already running, as under
// go test -cpuprofile) leaves no empty file behind to be mistaken for it.
func startRecording(what, path string, start func(io.Writer) error, end func()) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		return func() {}
	}
	if err := start(f); err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n", what, path, err)
		_ = f.Close()
		_ = os.Remove(path)
		return func() {}
	}
	return func() {
		end()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "%s %s: %v\n", what, path, err)
		}
	}
}

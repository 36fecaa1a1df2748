package wire

import (
	"fmt"
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
	stopCPU := startCPUProfile(base + ".cpu.pprof")
	stopTrace := func() {}
	if v := os.Getenv(EnvTrace); v != "" && v != "0" {
		stopTrace = startTrace(base + ".trace")
	}
	return func() {
		stopTrace()
		stopCPU()
	}
}

func startCPUProfile(path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cpu profile: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "cpu profile %s: %v\n", path, err)
		_ = f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

func startTrace(path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "execution trace: %v\n", err)
		return func() {}
	}
	if err := trace.Start(f); err != nil {
		fmt.Fprintf(os.Stderr, "execution trace %s: %v\n", path, err)
		_ = f.Close()
		return func() {}
	}
	return func() {
		trace.Stop()
		_ = f.Close()
	}
}

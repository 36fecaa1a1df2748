package wire

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// StartProfile starts a CPU profile of this process into
// $SLUICE_PROFILE_DIR/<name>-<pid>.cpu.pprof when that variable is set, and
// returns the function that ends it and writes the file. Unset, it does
// nothing. Worker and plugins both use it, so that one benchmark run leaves
// the profiles of every process of the pipeline side by side.
func StartProfile(name string) (stop func()) {
	dir := os.Getenv(EnvProfileDir)
	if dir == "" {
		return func() {}
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.cpu.pprof", name, os.Getpid()))
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

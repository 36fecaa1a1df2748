package wire

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// spin keeps a CPU busy for d so that the profile has samples to write.
func spin(d time.Duration) uint64 {
	var x uint64 = 1
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

func TestStartProfileWritesProfileAndTrace(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvProfileDir, dir)
	t.Setenv(EnvTrace, "1")
	stop := StartProfile("unit")
	spin(50 * time.Millisecond)
	stop()

	base := filepath.Join(dir, "unit-"+strconv.Itoa(os.Getpid()))
	prof, err := os.ReadFile(base + ".cpu.pprof")
	if err != nil {
		t.Fatal(err)
	}
	// A pprof profile is gzip-compressed protobuf.
	if len(prof) < 2 || prof[0] != 0x1f || prof[1] != 0x8b {
		t.Errorf("cpu profile is not gzip data: % x", prof[:min(len(prof), 8)])
	}
	tr, err := os.ReadFile(base + ".trace")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(tr, []byte("go 1.")) {
		t.Errorf("trace header %q, want the Go execution trace header", tr[:min(len(tr), 16)])
	}
}

func TestStartProfileTraceOnlyWhenAsked(t *testing.T) {
	for _, v := range []string{"", "0"} {
		dir := t.TempDir()
		t.Setenv(EnvProfileDir, dir)
		t.Setenv(EnvTrace, v)
		StartProfile("unit")()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || filepath.Ext(entries[0].Name()) != ".pprof" {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("%s=%q: files %v, want only the cpu profile", EnvTrace, v, names)
		}
	}
}

func TestStartProfileUnsetDoesNothing(t *testing.T) {
	t.Setenv(EnvProfileDir, "")
	t.Setenv(EnvTrace, "1")
	cwd := t.TempDir()
	t.Chdir(cwd)
	StartProfile("unit")()
	entries, err := os.ReadDir(cwd)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("without %s, files appeared: %v", EnvProfileDir, entries)
	}
}

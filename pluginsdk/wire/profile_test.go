package wire

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime/trace"
	"strconv"
	"testing"
)

// skipIfRecording skips a test that starts a recording when the test
// binary already runs one (go test -cpuprofile or -trace): only one of
// each kind can run in a process.
func skipIfRecording(t *testing.T) {
	t.Helper()
	if trace.IsEnabled() {
		t.Skip("the test binary is already traced")
	}
	if f := flag.Lookup("test.cpuprofile"); f != nil && f.Value.String() != "" {
		t.Skip("the test binary is already CPU-profiled")
	}
}

func TestStartProfileWritesProfileAndTrace(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvProfileDir, dir)
	t.Setenv(EnvTrace, "1")
	skipIfRecording(t)
	stop := StartProfile("unit")
	if !trace.IsEnabled() {
		t.Fatal("no trace running after StartProfile")
	}
	stop()
	if trace.IsEnabled() {
		t.Fatal("the trace still runs after stop")
	}

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
	skipIfRecording(t)
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

// A recording that cannot start (one of its kind already runs) leaves no
// empty file that a reader would take for a broken profile.
func TestStartRecordingFailureLeavesNoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.trace")
	ended := false
	stop := startRecording("execution trace", path,
		func(io.Writer) error { return errors.New("already running") },
		func() { ended = true })
	stop()
	if ended {
		t.Error("stop ended a recording that never started")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after a failed start: %v, want it gone", path, err)
	}
}

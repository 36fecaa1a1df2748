package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// Test binaries, built once per run by TestMain.
var (
	goodBin string
	badBin  string
	hostBin string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sluice-plugin-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"./internal/testplugins/good", "./internal/testplugins/bad", "./internal/testhost")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build test plugins:", err)
		return 1
	}
	goodBin = filepath.Join(dir, "good")
	badBin = filepath.Join(dir, "bad")
	hostBin = filepath.Join(dir, "testhost")
	return m.Run()
}

// syncBuffer is a logger output the test can read while plugins write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newManager returns a manager closed at the end of the test, and its log.
func newManager(t testing.TB, opts Options) (*Manager, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	if opts.Logger == nil {
		opts.Logger = hclog.New(&hclog.LoggerOptions{Name: "worker", Output: logs, Level: hclog.Debug})
	}
	if opts.WorkerID == "" {
		opts.WorkerID = "test-worker:8083"
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close manager: %v", err)
		}
	})
	return m, logs
}

func launch(t testing.TB, m *Manager, spec Spec) *Instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in, err := m.Launch(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = in.Kill(ctx)
	})
	return in
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// pidGone reports whether pid no longer runs. A zombie counts as gone: the
// test container's init may not reap orphans.
func pidGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// state is the field after the parenthesized command name
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

func waitGone(t testing.TB, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !pidGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after %s", pid, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settleGoroutines waits for the goroutine count to come back to at most
// base, and fails with a dump if it does not.
func settleGoroutines(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: %d now, %d before\n%s", n, base, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func wantKind(t testing.TB, err error, kind wire.Kind) *wire.Error {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T): want a *wire.Error of kind %s", err, err, kind)
	}
	if we.Kind != kind {
		t.Fatalf("error kind %s, want %s: %v\ntrace:\n%s", we.Kind, kind, err, we.Trace)
	}
	return we
}

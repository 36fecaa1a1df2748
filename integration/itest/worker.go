package itest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/integration/internal/childproc"
)

// EnvSluiceBin overrides the sluice binary StartWorker runs.
const EnvSluiceBin = "SLUICE_BIN"

// Worker is a child process (normally bin/sluice) owned by one test.
type Worker struct {
	name string
	p    *childproc.Process
}

// ProcessSpec describes a process for StartProcess.
type ProcessSpec struct {
	Path string   // executable
	Args []string // arguments
	Env  []string // added to the test's environment
	Dir  string   // working directory; "" = the test's
	// Name names the log file (<Name>.log under t.TempDir()); default is
	// the executable's base name.
	Name string
}

// RepoRoot finds the repository root by walking up from the working
// directory (a test runs in its package directory) to go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("repo root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repo root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// SluiceBin returns the worker binary: $SLUICE_BIN, or <repo>/bin/sluice
// (built by `make build`, which `make test-integration` runs first).
func SluiceBin() (string, error) {
	if p := os.Getenv(EnvSluiceBin); p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "sluice")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("sluice binary (run `make build` or set %s): %w", EnvSluiceBin, err)
	}
	return p, nil
}

// StartWorker runs the sluice binary with args; see StartProcess.
func StartWorker(t testing.TB, args ...string) *Worker {
	t.Helper()
	bin, err := SluiceBin()
	if err != nil {
		t.Fatal(err)
	}
	return StartProcess(t, ProcessSpec{Path: bin, Args: args, Name: "sluice"})
}

// StartProcess runs a child process for the test. Its stdout and stderr go
// to a log file under t.TempDir(); it is SIGKILLed by the kernel if the test
// process dies, and by a cleanup when the test ends (after logging the log's
// tail if the test failed). Every call gets its own directory, so processes
// with the same Name do not share a log.
func StartProcess(t testing.TB, spec ProcessSpec) *Worker {
	t.Helper()
	name := spec.Name
	if name == "" {
		name = filepath.Base(spec.Path)
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, name+".log")
	p, err := childproc.Start(childproc.Spec{Path: spec.Path, Args: spec.Args, Env: spec.Env, Dir: spec.Dir, LogPath: logPath})
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	w := &Worker{name: name, p: p}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s (pid %d) log tail (%s):\n%s", name, p.Pid(), logPath, p.LogTail(40))
		}
		_ = p.Kill()
	})
	return w
}

// Pid is the process id.
func (w *Worker) Pid() int { return w.p.Pid() }

// LogPath is the file holding the process's stdout and stderr.
func (w *Worker) LogPath() string { return w.p.LogPath() }

// LogTail returns the last n lines of the process's output.
func (w *Worker) LogTail(n int) string { return w.p.LogTail(n) }

// Exited reports whether the process has exited.
func (w *Worker) Exited() bool { return w.p.Exited() }

// Stop sends SIGTERM and waits for the process to exit; if ctx ends first it
// sends SIGKILL and returns an error. An exit caused by the SIGTERM itself
// is not an error; use Wait afterwards to see the exit status.
func (w *Worker) Stop(ctx context.Context) error {
	if err := w.p.Stop(ctx); err != nil {
		return fmt.Errorf("stop %s: %w", w.name, err)
	}
	return nil
}

// Kill sends SIGKILL and waits until the process is gone.
func (w *Worker) Kill() error {
	if err := w.p.Kill(); err != nil {
		return fmt.Errorf("kill %s: %w", w.name, err)
	}
	return nil
}

// Wait waits for the process to exit and returns its exit error (nil for
// status 0, *exec.ExitError otherwise), or an error if ctx ends first.
func (w *Worker) Wait(ctx context.Context) error { return w.p.Wait(ctx) }

// WaitForLog waits until the process's output contains substr. It fails
// fast, with the log's tail, if the process exits first.
func (w *Worker) WaitForLog(ctx context.Context, substr string) error {
	for {
		// Read the whole (bounded) tail each time: simple, and logs here
		// are small.
		if strings.Contains(w.p.LogTail(1<<20), substr) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s log never showed %q: %w\n%s", w.name, substr, ctx.Err(), w.p.LogTail(20))
		case <-w.p.Done():
			if strings.Contains(w.p.LogTail(1<<20), substr) {
				return nil
			}
			return fmt.Errorf("%s exited (%v) before its log showed %q:\n%s", w.name, w.p.ExitErr(), substr, w.p.LogTail(20))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

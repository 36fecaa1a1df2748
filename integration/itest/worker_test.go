package itest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With ITEST_FAKE_WORKER set the test binary plays a worker: it prints its
// arguments and "started", then exits 0 on SIGTERM ("term"), ignores SIGTERM
// ("stubborn") or exits 7 at once ("fail").
func TestMain(m *testing.M) {
	if mode := os.Getenv("ITEST_FAKE_WORKER"); mode != "" {
		os.Exit(fakeWorker(mode))
	}
	os.Exit(m.Run())
}

func fakeWorker(mode string) int {
	fmt.Println("args:", strings.Join(os.Args[1:], " "))
	switch mode {
	case "fail":
		fmt.Fprintln(os.Stderr, "fatal: bad config")
		return 7
	case "stubborn":
		// Notify would undo Ignore, so a stubborn worker waits for a
		// signal nobody sends.
		signal.Ignore(syscall.SIGTERM)
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGUSR2)
		fmt.Println("started")
		<-ch
		return 0
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	fmt.Println("started")
	<-ch
	fmt.Println("stopping")
	return 0
}

// fakeSluice points SLUICE_BIN at the test binary, so StartWorker runs the
// same path lookup and arguments a real test would.
func fakeSluice(t *testing.T, mode string) *Worker {
	t.Setenv(EnvSluiceBin, os.Args[0])
	t.Setenv("ITEST_FAKE_WORKER", mode) // inherited by the child
	return StartWorker(t, "run", "--config", "x.yaml")
}

func TestWorkerStop(t *testing.T) {
	w := fakeSluice(t, "term")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.WaitForLog(ctx, "started"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.LogTail(10), "args: run --config x.yaml") {
		t.Fatalf("arguments not passed:\n%s", w.LogTail(10))
	}
	if filepath.Base(w.LogPath()) != "sluice.log" {
		t.Fatalf("log path %s", w.LogPath())
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(ctx); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if !strings.Contains(w.LogTail(3), "stopping") {
		t.Fatalf("no graceful stop in log:\n%s", w.LogTail(5))
	}
}

func TestWorkerStopDeadlineKills(t *testing.T) {
	w := fakeSluice(t, "stubborn")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.WaitForLog(ctx, "started"); err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer scancel()
	if err := w.Stop(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want deadline exceeded", err)
	}
	var ee *exec.ExitError
	if err := w.Wait(ctx); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("Wait = %v, want killed by SIGKILL", err)
	}
}

func TestWorkerKillAndFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	w := fakeSluice(t, "term")
	if err := w.WaitForLog(ctx, "started"); err != nil {
		t.Fatal(err)
	}
	if err := w.Kill(); err != nil {
		t.Fatal(err)
	}
	if !w.Exited() {
		t.Fatal("still running after Kill")
	}

	f := fakeSluice(t, "fail")
	err := f.WaitForLog(ctx, "never printed")
	if err == nil || !strings.Contains(err.Error(), "fatal: bad config") {
		t.Fatalf("WaitForLog on a dying process = %v, want its log tail", err)
	}
	var ee *exec.ExitError
	if err := f.Wait(ctx); !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("Wait = %v, want exit status 7", err)
	}
}

func TestRepoRootAndSluiceBin(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "integration", "itest")); err != nil {
		t.Fatalf("RepoRoot = %s, not the repository: %v", root, err)
	}
	t.Setenv(EnvSluiceBin, "")
	bin, err := SluiceBin()
	want := filepath.Join(root, "bin", "sluice")
	if err == nil && bin != want {
		t.Fatalf("SluiceBin = %s, want %s", bin, want)
	}
	if err != nil && !strings.Contains(err.Error(), "make build") {
		t.Fatalf("missing binary error does not say how to build it: %v", err)
	}
}

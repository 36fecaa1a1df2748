package childproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the child: with CHILDPROC_HELPER set, TestMain
// runs one of the behaviours below instead of the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("CHILDPROC_HELPER"); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func helper(mode string) int {
	switch mode {
	case "exit3":
		fmt.Println("hello from helper")
		return 3
	case "term": // exits cleanly on SIGTERM
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		fmt.Println("ready")
		<-ch
		fmt.Println("got SIGTERM")
		return 0
	case "stubborn": // ignores SIGTERM
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Minute)
		return 0
	case "parent": // starts a grandchild, prints its pid, then waits to be killed
		p, err := Start(Spec{Path: os.Args[0], Env: []string{"CHILDPROC_HELPER=stubborn"}, LogPath: os.Getenv("GRANDCHILD_LOG")})
		if err != nil {
			fmt.Println("start grandchild:", err)
			return 1
		}
		fmt.Printf("grandchild=%d\n", p.Pid())
		time.Sleep(time.Minute)
		return 0
	}
	return 2
}

func startHelper(t *testing.T, mode string, env ...string) *Process {
	t.Helper()
	p, err := Start(Spec{
		Path:    os.Args[0],
		Env:     append([]string{"CHILDPROC_HELPER=" + mode}, env...),
		LogPath: filepath.Join(t.TempDir(), mode+".log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

func waitForLog(t *testing.T, p *Process, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.LogTail(50), s) {
		if time.Now().After(deadline) {
			t.Fatalf("log never showed %q; tail:\n%s", s, p.LogTail(20))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExitStatusAndLog(t *testing.T) {
	p := startHelper(t, "exit3")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := p.Wait(ctx)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Wait = %v, want exit status 3", err)
	}
	tail := p.LogTail(5)
	if !strings.Contains(tail, "hello from helper") || !strings.Contains(tail, "exit status 3") {
		t.Fatalf("log tail lacks output or exit line:\n%s", tail)
	}
	if got := p.LogTail(1); strings.Contains(got, "hello") {
		t.Fatalf("LogTail(1) returned more than one line: %q", got)
	}
}

func TestStopGraceful(t *testing.T) {
	p := startHelper(t, "term")
	waitForLog(t, p, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !strings.Contains(p.LogTail(5), "got SIGTERM") {
		t.Fatalf("child did not see SIGTERM:\n%s", p.LogTail(5))
	}
}

func TestStopEscalatesToKill(t *testing.T) {
	p := startHelper(t, "stubborn")
	waitForLog(t, p, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.Stop(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want a deadline error", err)
	}
	if !p.Exited() {
		t.Fatal("child still running after Stop")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Stop took %v", d)
	}
}

// TestPdeathsig proves that a child dies with its parent: a helper starts a
// grandchild through Start and is then SIGKILLed, so it cannot clean up.
func TestPdeathsig(t *testing.T) {
	gcLog := filepath.Join(t.TempDir(), "grandchild.log")
	p := startHelper(t, "parent", "GRANDCHILD_LOG="+gcLog)
	waitForLog(t, p, "grandchild=")
	var pid int
	for _, line := range strings.Split(p.LogTail(20), "\n") {
		if v, ok := strings.CutPrefix(line, "grandchild="); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid <= 0 {
		t.Fatalf("no grandchild pid in log:\n%s", p.LogTail(20))
	}
	if !alive(pid) {
		t.Fatalf("grandchild %d not running before the parent was killed", pid)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d outlived its parent", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs; a zombie (dead, not yet reaped by an init
// that may not reap at all in a container) counts as dead.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

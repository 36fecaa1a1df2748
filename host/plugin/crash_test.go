package plugin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// startBad launches the bad plugin as a source or sink task in mode.
func startBad(t *testing.T, m *Manager, kind, mode string) *Instance {
	t.Helper()
	in := launch(t, m, Spec{Path: badBin, Connector: "bad-" + kind, Task: 0})
	ctx := ctxT(t, 10*time.Second)
	cfg := map[string]string{"mode": mode}
	var err error
	switch kind {
	case "source":
		_, err = in.SourceTask().Start(ctx, &pluginv1.SourceTaskStartRequest{Config: cfg})
	case "sink":
		_, err = in.SinkTask().Start(ctx, &pluginv1.SinkTaskStartRequest{Config: cfg})
	case "connector":
		_, err = in.Connector().Start(ctx, &pluginv1.ConnectorStartRequest{Config: cfg})
	}
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestCrashMidCall(t *testing.T) {
	m, _ := newManager(t, Options{})
	for _, tc := range []struct {
		kind, mode, status string
		extra              string // more text expected in the trace
	}{
		{"source", "panic", "exit status 2", "boom in poll"},
		{"source", "exit", "exit status 3", ""},
		{"source", "kill", "signal: killed", ""},
		{"source", "exit0", "exit status 0", ""},
		{"sink", "panic", "exit status 2", "boom in put"},
		{"sink", "exit", "exit status 3", ""},
		{"sink", "kill", "signal: killed", ""},
	} {
		t.Run(tc.kind+"/"+tc.mode, func(t *testing.T) {
			in := startBad(t, m, tc.kind, tc.mode)
			ctx := ctxT(t, 10*time.Second)
			var err error
			call := "poll"
			if tc.kind == "source" {
				_, err = in.SourceTask().Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10})
			} else {
				call = "put"
				_, err = in.SinkTask().Put(ctx, &pluginv1.PutRequest{Records: sinkRecords(3, 10, 0)})
			}
			we := wantKind(t, err, wire.KindCrashed)
			for _, s := range []string{"bad plugin: " + tc.mode + " in " + call, tc.status, tc.extra} {
				if !strings.Contains(we.Trace, s) {
					t.Errorf("trace lacks %q:\n%s", s, we.Trace)
				}
			}
			if !strings.Contains(we.Message, tc.status) {
				t.Errorf("message %q lacks the exit status %q", we.Message, tc.status)
			}
			if !in.Exited() {
				t.Error("Exited false after a crash")
			}
			select {
			case <-in.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("Done not closed after a crash")
			}
			// Later calls fail fast with the same kind.
			start := time.Now()
			_, err = in.SourceTask().Commit(ctx, &pluginv1.CommitRequest{})
			wantKind(t, err, wire.KindCrashed)
			if d := time.Since(start); d > 100*time.Millisecond {
				t.Errorf("call on a dead instance took %s", d)
			}
		})
	}

	// The host is unaffected: a new launch works.
	in := launch(t, m, Spec{Path: goodBin, Connector: "after", Task: 0})
	resp, err := in.SourceTask().Poll(ctxT(t, 10*time.Second), &pluginv1.PollRequest{MaxRecords: 5})
	if err != nil || len(resp.GetRecords()) != 5 {
		t.Fatalf("poll after crashes: %d records, %v", len(resp.GetRecords()), err)
	}
}

// A plugin that writes a line longer than go-plugin reads on stdout (its
// handshake reader gives up at 64 KiB), garbage, and more output than a
// pipe holds, on both streams, and closes its copy of the shared memory,
// goes on being served: its calls are answered, its output does not make
// it block, and the worker's region is intact.
func TestNoisyPluginIsServed(t *testing.T) {
	m, _ := newManager(t, Options{})
	in := launch(t, m, Spec{Path: badBin, Connector: "noisy", Task: 0, SharedMemoryBytes: 1 << 20})
	ctx := ctxT(t, 10*time.Second)
	if _, err := in.SourceTask().Start(ctx, &pluginv1.SourceTaskStartRequest{Config: map[string]string{"mode": "noise"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		resp, err := in.SourceTask().Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10})
		if err != nil {
			t.Fatalf("poll %d: %v", i, err)
		}
		if n := len(resp.GetRecords()); n != 1 {
			t.Fatalf("poll %d: %d records", i, n)
		}
	}
	if in.Exited() {
		t.Fatal("the plugin exited")
	}
	for _, line := range strings.Split(in.Tail(), "\n") {
		if len(line) > maxTailLine+len("…") {
			t.Fatalf("a tail line of %d bytes", len(line))
		}
	}
	if r := in.Shared(); r == nil || r.Size() != 1<<20 {
		t.Fatalf("shared region %v", r)
	}
}

// The worker receives no message larger than its bound, whatever the
// plugin sends: the call fails, naming the sizes.
func TestAnswerOverTheBoundFails(t *testing.T) {
	defer func(n int) { maxReceiveBytes = n }(maxReceiveBytes)
	maxReceiveBytes = 1 << 20
	m, _ := newManager(t, Options{})
	in := startBad(t, m, "source", "big")
	_, err := in.SourceTask().Poll(ctxT(t, 10*time.Second), &pluginv1.PollRequest{MaxRecords: 10})
	we := wantKind(t, err, wire.KindFatal)
	if !strings.Contains(we.Message, "larger than max") || !strings.Contains(we.Message, "vs. 1048576") {
		t.Fatalf("error %v", err)
	}
}

func TestHangIsKilledAtDeadline(t *testing.T) {
	m, _ := newManager(t, Options{CallTimeout: 400 * time.Millisecond})
	// Warm up gRPC's lazily started goroutines before counting.
	warm := launch(t, m, Spec{Path: goodBin, Task: -1})
	if _, err := warm.Describe(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := warm.Kill(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}

	const budget = 400 * time.Millisecond
	const slack = 700 * time.Millisecond
	for _, tc := range []struct {
		name       string
		kind, mode string
		withCtx    bool // false: rely on the default call timeout
		call       func(ctx context.Context, in *Instance) error
	}{
		{"poll", "source", "hang", true, func(ctx context.Context, in *Instance) error {
			_, err := in.SourceTask().Poll(ctx, &pluginv1.PollRequest{})
			return err
		}},
		{"put", "sink", "hang", true, func(ctx context.Context, in *Instance) error {
			_, err := in.SinkTask().Put(ctx, &pluginv1.PutRequest{})
			return err
		}},
		{"source-stop", "source", "hang-stop", true, func(ctx context.Context, in *Instance) error {
			_, err := in.SourceTask().Stop(ctx, &pluginv1.StopRequest{})
			return err
		}},
		{"connector-stop", "connector", "hang-stop", false, func(ctx context.Context, in *Instance) error {
			_, err := in.Connector().Stop(ctx, &pluginv1.StopRequest{})
			return err
		}},
		{"validate", "", "", false, func(ctx context.Context, in *Instance) error {
			_, err := in.Connector().Validate(ctx, &pluginv1.ValidateRequest{Config: map[string]string{"mode": "hang"}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := runtimeGoroutines()
			var in *Instance
			if tc.kind == "" {
				in = launch(t, m, Spec{Path: badBin, Task: -1})
			} else {
				in = startBad(t, m, tc.kind, tc.mode)
			}
			pid := in.Pid()
			ctx := context.Background()
			if tc.withCtx {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, budget)
				defer cancel()
			}
			start := time.Now()
			err := tc.call(ctx, in)
			took := time.Since(start)
			we := wantKind(t, err, wire.KindTimeout)
			if took < budget || took > budget+slack {
				t.Errorf("hung call returned after %s, want %s (+%s)", took, budget, slack)
			}
			if !strings.Contains(we.Message, "process killed") {
				t.Errorf("message %q", we.Message)
			}
			if !in.Exited() {
				t.Error("hung plugin not exited when the call returned")
			}
			waitGone(t, pid, 2*time.Second)
			select {
			case <-in.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("Done not closed")
			}
			// A later call says why the process is gone.
			_, err = in.SourceTask().Ack(context.Background(), &pluginv1.AckRequest{})
			we = wantKind(t, err, wire.KindCrashed)
			// The kill is go-plugin's graceful shutdown first, then SIGKILL;
			// which one ends the process depends on timing (a hung handler
			// does not keep a Go plugin from exiting on Shutdown).
			if !strings.Contains(we.Message, "no answer within") ||
				!(strings.Contains(we.Message, "signal: killed") || strings.Contains(we.Message, "exit status")) {
				t.Errorf("call after the kill: %v", err)
			}
			settleGoroutines(t, base)
		})
	}
}

// lateCtx has a deadline but ends only when told to, as the REST layer's
// request context does: its own timer ends it.
type lateCtx struct {
	context.Context
	deadline time.Time
	done     chan struct{}
}

func (c *lateCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *lateCtx) Done() <-chan struct{}       { return c.done }
func (c *lateCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// A hung call whose caller ends its context on its own timer returns after
// that timer, never before it: the caller reads what it was waiting for
// (the herder's stage) while the call is still in progress.
func TestMissedDeadlineWaitsForTheCallersContext(t *testing.T) {
	m, _ := newManager(t, Options{})
	in := startBad(t, m, "source", "hang")
	const budget, late = 300 * time.Millisecond, 400 * time.Millisecond
	start := time.Now()
	ctx := &lateCtx{Context: context.Background(), deadline: start.Add(budget), done: make(chan struct{})}
	ended := make(chan time.Time, 1)
	time.AfterFunc(budget+late, func() { ended <- time.Now(); close(ctx.done) })
	_, err := in.SourceTask().Poll(ctx, &pluginv1.PollRequest{})
	returned := time.Now()
	wantKind(t, err, wire.KindTimeout)
	at := <-ended
	if returned.Before(at) {
		t.Fatalf("the hung call returned %v after it began, before its caller's context ended (%v)", returned.Sub(start), at.Sub(start))
	}
	if !in.Exited() {
		t.Error("hung plugin not exited when the call returned")
	}
}

// runtimeGoroutines is runtime.NumGoroutine after a moment's settling, so
// the count does not include goroutines of a previous subtest still exiting.
func runtimeGoroutines() int {
	time.Sleep(50 * time.Millisecond)
	return runtime.NumGoroutine()
}

func TestKillHungPlugin(t *testing.T) {
	m, _ := newManager(t, Options{})
	in := startBad(t, m, "source", "hang")
	pid := in.Pid()
	errc := make(chan error, 1)
	go func() {
		_, err := in.SourceTask().Poll(context.Background(), &pluginv1.PollRequest{})
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond) // let Poll reach the plugin
	start := time.Now()
	if err := in.Kill(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	// go-plugin's shutdown stops the plugin's gRPC server even with a
	// handler stuck, so no SIGKILL is needed.
	if d := time.Since(start); d > time.Second {
		t.Errorf("Kill of a plugin stuck in Poll took %s", d)
	}
	waitGone(t, pid, time.Second)
	select {
	case err := <-errc:
		wantKind(t, err, wire.KindCrashed)
	case <-time.After(5 * time.Second):
		t.Fatal("outstanding Poll did not return after Kill")
	}
}

// TestKillGraceThenSIGKILL uses a "plugin" that completes the handshake but
// serves nothing and ignores shutdown: Kill must SIGKILL it (and the child
// it started, through the process group) after the kill grace.
func TestKillGraceThenSIGKILL(t *testing.T) {
	dir := t.TempDir()
	childPid := dir + "/child.pid"
	script := writeScript(t, dir, "deaf", fmt.Sprintf(`#!/bin/sh
trap '' INT TERM
sleep 300 &
echo $! > %s
echo "1|1|unix|$PLUGIN_UNIX_SOCKET_DIR/nothing|grpc"
wait
`, childPid))
	m, _ := newManager(t, Options{KillGrace: 300 * time.Millisecond})
	in := launch(t, m, Spec{Path: script, Task: -1})
	b, err := os.ReadFile(childPid)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := in.Kill(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 1300*time.Millisecond {
		t.Errorf("Kill took %s, want the 300ms grace plus a little", d)
	}
	if st := in.p.exitStatus(); st != "signal: killed" {
		t.Errorf("exit status %q, want signal: killed", st)
	}
	waitGone(t, in.Pid(), time.Second)
	waitGone(t, child, 2*time.Second)

	// A short ctx wins over the grace, and Kill still returns in time.
	in2 := launch(t, m, Spec{Path: script, Task: -1})
	start = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if err := in2.Kill(ctx); err != nil {
		t.Logf("Kill with short ctx: %v", err)
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("Kill with a 150ms ctx took %s", d)
	}
	waitGone(t, in2.Pid(), 2*time.Second)
}

// TestNoOrphans kills a worker with SIGKILL and checks that its plugin dies
// too (Pdeathsig), and that the next worker sweeps the dead one's socket dir.
func TestNoOrphans(t *testing.T) {
	host := exec.Command(hostBin, goodBin)
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	host.Stderr = os.Stderr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = host.Process.Kill(); _ = host.Wait() }()
	sc := bufio.NewScanner(out)
	var pid int
	var dir string
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(sc.Text(), "dir "); ok {
			dir = v
			break
		}
	}
	if pid == 0 || dir == "" {
		t.Fatalf("host printed pid %d dir %q", pid, dir)
	}
	if pidGone(pid) {
		t.Fatal("plugin not running before the host is killed")
	}
	if err := syscall.Kill(host.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	waitGone(t, pid, 5*time.Second)

	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("dead host's socket dir: %v", err)
	}
	newManager(t, Options{})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dead host's socket dir %s not swept (stat: %v)", dir, err)
	}
}

func TestCallerCancelLeavesPluginRunning(t *testing.T) {
	m, _ := newManager(t, Options{})
	in := startBad(t, m, "source", "hang")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := in.SourceTask().Poll(ctx, &pluginv1.PollRequest{})
	we := wantKind(t, err, wire.KindTimeout)
	if !strings.Contains(we.Message, "call abandoned") {
		t.Errorf("message %q", we.Message)
	}
	if in.Exited() {
		t.Fatal("a cancelled call killed the plugin")
	}
	if err := in.Ping(ctxT(t, 5*time.Second)); err != nil {
		t.Errorf("Ping after a cancelled call: %v", err)
	}
}

// breakLongLines passes every byte on, in order, with a newline inserted
// after every maxStdoutLine bytes without one, however the reads split.
func TestBreakLongLines(t *testing.T) {
	in := strings.Repeat("x", 3*maxStdoutLine+5) + "\nshort\n" + strings.Repeat("y", maxStdoutLine) + "\nz"
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(in) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
		"halves":   func() io.Reader { return iotest.HalfReader(strings.NewReader(in)) },
	} {
		out, err := io.ReadAll(&breakLongLines{ReadCloser: io.NopCloser(r())})
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Repeat("x", maxStdoutLine) + "\n" + strings.Repeat("x", maxStdoutLine) + "\n" +
			strings.Repeat("x", maxStdoutLine) + "\n" + "xxxxx\nshort\n" + strings.Repeat("y", maxStdoutLine) + "\n\nz"
		if string(out) != want {
			t.Errorf("%s: %d bytes out, want %d", name, len(out), len(want))
		}
	}
}

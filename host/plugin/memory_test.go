package plugin

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// Every plugin is the OOM killer's first choice, ahead of the worker.
func TestPluginIsPreferredOOMVictim(t *testing.T) {
	m, _ := newManager(t, Options{SocketDir: t.TempDir()})
	in := launch(t, m, Spec{Path: goodBin, Task: -1})
	b, err := os.ReadFile("/proc/" + strconv.Itoa(in.Pid()) + "/oom_score_adj")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	if got := strings.TrimSpace(string(b)); got != strconv.Itoa(oomScoreAdj) {
		t.Fatalf("plugin oom_score_adj = %s, want %d", got, oomScoreAdj)
	}
	if env := pluginEnv(t, in); env["GOMEMLIMIT"] != "" {
		t.Errorf("GOMEMLIMIT=%s without a memory limit", env["GOMEMLIMIT"])
	}
}

// A plugin whose memory grows past the limit is killed, and the error its
// call gets names the setting; one under the limit runs on.
func TestMemoryLimitKillsLeakingPlugin(t *testing.T) {
	const limit = 64 << 20
	m, _ := newManager(t, Options{SocketDir: t.TempDir(), MemoryLimit: limit, MemoryCheckInterval: 20 * time.Millisecond})

	good := launch(t, m, Spec{Path: goodBin, Task: -1})
	if got, want := pluginEnv(t, good)["GOMEMLIMIT"], strconv.Itoa(limit/10*9); got != want {
		t.Errorf("GOMEMLIMIT=%q, want %s", got, want)
	}

	bad := launch(t, m, Spec{Path: badBin, Task: -1})
	pid := bad.Pid()
	start := time.Now()
	_, err := bad.Connector().Validate(ctxT(t, 30*time.Second), &pluginv1.ValidateRequest{Config: map[string]string{"mode": "leak"}})
	we := wantKind(t, err, wire.KindCrashed)
	for _, want := range []string{"resident memory", "exceeded sluice.plugin.memory.max.bytes=67108864 (64.0 MiB)"} {
		if !strings.Contains(we.Message, want) {
			t.Errorf("message %q should contain %q", we.Message, want)
		}
	}
	if r := bad.KillReason(); !strings.Contains(r, "exceeded "+MemoryLimitSetting) {
		t.Errorf("kill reason %q", r)
	}
	select {
	case <-bad.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the leaking plugin's instance did not end")
	}
	waitGone(t, pid, 5*time.Second)
	// It leaks 8 MiB every 10 ms: killed well before it reaches 1 GiB.
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("killed after %s", took)
	}

	// The good plugin, far under the limit, is untouched.
	time.Sleep(100 * time.Millisecond)
	if err := good.Ping(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("plugin under the limit: %v", err)
	}
}

func TestResidentAnon(t *testing.T) {
	n, err := residentAnon(os.Getpid())
	if err != nil {
		t.Skip("no /proc:", err)
	}
	// This test binary holds a few MiB of heap at least, and not terabytes.
	if n < 1<<20 || n > 1<<40 {
		t.Fatalf("resident anonymous memory of the test %d bytes", n)
	}
	if _, err := residentAnon(1 << 30); err == nil {
		t.Error("a pid that does not exist should fail")
	}
}

// watchersRunning counts the memory watchers alive now, from the stacks of
// all goroutines.
func watchersRunning() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	return bytes.Count(buf, []byte("plugin.(*Instance).watchMemory("))
}

// The memory watcher belongs to its instance: it has ended by the time the
// instance's Done closes, however the process ended (killed for its memory,
// exited on its own, stopped by the worker), and the manager's Close leaves
// none behind.
func TestMemoryWatcherEndsWithInstance(t *testing.T) {
	if _, err := residentAnon(os.Getpid()); err != nil {
		t.Skip("no /proc:", err)
	}
	m, _ := newManager(t, Options{SocketDir: t.TempDir(), MemoryLimit: 64 << 20, MemoryCheckInterval: time.Millisecond})
	if n := watchersRunning(); n != 0 {
		t.Fatalf("%d watchers before any launch", n)
	}
	for i := range 3 {
		for _, mode := range []string{"leak", "exit", "stop"} {
			in := launch(t, m, Spec{Path: badBin, Task: -1})
			for w := time.Now(); watchersRunning() != 1; time.Sleep(time.Millisecond) {
				if time.Since(w) > 5*time.Second {
					t.Fatalf("%s: %d watchers for one instance", mode, watchersRunning())
				}
			}
			if mode == "stop" {
				if err := in.Kill(ctxT(t, 10*time.Second)); err != nil {
					t.Fatal(err)
				}
			} else {
				_, _ = in.Connector().Validate(ctxT(t, 30*time.Second), &pluginv1.ValidateRequest{Config: map[string]string{"mode": mode}})
			}
			select {
			case <-in.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: instance did not end", mode)
			}
			if n := watchersRunning(); n != 0 {
				t.Fatalf("%s (round %d): %d memory watchers still running once the instance is done", mode, i, n)
			}
			if mode == "exit" && in.KillReason() != "" {
				t.Fatalf("a plugin that exited on its own has kill reason %q", in.KillReason())
			}
		}
	}
}

// A worker whose own oom_score_adj is above the plugins' (a container
// runtime's choice) does not lower its plugins' below its own: they stay
// at least as likely victims as the worker.
func TestPluginOOMScoreAdjNotBelowWorker(t *testing.T) {
	const self = "/proc/self/oom_score_adj"
	b, err := os.ReadFile(self)
	if err != nil {
		t.Skip("no /proc:", err)
	}
	old := strings.TrimSpace(string(b))
	if err := os.WriteFile(self, []byte("700"), 0); err != nil {
		t.Skip("cannot raise the test's own oom_score_adj:", err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(self, []byte(old), 0); err != nil {
			t.Logf("restore oom_score_adj %s: %v", old, err)
		}
	})
	m, _ := newManager(t, Options{SocketDir: t.TempDir()})
	in := launch(t, m, Spec{Path: goodBin, Task: -1})
	got, err := os.ReadFile("/proc/" + strconv.Itoa(in.Pid()) + "/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.TrimSpace(string(got)); s != "700" {
		t.Fatalf("plugin oom_score_adj = %s under a worker at 700, want 700", s)
	}
}

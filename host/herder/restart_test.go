package herder_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/herder"
)

func (f *fakeInstances) runs(id string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.taskRuns[id]...)
}

func (f *fakeInstances) failNext(id string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failRuns[id] = n
}

func restartConfig(extra ...string) map[string]string {
	cfg := srcConfig("tasks.max", "1",
		"sluice.task.restart.enable", "true",
		"sluice.task.restart.backoff.initial.ms", "40",
		"sluice.task.restart.backoff.max.ms", "300")
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	return cfg
}

// A task that fails its first three starts is restarted automatically,
// each time after the doubled backoff, and ends RUNNING.
func TestAutoRestartWithBackoff(t *testing.T) {
	f := newFixture(t)
	f.in.failNext("src-0", 3)
	if _, _, err := f.h.PutConnectorConfig(ctxT(t), "src", restartConfig(), false, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "four starts", func() bool { return len(f.in.runs("src-0")) == 4 })
	waitStates(t, f.h, "src", "RUNNING:RUNNING")
	runs := f.in.runs("src-0")
	for i, want := range []time.Duration{40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond} {
		if gap := runs[i+1].Sub(runs[i]); gap < want || gap > want+2*time.Second {
			t.Errorf("restart %d came %s after the failure, want the %s backoff", i+1, gap, want)
		}
	}
	time.Sleep(400 * time.Millisecond)
	if n := len(f.in.runs("src-0")); n != 4 {
		t.Fatalf("%d starts of a running task, want 4", n)
	}
}

// After max.attempts automatic restarts in a row the task stays FAILED
// with its trace.
func TestAutoRestartGivesUp(t *testing.T) {
	f := newFixture(t)
	f.in.failNext("src-0", 1000)
	if _, _, err := f.h.PutConnectorConfig(ctxT(t), "src", restartConfig("sluice.task.restart.max.attempts", "2"), false, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three starts", func() bool { return len(f.in.runs("src-0")) == 3 })
	waitStates(t, f.h, "src", "RUNNING:FAILED")
	time.Sleep(500 * time.Millisecond) // more than the longest backoff
	if n := len(f.in.runs("src-0")); n != 3 {
		t.Fatalf("%d starts, want 3 (the first and two automatic restarts)", n)
	}
	st, err := f.h.ConnectorStatus(ctxT(t), "src")
	if err != nil {
		t.Fatal(err)
	}
	if tr := st.Tasks[0].Trace; !strings.Contains(tr, "start 3 of src-0 failed on purpose") {
		t.Fatalf("trace %q", tr)
	}
}

// Off by default, as in Kafka Connect: a failed task stays FAILED.
func TestAutoRestartOffByDefault(t *testing.T) {
	f := newFixture(t)
	f.in.failNext("src-0", 1)
	if _, _, err := f.h.PutConnectorConfig(ctxT(t), "src", srcConfig("tasks.max", "1"), false, ""); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:FAILED")
	time.Sleep(1500 * time.Millisecond) // past the default initial backoff
	if n := len(f.in.runs("src-0")); n != 1 {
		t.Fatalf("%d starts, want 1", n)
	}
}

// A restart by hand during the backoff replaces the failed task; the
// automatic restart then finds it gone and does nothing.
func TestAutoRestartYieldsToManualRestart(t *testing.T) {
	f := newFixture(t)
	f.in.failNext("src-0", 1)
	cfg := restartConfig("sluice.task.restart.backoff.initial.ms", "500", "sluice.task.restart.backoff.max.ms", "5000")
	if _, _, err := f.h.PutConnectorConfig(ctxT(t), "src", cfg, false, ""); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:FAILED")
	if err := f.h.RestartTask(ctxT(t), herder.TaskID{Connector: "src", Task: 0}); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING")
	time.Sleep(800 * time.Millisecond)
	if n := len(f.in.runs("src-0")); n != 2 {
		t.Fatalf("%d starts, want 2 (the first and the manual restart)", n)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING")
}

// The settings are validated with the other framework settings.
func TestAutoRestartSettingsValidated(t *testing.T) {
	f := newFixture(t)
	infos, err := f.h.ValidateConfig(ctxT(t), restartConfig("name", "src", "sluice.task.restart.max.attempts", "-2", "sluice.task.restart.backoff.max.ms", "soon"))
	if err != nil {
		t.Fatal(err)
	}
	errs := map[string][]string{}
	for _, c := range infos.Configs {
		if c.Value != nil && len(c.Value.Errors) > 0 {
			errs[c.Value.Name] = c.Value.Errors
		}
	}
	if len(errs) != 2 || len(errs["sluice.task.restart.max.attempts"]) != 1 || len(errs["sluice.task.restart.backoff.max.ms"]) == 0 {
		t.Fatalf("errors %v", errs)
	}
	for _, c := range infos.Configs {
		if c.Definition != nil && c.Definition.Name == "sluice.task.restart.enable" {
			if c.Definition.DefaultValue == nil || *c.Definition.DefaultValue != "false" || *c.Definition.Group != "Error Handling" {
				t.Fatalf("definition %+v", c.Definition)
			}
			return
		}
	}
	t.Fatal("sluice.task.restart.enable not listed")
}

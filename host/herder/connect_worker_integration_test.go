package herder_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/herder"
)

// Ports of scenarios of Kafka Connect's ConnectWorkerIntegrationTest on a
// distributed herder over kfake (the connectors and tasks are the fakes of
// fake_test.go).

// tooManySnippet is the part of Kafka's TooManyTasksException message its
// test checks.
func tooManySnippet(name string, tasks, maxTasks int) string {
	return fmt.Sprintf("The connector %s has generated %d tasks, which is greater than %d, the maximum number of tasks it is configured to create. ", name, tasks, maxTasks)
}

// KIP-1004, following testTasksMaxEnforcement: too many generated task
// configs fail the connector; task configs committed before tasks.max was
// lowered fail their tasks when they restart; tasks.max.enforce=false lets
// them run; generating too many again fails the connector but not its
// running tasks, even when they restart.
func TestConnectWorkerTasksMaxEnforcement(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	var mu sync.Mutex
	generate := 2
	in.numTasks = func(string, int) int { mu.Lock(); defer mu.Unlock(); return generate }
	setGenerate := func(n int) { mu.Lock(); generate = n; mu.Unlock() }
	h := e.start("w1", in, false)
	ctx := ctxT(t)
	put := func(extra ...string) {
		t.Helper()
		if _, _, err := h.PutConnectorConfig(ctx, "a", srcConfig(extra...), true, herder.TargetStarted); err != nil {
			t.Fatal(err)
		}
	}
	connTrace := func() string {
		st, err := h.ConnectorStatus(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		return st.Connector.Trace
	}

	// A connector that generates too many tasks fails, with no tasks.
	put("tasks.max", "1")
	dStates(t, h, "a", "FAILED:")
	if tr := connTrace(); !strings.Contains(tr, tooManySnippet("a", 2, 1)) || !strings.Contains(tr, "'tasks.max.enforce' set to false") {
		t.Fatalf("trace %q", tr)
	}
	if tcs, _ := h.TaskConfigs(ctx, "a"); len(tcs) != 0 {
		t.Fatalf("task configs %v", tcs)
	}

	// Two tasks committed under tasks.max=2; tasks.max lowered to 1: the
	// connector fails, the running tasks go on; restarted, they fail.
	put("tasks.max", "2")
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
	put("tasks.max", "1")
	dStates(t, h, "a", "FAILED:RUNNING,RUNNING")
	if _, err := h.RestartConnector(ctx, "a", true, false); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "a", "FAILED:FAILED,FAILED")
	for i := range 2 {
		ts, err := h.TaskStatus(ctx, herder.TaskID{Connector: "a", Task: i})
		if err != nil || !strings.Contains(ts.Trace, tooManySnippet("a", 2, 1)) {
			t.Fatalf("task %d: %+v %v", i, ts, err)
		}
	}
	if n := in.count(in.taskStarts, "a-0"); n != 1 {
		t.Fatalf("a-0 built %d times, want 1: the restart must fail before the runner is built", n)
	}

	// tasks.max.enforce=false: the same task configs run.
	put("tasks.max", "1", "tasks.max.enforce", "false")
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
	// And more of them.
	setGenerate(3)
	put("tasks.max", "1", "tasks.max.enforce", "false", "round", "3")
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING,RUNNING")

	// Enforced again, within the limit.
	setGenerate(1)
	put("tasks.max", "1", "round", "4")
	dStates(t, h, "a", "RUNNING:RUNNING")
	// Too many again: the connector fails, its one task runs on, also
	// after a restart.
	setGenerate(2)
	put("tasks.max", "1", "round", "5")
	dStates(t, h, "a", "FAILED:RUNNING")
	if tr := connTrace(); !strings.Contains(tr, tooManySnippet("a", 2, 1)) {
		t.Fatalf("trace %q", tr)
	}
	before := in.count(in.taskStarts, "a-0")
	if err := h.RestartTask(ctx, herder.TaskID{Connector: "a", Task: 0}); err != nil {
		t.Fatal(err)
	}
	dWait(t, "a-0 restarted", func() bool { return in.count(in.taskStarts, "a-0") == before+1 })
	dStates(t, h, "a", "FAILED:RUNNING")
}

// testCreateConnectorWithPausedInitialState: created PAUSED, the connector
// is PAUSED and has no tasks nor task configs until it is resumed.
func TestConnectWorkerCreateWithPausedInitialState(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	h := e.start("w1", in, false)
	ctx := ctxT(t)
	if _, _, err := h.PutConnectorConfig(ctx, "a", srcConfig(), false, herder.TargetPaused); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "a", "PAUSED:")
	time.Sleep(300 * time.Millisecond)
	if info, err := h.ConnectorInfo(ctx, "a"); err != nil || len(info.Tasks) != 0 {
		t.Fatalf("info %+v %v", info, err)
	}
	if tcs, err := h.TaskConfigs(ctx, "a"); err != nil || len(tcs) != 0 {
		t.Fatalf("task configs %v %v", tcs, err)
	}
	if n := in.count(in.taskStarts, "a-0"); n != 0 {
		t.Fatalf("%d tasks built for a connector created PAUSED", n)
	}
	if err := h.ResumeConnector(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
}

// testDeleteConnectorCreatedWithPausedOrStoppedInitialState.
func TestConnectWorkerDeleteCreatedPausedOrStopped(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	h := e.start("w1", in, false)
	ctx := ctxT(t)
	for _, target := range []herder.TargetState{herder.TargetPaused, herder.TargetStopped} {
		if _, created, err := h.PutConnectorConfig(ctx, "a", srcConfig(), false, target); err != nil || !created {
			t.Fatalf("create %s: %v %v", target, created, err)
		}
		dStates(t, h, "a", string(target)+":")
		if tcs, err := h.TaskConfigs(ctx, "a"); err != nil || len(tcs) != 0 {
			t.Fatalf("%s: task configs %v %v", target, tcs, err)
		}
		if err := h.DeleteConnector(ctx, "a"); err != nil {
			t.Fatalf("delete the connector created %s: %v", target, err)
		}
		dWait(t, "a gone", func() bool {
			names, _ := h.Connectors(ctx)
			_, err := h.ConnectorStatus(ctx, "a")
			return len(names) == 0 && errors.Is(err, herder.ErrNotFound)
		})
	}
	if n := in.count(in.taskStarts, "a-0"); n != 0 {
		t.Fatalf("%d tasks built", n)
	}
}

// testPatchConnectorConfig on a distributed worker.
func TestConnectWorkerPatchConnectorConfig(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	h := e.start("w1", in, false)
	ctx := ctxT(t)
	props := map[string]string{"connector.class": "LogSink", "topics": "t", "tasks.max": "2", "unaffected-key": "unaffected-value", "to-be-deleted-key": "value"}
	if _, _, err := h.PutConnectorConfig(ctx, "a", props, false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
	three, added := "3", "value"
	info, err := h.PatchConnectorConfig(ctx, "a", map[string]*string{"tasks.max": &three, "to-be-added-key": &added, "to-be-deleted-key": nil})
	if err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING,RUNNING")
	want := maps.Clone(props)
	want["name"], want["to-be-added-key"], want["tasks.max"] = "a", "value", "3"
	delete(want, "to-be-deleted-key")
	if !maps.Equal(info.Config, want) {
		t.Fatalf("patch answered %v, want %v", info.Config, want)
	}
	got, err := h.ConnectorInfo(ctx, "a")
	if err != nil || !maps.Equal(got.Config, want) {
		t.Fatalf("config after patch %v (%v), want %v", got, err, want)
	}
	_, err = h.PatchConnectorConfig(ctx, "nope", map[string]*string{"tasks.max": &three})
	herderErr(t, err, herder.ErrNotFound, "Connector nope not found")
}

// testRuntimePropertyReconfiguration: the connector returns the same task
// configs whatever its config; changing only value.converter must still
// restart its (failed) task with the new converter.
func TestConnectWorkerRuntimePropertyReconfiguration(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	in.failRuns["a-0"] = 1
	h := e.start("w1", in, false)
	ctx := ctxT(t)
	cfg := map[string]string{"connector.class": "LogSink", "topics": "kafka9228", "tasks.max": "1"}
	if _, _, err := h.PutConnectorConfig(ctx, "a", cfg, false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "a", "RUNNING:FAILED")
	tcs, _ := h.TaskConfigs(ctx, "a")
	cfg["value.converter"] = "org.apache.kafka.connect.storage.StringConverter"
	if _, _, err := h.PutConnectorConfig(ctx, "a", cfg, true, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "a", "RUNNING:RUNNING")
	if n := in.count(in.taskStarts, "a-0"); n != 2 {
		t.Fatalf("a-0 built %d times, want 2", n)
	}
	if got := in.task("a-0").spec.ConnectorConfig["value.converter"]; got != cfg["value.converter"] {
		t.Fatalf("restarted task has value.converter %q", got)
	}
	tcs2, _ := h.TaskConfigs(ctx, "a")
	if len(tcs) != 1 || len(tcs2) != 1 || !maps.Equal(tcs[0].Config, tcs2[0].Config) {
		t.Fatalf("task configs changed: %v -> %v (the point is that they do not)", tcs, tcs2)
	}
}

// testReconfigureConnectorWithFailingTaskConfigs: the committed task
// configs refer to a config provider value that no longer resolves; a new
// connector config that no longer uses it still replaces the tasks.
func TestConnectWorkerReconfigureWithFailingTaskConfigs(t *testing.T) {
	path, r := secretsFile(t)
	e := newDEnv(t)
	e.resolver = r
	in := newFakeInstances()
	h := e.start("w1", in, false)
	ctx := ctxT(t)
	secretVar := "${file:" + path + ":secret}"
	in.mu.Lock()
	in.extra["a"] = map[string]string{"secret": cpSecret}
	in.mu.Unlock()
	if _, _, err := h.PutConnectorConfig(ctx, "a", srcConfig("secret", secretVar, "topic", "connector-topic-1"), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
	if tcs, _ := h.TaskConfigs(ctx, "a"); len(tcs) != 2 || tcs[0].Config["secret"] != secretVar {
		t.Fatalf("task configs %v", tcs)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	in.mu.Lock()
	in.extra["a"] = map[string]string{"secret": "plain"}
	in.mu.Unlock()
	if _, _, err := h.PutConnectorConfig(ctx, "a", srcConfig("secret", "plain", "topic", "connector-topic-2"), true, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dWait(t, "the tasks restarted", func() bool {
		return in.count(in.taskStarts, "a-0") == 2 && in.count(in.taskStarts, "a-1") == 2
	})
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
	for _, id := range []string{"a-0", "a-1"} {
		sp := in.task(id).spec
		if sp.ConnectorConfig["topic"] != "connector-topic-2" || sp.TaskConfig["secret"] != "plain" {
			t.Fatalf("%s restarted with %v / %v", id, sp.ConnectorConfig, sp.TaskConfig)
		}
	}
}

// testCompactedDeletedOlderConnectorConfig: a connector deleted (its task
// configs stay in the config topic, and compaction may drop its
// tombstone) and created again with another config never runs a task with
// the older task configs, also after the whole cluster was restarted.
func TestConnectWorkerCompactedDeletedOlderConnectorConfig(t *testing.T) {
	e := newDEnv(t)
	var mu sync.Mutex
	var specs []herder.TaskSpec
	e.wrap = func(in *fakeInstances) herder.Instances {
		return &recordingInstances{fakeInstances: in, mu: &mu, specs: &specs}
	}
	in := newFakeInstances()
	in.extra["a"] = map[string]string{"files": "old"}
	h := e.start("w1", in, false)
	ctx := ctxT(t)
	if _, _, err := h.PutConnectorConfig(ctx, "a", srcConfig("topic", "connector-topic"), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
	if err := h.DeleteConnector(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	dWait(t, "a deleted", func() bool { names, _ := h.Connectors(ctx); return len(names) == 0 })
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	e.c.Compact()

	in2 := newFakeInstances()
	in2.extra["a"] = map[string]string{"files": "new"}
	h2 := e.start("w1", in2, false)
	mu.Lock()
	seen := len(specs)
	mu.Unlock()
	if _, created, err := h2.PutConnectorConfig(ctx, "a", srcConfig("topic", "other-topic"), false, herder.TargetStarted); err != nil || !created {
		t.Fatalf("re-create: %v %v", created, err)
	}
	dStates(t, h2, "a", "RUNNING:RUNNING,RUNNING")
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(specs) == seen {
		t.Fatal("no task started after the re-create")
	}
	for _, sp := range specs[seen:] {
		if sp.TaskConfig["files"] != "new" || sp.ConnectorConfig["topic"] != "other-topic" {
			t.Fatalf("task %s started with older configs %v / %v", sp.ID, sp.TaskConfig, sp.ConnectorConfig)
		}
	}
}

// recordingInstances records the spec of every task built.
type recordingInstances struct {
	*fakeInstances
	mu    *sync.Mutex
	specs *[]herder.TaskSpec
}

func (r *recordingInstances) NewTask(ctx context.Context, spec herder.TaskSpec, l herder.TaskListener) (herder.TaskRunner, error) {
	r.mu.Lock()
	*r.specs = append(*r.specs, spec)
	r.mu.Unlock()
	return r.fakeInstances.NewTask(ctx, spec, l)
}

// testRequestTimeouts: with the config topic gone, a config write cannot
// complete; the request answers 500 at the request timeout with the stage
// it is blocked in, and so does a delete. Unlike Kafka's herder, whose
// single thread stays stuck in the first write (so its health check fails
// too), each Sluice request gives its write up at its own deadline: the
// worker keeps answering, /health included.
func TestConnectWorkerRequestTimeouts(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	h := e.start("w1", in, false)
	c := newRESTClient(t, h, time.Second)
	c.must("POST", "/connectors", map[string]any{"name": "a", "config": srcConfig()}, 201)
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")

	adm := kadm.NewClient(e.client())
	resp, err := adm.DeleteTopics(ctxT(t), dConfigTopic)
	if err != nil || resp.Error() != nil {
		t.Fatalf("delete the config topic: %v %v", err, resp.Error())
	}

	a := c.do("PUT", "/connectors/a/config", srcConfig("tasks.max", "3"))
	timedOutAfter(t, "reconfigure with the config topic deleted", a, "writing a config for connector a to the config topic", time.Second)
	a = c.do("DELETE", "/connectors/a", nil)
	timedOutAfter(t, "delete with the config topic deleted", a, "removing the config for connector a from the config topic", time.Second)
	c.must("GET", "/health", nil, 200)
	c.must("GET", "/connectors/a/status", nil, 200)
	if names, _ := h.Connectors(ctxT(t)); len(names) != 1 || names[0] != "a" {
		t.Fatalf("connectors %v", names)
	}
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
}

// client is a Kafka client of the test's own on the cluster.
func (e *dEnv) client() *kgo.Client {
	e.t.Helper()
	cl, err := kgo.NewClient(e.opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cl.Close)
	return cl
}

// testPollTimeoutExpiry: a task restart whose stop blocks holds the
// worker in "stopping tasks" past the group's session and rebalance
// timeouts (1.5 s and 3 s here; the drain lasts the task shutdown timeout,
// 1 s, plus 3 s of margin). Kafka's herder thread misses its polls and
// leaves the group; a Sluice worker heartbeats on its own goroutine, so it
// stays in the group, in the same generation, and the REST request that
// waits for the stop times out naming the stage.
func TestConnectWorkerPollTimeoutExpiry(t *testing.T) {
	d := newDistributedBlocking(t)
	h, b, c := d.start(t, "w1")
	c.must("POST", "/connectors", map[string]any{"name": "a", "config": blockingConfig(blockTaskStop)}, 201)
	dStates(t, h, "a", "RUNNING:RUNNING")
	before := d.e.waitStatusTail("status-task-a-0", "RUNNING")
	gen := before[len(before)-1].Generation

	a := c.do("POST", "/connectors/a/tasks/0/restart", nil)
	timedOut(t, "restart a task blocked in stop", a, "stopping tasks")
	if n := b.count(blockTaskStop); n != 1 {
		t.Fatalf("%d task stops blocked, want 1", n)
	}
	// The drain ends at the shutdown timeout, the task is cancelled and
	// started again.
	dWait(t, "a-0 started again", func() bool { return b.fakeInstances.count(b.fakeInstances.taskStarts, "a-0") == 2 })
	dStates(t, h, "a", "RUNNING:RUNNING")
	recs := d.e.waitStatusTail("status-task-a-0", "RUNNING")
	for _, r := range recs[len(before):] {
		if r.Generation != gen {
			t.Fatalf("status records after the blocked stop %+v: the worker left generation %d", recs[len(before):], gen)
		}
	}
	if err := h.Health(ctxT(t)); err != nil {
		t.Fatalf("health after the blocked stop: %v", err)
	}
}

// testDeleteConnectorCreatedWithPausedOrStoppedInitialState on a
// standalone worker.
func TestConnectWorkerDeleteCreatedPausedOrStoppedStandalone(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	for _, target := range []herder.TargetState{herder.TargetPaused, herder.TargetStopped} {
		if _, created, err := f.h.PutConnectorConfig(ctx, "a", srcConfig(), false, target); err != nil || !created {
			t.Fatalf("create %s: %v %v", target, created, err)
		}
		waitStates(t, f.h, "a", string(target)+":")
		if info, err := f.h.ConnectorInfo(ctx, "a"); err != nil || len(info.Tasks) != 0 {
			t.Fatalf("%s: info %+v %v", target, info, err)
		}
		if err := f.h.DeleteConnector(ctx, "a"); err != nil {
			t.Fatalf("delete the connector created %s: %v", target, err)
		}
		if names, _ := f.h.Connectors(ctx); len(names) != 0 {
			t.Fatalf("%s: connectors after delete %v", target, names)
		}
		_, err := f.h.ConnectorStatus(ctx, "a")
		herderErr(t, err, herder.ErrNotFound, "No status found for connector a")
	}
	if n := f.in.count(f.in.taskStarts, "a-0"); n != 0 {
		t.Fatalf("%d tasks built", n)
	}
	if n := f.in.count(f.in.starts, "a"); n != 1 {
		t.Fatalf("connector started %d times, want 1 (PAUSED runs its connector, STOPPED does not)", n)
	}
}

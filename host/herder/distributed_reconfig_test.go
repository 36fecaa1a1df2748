package herder_test

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/herder"
)

// commits counts the commit-{name} records of the config topic.
func (e *dEnv) commits(name string) int {
	e.t.Helper()
	n := 0
	e.eachRecord(dConfigTopic, func(r *kgo.Record) {
		if string(r.Key) == "commit-"+name {
			n++
		}
	})
	return n
}

// A connector config change restarts the connector and, even when the
// connector generates the same task configs, writes them again and
// restarts its tasks (Kafka's testRuntimePropertyReconfiguration); the
// tasks of another connector keep running. A task config change alone
// (the connector asks for a reconfiguration) restarts the connector's
// tasks and nothing else; a reconfiguration that yields the same configs
// writes nothing.
func TestDistributedReconfiguration(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	h := e.start("w1", in, false)
	for _, name := range []string{"a", "b"} {
		if _, _, err := h.PutConnectorConfig(ctxT(t), name, srcConfig(), false, herder.TargetStarted); err != nil {
			t.Fatal(err)
		}
		dStates(t, h, name, "RUNNING:RUNNING,RUNNING")
	}
	if n := e.commits("a"); n != 1 {
		t.Fatalf("%d commits of a, want 1", n)
	}
	starts := func(ids ...string) []int {
		out := make([]int, len(ids))
		for i, id := range ids {
			out[i] = in.count(in.taskStarts, id)
		}
		return out
	}

	// Connector config change, same task configs.
	if _, _, err := h.PutConnectorConfig(ctxT(t), "a", srcConfig("unrelated", "1"), true, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dWait(t, "a's tasks restarted", func() bool {
		s := starts("a-0", "a-1")
		return s[0] == 2 && s[1] == 2
	})
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
	if n := in.count(in.starts, "a"); n != 2 {
		t.Fatalf("%d starts of connector a, want 2", n)
	}
	if n := e.commits("a"); n != 2 {
		t.Fatalf("%d commits of a, want 2", n)
	}

	// The connector asks for a reconfiguration; its configs changed.
	in.mu.Lock()
	in.extra["a"] = map[string]string{"k": "v"}
	in.mu.Unlock()
	in.conn("a").cb.RequestTaskReconfiguration()
	dWait(t, "a's tasks restarted with the new configs", func() bool {
		s := starts("a-0", "a-1")
		return s[0] == 3 && s[1] == 3 && in.task("a-0").spec.TaskConfig["k"] == "v"
	})
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")

	// Again, with nothing changed: nothing is written or restarted.
	in.conn("a").cb.RequestTaskReconfiguration()
	time.Sleep(500 * time.Millisecond)
	if n := e.commits("a"); n != 3 {
		t.Fatalf("%d commits of a, want 3", n)
	}
	if s := starts("a-0", "a-1", "b-0", "b-1"); s[0] != 3 || s[1] != 3 || s[2] != 1 || s[3] != 1 {
		t.Fatalf("task starts a-0 a-1 b-0 b-1: %v", s)
	}
	if n := in.count(in.starts, "a"); n != 2 {
		t.Fatalf("%d starts of connector a, want 2", n)
	}
	if n := in.count(in.starts, "b"); n != 1 {
		t.Fatalf("%d starts of connector b, want 1", n)
	}
}

// KIP-745 restarts on two workers: each instance is restarted once, by the
// worker that runs it, with the onlyFailed and includeTasks combinations.
func TestDistributedRestartCombinations(t *testing.T) {
	e := newDEnv(t)
	in1, in2 := newFakeInstances(), newFakeInstances()
	h1 := e.start("w1", in1, true)
	h2 := e.start("w2", in2, true)
	createRetrying(t, h1, "a")
	dStates(t, h1, "a", "RUNNING:RUNNING,RUNNING")
	dStates(t, h2, "a", "RUNNING:RUNNING,RUNNING")
	ins := []*fakeInstances{in1, in2}
	total := func(m func(*fakeInstances) map[string]int, k string) int {
		n := 0
		for _, in := range ins {
			n += in.count(m(in), k)
		}
		return n
	}
	conn := func(in *fakeInstances) map[string]int { return in.starts }
	task := func(in *fakeInstances) map[string]int { return in.taskStarts }
	counts := func() [3]int {
		return [3]int{total(conn, "a"), total(task, "a-0"), total(task, "a-1")}
	}
	wantCounts := func(what string, want [3]int) {
		t.Helper()
		dWait(t, what, func() bool { return counts() == want })
		time.Sleep(300 * time.Millisecond)
		if got := counts(); got != want {
			t.Fatalf("%s: starts of a, a-0, a-1 %v, want %v", what, got, want)
		}
	}
	owner := func(id string) *fakeInstances {
		for _, in := range ins {
			if in.count(in.taskStarts, id) > 0 {
				return in
			}
		}
		t.Fatalf("nobody runs %s", id)
		return nil
	}

	// Nothing failed: onlyFailed restarts nothing.
	for _, withTasks := range []bool{false, true} {
		plan, err := h2.RestartConnector(ctxT(t), "a", withTasks, true)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Connector.State != "RUNNING" || plan.Tasks[0].State != "RUNNING" {
			t.Fatalf("plan %+v", plan)
		}
	}
	wantCounts("no restart", [3]int{1, 1, 1})

	// a-1 fails: onlyFailed with tasks restarts it alone.
	owner("a-1").task("a-1").fail <- errors.New("a-1 failed on purpose")
	dStates(t, h1, "a", "RUNNING:RUNNING,FAILED")
	plan, err := h1.RestartConnector(ctxT(t), "a", true, true)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Connector.State != "RUNNING" || plan.Tasks[0].State != "RUNNING" || plan.Tasks[1].State != "RESTARTING" {
		t.Fatalf("plan %+v", plan)
	}
	wantCounts("a-1 restarted", [3]int{1, 1, 2})
	dStates(t, h2, "a", "RUNNING:RUNNING,RUNNING")

	// includeTasks alone: the connector and every task, once each.
	if _, err := h2.RestartConnector(ctxT(t), "a", true, false); err != nil {
		t.Fatal(err)
	}
	wantCounts("all restarted", [3]int{2, 2, 3})
	dStates(t, h1, "a", "RUNNING:RUNNING,RUNNING")

	// Neither: the connector alone.
	if _, err := h1.RestartConnector(ctxT(t), "a", false, false); err != nil {
		t.Fatal(err)
	}
	wantCounts("connector restarted", [3]int{3, 2, 3})
}

// Writing a connector's config again unchanged restarts its connector
// instance, as Kafka Connect's owner restarts a connector on every config
// record (the usual way to bring back a FAILED connector); its task configs
// are the same, so its tasks keep running and nothing is committed.
func TestDistributedSameConfigRestartsConnector(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	h := e.start("w1", in, false)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "a", srcConfig(), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
	in.conn("a").crash()
	dStates(t, h, "a", "FAILED:RUNNING,RUNNING")
	if _, created, err := h.PutConnectorConfig(ctxT(t), "a", srcConfig(), true, herder.TargetStarted); err != nil || created {
		t.Fatalf("put the same config: created %v, %v", created, err)
	}
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
	if n := in.count(in.starts, "a"); n != 2 {
		t.Fatalf("%d starts of connector a, want 2", n)
	}
	time.Sleep(300 * time.Millisecond)
	if n0, n1 := in.count(in.taskStarts, "a-0"), in.count(in.taskStarts, "a-1"); n0 != 1 || n1 != 1 {
		t.Fatalf("task starts %d, %d; want 1 each", n0, n1)
	}
	if n := e.commits("a"); n != 1 {
		t.Fatalf("%d commits, want 1", n)
	}
}

// A task whose configs were committed anew is stopped at once but started
// again only after the rebalance that commit asks for, as Kafka Connect's
// herder restarts reconfigured tasks only if the new assignment still
// gives them to it: its RUNNING status after the restart carries a newer
// generation than the one before.
func TestDistributedReconfiguredTasksWaitForRebalance(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	h := e.start("w1", in, false)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "a", srcConfig(), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
	before := e.waitStatusTail("status-task-a-0", "RUNNING")
	g0 := before[len(before)-1].Generation
	if _, _, err := h.PutConnectorConfig(ctxT(t), "a", srcConfig("unrelated", "1"), true, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dWait(t, "a-0 started again", func() bool { return in.count(in.taskStarts, "a-0") == 2 })
	var after []statusRecord
	dWait(t, "a RUNNING record after the restart", func() bool {
		after = e.statusRecords("status-task-a-0")
		return len(after) > len(before) && after[len(after)-1].State == "RUNNING"
	})
	for _, r := range after[len(before):] {
		if r.State == "RUNNING" && r.Generation <= g0 {
			t.Fatalf("a-0 RUNNING again in generation %d, the one before the commit (%d): restarted before the rebalance; records %+v", r.Generation, g0, after)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n := in.count(in.taskStarts, "a-0"); n != 2 {
		t.Fatalf("%d starts of a-0, want 2", n)
	}
}

package herder_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/cluster"
	"github.com/sluice-io/sluice/host/herder"
)

// lastStatusValue is the value of the last record of key on the status
// topic: nil for a tombstone; ok is false when there is no record at all.
func (e *dEnv) lastStatusValue(key string) (value []byte, ok bool) {
	e.t.Helper()
	e.eachRecord(dStatusTopic, func(r *kgo.Record) {
		if string(r.Key) == key {
			value, ok = r.Value, true
		}
	})
	return value, ok
}

// Lowering tasks.max stops the surplus task and the leader tombstones its
// status after the rebalance, as Kafka Connect's leader does for every task
// status whose task the config topic no longer has; the remaining task
// keeps running and keeps its status.
func TestDistributedFewerTasksTombstoned(t *testing.T) {
	e, in, h := runningSrc(t)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", srcConfig("tasks.max", "1"), true, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:RUNNING")
	dWait(t, "src-1 stopped", func() bool { return stopped(in.task("src-1")) })
	dWait(t, "status of src-1 tombstoned", func() bool {
		v, ok := e.lastStatusValue("status-task-src-1")
		return ok && v == nil
	})
	if _, err := h.TaskStatus(ctxT(t), herder.TaskID{Connector: "src", Task: 1}); !errors.Is(err, herder.ErrNotFound) {
		t.Fatalf("status of the removed task: %v, want not found", err)
	}
	if v, _ := e.lastStatusValue("status-task-src-0"); v == nil {
		t.Fatal("status of src-0 tombstoned too")
	}
	if st, err := h.TaskStatus(context.Background(), herder.TaskID{Connector: "src", Task: 0}); err != nil || st.State != "RUNNING" {
		t.Fatalf("status of src-0: %+v, %v", st, err)
	}
}

// stopped reports whether the task runner was told to stop.
func stopped(t *fakeTask) bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}

// The leader refuses a non-empty set of task configs for a STOPPED
// connector, as Kafka Connect's does (a connector's owner may send its
// configs just before it hears of the stop); an empty set is taken.
func TestDistributedStoppedRefusesTaskConfigs(t *testing.T) {
	e := newDEnv(t)
	e.group = func(c *cluster.Config) { c.Protocol = cluster.Compatible }
	h := e.start("w1", newFakeInstances(), false)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", srcConfig(), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")
	if err := h.StopConnector(ctxT(t), "src"); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "STOPPED:")
	err := h.PutTaskConfigs(ctxT(t), "src", []map[string]string{{"n": "0"}}, herder.InternalRequest{Body: []byte(`[{"n":"0"}]`)})
	herderErr(t, err, herder.ErrBadRequest, "Cannot submit non-empty set of task configs for stopped connector src")
	// The stop commits an empty set of task configs, which asks for a
	// rebalance; until it is done TaskConfigs answers 409 (stale), as Kafka
	// Connect's herder does, even though the status already says STOPPED.
	var tcs []herder.TaskInfo
	ctx := ctxT(t)
	dWait(t, "task configs of the stopped connector", func() bool {
		tcs, err = h.TaskConfigs(ctx, "src")
		return !errors.Is(err, herder.ErrConflict)
	})
	if err != nil || len(tcs) != 0 {
		t.Fatalf("task configs of the stopped connector: %v, %v", tcs, err)
	}
	if err := h.PutTaskConfigs(ctxT(t), "src", nil, herder.InternalRequest{Body: []byte(`[]`)}); err != nil {
		t.Fatalf("empty set: %v", err)
	}
}

// Deleting a connector also tombstones the records of the topics it used
// (KIP-558), as Kafka Connect's workers reset the active topics of a
// deleted connector: a connector created again under the name starts with
// none.
func TestDistributedDeleteResetsActiveTopics(t *testing.T) {
	e := newDEnv(t)
	h := e.start("w1", newFakeInstances(), false)
	sink := func(topics string) map[string]string {
		return map[string]string{"connector.class": sinkClass, "topics": topics}
	}
	if _, _, err := h.PutConnectorConfig(ctxT(t), "snk", sink("a"), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dWait(t, "topic a recorded", func() bool {
		v, ok := e.lastStatusValue("status-topic-a:connector-snk")
		return ok && v != nil
	})
	if err := h.DeleteConnector(ctxT(t), "snk"); err != nil {
		t.Fatal(err)
	}
	dWait(t, "topic record of a tombstoned", func() bool {
		v, ok := e.lastStatusValue("status-topic-a:connector-snk")
		return ok && v == nil
	})
	if _, _, err := h.PutConnectorConfig(ctxT(t), "snk", sink("b"), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dWait(t, "topic b recorded", func() bool {
		topics, err := h.ConnectorActiveTopics(context.Background(), "snk")
		return err == nil && slices.Contains(topics, "b")
	})
	if topics, _ := h.ConnectorActiveTopics(ctxT(t), "snk"); !slices.Equal(topics, []string{"b"}) {
		t.Fatalf("active topics of the new connector: %v", topics)
	}
}

// Deleting a connector stops its instance and its tasks on every worker
// that runs them, and the leader tombstones the connector's and the tasks'
// statuses.
func TestDistributedDeleteStopsEverywhere(t *testing.T) {
	e := newDEnv(t)
	in1, in2 := newFakeInstances(), newFakeInstances()
	h1 := e.start("w1", in1, true)
	h2 := e.start("w2", in2, true)
	createRetrying(t, h2, "a")
	dStates(t, h1, "a", "RUNNING:RUNNING,RUNNING")
	ids := []string{"a-0", "a-1"}
	runs := map[*fakeInstances]int{}
	for _, id := range ids {
		for _, in := range []*fakeInstances{in1, in2} {
			if in.count(in.taskStarts, id) > 0 {
				runs[in]++
			}
		}
	}
	if runs[in1] == 0 || runs[in2] == 0 {
		t.Fatalf("tasks per worker %v, want both", runs)
	}
	if err := h1.DeleteConnector(ctxT(t), "a"); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		for _, in := range []*fakeInstances{in1, in2} {
			if in.count(in.taskStarts, id) > 0 {
				dWait(t, id+" stopped", func() bool { return stopped(in.task(id)) })
			}
		}
		dWait(t, "status of "+id+" tombstoned", func() bool {
			v, ok := e.lastStatusValue("status-task-" + id)
			return ok && v == nil
		})
	}
	dWait(t, "connector status tombstoned", func() bool {
		v, ok := e.lastStatusValue("status-connector-a")
		return ok && v == nil
	})
	for _, h := range []*herder.Distributed{h1, h2} {
		if _, err := h.ConnectorStatus(ctxT(t), "a"); !errors.Is(err, herder.ErrNotFound) {
			t.Fatalf("status after delete: %v", err)
		}
	}
}

// Concurrent creates of one name on the leader: one is created, the others
// answer 409 "already exists", as on Kafka Connect's single herder thread.
func TestDistributedConcurrentCreatesOneWins(t *testing.T) {
	e := newDEnv(t)
	h := e.start("w1", newFakeInstances(), false)
	const n = 8
	errs := make(chan error, n)
	created := make(chan bool, n)
	for range n {
		go func() {
			_, c, err := h.PutConnectorConfig(ctxT(t), "a", srcConfig(), false, herder.TargetStarted)
			created <- c
			errs <- err
		}()
	}
	var wins, exists int
	for range n {
		if <-created {
			wins++
		}
		err := <-errs
		switch {
		case err == nil:
		case errors.Is(err, herder.ErrAlreadyExists):
			exists++
		default:
			t.Fatalf("create: %v", err)
		}
	}
	if wins != 1 || exists != n-1 {
		t.Fatalf("%d created, %d already exists; want 1 and %d", wins, exists, n-1)
	}
}

// The UNASSIGNED statuses of revoked work are on the status topic when
// OnRevoked returns, before the worker rejoins, as Kafka Connect flushes
// its status store then: written later, they could land after the new
// owner's RUNNING.
func TestDistributedRevokedStatusesFlushed(t *testing.T) {
	e := newDEnv(t)
	h := e.start("w1", newFakeInstances(), false)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "a", srcConfig(), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
	h.OnRevoked(ctxT(t), cluster.Assignment{
		Owned:   cluster.Work{Tasks: []cluster.TaskID{{Connector: "a", Task: 1}}},
		Revoked: cluster.Work{Connectors: []string{"a"}, Tasks: []cluster.TaskID{{Connector: "a", Task: 0}}},
	})
	for _, key := range []string{"status-connector-a", "status-task-a-0"} {
		v, _ := e.lastStatusValue(key)
		var s statusRecord
		if err := json.Unmarshal(v, &s); err != nil || s.State != "UNASSIGNED" {
			t.Fatalf("last %s record when OnRevoked returned: %s", key, v)
		}
	}
}

package herder

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/cluster"
	"github.com/sluice-io/sluice/host/storage"
)

// stubInstances and stubOffsets satisfy the options; the calls below reach
// neither.
type stubInstances struct{ Instances }
type stubOffsets struct{ storage.OffsetStore }

// A round whose config offset this worker cannot reach leaves the work it
// runs as it was: the work added in the round is not taken on (nothing may
// start from a config older than the assignment), and requests that need a
// current config answer 409 until a round succeeds, as Kafka Connect's
// herder does not resolve the rebalance before it has read to the offset.
func TestDistributedBehindAssignmentNotTakenOn(t *testing.T) {
	d := unstartedDistributed(t)
	kept := cluster.TaskID{Connector: "a", Task: 0}
	revoked := cluster.TaskID{Connector: "a", Task: 1}
	added := cluster.TaskID{Connector: "b", Task: 0}
	d.work.owned = cluster.Work{Tasks: []cluster.TaskID{kept, revoked}}
	d.assigned = true

	a := cluster.Assignment{
		Generation:   2,
		ConfigOffset: 10, // the unstarted store is at 0 and cannot read
		Owned:        cluster.Work{Tasks: []cluster.TaskID{kept, added}},
		Added:        cluster.Work{Tasks: []cluster.TaskID{added}},
		Revoked:      cluster.Work{Tasks: []cluster.TaskID{revoked}},
	}
	d.OnRevoked(context.Background(), a)
	d.OnAssigned(context.Background(), a)
	if owned := d.work.owned; !owned.HasTask(kept) || owned.HasTask(revoked) || owned.HasTask(added) {
		t.Fatalf("owned after a round not caught up with: %s", owned)
	}
	if err := d.checkStale(); !errors.Is(err, ErrConflict) {
		t.Fatalf("request while behind: %v, want 409", err)
	}
}

// unstartedDistributed is a distributed herder that is never started: its
// config store is at offset 0 and cannot read, and its rebalance callbacks
// can be called directly.
func unstartedDistributed(t *testing.T) *Distributed {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	d, err := NewDistributed(DistributedOptions{
		StandaloneOptions: StandaloneOptions{WorkerID: "w1", Instances: stubInstances{}, Offsets: stubOffsets{}},
		URL:               "http://w1/",
		Group:             cluster.Config{Client: cl, GroupID: "g"},
		ConfigLog:         storage.LogConfig{Topic: "configs"},
		StatusLog:         storage.LogConfig{Topic: "statuses"},
		SyncTimeout:       50 * time.Millisecond,
		UnsyncBackoff:     time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.cancel)
	return d
}

// A worker that cannot catch up with the config topic rejoins at once the
// first time, then waits one second, doubling up to
// worker.unsync.backoff.ms, so that it does not make the group rebalance
// every few seconds.
func TestUnsyncBackoff(t *testing.T) {
	const limit = 5 * time.Minute
	for rounds, want := range map[int]time.Duration{
		0: 0, 1: 0, 2: time.Second, 3: 2 * time.Second, 4: 4 * time.Second,
		10: 256 * time.Second, 11: limit, 1000: limit,
	} {
		if got := unsyncBackoff(rounds, limit); got != want {
			t.Errorf("round %d: wait %s, want %s", rounds, got, want)
		}
	}
	if got := unsyncBackoff(3, 1500*time.Millisecond); got != 1500*time.Millisecond {
		t.Errorf("limit 1.5s, round 3: wait %s", got)
	}
	if got := unsyncBackoff(5, 0); got != 0 {
		t.Errorf("no limit: wait %s, want none", got)
	}
}

// The rounds in a row that a worker could not catch up in are counted, and
// a round it caught up in starts the count again.
func TestDistributedUnsyncRoundsCounted(t *testing.T) {
	d := unstartedDistributed(t)
	behind := cluster.Assignment{Generation: 2, ConfigOffset: 10}
	d.OnAssigned(context.Background(), behind)
	behind.Generation = 3
	d.OnAssigned(context.Background(), behind)
	d.mu.Lock()
	rounds := d.unsyncRounds
	d.mu.Unlock()
	if rounds != 2 {
		t.Fatalf("%d rounds behind counted, want 2", rounds)
	}
	d.OnAssigned(context.Background(), cluster.Assignment{Generation: 4, ConfigOffset: d.config.Snapshot().Offset()})
	d.mu.Lock()
	rounds, needs := d.unsyncRounds, d.needsRebalance
	d.mu.Unlock()
	if rounds != 0 || needs {
		t.Fatalf("after a round caught up in: %d rounds behind, rebalance needed %v; want 0, false", rounds, needs)
	}
}

// A round assigned from a config offset older than this worker's (the
// leader had not read records this worker has) is not taken on, as Kafka
// Connect's herder does not start the work of a round whose offset differs
// from its own: what runs stays as it was, the added work waits, and
// requests that need a current config answer 409 until the rejoin it asks
// for succeeds.
func TestDistributedAheadOfAssignmentNotTakenOn(t *testing.T) {
	d := unstartedDistributed(t)
	kept := cluster.TaskID{Connector: "a", Task: 0}
	added := cluster.TaskID{Connector: "b", Task: 0}
	d.work.owned = cluster.Work{Tasks: []cluster.TaskID{kept}}
	d.assigned = true

	a := cluster.Assignment{
		Generation:   2,
		ConfigOffset: d.config.Snapshot().Offset() - 1,
		Owned:        cluster.Work{Tasks: []cluster.TaskID{added}},
		Added:        cluster.Work{Tasks: []cluster.TaskID{added}},
	}
	d.OnAssigned(context.Background(), a)
	if owned := d.work.owned; !owned.HasTask(kept) || owned.HasTask(added) || d.work.generation == 2 {
		t.Fatalf("owned %s in generation %d after a round from an older config", owned, d.work.generation)
	}
	if err := d.checkStale(); !errors.Is(err, ErrConflict) {
		t.Fatalf("request while ahead of the assignment: %v, want 409", err)
	}
	d.mu.Lock()
	rounds := d.unsyncRounds
	d.mu.Unlock()
	if rounds != 0 {
		t.Fatalf("%d rounds counted behind; a worker ahead is not behind", rounds)
	}
}

// An eager worker that cannot catch up leaves the group for one second the
// first time, doubling up to worker.unsync.backoff.ms; never for nothing,
// unless the limit is zero.
func TestEagerUnsyncBackoff(t *testing.T) {
	const limit = 5 * time.Minute
	for rounds, want := range map[int]time.Duration{
		1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		9: 256 * time.Second, 10: limit, 1000: limit,
	} {
		if got := eagerUnsyncBackoff(rounds, limit); got != want {
			t.Errorf("round %d: wait %s, want %s", rounds, got, want)
		}
	}
	if got := eagerUnsyncBackoff(1, 500*time.Millisecond); got != 500*time.Millisecond {
		t.Errorf("limit 0.5s, round 1: wait %s", got)
	}
	if got := eagerUnsyncBackoff(3, 0); got != 0 {
		t.Errorf("no limit: wait %s, want none", got)
	}
}

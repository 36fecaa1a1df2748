package herder

import (
	"context"
	"errors"
	"testing"

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
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	d, err := NewDistributed(DistributedOptions{
		StandaloneOptions: StandaloneOptions{WorkerID: "w1", Instances: stubInstances{}, Offsets: stubOffsets{}},
		URL:               "http://w1/",
		Group:             cluster.Config{Client: cl, GroupID: "g"},
		ConfigLog:         storage.LogConfig{Topic: "configs"},
		StatusLog:         storage.LogConfig{Topic: "statuses"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.cancel()
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

package herder_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/herder"
)

// slowStarts makes every connector start take a while, whatever its
// context says, as a plugin that answers its Start late does.
type slowStarts struct {
	herder.Instances
	delay time.Duration
}

func (s *slowStarts) StartConnector(ctx context.Context, name string, class herder.Class, cfg map[string]string, cb herder.ConnectorCallbacks) (herder.ConnectorInstance, error) {
	time.Sleep(s.delay)
	return s.Instances.StartConnector(ctx, name, class, cfg, cb)
}

// A connector reconfigured while its instance is still starting: the
// abandoned start, which gets its instance late and stops it, never runs
// beside the next instance on the same worker.
func TestAbandonedConnectorStartNeverOverlapsTheNext(t *testing.T) {
	e := newDEnv(t)
	live := newLiveWork(t)
	e.wrap = func(in *fakeInstances) herder.Instances {
		return &trackedInstances{Instances: &slowStarts{Instances: in, delay: 400 * time.Millisecond}, l: live, worker: "w1"}
	}
	h := e.start("w1", newFakeInstances(), false)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "slow", srcConfig("tasks.max", "1"), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the first start is under way
	if _, _, err := h.PutConnectorConfig(ctxT(t), "slow", srcConfig("tasks.max", "1", "n", "2"), true, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "slow", "RUNNING:RUNNING")
	if o := live.overlaps(); len(o) != 0 {
		t.Fatalf("two instances at once: %v", o)
	}
}

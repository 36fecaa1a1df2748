package herder_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/cluster"
	"github.com/sluice-io/sluice/host/herder"
)

// Revoked connectors stop together and within the round's deadline: two
// connectors hung in stop cost one deadline, not two ConnectorStopTimeouts
// one after the other (5 s each), so a worker with hung connectors still
// makes the rebalance.
func TestRevokedConnectorsStopInParallelWithinTheRound(t *testing.T) {
	d := newDistributedBlocking(t)
	h, b, _ := d.start(t, "w1")
	for _, name := range []string{"stuck-a", "stuck-b"} {
		if _, _, err := h.PutConnectorConfig(ctxT(t), name, blockingConfig(blockConnStop), false, herder.TargetStarted); err != nil {
			t.Fatal(err)
		}
		dStates(t, h, name, "RUNNING:RUNNING")
	}
	const round = 1500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), round)
	defer cancel()
	start := time.Now()
	h.OnRevoked(ctx, cluster.Assignment{Revoked: cluster.Work{Connectors: []string{"stuck-a", "stuck-b"}}})
	took := time.Since(start)
	if n := b.count(blockConnStop); n != 2 {
		t.Fatalf("%d connector stops blocked, want 2", n)
	}
	if took > round+time.Second {
		t.Fatalf("OnRevoked took %s with a round deadline of %s", took, round)
	}
}

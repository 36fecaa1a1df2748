package herder_test

import (
	"fmt"
	"testing"

	"github.com/sluice-io/sluice/host/herder"
)

// While the sink's consumer group still has members, alter and reset refuse
// with Kafka Connect's own text, which names the operation and the cluster.
func TestSinkOffsetsRefusedWhileGroupHasMembers(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "snk", map[string]string{"connector.class": sinkClass, "topics": "t"}, false, herder.TargetStopped); err != nil {
		t.Fatal(err)
	}
	f.groups.mu.Lock()
	f.groups.members = true
	f.groups.mu.Unlock()
	tail := " either because its tasks haven't stopped completely yet or the connector was resumed before the request to %s its offsets could be successfully completed. If the connector is in a stopped state, this operation can be safely retried. If it doesn't eventually succeed, the Connect cluster may need to be restarted to get rid of the zombie sink tasks."
	body := &herder.ConnectorOffsets{Offsets: []herder.ConnectorOffset{
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": 0}, Offset: map[string]any{"kafka_offset": 5}},
	}}
	_, err := f.h.AlterConnectorOffsets(ctx, "snk", body)
	if want := "Failed to alter consumer group offsets for connector snk" + fmt.Sprintf(tail, "alter"); err == nil || err.Error() != want {
		t.Fatalf("alter: got %v\nwant %s", err, want)
	}
	_, err = f.h.ResetConnectorOffsets(ctx, "snk")
	if want := "Failed to reset consumer group offsets for connector snk" + fmt.Sprintf(tail, "reset"); err == nil || err.Error() != want {
		t.Fatalf("reset: got %v\nwant %s", err, want)
	}
	if got, _ := f.groups.Offsets(ctx, "connect-snk"); len(got) != 0 {
		t.Fatalf("group offsets changed while members were present: %v", got)
	}
}

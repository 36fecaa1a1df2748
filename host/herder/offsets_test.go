package herder_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/host/herder"
	"github.com/twmb/franz-go/pkg/kerr"
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

// Partitions and offsets hold primitive values only; Kafka Connect refuses a
// nested map or list before the connector is asked, with its own text.
func TestSourceOffsetsRejectNestedValues(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, herder.TargetStopped); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		off  herder.ConnectorOffset
		want string
	}{
		{herder.ConnectorOffset{Partition: map[string]any{"file": "a"}, Offset: map[string]any{"pos": map[string]any{"line": 1}}},
			"Offsets may only contain primitive types as values, but field pos contains MAP"},
		{herder.ConnectorOffset{Partition: map[string]any{"files": []any{"a", "b"}}, Offset: map[string]any{"pos": 1}},
			"Offsets may only contain primitive types as values, but field files contains ARRAY"},
	}
	for _, c := range cases {
		_, err := f.h.AlterConnectorOffsets(ctx, "src", &herder.ConnectorOffsets{Offsets: []herder.ConnectorOffset{c.off}})
		if err == nil || err.Error() != c.want {
			t.Fatalf("got %v, want %q", err, c.want)
		}
	}
	if stored, _ := f.store.All(ctx, "src"); len(stored) != 0 {
		t.Fatalf("stored %q", stored)
	}
	f.in.mu.Lock()
	asked := len(f.in.altered)
	f.in.mu.Unlock()
	if asked != 0 {
		t.Fatalf("connector asked about %d invalid offsets", asked)
	}
	// Null values inside the maps are primitives.
	ok := herder.ConnectorOffset{Partition: map[string]any{"file": "a"}, Offset: map[string]any{"pos": 3, "note": nil}}
	if _, err := f.h.AlterConnectorOffsets(ctx, "src", &herder.ConnectorOffsets{Offsets: []herder.ConnectorOffset{ok}}); err != nil {
		t.Fatal(err)
	}
	if stored, _ := f.store.All(ctx, "src"); len(stored) != 1 || string(stored[0].Offset) != `{"note":null,"pos":3}` {
		t.Fatalf("stored %q", stored)
	}
}

// racingGroups reports an empty group, as when the members check runs just
// before a task rejoins, and then fails as the broker does for a group that
// has members again.
type racingGroups struct {
	herder.ConsumerGroups
	alterErr, deleteErr error
}

func (g racingGroups) HasMembers(context.Context, string) (bool, error) { return false, nil }
func (g racingGroups) Alter(context.Context, string, map[string]map[int32]int64, map[string][]int32) error {
	return fmt.Errorf("commit offsets: %w", g.alterErr)
}
func (g racingGroups) Delete(context.Context, string) error { return g.deleteErr }

// The broker's refusal (a member joined after the check) gets the same answer
// as the check's.
func TestSinkOffsetsBrokerRefusalForMembers(t *testing.T) {
	for _, alterErr := range []error{kerr.UnknownMemberID, kerr.GroupSubscribedToTopic} {
		f := newFixtureWith(t, func(o *herder.StandaloneOptions) {
			o.Groups = racingGroups{ConsumerGroups: o.Groups, alterErr: alterErr, deleteErr: kerr.NonEmptyGroup}
		})
		ctx := ctxT(t)
		if _, _, err := f.h.PutConnectorConfig(ctx, "snk", map[string]string{"connector.class": sinkClass, "topics": "t"}, false, herder.TargetStopped); err != nil {
			t.Fatal(err)
		}
		body := &herder.ConnectorOffsets{Offsets: []herder.ConnectorOffset{
			{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": 0}, Offset: map[string]any{"kafka_offset": 5}},
		}}
		_, err := f.h.AlterConnectorOffsets(ctx, "snk", body)
		if want := "Failed to alter consumer group offsets for connector snk either because its tasks haven't stopped completely yet"; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("alter with %v: got %v", alterErr, err)
		}
		_, err = f.h.ResetConnectorOffsets(ctx, "snk")
		if want := "Failed to reset consumer group offsets for connector snk either because its tasks haven't stopped completely yet"; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("reset: got %v", err)
		}
	}
}

// Deleting a connector leaves its offsets stored (as Kafka Connect leaves
// them in the offsets topic or file); a connector created again under the
// name sees them.
func TestSourceOffsetsOutliveDelete(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, herder.TargetStopped); err != nil {
		t.Fatal(err)
	}
	body := &herder.ConnectorOffsets{Offsets: []herder.ConnectorOffset{{Partition: map[string]any{"file": "a"}, Offset: map[string]any{"pos": 42}}}}
	if _, err := f.h.AlterConnectorOffsets(ctx, "src", body); err != nil {
		t.Fatal(err)
	}
	if err := f.h.DeleteConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	if stored, _ := f.store.All(ctx, "src"); len(stored) != 1 || string(stored[0].Offset) != `{"pos":42}` {
		t.Fatalf("stored after delete %q", stored)
	}
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, herder.TargetStopped); err != nil {
		t.Fatal(err)
	}
	got, err := f.h.ConnectorOffsets(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Offsets) != 1 || got.Offsets[0].Partition["file"] != "a" || fmt.Sprint(got.Offsets[0].Offset["pos"]) != "42" {
		t.Fatalf("offsets of the new connector %+v", got.Offsets)
	}
}

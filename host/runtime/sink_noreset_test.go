package runtime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// commitGroupOffsets commits offsets (partition of topic → offset) for
// group, as an earlier run of the connector would have.
func commitGroupOffsets(t *testing.T, c *kfake.Cluster, group, topic string, offsets map[int32]int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var os kadm.Offsets
	for p, o := range offsets {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	resp, err := kadm.NewClient(cl).CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// noResetSinkTask is a sink task on topic a with
// consumer.auto.offset.reset=none, as ConsumerOptions maps it.
func noResetSinkTask(t *testing.T, c *kfake.Cluster, f *fakeSink, l Listener) Task {
	t.Helper()
	cs, err := ConsumerOptions(map[string]string{"auto.offset.reset": "none"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sinkConfig(c, f, l, "a")
	cfg.ConsumerOpts = append(cfg.ConsumerOpts, cs.Opts...)
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// With auto.offset.reset=none and no committed offset for a partition,
// Kafka Connect's consumer throws NoOffsetForPartitionException and the
// task fails with it; it does not consume from anywhere.
func TestSinkNoResetWithoutCommittedOffsetFails(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 3)
	f := newFakeSink(&events{})
	l := newRecListener()
	task := noResetSinkTask(t, c, f, l)
	wait := runTask(t, task)
	l.await(t, "failed")
	err := wait()
	if err == nil {
		t.Fatal("Run returned nil for a failed task")
	}
	l.mu.Lock()
	failure, trace := l.err, l.trace
	l.mu.Unlock()
	msg := failure.Error() + "\n" + trace
	for _, want := range []string{"a-0", "auto.offset.reset=none", "NoOffsetForPartitionException"} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure %q does not name %q", msg, want)
		}
	}
	if got := f.deliveredList(); len(got) != 0 {
		t.Errorf("%d records delivered from a partition with no committed offset", len(got))
	}
}

// With auto.offset.reset=none and committed offsets, the task consumes
// from them.
func TestSinkNoResetRunsFromCommittedOffsets(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 2})
	produceTo(t, c, "a", 0, 0, 3)
	produceTo(t, c, "a", 1, 0, 3)
	commitGroupOffsets(t, c, "connect-snk", "a", map[int32]int64{0: 1, 1: 2})
	f := newFakeSink(&events{})
	l := newRecListener()
	task := noResetSinkTask(t, c, f, l)
	wait := runTask(t, task)
	eventually(t, "delivery", func() bool { return len(f.deliveredList()) >= 3 })
	time.Sleep(200 * time.Millisecond)
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range f.deliveredList() {
		got = append(got, fmt.Sprintf("%s-%d@%d", r.Topic, r.Partition, r.Offset))
	}
	slices.Sort(got)
	if want := []string{"a-0@1", "a-0@2", "a-1@2"}; !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	if slices.Contains(l.list(), "failed") {
		t.Errorf("states %v", l.list())
	}
}

// With auto.offset.reset=none, a committed offset that is out of range
// fails the task (Kafka's OffsetOutOfRangeException) instead of being
// reset.
func TestSinkNoResetOutOfRangeFails(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 3)
	commitGroupOffsets(t, c, "connect-snk", "a", map[int32]int64{0: 100})
	f := newFakeSink(&events{})
	l := newRecListener()
	task := noResetSinkTask(t, c, f, l)
	wait := runTask(t, task)
	l.await(t, "failed")
	if err := wait(); err == nil {
		t.Fatal("Run returned nil for a failed task")
	}
	l.mu.Lock()
	msg := l.err.Error() + "\n" + l.trace
	l.mu.Unlock()
	for _, want := range []string{"a-0", "auto.offset.reset=none", "out of range"} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure %q does not name %q", msg, want)
		}
	}
	if got := f.deliveredList(); len(got) != 0 {
		t.Errorf("%d records delivered", len(got))
	}
}

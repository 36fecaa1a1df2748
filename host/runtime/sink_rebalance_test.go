package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// A rewind the plugin asks for in Open (a sink that keeps its own offsets)
// takes effect before the first Put of those partitions: at the start, and
// for the partitions a rebalance brings while the task runs.
func TestSinkRewindInOpen(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"r": 4})
	for p := range int32(4) {
		produceTo(t, c, "r", p, 0, 20)
	}
	start := func(task int) (*fakeSink, Task, func() error) {
		f := newFakeSink(&events{})
		f.openHook = func(opened []*pluginv1.TopicPartition) {
			var offs []*pluginv1.PartitionOffset
			for _, p := range opened {
				offs = append(offs, &pluginv1.PartitionOffset{Topic: p.Topic, Partition: p.Partition, Offset: 15})
			}
			if _, err := f.workerServer().Rewind(context.Background(), &pluginv1.RewindRequest{Offsets: offs}); err != nil {
				t.Error(err)
			}
		}
		cfg := sinkConfig(c, f, nil, "r")
		cfg.ID.Task = task
		tk, err := NewSinkTask(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return f, tk, runTask(t, tk)
	}
	f1, task1, wait1 := start(0)
	eventually(t, "task 1 delivers from the rewind", func() bool { return len(f1.deliveredList()) == 20 })
	// Task 1 commits the partitions it gives up at 20; task 2 opens them
	// there and rewinds them to 15 again.
	f2, task2, wait2 := start(1)
	eventually(t, "the rebalance", func() bool { return len(f2.openList()) == 2 && len(f1.openList()) == 2 })
	for p := range int32(4) {
		produceTo(t, c, "r", p, 20, 5)
	}
	eventually(t, "the new records", func() bool { return len(f1.deliveredList())+len(f2.deliveredList()) == 50 })
	time.Sleep(200 * time.Millisecond)
	task1.Stop()
	task2.Stop()
	if err := wait1(); err != nil {
		t.Fatal(err)
	}
	if err := wait2(); err != nil {
		t.Fatal(err)
	}
	for _, r := range append(f1.deliveredList(), f2.deliveredList()...) {
		if r.OriginalOffset < 15 {
			t.Errorf("delivered %s-%d@%d, before the rewind in Open", r.OriginalTopic, r.OriginalPartition, r.OriginalOffset)
		}
	}
	counts2 := deliveredCounts(f2.deliveredList())
	if len(counts2) != 20 {
		t.Errorf("task 2 delivered %d distinct records, want offsets 15..24 of its 2 partitions: %v", len(counts2), counts2)
	}
	for _, tp := range f2.openList() {
		if counts2[fmt.Sprintf("%s@15", tp)] != 1 {
			t.Errorf("task 2 did not deliver %s from the rewind: %v", tp, counts2)
		}
	}
}

// A partition the plugin paused stays paused across a rebalance that keeps
// it assigned (cooperative-sticky: it is neither revoked nor reopened); the
// partitions the rebalance moves start unpaused with their new task.
func TestSinkPluginPauseSurvivesRebalance(t *testing.T) {
	pauseSurvivesRebalance(t, nil)
}

// pauseSurvivesRebalance runs a sink task over four partitions, has its
// plugin pause them all, lets a second task join (mod chooses the
// assignor), and checks that the first task is put nothing of the
// partitions it keeps until its plugin resumes them, while the second is
// put its partitions' records at once.
func pauseSurvivesRebalance(t *testing.T, mod func(*SinkConfig)) {
	t.Helper()
	c := newCluster(t, 1, map[string]int32{"r": 4})
	f1 := newFakeSink(&events{})
	task1, wait1 := startSinkTask(t, c, f1, 0, mod, "r")
	eventually(t, "task 1 opens every partition", func() bool { return len(f1.openList()) == 4 })
	var all []*pluginv1.TopicPartition
	for p := range int32(4) {
		all = append(all, &pluginv1.TopicPartition{Topic: "r", Partition: p})
	}
	if _, err := f1.workerServer().Pause(context.Background(), &pluginv1.PartitionsRequest{Partitions: all}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pause applied", func() bool {
		st := task1.(*sinkTask)
		st.mu.Lock()
		defer st.mu.Unlock()
		return len(st.pluginPaused) == 4
	})
	f2 := newFakeSink(&events{})
	task2, wait2 := startSinkTask(t, c, f2, 1, mod, "r")
	eventually(t, "the rebalance", func() bool { return len(f2.openList()) == 2 && len(f1.openList()) == 2 })
	for p := range int32(4) {
		produceTo(t, c, "r", p, 0, 5)
	}
	eventually(t, "task 2 delivers its partitions", func() bool { return len(f2.deliveredList()) == 10 })
	time.Sleep(300 * time.Millisecond)
	if n := len(f1.deliveredList()); n != 0 {
		t.Fatalf("task 1 delivered %d records of partitions it paused (it has %v)", n, f1.openList())
	}
	if _, err := f1.workerServer().Resume(context.Background(), &pluginv1.PartitionsRequest{Partitions: all}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "task 1 delivers once resumed", func() bool { return len(f1.deliveredList()) == 10 })
	task1.Stop()
	task2.Stop()
	if err := wait1(); err != nil {
		t.Fatal(err)
	}
	if err := wait2(); err != nil {
		t.Fatal(err)
	}
}

// A commit the coordinator does not answer within offset.flush.timeout.ms
// is given up and logged, not fatal; the next interval commits again.
func TestSinkCommitTimeoutIsRetried(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 10)
	held, release := holdFirstCommit(t, c)
	f := newFakeSink(&events{})
	l := newRecListener()
	cfg := sinkConfig(c, f, l, "a")
	cfg.OffsetFlushInterval = 100 * time.Millisecond
	cfg.OffsetFlushTimeout = 300 * time.Millisecond
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "a commit held", func() bool { return held.Load() == 1 })
	time.Sleep(time.Second) // several timeouts
	if f := task.(*sinkTask).failed(); f != nil {
		t.Fatalf("a commit timeout failed the task: %v", f)
	}
	release()
	eventually(t, "a later commit", func() bool { return committedOffsets(t, c, "connect-snk")["a-0"] == 10 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got := l.list(); len(got) != 2 || got[1] != "stopped" {
		t.Errorf("states %v", got)
	}
}

// A commit the coordinator refuses (REBALANCE_IN_PROGRESS) is logged, not
// taken for done, and made again at the next interval.
func TestSinkFailedCommitIsRetried(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 10)
	var commits atomic.Int32
	c.ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if commits.Add(1) > 2 {
			return nil, nil, false
		}
		r := req.(*kmsg.OffsetCommitRequest)
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.RebalanceInProgress.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	f := newFakeSink(&events{})
	cfg := sinkConfig(c, f, nil, "a")
	cfg.OffsetFlushInterval = 100 * time.Millisecond
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "a commit after two refused", func() bool {
		return commits.Load() > 2 && committedOffsets(t, c, "connect-snk")["a-0"] == 10
	})
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// A rewind the plugin asks for during a Put applies before the rebalance
// that waited for that Put commits the partitions it revokes, as Kafka
// Connect applies rewinds at the start of the poll that lets the rebalance
// in: the revocation then commits the rewind's offset, and the records the
// plugin asked for again are delivered again (here an eager assignor
// revokes both partitions). It used to be applied after the rebalance, to
// partitions no longer assigned, and was lost: the revocation committed
// what had been delivered.
func TestSinkRewindDuringPutBeforeRevocation(t *testing.T) {
	var armed atomic.Bool
	rewindBeforeRevocation(t, func(both bool) (bool, error) {
		if !both || !armed.CompareAndSwap(false, true) {
			time.Sleep(20 * time.Millisecond) // the next batch is staged meanwhile
			return false, nil
		}
		return true, nil
	})
}

// rewindBeforeRevocation runs two sink tasks of one group, with an eager
// assignor, over a topic of two partitions of 40 records. Task 1's Put asks
// act, told whether task 1 has been put records of both partitions by now,
// what to do: answer an error, return, or (rewind) let task 2 join, rewind
// both partitions to 0 while the rebalance waits for this Put, and return.
// Offset 0 of each partition must then be delivered exactly twice: once,
// and again from the rewind, which the revocation committed.
func rewindBeforeRevocation(t *testing.T, act func(both bool) (rewind bool, err error)) {
	t.Helper()
	c := newCluster(t, 1, map[string]int32{"a": 2})
	produceTo(t, c, "a", 0, 0, 40)
	produceTo(t, c, "a", 1, 0, 40)
	f1, f2 := newFakeSink(&events{}), newFakeSink(&events{})
	blocked := make(chan struct{}, 1)
	var mu sync.Mutex
	seen := map[int32]bool{}
	join := make(chan struct{})
	f1.putHook = func(_ context.Context, _ int, recs []*data.SinkRecord) error {
		mu.Lock()
		for _, r := range recs {
			seen[r.OriginalPartition] = true
		}
		both := len(seen) == 2
		mu.Unlock()
		rewind, err := act(both)
		if !rewind {
			return err
		}
		close(join)
		time.Sleep(200 * time.Millisecond)
		if _, err := f1.workerServer().Rewind(context.Background(), &pluginv1.RewindRequest{Offsets: []*pluginv1.PartitionOffset{
			{Topic: "a", Partition: 0, Offset: 0}, {Topic: "a", Partition: 1, Offset: 0}}}); err != nil {
			t.Error(err)
		}
		select {
		case <-blocked:
		case <-time.After(10 * time.Second):
			t.Error("the rebalance never waited for the Put")
		}
		return nil
	}
	eager := func(cfg *SinkConfig) {
		*cfg = smallBatches(*cfg, 5)
		cfg.RetryBackoff = 50 * time.Millisecond
		cfg.Balancers = []kgo.GroupBalancer{kgo.RangeBalancer()}
		cfg.ConsumerOpts = append(cfg.ConsumerOpts, kgo.HeartbeatInterval(100*time.Millisecond))
	}
	task1, wait1 := startSinkTask(t, c, f1, 0, func(cfg *SinkConfig) {
		eager(cfg)
		cfg.ConsumerOpts = append(cfg.ConsumerOpts, kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) {
			select {
			case blocked <- struct{}{}:
			default:
			}
		}))
	}, "a")
	<-join
	task2, wait2 := startSinkTask(t, c, f2, 1, eager, "a")
	eventually(t, "the last records delivered after the rebalance", func() bool {
		counts := deliveredCounts(append(f1.deliveredList(), f2.deliveredList()...))
		return counts["a-0@39"] >= 1 && counts["a-1@39"] >= 1 && len(f2.openList()) == 1
	})
	time.Sleep(200 * time.Millisecond)
	counts := deliveredCounts(append(f1.deliveredList(), f2.deliveredList()...))
	for p := range 2 {
		if n := counts[fmt.Sprintf("a-%d@0", p)]; n != 2 {
			t.Errorf("a-%d@0 delivered %d times, want twice: once, then again from the rewind (committed %v)", p, n, committedOffsets(t, c, "connect-snk"))
		}
	}
	task1.Stop()
	task2.Stop()
	if err := wait1(); err != nil {
		t.Fatal(err)
	}
	if err := wait2(); err != nil {
		t.Fatal(err)
	}
}

// With an eager assignor a rebalance revokes every partition and assigns
// them again; those the plugin paused that come back to the task stay
// paused, as Kafka Connect keeps the task's paused partitions that are
// still assigned once the rebalance is over (they were forgotten with the
// revocation, and the task was put records of partitions it had paused).
func TestSinkPluginPauseSurvivesEagerRebalance(t *testing.T) {
	pauseSurvivesRebalance(t, func(cfg *SinkConfig) { cfg.Balancers = []kgo.GroupBalancer{kgo.RangeBalancer()} })
}

// The same holds for a rewind asked for during the redelivery of a batch
// whose Put answered ABORTED: the redelivery runs between the poll that
// ended the backoff and the next one, which lets the waiting rebalance in,
// and the rewind must apply before it.
func TestSinkRewindDuringRedeliveryBeforeRevocation(t *testing.T) {
	var aborted, redelivered atomic.Bool
	rewindBeforeRevocation(t, func(both bool) (bool, error) {
		switch {
		case both && aborted.CompareAndSwap(false, true):
			return false, wire.Retriable("busy")
		case aborted.Load() && redelivered.CompareAndSwap(false, true):
			return true, nil
		}
		return false, nil
	})
}

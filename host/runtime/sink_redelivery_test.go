package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// A batch waiting for redelivery pauses every partition. When nothing is
// left of it (its partitions rewound, revoked or lost meanwhile), the
// partitions are resumed, as Kafka Connect clears pausedForRedelivery once
// its batch is empty: the task goes on from where it now reads, instead of
// staying paused for good.
func TestSinkEmptiedRedeliveryResumes(t *testing.T) {
	for _, how := range []string{"rewind", "lost", "revoked"} {
		t.Run(how, func(t *testing.T) {
			c := newCluster(t, 1, map[string]int32{"a": 2})
			produceTo(t, c, "a", 0, 0, 10)
			f := newFakeSink(&events{})
			var aborted atomic.Int32
			f.putHook = func(_ context.Context, call int, recs []*data.SinkRecord) error {
				if call == 1 {
					aborted.Store(1)
					return wire.Retriable("busy")
				}
				return nil
			}
			cfg := sinkConfig(c, f, nil, "a")
			cfg.RetryBackoff = time.Hour // the batch is never redelivered as it was
			task, err := NewSinkTask(cfg)
			if err != nil {
				t.Fatal(err)
			}
			wait := runTask(t, task)
			st := task.(*sinkTask)
			eventually(t, "the first Put aborted and its batch kept", func() bool {
				st.mu.Lock()
				defer st.mu.Unlock()
				return aborted.Load() == 1 && st.pending != nil
			})
			switch how {
			case "rewind":
				if _, err := f.workerServer().Rewind(context.Background(), &pluginv1.RewindRequest{
					Offsets: []*pluginv1.PartitionOffset{{Topic: "a", Partition: 0, Offset: 3}},
				}); err != nil {
					t.Fatal(err)
				}
			case "lost":
				st.onLost(context.Background(), nil, map[string][]int32{"a": {0}})
			case "revoked":
				st.onRevoked(context.Background(), nil, map[string][]int32{"a": {0}})
			}
			produceTo(t, c, "a", 1, 0, 5)
			eventually(t, "a-1 delivered", func() bool { return deliveredCounts(f.deliveredList())["a-1@4"] == 1 })
			if how == "rewind" {
				eventually(t, "a-0 delivered from the rewind", func() bool { return deliveredCounts(f.deliveredList())["a-0@9"] == 1 })
				counts := deliveredCounts(f.deliveredList())
				for o := range 10 {
					want := 0
					if o >= 3 {
						want = 1
					}
					if got := counts[fmt.Sprintf("a-0@%d", o)]; got != want {
						t.Errorf("a-0@%d delivered %d times, want %d", o, got, want)
					}
				}
			}
			task.Stop()
			if err := wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A PreCommit that fails sends the partitions back to their last committed
// offsets, and what was delivered since is delivered again (Kafka Connect
// rewinds to lastCommittedOffsets). A partition the group never committed
// goes back to where the task began reading it (Kafka Connect's position at
// assignment), and one the plugin rewound to where it rewound it: the
// plugin may have lost what it was given since, so nothing may be skipped.
func TestSinkFailedPreCommitRedelivers(t *testing.T) {
	for _, tc := range []struct {
		name string
		// committed: records committed before the failing PreCommit
		// (0: none); rewind: a rewind before it (-1: none).
		committed, rewind int
		// from: where a-0 is read again after the failure.
		from int
	}{
		{name: "never committed", rewind: -1, from: 0},
		{name: "committed", committed: 10, rewind: -1, from: 10},
		{name: "rewound after the commit", committed: 10, rewind: 4, from: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 1, map[string]int32{"a": 1})
			produceTo(t, c, "a", 0, 0, 10)
			ev := &events{}
			f := newFakeSink(ev)
			var fail atomic.Bool
			f.preCommitErr = func([]*pluginv1.PartitionOffset) error {
				if fail.CompareAndSwap(true, false) {
					return &wire.Error{Kind: wire.KindFatal, Message: "flush failed"}
				}
				return nil
			}
			task, err := NewSinkTask(sinkConfig(c, f, nil, "a"))
			if err != nil {
				t.Fatal(err)
			}
			wait := runTask(t, task)
			w := f.workerServer
			eventually(t, "delivery", func() bool { return len(f.deliveredList()) == 10 })
			total := 10
			if tc.committed > 0 {
				if _, err := w().RequestCommit(context.Background(), &pluginv1.RequestCommitRequest{}); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the commit", func() bool { return committedOffsets(t, c, "connect-snk")["a-0"] == int64(tc.committed) })
				produceTo(t, c, "a", 0, 10, 10)
				total += 10
				eventually(t, "delivery after the commit", func() bool { return len(f.deliveredList()) == total })
			}
			if tc.rewind >= 0 {
				if _, err := w().Rewind(context.Background(), &pluginv1.RewindRequest{
					Offsets: []*pluginv1.PartitionOffset{{Topic: "a", Partition: 0, Offset: int64(tc.rewind)}},
				}); err != nil {
					t.Fatal(err)
				}
				total += 20 - tc.rewind
				eventually(t, "delivery after the rewind", func() bool { return len(f.deliveredList()) == total })
			}
			before := deliveredCounts(f.deliveredList())
			fail.Store(true)
			if _, err := w().RequestCommit(context.Background(), &pluginv1.RequestCommitRequest{}); err != nil {
				t.Fatal(err)
			}
			end := 10 + tc.committed
			if tc.rewind >= 0 {
				end = 20
			}
			total += end - tc.from
			eventually(t, "the failed PreCommit", func() bool { return !fail.Load() })
			deadline := time.Now().Add(3 * time.Second)
			for len(f.deliveredList()) < total && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			after := deliveredCounts(f.deliveredList())
			for o := range end {
				want := before[fmt.Sprintf("a-0@%d", o)]
				if o >= tc.from {
					want++
				}
				if got := after[fmt.Sprintf("a-0@%d", o)]; got != want {
					t.Errorf("a-0@%d delivered %d times, want %d", o, got, want)
				}
			}
			task.Stop()
			if err := wait(); err != nil {
				t.Fatal(err)
			}
			if got := committedOffsets(t, c, "connect-snk"); got["a-0"] != int64(end) {
				t.Errorf("committed %v, want a-0=%d", got, end)
			}
		})
	}
}

// Pausing the task commits what was delivered, as Kafka Connect asks for a
// commit when a sink task pauses, rather than an interval later.
func TestSinkPauseCommits(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 10)
	ev := &events{}
	f := newFakeSink(ev)
	l := newRecListener()
	task, err := NewSinkTask(sinkConfig(c, f, l, "a")) // commits an hour apart
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "delivery", func() bool { return len(f.deliveredList()) == 10 })
	if n := ev.lastIndex("precommit"); n >= 0 {
		t.Fatalf("a commit before the pause: %v", ev.list())
	}
	task.Pause()
	l.await(t, "paused")
	eventually(t, "the commit on pause", func() bool { return committedOffsets(t, c, "connect-snk")["a-0"] == 10 })
	task.Resume()
	l.await(t, "running")
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(ev.list(), "\n"), "precommit"); n != 2 {
		t.Errorf("%d PreCommits, want 2 (pause, stop): %v", n, ev.list())
	}
}

// A record the error handler skipped (reported: logged, dead-lettered) is
// reported once, as in Kafka Connect, though the batch it was read in while
// a Put ran is thrown away and read again (here the plugin asks to resume
// a partition meanwhile): read again, it is skipped without a second
// report, and its offset still counts.
func TestSinkSkippedRecordReportedOnceAcrossRereads(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 20)
	f := newFakeSink(&events{})
	var asked atomic.Bool
	f.putHook = func(_ context.Context, call int, _ []*data.SinkRecord) error {
		if call == 1 {
			time.Sleep(200 * time.Millisecond) // the next batch is read and converted meanwhile
			asked.Store(true)
			_, err := f.workerServer().Resume(context.Background(), &pluginv1.PartitionsRequest{Partitions: []*pluginv1.TopicPartition{{Topic: "a", Partition: 0}}})
			return err
		}
		return nil
	}
	h := &retryingHandler{reports: 1}
	cfg := smallBatches(sinkConfig(c, f, nil, "a"), 5)
	cfg.Errors = h
	var converted7 atomic.Int32
	cfg.Transforms = transformFunc(func(r *data.Record) (*data.Record, error) {
		if r.Value == "a-0-7" {
			converted7.Add(1)
			return nil, errors.New("cannot transform")
		}
		return r, nil
	})
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "delivery", func() bool { return deliveredCounts(f.deliveredList())["a-0@19"] == 1 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if converted7.Load() < 2 {
		t.Fatalf("a-0@7 went through the transform %d times; the test wants it read again", converted7.Load())
	}
	seen, _ := h.list()
	if len(seen) != 1 || seen[0].Consumed.Offset != 7 {
		t.Errorf("%d reports, want one of a-0@7: %+v", len(seen), seen)
	}
	counts := deliveredCounts(f.deliveredList())
	for o := range 20 {
		want := 1
		if o == 7 {
			want = 0
		}
		if got := counts[fmt.Sprintf("a-0@%d", o)]; got != want {
			t.Errorf("a-0@%d delivered %d times, want %d", o, got, want)
		}
	}
	if got := committedOffsets(t, c, "connect-snk"); got["a-0"] != 20 {
		t.Errorf("committed %v, want a-0=20", got)
	}
}

// What the plugin asks for during PreCommit (a sink whose flush failed
// rewinds) applies before the next Put, as Kafka Connect applies rewinds at
// the start of the poll after the commit: the batch read ahead during the
// previous Put does not go out first.
func TestSinkRewindDuringPreCommit(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 30)
	f := newFakeSink(&events{})
	var rewound atomic.Bool
	var mu sync.Mutex
	var afterRewind []int64 // first offset of each Put after the rewind
	f.putHook = func(_ context.Context, call int, recs []*data.SinkRecord) error {
		if rewound.Load() {
			mu.Lock()
			afterRewind = append(afterRewind, recs[0].OriginalOffset)
			mu.Unlock()
		}
		if call == 2 {
			if _, err := f.workerServer().RequestCommit(context.Background(), &pluginv1.RequestCommitRequest{}); err != nil {
				t.Error(err)
			}
		}
		time.Sleep(30 * time.Millisecond) // the next batch is staged meanwhile
		return nil
	}
	f.preCommitErr = func([]*pluginv1.PartitionOffset) error {
		if rewound.CompareAndSwap(false, true) {
			if _, err := f.workerServer().Rewind(context.Background(), &pluginv1.RewindRequest{
				Offsets: []*pluginv1.PartitionOffset{{Topic: "a", Partition: 0, Offset: 0}},
			}); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	task, err := NewSinkTask(smallBatches(sinkConfig(c, f, nil, "a"), 5))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "redelivery from the rewind", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(afterRewind) > 0
	})
	eventually(t, "all delivered", func() bool { return deliveredCounts(f.deliveredList())["a-0@29"] == 1 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if afterRewind[0] != 0 {
		t.Errorf("the first Put after the rewind starts at a-0@%d, want the rewound 0 (Puts after it start at %v)", afterRewind[0], afterRewind)
	}
}

// blockingReporter is an ErrorHandler that reports (a dead letter queue)
// and holds each report until release is closed.
type blockingReporter struct {
	entered chan struct{}
	release chan struct{}
}

func (h *blockingReporter) Reports() bool { return true }

func (h *blockingReporter) Handle(ctx context.Context, _ ErrantRecord) error {
	h.entered <- struct{}{}
	select {
	case <-h.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// A commit waits for the errant record reports in progress when it starts
// (a plugin may report from a goroutine of its own, after Put returned), as
// Kafka Connect awaits the reporter's futures before committing: offsets
// never pass a record that is not yet in the dead letter queue.
func TestSinkCommitWaitsForErrantReports(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 10)
	ev := &events{}
	f := newFakeSink(ev)
	h := &blockingReporter{entered: make(chan struct{}, 1), release: make(chan struct{})}
	reported := make(chan error, 1)
	f.putHook = func(_ context.Context, call int, recs []*data.SinkRecord) error {
		if call == 1 {
			r := recs[3]
			go func() {
				_, err := f.workerServer().ReportErrantRecord(context.Background(), &pluginv1.ReportErrantRecordRequest{
					Topic: r.OriginalTopic, Partition: r.OriginalPartition, Offset: r.OriginalOffset, Error: "bad row"})
				reported <- err
			}()
			<-h.entered
		}
		return nil
	}
	cfg := sinkConfig(c, f, nil, "a")
	cfg.Errors = h
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "delivery", func() bool { return len(f.deliveredList()) == 10 })
	if _, err := f.workerServer().RequestCommit(context.Background(), &pluginv1.RequestCommitRequest{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if i := ev.lastIndex("precommit"); i >= 0 {
		t.Errorf("PreCommit while a report was in progress: %v", ev.list())
	}
	close(h.release)
	if err := <-reported; err != nil {
		t.Fatal(err)
	}
	eventually(t, "the commit", func() bool { return committedOffsets(t, c, "connect-snk")["a-0"] == 10 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// A paused task whose batch waits for redelivery waits for Resume when the
// backoff passes, idle: the poll's deadline was the past retry time, so
// each poll ended at once and the paused task spun a core until resumed.
func TestSinkPausedRedeliveryWaitsIdle(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 10)
	f := newFakeSink(&events{})
	f.putHook = func(_ context.Context, call int, _ []*data.SinkRecord) error {
		if call == 1 {
			return wire.Retriable("busy")
		}
		return nil
	}
	l := newRecListener()
	cfg := sinkConfig(c, f, l, "a")
	cfg.RetryBackoff = 100 * time.Millisecond
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "the aborted Put", func() bool { return f.putCalls() == 1 })
	task.Pause()
	l.await(t, "paused")
	time.Sleep(200 * time.Millisecond) // the backoff passes while paused
	before := cpuTime()
	time.Sleep(500 * time.Millisecond)
	if used := cpuTime() - before; used > 150*time.Millisecond {
		t.Errorf("the paused task used %s of CPU in 500 ms", used)
	}
	if n := f.putCalls(); n != 1 {
		t.Errorf("%d Puts with records while paused, want only the aborted one", n)
	}
	task.Resume()
	eventually(t, "the redelivery", func() bool { return len(f.deliveredList()) == 10 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

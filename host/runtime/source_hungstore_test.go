package runtime

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/storage"
	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// hungStore is an offset store that does not answer (the offsets topic's
// leader is gone): Set returns only when its context ends.
type hungStore struct {
	*memOffsets
}

func (h *hungStore) Set(ctx context.Context, _ string, _ []storage.OffsetEntry) error {
	<-ctx.Done()
	h.ev.add("set abandoned")
	return ctx.Err()
}

// A stop, graceful or hard, that finds the flusher waiting on an offset
// store that does not answer abandons that write at the drain deadline (or
// at once for a hard stop), as every call still running then: the drain's
// own last write is the one that may outlive the deadline, by
// offset.flush.timeout.ms. Waiting for the flusher's write to time out
// first held Run for up to two of those past the deadline.
func TestSourceStopAbandonsAHungOffsetWrite(t *testing.T) {
	for _, hard := range []bool{false, true} {
		c := newCluster(t, 1, map[string]int32{"t": 3})
		ev := &events{}
		f := newFakeSource(ev)
		cfg := sourceConfig(c, f, nil, nil)
		cfg.Offsets = &hungStore{memOffsets: newMemOffsets(ev)}
		cfg.OffsetFlushInterval = 20 * time.Millisecond
		cfg.OffsetFlushTimeout = 3 * time.Second
		cfg.ShutdownTimeout = 300 * time.Millisecond
		task, err := NewSourceTask(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- task.Run(ctx) }()
		eventually(t, "records acknowledged", func() bool { return task.(*sourceTask).tracker.acked() > 0 })
		time.Sleep(100 * time.Millisecond) // the flusher is waiting on the store
		start := time.Now()
		if hard {
			cancel()
		} else {
			task.Stop()
		}
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return")
		}
		cancel()
		if took, most := time.Since(start), cfg.ShutdownTimeout+cfg.OffsetFlushTimeout+time.Second; took > most {
			t.Errorf("hard stop %v: Run returned %s after the stop, want at most %s (the drain deadline and one offset write)", hard, took, most)
		}
		if f.kills() != 1 {
			t.Errorf("hard stop %v: plugin killed %d times, want 1", hard, f.kills())
		}
	}
}

// A task that fails while the flusher waits on an offset store that does
// not answer ends within the shutdown timeout and one offset write, as a
// stop does: its final offset commit (Kafka Connect's, bounded by the
// shutdown timeout) does not wait for the flusher's write to time out, nor
// add a full write of its own before the last one.
func TestSourceFailureAbandonsAHungOffsetWrite(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	var failAt atomic.Int64
	f.pollErr = func(n int) error {
		if at := failAt.Load(); at > 0 && int64(n) >= at {
			return &wire.Error{Kind: wire.KindFatal, Message: "source gone"}
		}
		return nil
	}
	cfg := sourceConfig(c, f, nil, nil)
	cfg.Offsets = &hungStore{memOffsets: newMemOffsets(ev)}
	cfg.OffsetFlushInterval = 20 * time.Millisecond
	cfg.OffsetFlushTimeout = 3 * time.Second
	cfg.ShutdownTimeout = 300 * time.Millisecond
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "records acknowledged", func() bool { return task.(*sourceTask).tracker.acked() > 0 })
	time.Sleep(100 * time.Millisecond) // the flusher is waiting on the store
	start := time.Now()
	failAt.Store(int64(f.pollCount() + 1))
	if err := wait(); err == nil {
		t.Fatal("Run = nil, want the Poll's failure")
	}
	if took, most := time.Since(start), cfg.ShutdownTimeout+cfg.OffsetFlushTimeout+time.Second; took > most {
		t.Errorf("Run returned %s after the failure, want at most %s (the shutdown timeout and one offset write)", took, most)
	}
	if f.kills() != 1 {
		t.Errorf("plugin killed %d times, want 1", f.kills())
	}
}

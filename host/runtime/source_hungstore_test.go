package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/storage"
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

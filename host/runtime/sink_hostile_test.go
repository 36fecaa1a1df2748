package runtime

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// A retry backoff too long for a time.Duration (a Java task's
// context.timeout(Long.MAX_VALUE): wait for as long as it takes) is the
// longest wait there is, not a multiplication that wraps around to a
// negative backoff and redelivers the batch at once, again and again.
func TestSinkHugeRetryBackoffWaits(t *testing.T) {
	for _, ms := range []int64{math.MaxInt64, math.MaxInt64 / 1000} {
		c := newCluster(t, 1, map[string]int32{"a": 1})
		produceTo(t, c, "a", 0, 0, 10)
		f := newFakeSink(&events{})
		f.putHook = func(_ context.Context, call int, _ []*data.SinkRecord) error {
			if call == 1 {
				if _, err := f.workerServer().SetRetryBackoff(context.Background(), &pluginv1.SetRetryBackoffRequest{BackoffMs: ms}); err != nil {
					t.Error(err)
				}
				return wire.Retriable("come back much later")
			}
			return nil
		}
		cfg := sinkConfig(c, f, nil, "a")
		cfg.RetryBackoff = 10 * time.Millisecond
		task, err := NewSinkTask(cfg)
		if err != nil {
			t.Fatal(err)
		}
		wait := runTask(t, task)
		eventually(t, "the first Put", func() bool { return f.putCalls() >= 1 })
		time.Sleep(300 * time.Millisecond)
		if n := f.putCalls(); n != 1 {
			t.Errorf("backoff %d ms: %d Puts with records within 300 ms, want 1 (the batch waits)", ms, n)
		}
		task.Stop()
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if n := len(f.deliveredList()); n != 0 {
			t.Errorf("backoff %d ms: %d records delivered, want none", ms, n)
		}
	}
}

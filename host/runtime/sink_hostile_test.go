package runtime

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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

// A group coordinator that does not answer the LeaveGroup of a stopping
// sink task keeps the task no longer than task.shutdown.graceful.timeout.ms
// (or the leave's short grace): the leave is bounded like the rest of the
// stop.
func TestSinkStopBoundedBySlowLeaveGroup(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 10)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c.ControlKey(int16(kmsg.LeaveGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() {
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
		})
		return nil, nil, false
	})
	f := newFakeSink(&events{})
	cfg := sinkConfig(c, f, nil, "a")
	cfg.ShutdownTimeout = 500 * time.Millisecond
	// franz-go's Close gives the final client-metrics push a fixed second,
	// which kfake answers on the connection the held LeaveGroup blocks.
	cfg.ConsumerOpts = append(cfg.ConsumerOpts, kgo.DisableClientMetrics())
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "delivery", func() bool { return len(f.deliveredList()) == 10 })
	start := time.Now()
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > max(cfg.ShutdownTimeout, leaveGrace)+500*time.Millisecond {
		t.Errorf("Run returned %s after Stop, graceful timeout %s, leave grace %s", took, cfg.ShutdownTimeout, leaveGrace)
	}
	if got := committedOffsets(t, c, "connect-snk"); got["a-0"] != 10 {
		t.Errorf("committed %v, want a-0=10", got)
	}
}

// A sink task whose drain ran out of time (a Put hung past the deadline)
// still leaves its group, within the leave's grace, so that its partitions
// go to another member at once rather than after a session timeout.
func TestSinkTimedOutDrainStillLeaves(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 10)
	var leaves atomic.Int32
	c.ControlKey(int16(kmsg.LeaveGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		leaves.Add(1)
		return nil, nil, false
	})
	f := newFakeSink(&events{})
	f.putHook = func(ctx context.Context, _ int, _ []*data.SinkRecord) error {
		<-ctx.Done()
		return &wire.Error{Kind: wire.KindTimeout, Message: "put abandoned"}
	}
	cfg := sinkConfig(c, f, nil, "a")
	cfg.ShutdownTimeout = 300 * time.Millisecond
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "the hung Put", func() bool { return f.putCalls() == 1 })
	start := time.Now()
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > cfg.ShutdownTimeout+leaveGrace+500*time.Millisecond {
		t.Errorf("Run returned %s after Stop", took)
	}
	if n := leaves.Load(); n != 1 {
		t.Errorf("%d LeaveGroup requests, want 1", n)
	}
}

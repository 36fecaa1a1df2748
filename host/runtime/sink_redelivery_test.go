package runtime

import (
	"context"
	"fmt"
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

package runtime

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// backoffHandler is an error handler that, like errorhandler.Operator with
// errors.retry.timeout > 0 and errors.tolerance=all, waits a backoff, tries
// the record's Retry once if it has one, and otherwise skips it.
type backoffHandler struct {
	backoff time.Duration
	seen    chan string // the key of each record handed over

	mu      sync.Mutex
	records []ErrantRecord
}

func (h *backoffHandler) Handle(ctx context.Context, r ErrantRecord) error {
	h.mu.Lock()
	h.records = append(h.records, r)
	h.mu.Unlock()
	h.seen <- string(r.Source.Key.(data.Raw))
	if r.Retry == nil {
		return nil
	}
	select {
	case <-time.After(h.backoff):
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err := r.Retry(ctx)
	_ = err // a failed retry is skipped too
	return nil
}

func (h *backoffHandler) Reports() bool { return true }

func (h *backoffHandler) list() []ErrantRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ErrantRecord(nil), h.records...)
}

// refuseProduceOf makes the broker answer NOT_ENOUGH_REPLICAS to the first
// times produce requests that carry key (uncompressed records only).
func refuseProduceOf(c *kfake.Cluster, key string, times int) *atomic.Int32 {
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		carries := false
		for _, t := range pr.Topics {
			for _, p := range t.Partitions {
				carries = carries || bytes.Contains(p.Records, []byte(key))
			}
		}
		if !carries || refused.Load() >= int32(times) {
			return nil, nil, false
		}
		refused.Add(1)
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range pr.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.NotEnoughReplicas.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	return &refused
}

// A record whose produce the broker refused (past the client's own
// retries) is not written again by the worker behind later records of
// its partition: the partition holds the records in the order they were
// polled, as Kafka Connect, which does not retry a failed send (with
// errors.tolerance=all it reports and skips it), leaves them. The refused
// record is reported, not lost silently, and the offsets go past it only
// once every record before is acknowledged.
func TestSourceRefusedProduceKeepsPartitionOrder(t *testing.T) {
	const n = 10
	c := newCluster(t, 1, map[string]int32{"t": 1})
	refused := refuseProduceOf(c, "k3", 1)
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = n
	f.recordAcks = true
	f.gen = func(seq uint64) *data.SourceRecord {
		r := defaultSourceRecord(seq)
		r.Partition = 0
		r.SourcePartition = map[string]any{"file": "f"}
		return r
	}
	h := &backoffHandler{backoff: 300 * time.Millisecond, seen: make(chan string, n)}
	// Records after k3 are polled only once k3 was refused for good, so
	// they are produced while the handler waits out its backoff.
	f.pollHook = func(*pluginv1.PollRequest) {
		f.mu.Lock()
		next := f.nextSeq
		f.mu.Unlock()
		if next == 4 {
			select {
			case k := <-h.seen:
				h.seen <- k
			case <-time.After(5 * time.Second):
			}
		}
	}
	st := newMemOffsets(ev)
	cfg := sourceConfig(c, f, st, nil)
	cfg.MaxPollRecords = 1
	cfg.OffsetFlushInterval = 20 * time.Millisecond
	cfg.ProducerOpts = append(cfg.ProducerOpts, kgo.RecordRetries(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.DisableIdempotentWrite())
	cfg.Errors = h
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "all acknowledged", func() bool {
		return task.(*sourceTask).tracker.acked() == n
	})
	// Let a retry, if any, land.
	time.Sleep(500 * time.Millisecond)
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if refused.Load() != 1 {
		t.Fatalf("broker refused %d requests, want 1", refused.Load())
	}
	reported := map[string]bool{}
	for _, r := range h.list() {
		if r.Stage != StageProduce {
			t.Errorf("report at stage %s, want %s", r.Stage, StageProduce)
		}
		reported[string(r.Source.Key.(data.Raw))] = true
	}
	if !reported["k3"] {
		t.Errorf("k3 was not reported; reports: %v", reported)
	}
	written := map[uint64]bool{}
	for _, ra := range f.recordAckList() {
		written[ra.Seq] = ra.Written
	}
	// Every record is written or reported (the broker refused k3 with the
	// records batched with it): none is lost silently.
	var want []string
	for seq := uint64(1); seq <= n; seq++ {
		k := fmt.Sprintf("k%d", seq)
		if !written[seq] && !reported[k] {
			t.Errorf("record %s written=%v reported=%v", k, written[seq], reported[k])
		}
		if written[seq] {
			want = append(want, k)
		}
	}
	var got []string
	for _, r := range readAll(t, c, "t", len(want)) {
		got = append(got, string(r.Key))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("partition holds %v, want %v (poll order)", got, want)
	}
	if o := st.get(`{"file":"f"}`); o != fmt.Sprintf(`{"o":%d}`, n) {
		t.Errorf("stored offset %s, want o=%d", o, n)
	}
}

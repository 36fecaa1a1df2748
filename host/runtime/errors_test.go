package runtime

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// retryingHandler calls Retry up to retries times and records what it saw;
// a record still failing after that is skipped.
type retryingHandler struct {
	retries int
	reports int
	// retriesFor, when set, overrides retries per record.
	retriesFor func(ErrantRecord) int

	mu      sync.Mutex
	seen    []ErrantRecord
	results []error
}

func (h *retryingHandler) Handle(ctx context.Context, r ErrantRecord) error {
	h.mu.Lock()
	h.seen = append(h.seen, r)
	h.mu.Unlock()
	retries := h.retries
	if h.retriesFor != nil {
		retries = h.retriesFor(r)
	}
	for range retries {
		if r.Retry == nil {
			break
		}
		_, err := r.Retry(ctx)
		h.mu.Lock()
		h.results = append(h.results, err)
		h.mu.Unlock()
		if err == nil {
			return nil
		}
	}
	return nil
}

func (h *retryingHandler) Reports() bool { return h.reports > 0 }

func (h *retryingHandler) list() ([]ErrantRecord, []error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ErrantRecord(nil), h.seen...), append([]error(nil), h.results...)
}

// sinkChain is a Transformer that is also a SinkTransformer, as
// transforms.ChainT is: it fails every record's first two attempts with a
// retriable error and then tags the value with the record's offset.
type sinkChain struct {
	attempts sync.Map // offset → *atomic.Int32
	applies  atomic.Int32
}

func (c *sinkChain) Apply(r *data.Record) (*data.Record, error) {
	c.applies.Add(1)
	return r, nil
}

func (c *sinkChain) ApplySink(r *data.SinkRecord) (*data.Record, error) {
	n, _ := c.attempts.LoadOrStore(r.Offset, new(atomic.Int32))
	if n.(*atomic.Int32).Add(1) <= 2 {
		return nil, &wire.Error{Kind: wire.KindRetriable, Message: "not yet"}
	}
	out := r.Record
	out.Value = r.Value.(string) + "@" + string(rune('0'+r.Offset))
	return &out, nil
}

// A sink transform that offers ApplySink is called with the offset, and a
// record it fails is delivered once a Retry gets through: the handler's
// nil then means "go on", not "skip".
func TestSinkRetryRecoversAndUsesApplySink(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 3)
	f := newFakeSink(&events{})
	chain := &sinkChain{}
	h := &retryingHandler{retries: 5}
	cfg := sinkConfig(c, f, nil, "a")
	cfg.Transforms = chain
	cfg.Errors = h
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "delivery", func() bool { return len(f.deliveredList()) == 3 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	for i, r := range f.deliveredList() {
		if want := "a-0-" + string(rune('0'+i)) + "@" + string(rune('0'+i)); r.Value != want {
			t.Errorf("record %d value %v, want %s", i, r.Value, want)
		}
	}
	if chain.applies.Load() != 0 {
		t.Errorf("Apply called %d times; sinks must use ApplySink", chain.applies.Load())
	}
	seen, results := h.list()
	if len(seen) != 3 || len(results) != 6 {
		t.Fatalf("%d reports, %d retries; want 3 and 6 (one failing, one passing retry each)", len(seen), len(results))
	}
	for _, r := range seen {
		if r.Stage != StageTransformation || r.Retry == nil || wire.KindOf(r.Err) != wire.KindRetriable {
			t.Errorf("report %+v", r)
		}
	}
}

// A handler that reports nothing (no DLQ, no error log) makes the sink's
// ReportErrantRecord answer UNIMPLEMENTED: the connector has no reporter.
func TestSinkNoReporterWithoutReporting(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 1)
	f := newFakeSink(&events{})
	var code atomic.Value
	f.putHook = func(_ context.Context, _ int, recs []*data.SinkRecord) error {
		_, err := f.workerServer().ReportErrantRecord(context.Background(), &pluginv1.ReportErrantRecordRequest{
			Topic: recs[0].Topic, Partition: recs[0].Partition, Offset: recs[0].Offset, Error: "bad"})
		code.Store(status.Code(err))
		return nil
	}
	cfg := sinkConfig(c, f, nil, "a")
	cfg.Errors = &retryingHandler{}
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "put", func() bool { return code.Load() != nil })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got := code.Load().(codes.Code); got != codes.Unimplemented {
		t.Fatalf("ReportErrantRecord answered %v, want Unimplemented", got)
	}
}

// A record Kafka refuses goes to the handler off the producer goroutine,
// without a Retry: the worker does not write it again (that would put it
// behind later records of its partition), as Kafka Connect does not. A
// handler that tolerates it has it acknowledged as not written, and the
// records around it flow.
func TestSourceProduceFailureReportedAndSkipped(t *testing.T) {
	const n = 10
	c := newCluster(t, 1, map[string]int32{"t": 3})
	f := newFakeSource(&events{})
	f.limit = n
	f.recordAcks = true
	cfg := sourceConfig(c, f, newMemOffsets(&events{}), nil)
	cfg.ProducerOpts = append(cfg.ProducerOpts, kgo.ProducerBatchMaxBytes(4096))
	// Records 3 and 7 are too large for a batch.
	cfg.Transforms = transformFunc(func(r *data.Record) (*data.Record, error) {
		out := *r
		if key := string(r.Key.(data.Raw)); key == "k3" || key == "k7" {
			out.Value = data.Raw(strings.Repeat("x", 10_000))
		}
		return &out, nil
	})
	h := &retryingHandler{retries: 1}
	cfg.Errors = h
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "all acknowledged", func() bool { return task.(*sourceTask).tracker.acked() == n })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	written := map[uint64]bool{}
	for _, ra := range f.recordAckList() {
		written[ra.Seq] = ra.Written
	}
	for seq := uint64(1); seq <= n; seq++ {
		if written[seq] != (seq != 3 && seq != 7) {
			t.Errorf("record %d written=%v", seq, written[seq])
		}
	}
	seenRecs, results := h.list()
	if len(seenRecs) != 2 || len(results) != 0 {
		t.Fatalf("reports %d, retry results %v; want 2 reports and no retry", len(seenRecs), results)
	}
	keys := map[string]bool{}
	for _, r := range seenRecs {
		keys[string(r.Source.Key.(data.Raw))] = true
		if r.Stage != StageProduce || !strings.Contains(r.Err.Error(), "KAFKA_PRODUCE") ||
			r.Source.SourceOffset == nil || r.Retry != nil {
			t.Errorf("report %+v", r)
		}
	}
	if !keys["k3"] || !keys["k7"] {
		t.Errorf("reported %v, want k3 and k7", keys)
	}
	if recs := readAll(t, c, "t", n-2); len(recs) != n-2 {
		t.Fatalf("%d records on the topic, want %d", len(recs), n-2)
	}
}

package pluginsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// recyclingTask hands out per records per Poll, numbered from 0, each with
// a raw value "v<i>" and an offset {"i": i}, and takes records back
// (RecycleRecords), scribbling over them as a task that reuses them would.
type recyclingTask struct {
	per     int
	polling atomic.Bool

	mu       sync.Mutex
	next     int
	polled   []*data.SourceRecord // in order, not yet given back
	recycled []int                // numbers given back, in order
	failure  string               // the first broken rule seen
	panics   bool
	calls    int // RecycleRecords calls
}

func (r *recyclingTask) Start(context.Context, SourceTaskContext, map[string]string) error {
	return nil
}
func (r *recyclingTask) Stop(context.Context) error { return nil }

func (r *recyclingTask) Poll(context.Context) ([]*data.SourceRecord, error) {
	r.polling.Store(true)
	defer r.polling.Store(false)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*data.SourceRecord, r.per)
	for i := range out {
		out[i] = &data.SourceRecord{Record: data.Record{Topic: "t", Partition: data.NoPartition,
			Value: data.Raw(fmt.Sprintf("v%d", r.next))}, SourceOffset: map[string]any{"i": int64(r.next)}}
		r.next++
	}
	r.polled = append(r.polled, out...)
	return out, nil
}

func (r *recyclingTask) RecycleRecords(recs []*data.SourceRecord) {
	if r.polling.Load() {
		r.fail("RecycleRecords during Poll")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.panics {
		// Half done, as a task that breaks midway leaves it: the first
		// record scribbled over.
		copy(recs[0].Value.(data.Raw), "XX")
		panic("recycler broke")
	}
	for _, rec := range recs {
		if len(r.polled) == 0 || r.polled[0] != rec {
			r.failure = "a record given back out of order, twice, or not polled"
			return
		}
		r.polled = r.polled[1:]
		r.recycled = append(r.recycled, int(rec.SourceOffset["i"].(int64)))
		// What reuse does: the record's bytes and maps change.
		copy(rec.Value.(data.Raw), "XX")
		rec.SourceOffset["i"] = int64(-1)
	}
}

func (r *recyclingTask) fail(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failure == "" {
		r.failure = s
	}
}

func (r *recyclingTask) state() (recycled []int, failure string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.recycled...), r.failure
}

func (r *recyclingTask) recycleCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// takeAnswer reads a Poll answer in shared memory as the worker does and
// checks that it holds records from..from+n-1 of recyclingTask, intact.
func takeAnswer(t *testing.T, region *wire.SharedRegion, resp *pluginv1.PollResponse, from, n int) {
	t.Helper()
	if resp.GetShared() == nil {
		t.Fatalf("records %d-%d: not in shared memory", from, from+n-1)
	}
	var out pluginv1.PollResponse
	if err := region.Take(resp.GetShared(), &out); err != nil {
		t.Fatal(err)
	}
	recs, err := wire.DecodeSourceRecords(out.GetSchemas(), out.GetRecords())
	if err != nil || len(recs) != n || out.GetFirstSeq() != uint64(from+1) {
		t.Fatalf("records %d-%d: %d records from seq %d, %v", from, from+n-1, len(recs), out.GetFirstSeq(), err)
	}
	for i, r := range recs {
		if string(r.Value.(data.Raw)) != fmt.Sprintf("v%d", from+i) || r.SourceOffset["i"] != int64(from+i) {
			t.Fatalf("record %d reached the worker as %s %v", from+i, r.Value, r.SourceOffset)
		}
	}
}

// Records answered through shared memory come back to the task, in order,
// once, never during Poll and only after the worker's copy is written:
// what the task then does to them does not reach the worker. Task batches
// split over answers (max_records smaller than a batch) come back in
// parts.
func TestRecordsAnsweredInSharedMemoryAreRecycled(t *testing.T) {
	task := &recyclingTask{per: 70}
	offer, region := sharedOffer(t, 1<<20)
	c := serve(t, sourceClass(func() SourceTask { return task }))
	ctx := callCtx(t)
	if _, err := c.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source", SharedMemory: offer}); err != nil {
		t.Fatal(err)
	}
	got := 0
	for range 8 {
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 50, TimeoutMs: 1000})
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		takeAnswer(t, region, resp, got, 50)
		got += 50
		recycled, failure := task.state()
		if failure != "" {
			t.Fatal(failure)
		}
		// Everything answered so far, and nothing more.
		if len(recycled) != got || recycled[len(recycled)-1] != got-1 {
			t.Fatalf("after %d records answered, %d came back (last %v)", got, len(recycled), recycled[len(recycled)-1:])
		}
	}
}

// Records answered inline (no shared memory, or a batch the region cannot
// hold) and records of a task with CommitRecord never come back.
func TestRecordsNotRecycled(t *testing.T) {
	ctx := callCtx(t)
	poll := func(c *wire.Clients) *pluginv1.PollResponse {
		t.Helper()
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 50, TimeoutMs: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	check := func(name string, task *recyclingTask) {
		t.Helper()
		if recycled, failure := task.state(); len(recycled) != 0 || failure != "" {
			t.Fatalf("%s: %d records came back (%s)", name, len(recycled), failure)
		}
	}

	inline := &recyclingTask{per: 30}
	c := serve(t, sourceClass(func() SourceTask { return inline }))
	startSource(t, c)
	for range 3 {
		if resp := poll(c); resp.GetShared() != nil || len(resp.GetRecords()) != 50 {
			t.Fatalf("inline answer: %v", resp)
		}
	}
	check("without shared memory", inline)

	small := &recyclingTask{per: 30}
	offer, _ := sharedOffer(t, 64)
	c = serve(t, sourceClass(func() SourceTask { return small }))
	if _, err := c.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source", SharedMemory: offer}); err != nil {
		t.Fatal(err)
	}
	if resp := poll(c); resp.GetShared() != nil || len(resp.GetRecords()) != 50 {
		t.Fatalf("a batch larger than the region: %v", resp.GetShared())
	}
	check("larger than the region", small)

	acking := &ackingRecycler{recyclingTask: recyclingTask{per: 30}}
	offer, _ = sharedOffer(t, 1<<20)
	c = serve(t, sourceClass(func() SourceTask { return acking }))
	if _, err := c.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source", SharedMemory: offer}); err != nil {
		t.Fatal(err)
	}
	if resp := poll(c); resp.GetShared() == nil {
		t.Fatal("not in shared memory")
	}
	check("with CommitRecord", &acking.recyclingTask)
}

// A RecycleRecords that panics does not fail the Poll it follows: the
// answer, already in shared memory, reaches the worker whole; the panic is
// logged once, at error level, with its stack; later answers go out as
// usual and RecycleRecords is not called again.
func TestPanickingRecyclerIsTurnedOff(t *testing.T) {
	ctx := callCtx(t)
	var logs lockedBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace, JSONFormat: true})
	broken := &recyclingTask{per: 50, panics: true}
	offer, region := sharedOffer(t, 1<<20)
	c := serveLogged(t, log, sourceClass(func() SourceTask { return broken }))
	if _, err := c.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source", SharedMemory: offer}); err != nil {
		t.Fatal(err)
	}
	for k := range 4 {
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 50, TimeoutMs: 1000})
		if err != nil {
			t.Fatalf("poll %d: %v", k, err)
		}
		takeAnswer(t, region, resp, 50*k, 50)
	}
	if n := broken.recycleCalls(); n != 1 {
		t.Fatalf("RecycleRecords called %d times, want once", n)
	}
	if recycled, failure := broken.state(); len(recycled) != 0 || failure != "" {
		t.Fatalf("%d records came back (%s)", len(recycled), failure)
	}
	var errs []map[string]any
	for line := range strings.Lines(logs.String()) {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if e["@level"] == "error" {
			errs = append(errs, e)
		}
	}
	if len(errs) != 1 {
		t.Fatalf("%d error lines logged, want 1: %s", len(errs), logs.String())
	}
	if e := errs[0]; e["panic"] != "recycler broke" || !strings.Contains(fmt.Sprint(e["stack"]), "RecycleRecords") {
		t.Fatalf("logged %v", e)
	}
}

// lockedBuffer is a bytes.Buffer safe for the logger's writes from RPC
// goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type ackingRecycler struct{ recyclingTask }

func (a *ackingRecycler) CommitRecord(context.Context, *data.SourceRecord, *RecordMetadata) error {
	return nil
}

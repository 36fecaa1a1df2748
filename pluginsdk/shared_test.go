package pluginsdk

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// takePoll reads a Poll answer as the worker does: from the region when it
// is there, as it is otherwise.
func takePoll(t *testing.T, region *wire.SharedRegion, resp *pluginv1.PollResponse) (*pluginv1.PollResponse, bool) {
	t.Helper()
	if resp.GetShared() == nil {
		return resp, false
	}
	if len(resp.GetRecords()) != 0 || len(resp.GetSchemas()) != 0 || resp.GetFirstSeq() != 0 {
		t.Fatalf("a shared answer with inline fields: %v", resp)
	}
	var out pluginv1.PollResponse
	if err := region.Take(resp.GetShared(), &out); err != nil {
		t.Fatal(err)
	}
	return &out, true
}

// Poll answers go into the shared region, the same answers as inline:
// every record once, in order, numbered from 1, acknowledgements reaching
// CommitRecord with the task's own records. A batch too large for the
// region goes inline.
func TestPollAnswersThroughSharedMemory(t *testing.T) {
	offer, region := sharedOffer(t, 32<<10)
	task := &ackTask{}
	var polls atomic.Int64
	// 30 small records, then 100 of 1 KB: 40 of them are too many for a
	// 32 KiB region.
	small := counting(30, 7, "v", &polls)().(*funcSource)
	large := counting(130, 100, strings.Repeat("x", 1000), &polls)().(*funcSource)
	n := 0
	task.poll = func(ctx context.Context) ([]*data.SourceRecord, error) {
		if n < 30 {
			recs, err := small.poll(ctx)
			n += len(recs)
			return recs, err
		}
		recs, err := large.poll(ctx)
		for len(recs) > 0 && recs[0].Key.(int64) < 30 {
			recs = recs[1:]
		}
		return recs, err
	}
	c := serve(t, sourceClass(func() SourceTask { return task }))
	ctx := callCtx(t)
	st, err := c.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source", SharedMemory: offer})
	if err != nil || !st.GetSharedMemory() || !st.GetRecordAcks() {
		t.Fatalf("start: %v %v", st, err)
	}
	var all []int64
	var acks []*pluginv1.RecordAck
	next := uint64(1)
	shared, inline := 0, 0
	for len(all) < 130 {
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 40, MaxBytes: 8 << 20, TimeoutMs: 1000,
			Acks: &pluginv1.AckBatch{Records: acks}})
		if err != nil {
			t.Fatal(err)
		}
		acks = nil
		out, viaRegion := takePoll(t, region, resp)
		if viaRegion {
			shared++
		} else {
			inline++
		}
		if out.GetFirstSeq() != next || len(out.GetRecords()) == 0 {
			t.Fatalf("%d records from seq %d, want some from %d", len(out.GetRecords()), out.GetFirstSeq(), next)
		}
		// The answer is the one Proto gives, byte for byte.
		recs, err := wire.DecodeSourceRecords(out.GetSchemas(), out.GetRecords())
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			all = append(all, r.Key.(int64))
			acks = append(acks, &pluginv1.RecordAck{Seq: next + uint64(i), Written: true, Topic: "t", Offset: r.Key.(int64)})
		}
		next += uint64(len(recs))
	}
	if !slices.Equal(all, seqRange(0, 130)) {
		t.Fatalf("keys %v, want 0..129 in order", all)
	}
	if shared < 2 || inline < 1 {
		t.Fatalf("%d answers through the region, %d inline; want both", shared, inline)
	}
	if _, err := c.SourceTask.Ack(ctx, &pluginv1.AckRequest{Acks: &pluginv1.AckBatch{Records: acks}}); err != nil {
		t.Fatal(err)
	}
	task.mu.Lock()
	defer task.mu.Unlock()
	if len(task.calls) != 130 || task.calls[0] != "key=0 t/0@0" || task.calls[129] != "key=129 t/0@129" {
		t.Fatalf("%d CommitRecord calls: %q ...", len(task.calls), task.calls[:min(3, len(task.calls))])
	}
}

// An answer placed in the region is the inline answer's encoding.
func TestSharedPollAnswerIsTheInlineOne(t *testing.T) {
	recs := batchRecords()
	b := newPollBatch(1000, 8<<20)
	if rest, err := b.add(recs); err != nil || len(rest) != 0 {
		t.Fatal(err)
	}
	region := wire.NewSharedRegion(make([]byte, 1<<20), nil)
	inline, err := (&sourceInstance{}).answer(b, 42)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&sourceInstance{shared: region}).answer(b, 42)
	if err != nil || resp.GetShared() == nil {
		t.Fatalf("not placed: %v", err)
	}
	var out pluginv1.PollResponse
	if err := region.Take(resp.GetShared(), &out); err != nil {
		t.Fatal(err)
	}
	want, _ := proto.MarshalOptions{Deterministic: true}.Marshal(inline)
	got, _ := proto.MarshalOptions{Deterministic: true}.Marshal(&out)
	if !bytes.Equal(got, want) || len(inline.GetRecords()) != len(recs) {
		t.Fatal("the shared answer differs from the inline one")
	}
}

// Put batches come out of the region straight into records: the task gets
// what was sent, may keep it after the region is reused, and bad batches
// are refused with the errors they had before.
func TestPutThroughSharedMemory(t *testing.T) {
	offer, region, file := sharedFile(t, 1<<20)
	var got [][]*data.SinkRecord
	c := serve(t, sinkClass(func() SinkTask {
		return &funcSink{put: func(_ context.Context, recs []*data.SinkRecord) error {
			got = append(got, recs)
			return nil
		}}
	}))
	ctx := callCtx(t)
	st, err := c.SinkTask.Start(ctx, &pluginv1.SinkTaskStartRequest{ConnectorClass: "test.Sink", SharedMemory: offer})
	if err != nil || !st.GetSharedMemory() {
		t.Fatalf("start: %v %v", st, err)
	}
	s := data.StructBuilder().Name("row").Field("id", data.Int64Schema).Field("name", data.OptionalStringSchema).MustBuild()
	batch := func(base int64) []*data.SinkRecord {
		var out []*data.SinkRecord
		for i := base; i < base+20; i++ {
			out = append(out, &data.SinkRecord{Record: data.Record{Topic: "t", Partition: 1,
				KeySchema: data.OptionalBytesSchema, Key: []byte("k" + itoa(i)),
				ValueSchema: s, Value: data.NewStruct(s).MustPut("id", i).MustPut("name", "n"+itoa(i)),
				Headers: data.Headers{{Key: "h", Value: data.Raw("r" + itoa(i))}}}, Offset: i})
		}
		return out
	}
	put := func(recs []*data.SinkRecord) error {
		schemas, ps, err := wire.EncodeSinkRecords(recs)
		if err != nil {
			t.Fatal(err)
		}
		ref, ok := region.Place(&pluginv1.PutRequest{Schemas: schemas, Records: ps})
		if !ok {
			t.Fatal("not placed")
		}
		_, err = c.SinkTask.Put(ctx, &pluginv1.PutRequest{Shared: ref})
		return err
	}
	for _, base := range []int64{0, 100, 200} {
		if err := put(batch(base)); err != nil {
			t.Fatal(err)
		}
	}
	// Every batch as it was sent, though the region now holds the last.
	for i, base := range []int64{0, 100, 200} {
		want := batch(base)
		if len(got[i]) != len(want) {
			t.Fatalf("batch %d: %d records", i, len(got[i]))
		}
		for j, r := range got[i] {
			w := want[j]
			if r.Offset != w.Offset || !bytes.Equal(r.Key.([]byte), w.Key.([]byte)) || !data.ValueEqual(r.Value, w.Value) ||
				!data.SchemaEqual(r.ValueSchema, s) || string(r.Headers[0].Value.(data.Raw)) != "r"+itoa(w.Offset) {
				t.Fatalf("batch %d record %d: %+v", i, j, r)
			}
		}
	}
	checkBadSharedPuts(t, c, region, file)
	if len(got) != 3 {
		t.Fatalf("the task got %d batches, want 3", len(got))
	}
}

// borrowingSink is a funcSink that borrows its records.
type borrowingSink struct {
	funcSink
	borrows func() bool
}

func (b *borrowingSink) BorrowsRecords() bool { return b.borrows() }

// A task that borrows its records gets them decoded in place: the same
// records, but bytes that point into the region (a key kept after Put
// changes when the next batch is written) and strings that do not (kept,
// they stay as they were). Bad batches give the errors they give a task
// that does not borrow; a task that says no gets copies; a BorrowsRecords
// that panics fails the Put, naming it.
func TestPutBorrowedFromSharedMemory(t *testing.T) {
	offer, region, file := sharedFile(t, 1<<20)
	type kept struct {
		key            []byte
		topic, name, h string
	}
	var got []kept
	var borrows atomic.Value
	borrows.Store(func() bool { return true })
	c := serve(t, sinkClass(func() SinkTask {
		return &borrowingSink{funcSink: funcSink{put: func(_ context.Context, recs []*data.SinkRecord) error {
			for _, r := range recs {
				got = append(got, kept{r.Key.([]byte), r.Topic, r.Value.(*data.Struct).Get("name").(string), r.Headers[0].Key})
			}
			return nil
		}}, borrows: func() bool { return borrows.Load().(func() bool)() }}
	}))
	ctx := callCtx(t)
	if st, err := c.SinkTask.Start(ctx, &pluginv1.SinkTaskStartRequest{ConnectorClass: "test.Sink", SharedMemory: offer}); err != nil || !st.GetSharedMemory() {
		t.Fatalf("start: %v %v", st, err)
	}
	s := data.StructBuilder().Name("row").Field("name", data.StringSchema).MustBuild()
	put := func(base int64) error {
		var b wire.SinkBatch
		for i := base; i < base+10; i++ {
			r := &data.SinkRecord{Record: data.Record{Topic: "topic-" + itoa(base), KeySchema: data.OptionalBytesSchema,
				Key: []byte("key-" + itoa(i)), ValueSchema: s, Value: data.NewStruct(s).MustPut("name", "n"+itoa(i)),
				Headers: data.Headers{{Key: "h" + itoa(i), Value: data.Raw("r")}}}, Offset: i}
			if err := b.Add(r); err != nil {
				t.Fatal(err)
			}
		}
		ref, ok := region.PlacePut(&b)
		if !ok {
			t.Fatal("not placed")
		}
		_, err := c.SinkTask.Put(ctx, &pluginv1.PutRequest{Shared: ref})
		return err
	}
	check := func(from int, base int64, keysKept bool) {
		t.Helper()
		for j, k := range got[from : from+10] {
			i := base + int64(j)
			if k.topic != "topic-"+itoa(base) || k.name != "n"+itoa(i) || k.h != "h"+itoa(i) {
				t.Fatalf("record %d: strings %q %q %q changed", i, k.topic, k.name, k.h)
			}
			if (string(k.key) == "key-"+itoa(i)) != keysKept {
				t.Fatalf("record %d: key %q, kept unchanged: %v, want %v", i, k.key, !keysKept, keysKept)
			}
		}
	}
	if err := put(100); err != nil {
		t.Fatal(err)
	}
	check(0, 100, true)
	if err := put(200); err != nil {
		t.Fatal(err)
	}
	// The first batch's keys were where the second one's are now.
	check(0, 100, false)
	check(10, 200, true)

	// Said no: copies, which stay.
	borrows.Store(func() bool { return false })
	if err := put(300); err != nil {
		t.Fatal(err)
	}
	if err := put(400); err != nil {
		t.Fatal(err)
	}
	check(20, 300, true)
	borrows.Store(func() bool { return true })

	checkBadSharedPuts(t, c, region, file)
	var err error
	borrows.Store(func() bool { panic("undecided") })
	err = put(500)
	if err == nil || !strings.Contains(err.Error(), "borrows records") || !strings.Contains(err.Error(), "undecided") {
		t.Fatalf("panicking BorrowsRecords: %v", err)
	}
	if len(got) != 40 {
		t.Fatalf("the task got %d records, want 40", len(got))
	}
}

// checkBadSharedPuts puts, through the region of a 1 MiB shared file, bytes
// that are not a PutRequest, records that do not convert and a reference
// outside the region, and fails unless each is refused as INVALID_ARGUMENT
// with the error that names it.
func checkBadSharedPuts(t *testing.T, c *wire.Clients, region *wire.SharedRegion, file *os.File) {
	t.Helper()
	ctx := callCtx(t)
	if _, err := file.WriteAt(bytes.Repeat([]byte{0xFF}, 64), 0); err != nil {
		t.Fatal(err)
	}
	_, err := c.SinkTask.Put(ctx, &pluginv1.PutRequest{Shared: &pluginv1.SharedBatch{Length: 64}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "put: decode shared batch (64 bytes): proto:") {
		t.Fatalf("garbage: %v", err)
	}
	bad := &pluginv1.PutRequest{Records: []*pluginv1.SinkRecord{{Value: &pluginv1.Data{Schema: 3, Kind: &pluginv1.Data_Value{Value: &pluginv1.Value{}}}}}}
	ref, _ := region.Place(bad)
	_, err = c.SinkTask.Put(ctx, &pluginv1.PutRequest{Shared: ref})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "put: decode records: sink record 0 (-0@0): value: schema reference 3 outside the batch's table of 0") {
		t.Fatalf("bad reference: %v", err)
	}
	_, err = c.SinkTask.Put(ctx, &pluginv1.PutRequest{Shared: &pluginv1.SharedBatch{Offset: 1 << 20, Length: 1}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "put: shared batch at offset 1048576, 1 bytes long, lies outside") {
		t.Fatalf("reference outside the region: %v", err)
	}
}

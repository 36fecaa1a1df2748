package wire

import (
	"bytes"
	"math/big"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// sinkRecordsHaveGoMaps is recordsHaveGoMaps for sink records.
func sinkRecordsHaveGoMaps(recs []*data.SinkRecord) bool {
	src := make([]*data.SourceRecord, len(recs))
	for i, r := range recs {
		src[i] = &data.SourceRecord{Record: r.Record}
	}
	return recordsHaveGoMaps(src)
}

// canonicalPut is canonicalPoll for a Put batch.
func canonicalPut(t testing.TB, b []byte) *pluginv1.PutRequest {
	t.Helper()
	var m pluginv1.PutRequest
	if err := proto.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	sortValueMaps(m.ProtoReflect())
	return &m
}

// addAll adds recs to a new SinkBatch, failing on any error.
func addAll(t testing.TB, recs []*data.SinkRecord) *SinkBatch {
	t.Helper()
	var b SinkBatch
	b.Grow(len(recs))
	for i, r := range recs {
		if err := b.Add(r); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	return &b
}

// checkPutLikeTwoStepEncode writes recs through a SinkBatch (Marshal, and
// PlacePut into region) and fails unless the bytes are the two-step
// path's (EncodeSinkRecords, deterministic protobuf); with multi-key Go
// maps, their entries may come in another order. exact reports whether
// the bytes were identical.
func checkPutLikeTwoStepEncode(t testing.TB, region *SharedRegion, recs []*data.SinkRecord) (exact bool) {
	t.Helper()
	b := addAll(t, recs)
	want := putBytes(t, recs)
	if b.Size() != len(want) || b.Len() != len(recs) || !slices.Equal(b.Records(), recs) {
		t.Fatalf("sized %d for %d records, protobuf wrote %d for %d", b.Size(), b.Len(), len(want), len(recs))
	}
	got, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := region.PlacePut(b)
	if !ok || ref.GetOffset() != 0 || ref.GetLength() != uint64(len(want)) {
		t.Fatalf("placed %v (%v), want 0+%d", ref, ok, len(want))
	}
	placed := region.mem[:len(want)]
	m, err := b.Proto()
	if err != nil {
		t.Fatal(err)
	}
	viaProto, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) && bytes.Equal(placed, want) && bytes.Equal(viaProto, want) {
		return true
	}
	if !sinkRecordsHaveGoMaps(recs) {
		t.Fatalf("fused\n%x\nplaced\n%x\ntwo-step\n%x", got, placed, want)
	}
	for _, out := range [][]byte{got, placed, viaProto} {
		if !proto.Equal(canonicalPut(t, out), canonicalPut(t, want)) {
			t.Fatalf("fused\n%x\ntwo-step\n%x\n(beyond the order of map entries)", out, want)
		}
	}
	return false
}

// Every batch, random and hand-made, is written byte for byte as the
// two-step path writes it, into a buffer and into the shared region, and
// the plugin reads back the records it was given.
func TestSinkBatchMatchesTwoStep(t *testing.T) {
	region := newTestRegion(t, 8<<20)
	batches := [][]*data.SinkRecord{nil, edgeSinkRecords(), sinkBytesBatch()}
	for _, r := range edgeSinkRecords() {
		batches = append(batches, []*data.SinkRecord{r})
	}
	for _, rb := range randomRecordBatches(19, 400) {
		batches = append(batches, rb.sink)
	}
	exact, records := 0, 0
	for _, recs := range batches {
		if checkPutLikeTwoStepEncode(t, region, recs) {
			exact++
		}
		records += len(recs)
		// What the plugin reads is what the two-step path gives it.
		ref, _ := region.PlacePut(addAll(t, recs))
		got, err := region.TakeSinkRecords(ref)
		if err != nil {
			t.Fatal(err)
		}
		want, err := twoStepPut(putBytes(t, recs))
		if err != nil {
			t.Fatal(err)
		}
		// And what a task that borrows its records reads.
		borrowed, err := region.BorrowSinkRecords(ref)
		if err != nil {
			t.Fatal(err)
		}
		if !sinkRecordsHaveGoMaps(recs) {
			if d := diffSinkRecords(got, want); d != "" {
				t.Fatal(d)
			}
			if d := diffSinkRecords(borrowed, want); d != "" {
				t.Fatalf("borrowed: %s", d)
			}
		}
	}
	// Most random batches hold a map[string]any of two keys somewhere.
	if records < 2000 || exact < 60 {
		t.Fatalf("%d records; %d of %d batches byte for byte", records, exact, len(batches))
	}
}

// A record the two-step path cannot encode is refused by Add with
// EncodeSinkRecords' error, naming the index it would have had, and
// leaves the batch as it was.
func TestSinkBatchErrorsLikeEncodeSinkRecords(t *testing.T) {
	st := data.StructBuilder().Name("st").Field("a", data.Int32Schema).Field("b", data.ArrayOf(data.Int8Schema)).MustBuild()
	other := data.StructBuilder().Name("other").Field("a", data.Int32Schema).MustBuild()
	good := data.NewStruct(st).MustPut("a", int32(1)).MustPut("b", []any{int8(1)})
	nullElem := data.NewStruct(st).MustPut("a", int32(1))
	nullElem.SetIndex(1, []any{int8(1), nil})
	fresh := data.StructBuilder().Name("fresh").Field("x", data.Int8Schema).MustBuild()
	rec := func(ks *data.Schema, k any, vs *data.Schema, v any, hs ...data.Header) *data.SinkRecord {
		return &data.SinkRecord{Record: data.Record{Topic: "t", Partition: 4, KeySchema: ks, Key: k, ValueSchema: vs, Value: v, Headers: hs},
			Offset: 99, TimestampType: data.CreateTime}
	}
	cases := map[string]*data.SinkRecord{
		"nil record":                nil,
		"timestamp type":            {Record: data.Record{Topic: "t"}, TimestampType: 3},
		"negative timestamp type":   {Record: data.Record{Topic: "t"}, TimestampType: -1},
		"timestamp type before key": {Record: data.Record{Topic: "t", KeySchema: data.Int8Schema, Key: "x"}, TimestampType: 7},
		"key type":                  rec(data.Int32Schema, "x", nil, nil),
		"key before value":          rec(data.Int32Schema, "x", data.Int8Schema, "y"),
		"key before header":         rec(data.Int32Schema, "x", nil, nil, data.Header{Key: "h", Schema: data.Int8Schema, Value: "z"}),
		"new key schema, bad value": rec(fresh, data.NewStruct(fresh).MustPut("x", int8(1)), data.Int8Schema, "y"),
		"value struct schema":       rec(nil, nil, st, data.NewStruct(other)),
		"nested required null":      rec(nil, nil, st, nullElem),
		"required null field":       rec(nil, nil, st, data.NewStruct(st)),
		"decimal scale":             rec(nil, nil, data.DecimalSchema(2, false), data.Decimal{Unscaled: big.NewInt(1), Scale: 3}),
		"date with a time":          rec(nil, nil, data.DateSchema(false), time.UnixMilli(5).UTC()),
		"schemaless struct":         rec(nil, good, nil, nil),
		"schemaless time":           rec(nil, time.Now(), nil, nil),
		"nested raw":                rec(nil, []any{data.Raw("r")}, nil, nil),
		"unsupported":               rec(nil, struct{}{}, nil, nil),
		"map key schema":            rec(data.MapOf(data.Int8Schema, data.Int8Schema), map[string]any{"k": int8(1)}, nil, nil),
		"data.Map entry":            rec(data.MapOf(data.Int8Schema, data.Int8Schema), data.Map{{Key: int8(1), Value: int8(2)}, {Key: int8(2), Value: "v"}}, nil, nil),
		"invalid schema type":       rec(&data.Schema{Type: 99}, int8(1), nil, nil),
		"array without element":     rec(&data.Schema{Type: data.Array}, []any{}, nil, nil),
		"bad default":               rec(&data.Schema{Type: data.Int8, Default: "x"}, int8(1), nil, nil),
		"header":                    rec(nil, nil, nil, nil, data.Header{Key: "h1"}, data.Header{Key: "h2", Schema: st, Value: int8(1)}),
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			before := edgeSinkRecords()
			b := addAll(t, before)
			was, _ := b.Marshal()
			size, table := b.Size(), len(b.schemas.table)
			err := b.Add(bad)
			_, _, want := EncodeSinkRecords(append(slices.Clone(before), bad))
			if want == nil {
				t.Fatal("EncodeSinkRecords took it")
			}
			if err == nil || err.Error() != want.Error() {
				t.Fatalf("error %v\nEncodeSinkRecords: %v", err, want)
			}
			now, _ := b.Marshal()
			if b.Len() != len(before) || b.Size() != size || len(b.schemas.table) != table ||
				!proto.Equal(canonicalPut(t, was), canonicalPut(t, now)) {
				t.Fatal("the refused record changed the batch")
			}
			// The batch takes further records as if nothing happened.
			more := append(slices.Clone(before), sinkBytesBatch()[:2]...)
			for _, r := range more[len(before):] {
				if err := b.Add(r); err != nil {
					t.Fatal(err)
				}
			}
			if got, _ := b.Marshal(); !proto.Equal(canonicalPut(t, got), canonicalPut(t, putBytes(t, more))) {
				t.Fatal("records added after a refused one are not written as the two-step path writes them")
			}
		})
	}
}

// What the fused writer does not write (invalid UTF-8, a record changed
// after it was added) is not placed, and Marshal gives protobuf's answer;
// a batch larger than the region and a closed region are refused too.
func TestSinkBatchFallsBack(t *testing.T) {
	region := newTestRegion(t, 1<<20)
	for name, r := range map[string]*data.SinkRecord{
		"topic":          {Record: data.Record{Topic: "\xff"}},
		"original topic": {OriginalTopic: "a\xc0"},
		"header key":     {Record: data.Record{Headers: data.Headers{{Key: "a\xc0"}}}},
		"string value":   {Record: data.Record{ValueSchema: data.StringSchema, Value: "\xfe"}},
		"map key":        {Record: data.Record{Value: map[string]any{"\xfe": int64(1)}}},
		"schema name":    {Record: data.Record{ValueSchema: &data.Schema{Type: data.Int8, Name: "\xff"}, Value: int8(1)}},
	} {
		b := addAll(t, []*data.SinkRecord{sinkBytesBatch()[0], r})
		if ref, ok := region.PlacePut(b); ok {
			t.Fatalf("%s: invalid UTF-8 placed at %v", name, ref)
		}
		m, err := b.Proto()
		if err != nil {
			t.Fatal(err)
		}
		_, want := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if _, err := b.Marshal(); want == nil || err == nil || err.Error() != want.Error() {
			t.Fatalf("%s: Marshal error %v, protobuf's %v", name, err, want)
		}
		// Place, the two-step path, refused it too.
		if _, ok := region.Place(m); ok {
			t.Fatalf("%s: Place took it", name)
		}
	}
	for name, change := range map[string]func(r *data.SinkRecord){
		"longer":     func(r *data.SinkRecord) { r.Value = make([]byte, 300) },
		"shorter":    func(r *data.SinkRecord) { r.Value = nil },
		"new schema": func(r *data.SinkRecord) { r.KeySchema, r.Key = data.Int64Schema, int64(1) },
	} {
		r := &data.SinkRecord{Record: data.Record{Topic: "t", ValueSchema: data.OptionalBytesSchema, Value: make([]byte, 100)}}
		b := addAll(t, []*data.SinkRecord{sinkBytesBatch()[0], r, sinkBytesBatch()[1]})
		change(r)
		if ref, ok := region.PlacePut(b); ok {
			t.Fatalf("%s: a changed record placed at %v", name, ref)
		}
		got, err := b.Marshal()
		if err != nil || !bytes.Equal(got, putBytes(t, b.Records())) {
			t.Fatalf("%s: Marshal gave %x (%v)", name, got, err)
		}
	}
	big := addAll(t, []*data.SinkRecord{{Record: data.Record{Value: data.Raw(make([]byte, 2<<20))}}})
	if _, ok := region.PlacePut(big); ok {
		t.Fatal("a 2 MiB batch placed in a 1 MiB region")
	}
	small := addAll(t, sinkBytesBatch()[:5])
	if _, ok := region.PlacePut(small); !ok {
		t.Fatal("not placed")
	}
	region.Close()
	if _, ok := region.PlacePut(small); ok {
		t.Fatal("placed into a closed region")
	}
}

// An empty batch, and a nil one, is an empty PutRequest every way.
func TestSinkBatchEmpty(t *testing.T) {
	region := NewSharedRegion(make([]byte, 64), nil)
	for _, b := range []*SinkBatch{nil, {}} {
		m, err := b.Proto()
		if err != nil || len(m.GetRecords()) != 0 || len(m.GetSchemas()) != 0 {
			t.Fatalf("Proto %v, %v", m, err)
		}
		if b.Len() != 0 || b.Size() != 0 || b.Records() != nil {
			t.Fatal("not empty")
		}
	}
	var b SinkBatch
	if out, err := b.Marshal(); err != nil || len(out) != 0 {
		t.Fatalf("Marshal %x, %v", out, err)
	}
	if ref, ok := region.PlacePut(&b); !ok || ref.GetLength() != 0 {
		t.Fatalf("placed %v, %v", ref, ok)
	}
}

// The worker's half of a Put through shared memory, record by record as
// the runner builds it: records joined to a SinkBatch, written into the
// region. ...TwoStep is the way before: EncodeSinkRecords, then Place.
func BenchmarkSharedPutWorkerSide(b *testing.B) {
	benchPutWorker(b, sinkBytesBatch(), placePutFused)
}

func BenchmarkSharedPutWorkerSideTwoStep(b *testing.B) {
	benchPutWorker(b, sinkBytesBatch(), placePutTwoStep)
}

func BenchmarkSharedPutWorkerSideStruct5(b *testing.B) {
	benchPutWorker(b, sinkStructBatch(), placePutFused)
}

func BenchmarkSharedPutWorkerSideStruct5TwoStep(b *testing.B) {
	benchPutWorker(b, sinkStructBatch(), placePutTwoStep)
}

// BenchmarkSharedPutWorkerSideCold is the worker's half of a six-partition
// fetch's Put (6,000 records of 1 KiB, a six-MiB batch) with neither the
// records nor the region in the cache, as in the pipeline, where the
// fetch, the plugin's reading and the broker pass through the cache
// between two Puts. Batches were written last record first until
// 2026-12-02: 396–560 ns a record here, against 295–382 front to back.
func BenchmarkSharedPutWorkerSideCold(b *testing.B) {
	var recs []*data.SinkRecord
	for range 6 {
		recs = append(recs, sinkBytesBatch()...)
	}
	r := NewSharedRegion(make([]byte, 16<<20), nil)
	evict := newCacheEvictor()
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		evict.evict()
		b.StartTimer()
		if !placePutFused(r, recs) {
			b.Fatal("not placed")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/rec")
}

// sinkStructBatch is structBatch as sink records.
func sinkStructBatch() []*data.SinkRecord {
	var out []*data.SinkRecord
	for i, r := range structBatch() {
		rec := r.Record
		rec.Partition = 0
		out = append(out, &data.SinkRecord{Record: rec, Offset: int64(i), TimestampType: data.CreateTime})
	}
	return out
}

func placePutFused(r *SharedRegion, recs []*data.SinkRecord) bool {
	var sb SinkBatch
	sb.Grow(len(recs))
	for _, rec := range recs {
		if sb.Add(rec) != nil {
			return false
		}
	}
	_, ok := r.PlacePut(&sb)
	return ok
}

func placePutTwoStep(r *SharedRegion, recs []*data.SinkRecord) bool {
	schemas, ps, err := EncodeSinkRecords(recs)
	if err != nil {
		return false
	}
	_, ok := r.Place(&pluginv1.PutRequest{Schemas: schemas, Records: ps})
	return ok
}

func benchPutWorker(b *testing.B, recs []*data.SinkRecord, place func(*SharedRegion, []*data.SinkRecord) bool) {
	r := NewSharedRegion(make([]byte, 8<<20), nil)
	b.ReportAllocs()
	for b.Loop() {
		if !place(r, recs) {
			b.Fatal("not placed")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/rec")
}

// sendPutBytes is what a call with SendPut(b) sends for req.
func sendPutBytes(t testing.TB, b *SinkBatch, req *pluginv1.PutRequest) ([]byte, error) {
	t.Helper()
	c := SendPut(b).(grpc.ForceCodecV2CallOption).CodecV2
	if c.Name() != Codec().Name() {
		t.Fatalf("codec %q", c.Name())
	}
	out, err := c.Marshal(req)
	if err != nil {
		return nil, err
	}
	defer out.Free()
	return out.Materialize(), nil
}

// A Put sent inline with SendPut carries the batch's bytes, those of the
// two-step path, small batches and large ones (from the kept buffers)
// alike; what the fused writer refuses gives protobuf's error; a request
// that is not the empty placeholder, and a reply, are Codec's.
func TestSendPut(t *testing.T) {
	batches := [][]*data.SinkRecord{nil, sinkBytesBatch(), sinkBytesBatch()[:3], edgeSinkRecords()}
	for _, rb := range randomRecordBatches(23, 100) {
		batches = append(batches, rb.sink)
	}
	for i, recs := range batches {
		for range 2 { // the second time from a buffer used before
			got, err := sendPutBytes(t, addAll(t, recs), &pluginv1.PutRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if want := putBytes(t, recs); !bytes.Equal(got, want) &&
				(!sinkRecordsHaveGoMaps(recs) || !proto.Equal(canonicalPut(t, got), canonicalPut(t, want))) {
				t.Fatalf("batch %d: sent\n%x\nwant\n%x", i, got, want)
			}
		}
	}
	bad := addAll(t, []*data.SinkRecord{sinkBytesBatch()[0], {Record: data.Record{Topic: "\xff"}}})
	m, _ := bad.Proto()
	_, want := proto.Marshal(m)
	if _, err := sendPutBytes(t, bad, &pluginv1.PutRequest{}); want == nil || err == nil || err.Error() != want.Error() {
		t.Fatalf("invalid UTF-8: error %v, protobuf's %v", err, want)
	}
	other := &pluginv1.PutRequest{Records: []*pluginv1.SinkRecord{{Topic: "x", Offset: 3}}}
	got, err := sendPutBytes(t, addAll(t, sinkBytesBatch()[:2]), other)
	if wantB, _ := proto.Marshal(other); err != nil || !bytes.Equal(got, wantB) {
		t.Fatalf("a request of its own: sent %x (%v), want %x", got, err, wantB)
	}
	c := SendPut(addAll(t, nil)).(grpc.ForceCodecV2CallOption).CodecV2
	var reply pluginv1.PreCommitResponse
	in := &pluginv1.PreCommitResponse{Offsets: []*pluginv1.PartitionOffset{{Topic: "t", Offset: 9}}}
	b, _ := proto.Marshal(in)
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &reply); err != nil || !proto.Equal(&reply, in) {
		t.Fatalf("reply %v (%v)", &reply, err)
	}
}

// The worker's half of a Put sent inline, up to the bytes handed to gRPC:
// records joined to a SinkBatch and written by SendPut's codec. ...TwoStep
// is the way before: EncodeSinkRecords, then Codec.
func BenchmarkInlinePutWorkerSide(b *testing.B) {
	recs := sinkBytesBatch()
	defer runtime.KeepAlive(sameHeapAsShared())
	b.ReportAllocs()
	for b.Loop() {
		var sb SinkBatch
		sb.Grow(len(recs))
		for _, rec := range recs {
			if err := sb.Add(rec); err != nil {
				b.Fatal(err)
			}
		}
		out, err := SendPut(&sb).(grpc.ForceCodecV2CallOption).CodecV2.Marshal(&pluginv1.PutRequest{})
		if err != nil {
			b.Fatal(err)
		}
		out.Free()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/rec")
}

func BenchmarkInlinePutWorkerSideTwoStep(b *testing.B) {
	recs := sinkBytesBatch()
	defer runtime.KeepAlive(sameHeapAsShared())
	b.ReportAllocs()
	for b.Loop() {
		schemas, ps, err := EncodeSinkRecords(recs)
		if err != nil {
			b.Fatal(err)
		}
		out, err := Codec().Marshal(&pluginv1.PutRequest{Schemas: schemas, Records: ps})
		if err != nil {
			b.Fatal(err)
		}
		out.Free()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/rec")
}

// bytesShapedRecords are records of the bytes shape, in every
// combination of key and value shape (lengths around each varint
// boundary, nulls, raw data, absent), every timestamp type, and random
// zero, negative and large numbers, empty and long topics, zero and
// negative timestamps.
func bytesShapedRecords() []*data.SinkRecord {
	lengths := []int{0, 1, 127, 128, 16383, 16384}
	payload := func(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }
	type kv struct {
		s *data.Schema
		v any
	}
	var shapes []kv
	for _, n := range lengths {
		shapes = append(shapes, kv{data.OptionalBytesSchema, payload(n)}, kv{data.BytesSchema, payload(n)}, kv{nil, data.Raw(payload(n))})
	}
	shapes = append(shapes, kv{nil, nil}, kv{data.OptionalBytesSchema, nil}, kv{data.OptionalBytesSchema, []byte(nil)},
		kv{nil, data.Raw(nil)}, kv{data.BytesSchema, nil}, kv{data.OptionalBytesSchema, []byte{}})
	rng := rand.New(rand.NewPCG(7, 11))
	var out []*data.SinkRecord
	for _, k := range shapes {
		for _, v := range shapes {
			for _, tt := range []data.TimestampType{data.NoTimestampType, data.CreateTime, data.LogAppendTime} {
				out = append(out, &data.SinkRecord{Record: data.Record{Topic: []string{"", "t", strings.Repeat("p", 200), "tôpic"}[rng.IntN(4)],
					Partition: []int32{0, 5, -1}[rng.IntN(3)], KeySchema: k.s, Key: k.v, ValueSchema: v.s, Value: v.v,
					Timestamp: []time.Time{{}, time.UnixMilli(1700000000000), time.UnixMilli(-5), time.UnixMilli(0)}[rng.IntN(4)]},
					Offset: []int64{0, 1, 1 << 40, -1}[rng.IntN(4)], TimestampType: tt,
					OriginalTopic: []string{"", "orig"}[rng.IntN(2)], OriginalPartition: []int32{0, 3, -2}[rng.IntN(3)],
					OriginalOffset: []int64{0, 300, -7}[rng.IntN(3)]})
			}
		}
	}
	return out
}

// notBytesShaped are records of other shapes, for the general writer.
func notBytesShaped() []*data.SinkRecord {
	return []*data.SinkRecord{
		{Record: data.Record{Value: "s", ValueSchema: data.StringSchema}},
		{Record: data.Record{Value: []byte("b"), ValueSchema: &data.Schema{Type: data.Bytes, Name: data.DecimalName}}},
		{Record: data.Record{Value: []byte("b"), ValueSchema: &data.Schema{Type: data.Bytes}}},
		{Record: data.Record{Value: []byte("b")}},
		{Record: data.Record{Key: []byte("b"), KeySchema: data.StringSchema}},
		{Record: data.Record{Value: data.Raw("r"), Headers: data.Headers{{Key: "h"}}}},
		{Record: data.Record{Value: data.Raw("r")}, TimestampType: 9},
		{Record: data.Record{Value: data.Raw("r")}, TimestampType: -1},
	}
}

// bytesRecordSize gives what the writer counts for every record of the
// bytes shape, registers the same schemas, and declines everything else.
func TestBytesRecordSize(t *testing.T) {
	for i, tt := range []data.TimestampType{data.NoTimestampType, data.CreateTime, data.LogAppendTime} {
		if int32(tt) != int32([]pluginv1.TimestampType{pluginv1.TimestampType_TIMESTAMP_TYPE_UNSPECIFIED,
			pluginv1.TimestampType_TIMESTAMP_TYPE_CREATE_TIME, pluginv1.TimestampType_TIMESTAMP_TYPE_LOG_APPEND_TIME}[i]) {
			t.Fatalf("timestamp type %d is not the protobuf enum's value", tt)
		}
	}
	recs := bytesShapedRecords()
	for _, r := range recs {
		var fast, slow SchemaEncoder
		got, ok := bytesRecordSize(r, &fast)
		if !ok {
			t.Fatalf("declined a bytes record: %+v", r)
		}
		w := pollWriter{schemas: &slow}
		if err := w.sinkRecord(r); err != nil {
			t.Fatal(err)
		}
		if got != -w.p || len(fast.table) != len(slow.table) {
			t.Fatalf("size %d with %d schemas, the writer counts %d with %d: %+v", got, len(fast.table), -w.p, len(slow.table), r)
		}
	}
	// Other shapes are the writer's.
	for _, r := range notBytesShaped() {
		if _, ok := bytesRecordSize(r, &SchemaEncoder{}); ok {
			t.Fatalf("sized %+v", r)
		}
	}
	if len(recs) < 1000 {
		t.Fatalf("%d records checked", len(recs))
	}
}

// writeBytesRecord writes every record of the bytes shape byte for byte
// as the general writer does, with the same schema references, alone and
// after others, and declines other shapes, topics that are not valid
// UTF-8 and too little room, writing nothing then.
func TestWriteBytesRecordMatchesWriter(t *testing.T) {
	recs := bytesShapedRecords()
	var fastSchemas, slowSchemas SchemaEncoder
	// A schema ahead of the bytes schemas, so that references are not
	// all 1.
	for _, e := range []*SchemaEncoder{&fastSchemas, &slowSchemas} {
		if _, err := e.Ref(data.StringSchema); err != nil {
			t.Fatal(err)
		}
	}
	// Every number at its longest.
	recs = append(recs, &data.SinkRecord{Record: data.Record{Topic: "t", Partition: -1,
		KeySchema: data.OptionalBytesSchema, Key: []byte("k"), ValueSchema: data.BytesSchema, Value: []byte{}},
		Offset: -1, TimestampType: data.LogAppendTime, OriginalTopic: "o", OriginalPartition: -1, OriginalOffset: -1})
	var valid string
	for i, r := range recs {
		// Sized by the general writer, plus room to spare before it.
		c := pollWriter{schemas: &SchemaEncoder{}}
		if err := c.sinkRecord(r); err != nil {
			t.Fatal(err)
		}
		k, _ := r.Key.([]byte)
		v, _ := r.Value.([]byte)
		if kr, ok := r.Key.(data.Raw); ok {
			k = kr
		}
		if vr, ok := r.Value.(data.Raw); ok {
			v = vr
		}
		if over := -c.p - len(r.Topic) - len(r.OriginalTopic) - len(k) - len(v); over > bytesRecordSlack {
			t.Fatalf("record %d: %d bytes beyond its strings and bytes, more than bytesRecordSlack", i, over)
		}
		n := -c.p + bytesRecordSlack + len(r.Topic) + len(r.OriginalTopic) + 32<<10
		slow := bytes.Repeat([]byte{0xee}, n)
		w := pollWriter{b: slow, p: n, schemas: &slowSchemas}
		if err := w.sinkRecord(r); err != nil || w.bad {
			t.Fatalf("record %d: general writer: %v (bad %v)", i, err, w.bad)
		}
		fast := bytes.Repeat([]byte{0xee}, n)
		p, ok := writeBytesRecord(fast, n, r, &fastSchemas, &valid)
		if !ok {
			t.Fatalf("record %d declined: %+v", i, r)
		}
		if p != w.p || !bytes.Equal(fast, slow) {
			t.Fatalf("record %d: wrote\n%x\nthe general writer\n%x\n%+v", i, fast[p:], slow[w.p:], r)
		}
		if len(fastSchemas.table) != len(slowSchemas.table) {
			t.Fatalf("record %d: %d schemas, the general writer %d", i, len(fastSchemas.table), len(slowSchemas.table))
		}
	}
	if len(fastSchemas.table) != 3 {
		t.Fatalf("%d schemas, want the string one and both bytes ones", len(fastSchemas.table))
	}
	declined := func(what string, r *data.SinkRecord, room int) {
		t.Helper()
		dst := bytes.Repeat([]byte{0xee}, room)
		valid := ""
		if p, ok := writeBytesRecord(dst, room, r, &SchemaEncoder{}, &valid); ok || p != room || !bytes.Equal(dst, bytes.Repeat([]byte{0xee}, room)) {
			t.Fatalf("%s: took %+v (at %d of %d)", what, r, p, room)
		}
	}
	for _, r := range notBytesShaped() {
		declined("other shape", r, 1<<10)
	}
	bad := *recs[0]
	bad.Topic = "a\xff"
	declined("invalid topic", &bad, 1<<10)
	bad = *recs[0]
	bad.OriginalTopic = "\xc0"
	declined("invalid original topic", &bad, 1<<10)
	// Room: up to what the record may need, not only what it takes.
	r := &data.SinkRecord{Record: data.Record{Topic: "t", ValueSchema: data.OptionalBytesSchema, Value: []byte("v")}}
	declined("little room", r, bytesRecordSlack+len("t")+len("v")-1)
	dst := make([]byte, bytesRecordSlack+len("t")+len("v"))
	if _, ok := writeBytesRecord(dst, len(dst), r, &SchemaEncoder{}, &valid); !ok {
		t.Fatal("declined with the room it may need")
	}
}

// The encoder's memory of the schema it answered last goes with the table
// entries truncate and Reset drop: that schema joins the table again.
func TestSchemaEncoderForgetsDroppedLast(t *testing.T) {
	a := data.StructBuilder().Name("a").Field("x", data.Int32Schema).MustBuild()
	b := data.StructBuilder().Name("b").Field("y", data.StringSchema).MustBuild()
	var e SchemaEncoder
	for _, step := range []struct {
		s       *data.Schema
		want    uint32
		entries int
		then    func()
	}{
		{a, 1, 1, nil},
		{b, 2, 2, func() { e.truncate(1) }},
		{b, 2, 2, nil},
		{b, 2, 2, func() { e.Reset() }},
		{b, 1, 1, nil},
		{a, 2, 2, nil},
	} {
		ref, err := e.Ref(step.s)
		if err != nil || ref != step.want || len(e.Schemas()) != step.entries {
			t.Fatalf("Ref(%s) = %d (%v) with %d entries, want %d with %d", step.s.Name, ref, err, len(e.Schemas()), step.want, step.entries)
		}
		if got := e.Schemas()[ref-1].GetName(); got != step.s.Name {
			t.Fatalf("entry %d is %q, want %q", ref, got, step.s.Name)
		}
		if step.then != nil {
			step.then()
		}
	}
}

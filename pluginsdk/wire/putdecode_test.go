package wire

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// twoStepPut is the way a Put batch was read before DecodePutBatch:
// decodePutRequest (or protobuf), then DecodeSinkRecords, with
// DecodePutBatch's wording of a parse error.
func twoStepPut(b []byte) ([]*data.SinkRecord, error) {
	var m pluginv1.PutRequest
	if !decodePutRequest(b, &m) {
		if err := proto.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("decode put request (%d bytes): %w", len(b), err)
		}
	}
	return DecodeSinkRecords(m.Schemas, m.Records)
}

// checkPutLikeTwoStep decodes b both ways and fails on any difference: in
// the error text, or in the records (values, Go types, schemas, and which
// records share a schema). fused reports whether the fused decoder read b
// itself.
func checkPutLikeTwoStep(t testing.TB, b []byte) (fused bool) {
	t.Helper()
	want, wantErr := twoStepPut(bytes.Clone(b))
	buf := bytes.Clone(b)
	got, gotErr := DecodePutBatch(buf)
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Fatalf("input %x:\nfused error %v\ntwo-step    %v", b, gotErr, wantErr)
	}
	if wantErr != nil {
		return false
	}
	if d := diffSinkRecords(got, want); d != "" {
		t.Fatalf("input %x: %s", b, d)
	}
	_, fused = fusedPutBatch(bytes.Clone(b), false)
	if fused {
		checkBorrowed(t, b, want)
	}
	return fused
}

// checkBorrowed decodes b as a sink task that borrows its records gets it
// and fails unless the records are want's and none of their strings
// changes when the batch's bytes are overwritten afterwards.
func checkBorrowed(t testing.TB, b []byte, want []*data.SinkRecord) {
	t.Helper()
	buf := bytes.Clone(b)
	got, ok := fusedPutBatch(buf, true)
	if !ok {
		t.Fatalf("input %x: the fused decoder reads it, but not when borrowing", b)
	}
	if d := diffSinkRecords(got, want); d != "" {
		t.Fatalf("input %x, borrowed: %s", b, d)
	}
	before := recordStrings(got)
	for i, s := range before {
		before[i] = strings.Clone(s)
	}
	for i := range buf {
		buf[i] = 'X'
	}
	if after := recordStrings(got); !slices.Equal(after, before) {
		t.Fatalf("input %x, borrowed: strings alias the batch: %q became %q", b, before, after)
	}
}

// recordStrings lists every string of recs: topics, header keys, string
// values and map keys at any depth.
func recordStrings(recs []*data.SinkRecord) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				out = append(out, k)
				walk(v[k])
			}
		case data.Map:
			for _, e := range v {
				walk(e.Key)
				walk(e.Value)
			}
		case *data.Struct:
			for _, e := range v.Values() {
				walk(e)
			}
		}
	}
	for _, r := range recs {
		out = append(out, r.Topic, r.OriginalTopic)
		walk(r.Key)
		walk(r.Value)
		for _, h := range r.Headers {
			out = append(out, h.Key)
			walk(h.Value)
		}
	}
	return out
}

// diffSinkRecords describes the first difference between two decoded
// batches, "" if none.
func diffSinkRecords(got, want []*data.SinkRecord) string {
	if (got == nil) != (want == nil) || len(got) != len(want) {
		return fmt.Sprintf("%d records (nil %v), want %d (nil %v)", len(got), got == nil, len(want), want == nil)
	}
	var gs, ws []*data.Schema
	for i := range want {
		g, w := got[i], want[i]
		if g.Topic != w.Topic || g.Partition != w.Partition || g.Offset != w.Offset || g.Timestamp != w.Timestamp ||
			g.TimestampType != w.TimestampType || g.OriginalTopic != w.OriginalTopic ||
			g.OriginalPartition != w.OriginalPartition || g.OriginalOffset != w.OriginalOffset {
			return fmt.Sprintf("record %d: %+v\nwant %+v", i, *g, *w)
		}
		if d := diffData(g.KeySchema, w.KeySchema, g.Key, w.Key); d != "" {
			return fmt.Sprintf("record %d key: %s", i, d)
		}
		if d := diffData(g.ValueSchema, w.ValueSchema, g.Value, w.Value); d != "" {
			return fmt.Sprintf("record %d value: %s", i, d)
		}
		if (g.Headers == nil) != (w.Headers == nil) || len(g.Headers) != len(w.Headers) {
			return fmt.Sprintf("record %d: headers %v, want %v", i, g.Headers, w.Headers)
		}
		gs = append(gs, g.KeySchema, g.ValueSchema)
		ws = append(ws, w.KeySchema, w.ValueSchema)
		for j := range w.Headers {
			gh, wh := g.Headers[j], w.Headers[j]
			if gh.Key != wh.Key {
				return fmt.Sprintf("record %d header %d: key %q, want %q", i, j, gh.Key, wh.Key)
			}
			if d := diffData(gh.Schema, wh.Schema, gh.Value, wh.Value); d != "" {
				return fmt.Sprintf("record %d header %d: %s", i, j, d)
			}
			gs, ws = append(gs, gh.Schema), append(ws, wh.Schema)
		}
	}
	// Records that refer to one table entry share its *data.Schema.
	for i := range ws {
		for j := range i {
			if (ws[i] == ws[j]) != (gs[i] == gs[j]) {
				return fmt.Sprintf("schema sharing differs between slots %d and %d", j, i)
			}
		}
	}
	return ""
}

func diffData(gs, ws *data.Schema, gv, wv any) string {
	d := differ{}
	if d := d.schema(gs, ws); d != "" {
		return "schema: " + d
	}
	return d.value(gv, wv)
}

func diffValue(g, w any) string { return differ{}.value(g, w) }

// differ compares schemas and values; seen cuts the cycle of a struct
// schema whose default is a struct of that schema.
type differ struct {
	seen map[[2]*data.Schema]bool
}

func (df differ) schema(g, w *data.Schema) string {
	if (g == nil) != (w == nil) {
		return fmt.Sprintf("%v, want %v", g, w)
	}
	if w == nil || df.seen[[2]*data.Schema{g, w}] {
		return ""
	}
	if df.seen == nil {
		df.seen = map[[2]*data.Schema]bool{}
	}
	df.seen[[2]*data.Schema{g, w}] = true
	if g.Type != w.Type || g.Optional != w.Optional || g.Name != w.Name || g.Doc != w.Doc ||
		(g.Version == nil) != (w.Version == nil) || (w.Version != nil && *g.Version != *w.Version) ||
		!reflect.DeepEqual(g.Parameters, w.Parameters) || len(g.Fields) != len(w.Fields) {
		return fmt.Sprintf("%v, want %v", g, w)
	}
	for i := range w.Fields {
		if g.Fields[i].Name != w.Fields[i].Name || g.Fields[i].Index != w.Fields[i].Index {
			return fmt.Sprintf("field %d: %+v, want %+v", i, g.Fields[i], w.Fields[i])
		}
		if d := df.schema(g.Fields[i].Schema, w.Fields[i].Schema); d != "" {
			return "field " + w.Fields[i].Name + ": " + d
		}
	}
	if d := df.schema(g.KeySchema, w.KeySchema); d != "" {
		return "key: " + d
	}
	if d := df.schema(g.ValueSchema, w.ValueSchema); d != "" {
		return "value: " + d
	}
	if d := df.value(g.Default, w.Default); d != "" {
		return "default: " + d
	}
	return ""
}

// value compares two decoded values strictly: the same Go types, floats
// bit for bit (NaN included), bytes including nil-ness.
func (df differ) value(g, w any) string {
	if reflect.TypeOf(g) != reflect.TypeOf(w) {
		return fmt.Sprintf("%T %v, want %T %v", g, g, w, w)
	}
	bad := func() string { return fmt.Sprintf("%#v, want %#v", g, w) }
	switch w := w.(type) {
	case nil:
	case float32:
		if math.Float32bits(g.(float32)) != math.Float32bits(w) {
			return bad()
		}
	case float64:
		if math.Float64bits(g.(float64)) != math.Float64bits(w) {
			return bad()
		}
	case []byte:
		if gb := g.([]byte); (gb == nil) != (w == nil) || !bytes.Equal(gb, w) {
			return bad()
		}
	case data.Raw:
		if gb := g.(data.Raw); (gb == nil) != (w == nil) || !bytes.Equal(gb, w) {
			return bad()
		}
	case data.Decimal:
		gd := g.(data.Decimal)
		if gd.Scale != w.Scale || gd.Unscaled.Cmp(w.Unscaled) != 0 {
			return bad()
		}
	case *data.Struct:
		gst := g.(*data.Struct)
		if d := df.schema(gst.Schema(), w.Schema()); d != "" {
			return "struct schema: " + d
		}
		for i, v := range w.Values() {
			if d := df.value(gst.Values()[i], v); d != "" {
				return fmt.Sprintf("field %d: %s", i, d)
			}
		}
	case []any:
		ga := g.([]any)
		if len(ga) != len(w) {
			return bad()
		}
		for i := range w {
			if d := df.value(ga[i], w[i]); d != "" {
				return fmt.Sprintf("element %d: %s", i, d)
			}
		}
	case data.Map:
		gm := g.(data.Map)
		if len(gm) != len(w) {
			return bad()
		}
		for i := range w {
			if d := df.value(gm[i].Key, w[i].Key); d != "" {
				return fmt.Sprintf("entry %d key: %s", i, d)
			}
			if d := df.value(gm[i].Value, w[i].Value); d != "" {
				return fmt.Sprintf("entry %d value: %s", i, d)
			}
		}
	case map[string]any:
		gm := g.(map[string]any)
		if len(gm) != len(w) {
			return bad()
		}
		for k, v := range w {
			gv, ok := gm[k]
			if !ok {
				return fmt.Sprintf("key %q missing", k)
			}
			if d := df.value(gv, v); d != "" {
				return fmt.Sprintf("key %q: %s", k, d)
			}
		}
	default:
		// Integers, bool, string, time.Time (UTC, so == holds).
		if g != any(w) {
			return bad()
		}
	}
	return ""
}

// edgeSinkRecords are sink records over what a Put carries: nulls with and
// without schemas, every primitive at its edges, logical types at the top
// and nested, structs, arrays and maps nested in each other (string-keyed,
// other-keyed, null keys), raw and empty data, headers of every kind.
func edgeSinkRecords() []*data.SinkRecord {
	dec := data.DecimalSchema(3, true)
	inner := data.StructBuilder().Name("inner").
		Field("d", dec).
		Field("when", data.TimestampSchema(true)).
		Field("day", data.DateSchema(true)).
		Field("tod", data.TimeSchema(false)).
		Field("f32", data.Float32Schema).
		MustBuild()
	withDefault := data.NewSchemaBuilder(data.Int16).Default(int16(7)).MustBuild()
	outer := data.StructBuilder().Name("outer").
		Field("i8", data.Int8Schema).
		Field("i16", withDefault).
		Field("i32", data.OptionalInt32Schema).
		Field("i64", data.Int64Schema).
		Field("f64", data.Float64Schema).
		Field("b", data.BooleanSchema).
		Field("s", data.StringSchema).
		Field("y", data.OptionalBytesSchema).
		Field("inner", inner).
		Field("list", data.ArrayOf(data.OptionalStringSchema)).
		Field("structs", data.ArrayOf(inner)).
		Field("bymap", data.MapOf(data.StringSchema, data.ArrayOf(data.Int64Schema))).
		Field("intmap", data.MapOf(data.Int32Schema, inner)).
		Field("nullkeys", data.MapOf(data.OptionalStringSchema, data.OptionalFloat64Schema)).
		MustBuild()
	in := func(i int64) *data.Struct {
		return data.NewStruct(inner).
			MustPut("d", data.Decimal{Unscaled: new(big.Int).Lsh(big.NewInt(-i-1), uint(i*13)), Scale: 3}).
			MustPut("when", time.UnixMilli(-i*1e9).UTC()).
			MustPut("day", time.UnixMilli(i*86400000).UTC()).
			MustPut("tod", time.UnixMilli(i*1000).UTC()).
			MustPut("f32", float32(-0.0))
	}
	out := func(i int64) *data.Struct {
		st := data.NewStruct(outer).
			MustPut("i8", int8(math.MinInt8)).
			MustPut("i64", int64(math.MinInt64)+i).
			MustPut("f64", math.Inf(1)).
			MustPut("b", i%2 == 0).
			MustPut("s", "ü"+strings.Repeat("\x00", int(i))).
			MustPut("y", []byte{}).
			MustPut("inner", in(i)).
			MustPut("list", []any{"a", nil, ""}).
			MustPut("structs", []any{in(1), in(2)}).
			MustPut("bymap", map[string]any{"k": []any{int64(1), int64(-1)}}).
			MustPut("intmap", data.Map{{Key: int32(-3), Value: in(3)}}).
			MustPut("nullkeys", data.Map{{Key: nil, Value: 1.5}, {Key: "x", Value: nil}})
		if i == 1 {
			// A required field with a default, left null; an empty map.
			st.SetIndex(1, nil)
			st.SetIndex(12, data.Map{})
		}
		return st
	}
	strMap := data.MapOf(data.StringSchema, data.OptionalInt8Schema)
	recs := []*data.SinkRecord{
		{Record: data.Record{Topic: "t", KeySchema: data.OptionalStringSchema, ValueSchema: outer, Value: out(0),
			Headers: data.Headers{
				{Key: "raw", Value: data.Raw("r")},
				{Key: "empty-raw", Value: data.Raw{}},
				{Key: "", Schema: data.OptionalStringSchema},
				{Key: "none"},
				{Key: "schemaless", Value: map[string]any{"a": []any{true, 2.5, "s", []byte{1}, nil}}},
				{Key: "dec", Schema: dec, Value: data.Decimal{Unscaled: big.NewInt(0), Scale: 3}},
			}},
			Offset: math.MaxInt64, TimestampType: data.LogAppendTime, OriginalTopic: "orig", OriginalPartition: -1, OriginalOffset: -1},
		{Record: data.Record{Topic: "ü", Partition: math.MaxInt32, KeySchema: outer, Key: out(1), Value: data.Raw{},
			Timestamp: time.UnixMilli(-2).UTC()}, Offset: -5},
		{Record: data.Record{Topic: "", Partition: math.MinInt32, Key: int64(-1), Value: []any{data.Map{{Key: int64(1), Value: nil}}},
			Timestamp: time.UnixMilli(0).UTC(), Headers: data.Headers{{Key: "h"}}}, TimestampType: data.CreateTime},
		{Record: data.Record{KeySchema: data.BytesSchema, Key: []byte{}, ValueSchema: data.StringSchema, Value: ""}},
		{Record: data.Record{KeySchema: data.Float32Schema, Key: float32(math.SmallestNonzeroFloat32),
			ValueSchema: strMap, Value: map[string]any{}}},
		{Record: data.Record{KeySchema: strMap, Key: map[string]any{"a": int8(-1), "b": nil},
			ValueSchema: data.TimestampSchema(false), Value: time.UnixMilli(math.MaxInt64 >> 12).UTC()}},
		{Record: data.Record{Key: 1e300, Value: false, Headers: data.Headers{{Key: "b", Schema: data.BooleanSchema, Value: true}}}},
	}
	return recs
}

// putBytes encodes sink records as the worker sends them.
func putBytes(t testing.TB, recs []*data.SinkRecord) []byte {
	t.Helper()
	schemas, ps, err := EncodeSinkRecords(recs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&pluginv1.PutRequest{Schemas: schemas, Records: ps})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// putSamples are the encodings of valid Put batches: random ones, the
// benchmark's, the hand-made edge cases, and each edge case alone.
func putSamples(t testing.TB) [][]byte {
	out := [][]byte{{}, putBytes(t, sinkBytesBatch()[:20]), putBytes(t, edgeSinkRecords())}
	for _, r := range edgeSinkRecords() {
		out = append(out, putBytes(t, []*data.SinkRecord{r}))
	}
	for _, rb := range randomRecordBatches(11, 300) {
		out = append(out, putBytes(t, rb.sink))
	}
	for _, m := range fastSamples(t) {
		if put, ok := m.(*pluginv1.PutRequest); ok {
			b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(put)
			out = append(out, b)
		}
	}
	return out
}

// Every valid batch is read by the fused decoder itself, into exactly the
// records the two-step path gives.
func TestDecodePutBatchMatchesTwoStep(t *testing.T) {
	records := 0
	for i, b := range putSamples(t) {
		if !checkPutLikeTwoStep(t, b) {
			t.Fatalf("sample %d: the fused decoder left a valid batch to the two-step path", i)
		}
		recs, _ := DecodePutBatch(b)
		records += len(recs)
	}
	if records < 1500 {
		t.Fatalf("only %d records covered", records)
	}
}

// The records alias the buffer they were decoded from, within their own
// bytes: an append to one value does not reach the next field.
func TestDecodePutBatchAliasesItsBuffer(t *testing.T) {
	b := putBytes(t, sinkBytesBatch()[:3])
	recs, err := DecodePutBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	v0 := recs[0].Value.([]byte)
	if cap(v0) != len(v0) {
		t.Fatalf("value cap %d, len %d", cap(v0), len(v0))
	}
	_ = append(v0, 0xFF)
	want := sinkBytesBatch()[:3]
	for i := range want {
		if !bytes.Equal(recs[i].Key.([]byte), want[i].Key.([]byte)) || !bytes.Equal(recs[i].Value.([]byte), want[i].Value.([]byte)) {
			t.Fatalf("record %d changed", i)
		}
	}
	clear(b)
	if bytes.Equal(recs[1].Value.([]byte), want[1].Value.([]byte)) {
		t.Fatal("the records do not alias the buffer")
	}
}

// Bytes values and raw data are boxed in shared blocks (sliceBoxes): each
// record keeps its own values, of their own Go types, across blocks,
// batches decoded after it and garbage collections.
func TestPutDecodeBoxedValuesStayPut(t *testing.T) {
	bytesList := data.ArrayOf(data.BytesSchema)
	var recs []*data.SinkRecord
	for i := range 3 * maxBoxBlock {
		r := &data.SinkRecord{Record: data.Record{Topic: "t", Partition: int32(i % 3)}, Offset: int64(i)}
		switch i % 4 {
		case 0:
			r.Key, r.Value = data.Raw(fmt.Sprintf("raw key %d", i)), data.Raw(fmt.Sprintf("raw value %d", i))
		case 1:
			r.KeySchema, r.Key = data.BytesSchema, []byte(fmt.Sprintf("key %d", i))
			r.ValueSchema, r.Value = bytesList, []any{[]byte(fmt.Sprintf("e%d", i)), []byte{}, []byte(fmt.Sprintf("f%d", i))}
		case 2:
			r.Key, r.Value = []byte(fmt.Sprintf("schemaless %d", i)), data.Raw{}
		case 3:
			r.Value = data.Raw(fmt.Sprintf("v%d", i))
			r.Headers = data.Headers{{Key: "h", Value: data.Raw(fmt.Sprintf("h%d", i))},
				{Key: "b", Schema: data.OptionalBytesSchema, Value: []byte(fmt.Sprintf("b%d", i))}}
		}
		recs = append(recs, r)
	}
	var batches [][]byte
	for start := 0; start < len(recs); start += 100 {
		batches = append(batches, putBytes(t, recs[start:min(start+100, len(recs))]))
	}
	var got [][]*data.SinkRecord
	for _, b := range batches {
		out, ok := fusedPutBatch(b, true)
		if !ok {
			t.Fatal("the fused decoder refused the batch")
		}
		got = append(got, out)
		runtime.GC()
	}
	runtime.GC()
	for i, b := range batches {
		want, err := twoStepPut(b)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffSinkRecords(got[i], want); d != "" {
			t.Fatalf("batch %d: %s", i, d)
		}
	}
	// The boxes hold slices of the batch, not copies.
	v := got[0][0].Value.(data.Raw)
	v[0] = 'X'
	if !bytes.Contains(batches[0], []byte("Xaw value 0")) {
		t.Fatal("a raw value is not a slice of its batch")
	}
}

// Batches decoded one after another into one BorrowBuffer, larger and
// smaller, of records with and without headers, structs, original topics
// and so on, come out as the two-step path gives them: nothing of a batch
// before shows through the memory it leaves for the next.
func TestBorrowBufferMatchesTwoStep(t *testing.T) {
	samples := putSamples(t)
	order := slices.Clone(samples)
	slices.Reverse(order)
	order = append(order, samples...)
	// Large batches between small ones.
	big := putBytes(t, sinkBytesBatch())
	for i := 0; i < len(samples); i += 40 {
		order = append(order, big, samples[i], big, samples[len(samples)-1-i])
	}
	var buf BorrowBuffer
	for i, b := range order {
		want, err := twoStepPut(bytes.Clone(b))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := fusedPutBatchInto(bytes.Clone(b), true, &buf)
		if !ok {
			t.Fatalf("batch %d: the fused decoder refused it", i)
		}
		if d := diffSinkRecords(got, want); d != "" {
			t.Fatalf("batch %d: %s", i, d)
		}
	}
	if buf.recs.kept == 0 || buf.boxes.kept == 0 || cap(buf.out) < benchBatch {
		t.Fatalf("the buffer kept %d records, %d boxes, room for %d pointers", buf.recs.kept, buf.boxes.kept, cap(buf.out))
	}
}

// Through the region: what TakeSinkRecords gives, good batches and bad,
// also when the decoder declines a batch in place; with a buffer and
// without (BorrowSinkRecords), which keeps nothing from batch to batch.
func TestBorrowSinkRecordsInto(t *testing.T) {
	region := newTestRegion(t, 8<<20)
	var buf BorrowBuffer
	batches := [][]*data.SinkRecord{sinkBytesBatch(), edgeSinkRecords(), sinkBytesBatch()[:10], nil}
	for _, rb := range randomRecordBatches(23, 40) {
		batches = append(batches, rb.sink)
	}
	for i, recs := range batches {
		ref, ok := region.PlacePut(addAll(t, recs))
		if !ok {
			t.Fatal("not placed")
		}
		want, err := region.TakeSinkRecords(ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := region.BorrowSinkRecordsInto(ref, &buf)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffSinkRecords(got, want); d != "" && !sinkRecordsHaveGoMaps(recs) {
			t.Fatalf("batch %d: %s", i, d)
		}
		first, err := region.BorrowSinkRecords(ref)
		if err != nil {
			t.Fatal(err)
		}
		again, err := region.BorrowSinkRecords(ref)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffSinkRecords(first, want); d != "" && !sinkRecordsHaveGoMaps(recs) {
			t.Fatalf("batch %d without a buffer: %s", i, d)
		}
		for j := range first {
			if first[j] == again[j] {
				t.Fatalf("batch %d: without a buffer, record %d decoded twice into the same memory", i, j)
			}
		}
	}
	// A field the fused decoder leaves to protobuf (unknown field 99 of a
	// record): the two-step path's records.
	odd := protowire.AppendTag(putBytes(t, sinkBytesBatch()[:1])[:0:0], 2, protowire.BytesType)
	rec := protowire.AppendTag(nil, 99, protowire.VarintType)
	rec = protowire.AppendVarint(rec, 1)
	odd = protowire.AppendBytes(odd, rec)
	ref, _ := region.Place(&pluginv1.PutRequest{})
	copy(region.mem, odd)
	ref.Length = uint64(len(odd))
	if _, ok := fusedPutBatch(bytes.Clone(odd), true); ok {
		t.Fatal("the fused decoder read an unknown field")
	}
	got, err := region.BorrowSinkRecordsInto(ref, &buf)
	want, wantErr := region.TakeSinkRecords(ref)
	if err != nil || wantErr != nil || diffSinkRecords(got, want) != "" || len(got) != 1 {
		t.Fatalf("declined batch: %d records, %v; want %d, %v", len(got), err, len(want), wantErr)
	}
	// Errors are TakeSinkRecords' own.
	for _, bad := range []*pluginv1.SharedBatch{{Offset: 8 << 20, Length: 1}, {Length: 64}} {
		if bad.GetOffset() == 0 {
			copy(region.mem, bytes.Repeat([]byte{0xFF}, 64))
		}
		_, err := region.BorrowSinkRecordsInto(bad, &buf)
		_, noBuf := region.BorrowSinkRecords(bad)
		_, want := region.TakeSinkRecords(bad)
		if err == nil || want == nil || err.Error() != want.Error() || noBuf == nil || noBuf.Error() != want.Error() {
			t.Fatalf("%v: error %v (without a buffer %v), want %v", bad, err, noBuf, want)
		}
	}
}

// A batch decoded again into a BorrowBuffer allocates next to nothing, and
// a batch larger than the buffer keeps is decoded whole while the buffer
// keeps no more than its bound.
func TestBorrowBufferReusesAndBounds(t *testing.T) {
	b := putBytes(t, sinkBytesBatch())
	var buf BorrowBuffer
	if _, ok := fusedPutBatchInto(b, true, &buf); !ok {
		t.Fatal("refused")
	}
	allocs := testing.AllocsPerRun(20, func() {
		if recs, ok := fusedPutBatchInto(b, true, &buf); !ok || len(recs) != benchBatch {
			t.Fatal("refused")
		}
	})
	// The schema table, its decoder and the topic string.
	if allocs > 10 {
		t.Fatalf("%v allocations to decode %d records again", allocs, benchBatch)
	}

	many := make([]*data.SinkRecord, 3*maxBorrowRecords)
	for i := range many {
		many[i] = &data.SinkRecord{Record: data.Record{Topic: "t", Key: data.Raw{byte(i)}, Value: data.Raw{byte(i >> 8)}}, Offset: int64(i)}
	}
	mb := putBytes(t, many)
	for range 2 {
		got, ok := fusedPutBatchInto(mb, true, &buf)
		if !ok || len(got) != len(many) {
			t.Fatalf("refused, or %d records", len(got))
		}
		// (diffSinkRecords compares schemas pairwise: too slow here.)
		for i, r := range got {
			k, v := r.Key.(data.Raw), r.Value.(data.Raw)
			if r.Offset != int64(i) || r.Topic != "t" || len(k) != 1 || k[0] != byte(i) || len(v) != 1 || v[0] != byte(i>>8) ||
				r.Headers != nil || r.KeySchema != nil || r.ValueSchema != nil {
				t.Fatalf("record %d: %+v", i, r)
			}
		}
		if buf.recs.kept > maxBorrowRecords || buf.boxes.kept > 2*maxBorrowRecords || cap(buf.out) > maxBorrowRecords {
			t.Fatalf("the buffer keeps %d records, %d boxes, %d pointers", buf.recs.kept, buf.boxes.kept, cap(buf.out))
		}
	}
	if got, ok := fusedPutBatchInto(b, true, &buf); !ok || diffSinkRecords(got, mustTwoStep(t, b)) != "" {
		t.Fatal("a small batch after a large one differs")
	}
}

func mustTwoStep(t *testing.T, b []byte) []*data.SinkRecord {
	t.Helper()
	recs, err := twoStepPut(b)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// Batches the fused decoder leaves to the two-step path, valid and not:
// the result or the error is that path's, word for word.
func TestDecodePutBatchOddAndInvalidLikeTwoStep(t *testing.T) {
	tag := protowire.AppendTag
	msg := func(num protowire.Number, fields ...[]byte) []byte {
		return protowire.AppendBytes(tag(nil, num, protowire.BytesType), bytes.Join(fields, nil))
	}
	varint := func(num protowire.Number, x uint64) []byte {
		return protowire.AppendVarint(tag(nil, num, protowire.VarintType), x)
	}
	str := func(num protowire.Number, s string) []byte { return msg(num, []byte(s)) }
	schemaOf := func(s *data.Schema) []byte {
		p, err := EncodeSchema(s)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := proto.Marshal(p)
		return msg(1, b)
	}
	record := func(fields ...[]byte) []byte { return msg(2, fields...) }
	// Data fields of a record: key 6, value 7.
	value := func(num protowire.Number, ref uint32, kind []byte) []byte {
		return msg(num, varint(3, uint64(ref)), msg(1, kind))
	}
	intKind := func(x int64) []byte { return varint(2, protowire.EncodeZigZag(x)) }
	deep := func(depth int) []byte {
		v := intKind(1)
		for range depth {
			v = msg(6, msg(1, v))
		}
		return v
	}
	st := data.StructBuilder().Field("a", data.Int8Schema).Field("b", data.StringSchema).MustBuild()
	valid := putBytes(t, edgeSinkRecords())
	cases := map[string][]byte{
		"empty":                          {},
		"unknown top-level field":        append(bytes.Clone(valid), varint(9, 1)...),
		"unknown group field":            append(tag(bytes.Clone(valid), 12, protowire.StartGroupType), tag(nil, 12, protowire.EndGroupType)...),
		"records as varint":              append(bytes.Clone(valid), varint(2, 1)...),
		"unknown record field":           record(str(1, "t"), varint(40, 3)),
		"unknown field in a value":       bytes.Join([][]byte{schemaOf(data.Int8Schema), record(value(7, 1, append(intKind(5), varint(30, 1)...)))}, nil),
		"two kinds in a value":           bytes.Join([][]byte{schemaOf(data.StringSchema), record(value(7, 1, append(intKind(5), str(5, "s")...)))}, nil),
		"two kinds, the last mismatched": bytes.Join([][]byte{schemaOf(data.StringSchema), record(value(7, 1, append(str(5, "s"), intKind(5)...)))}, nil),
		"kind as another wire type":      bytes.Join([][]byte{schemaOf(data.Int8Schema), record(value(7, 1, str(2, "x")))}, nil),
		"value then raw":                 record(msg(7, msg(1, intKind(1)), str(2, "raw"))),
		"raw then value":                 record(msg(7, str(2, "raw"), msg(1, intKind(1)))),
		"schema reference twice":         bytes.Join([][]byte{schemaOf(data.Int8Schema), schemaOf(data.StringSchema), record(msg(7, varint(3, 1), varint(3, 2), msg(1, str(5, "s"))))}, nil),
		"key twice (merged)":             bytes.Join([][]byte{schemaOf(data.Int8Schema), record(msg(6, varint(3, 1)), msg(6, msg(1, intKind(3))))}, nil),
		"header value twice (merged)":    record(msg(8, str(1, "h"), msg(2, varint(3, 0)), msg(2, str(2, "r")))),
		"scalars twice":                  record(varint(3, 1), varint(3, 2), str(1, "a"), str(1, "b"), varint(5, 1), varint(5, 2)),
		"schemas after records":          append(record(value(7, 1, intKind(-4))), schemaOf(data.Int8Schema)...),
		"deep schemaless array":          record(msg(7, msg(1, deep(200)))),
		"deeper than protobuf allows":    record(msg(7, msg(1, deep(10010)))),
		"invalid UTF-8 topic":            record(str(1, "\xff")),
		"invalid UTF-8 original topic":   record(str(9, "a\xc0")),
		"invalid UTF-8 string value":     bytes.Join([][]byte{schemaOf(data.StringSchema), record(value(7, 1, str(5, "\xfe")))}, nil),
		"invalid UTF-8 header key":       record(msg(8, str(1, "\xff"))),
		"schema reference outside":       bytes.Join([][]byte{schemaOf(data.Int8Schema), record(value(7, 2, intKind(1)))}, nil),
		"raw with a bad reference":       record(msg(7, varint(3, 9), str(2, "raw"))),
		"null with a bad reference":      record(msg(6, varint(3, 9))),
		"int8 out of range":              bytes.Join([][]byte{schemaOf(data.Int8Schema), record(value(7, 1, intKind(200)))}, nil),
		"unknown timestamp type":         record(varint(5, 7)),
		"negative timestamp type":        record(varint(5, uint64(math.MaxUint64))),
		"struct arity":                   bytes.Join([][]byte{schemaOf(st), record(value(7, 1, msg(8, msg(1, intKind(1)))))}, nil),
		"struct required null":           bytes.Join([][]byte{schemaOf(st), record(value(7, 1, msg(8, msg(1, intKind(1)), msg(1))))}, nil),
		"kind mismatch":                  bytes.Join([][]byte{schemaOf(data.Int32Schema), record(value(7, 1, str(4, "b")))}, nil),
		"schemaless struct":              record(msg(7, msg(1, msg(8)))),
		"map entry key twice":            record(msg(7, msg(1, msg(7, msg(1, msg(1, str(5, "a")), msg(1, str(5, "b"))))))),
		"map entry unknown field":        record(msg(7, msg(1, msg(7, msg(1, msg(1, str(5, "a")), varint(3, 1)))))),
		"map entry without key":          bytes.Join([][]byte{schemaOf(data.MapOf(data.StringSchema, data.Int8Schema)), record(value(7, 1, msg(7, msg(1, msg(2, intKind(1))))))}, nil),
		"array of unknown fields":        record(msg(7, msg(1, msg(6, varint(2, 1))))),
		"invalid table entry":            append(msg(1, varint(1, 99)), record()...),
		"table entry of a bad type":      append(msg(1, nil), record()...),
		"Decimal without scale":          bytes.Join([][]byte{schemaOf(&data.Schema{Type: data.Bytes, Name: data.DecimalName}), record(value(7, 1, str(4, "\x01")))}, nil),
		"truncated":                      valid[:len(valid)-3],
		"garbage":                        bytes.Repeat([]byte{0xFF}, 64),
		"overlong varint":                append(record(), bytes.Repeat([]byte{0x80}, 11)...),
	}
	var fused []string
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if checkPutLikeTwoStep(t, b) {
				fused = append(fused, name)
			}
		})
	}
	// Valid batches stay with the fused decoder (a value it does not read
	// itself goes through protobuf alone), but for a schema table after
	// the records, which no encoder writes; the others go the two-step way.
	want := []string{"array of unknown fields", "deep schemaless array", "empty", "kind as another wire type",
		"map entry key twice", "map entry unknown field", "raw with a bad reference", "scalars twice",
		"schema reference twice", "two kinds in a value", "unknown field in a value"}
	slices.Sort(fused)
	if !slices.Equal(fused, want) {
		t.Fatalf("read by the fused decoder: %q\nwant %q", fused, want)
	}
}

// Random corruptions of valid batches (flipped, replaced, dropped bytes,
// truncations) decode as the two-step path decodes them.
func TestDecodePutBatchCorruptionsLikeTwoStep(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 3))
	samples := putSamples(t)
	for _, valid := range [][]byte{samples[1], samples[2], samples[4], samples[5], samples[len(samples)-1]} {
		for range 2000 {
			b := bytes.Clone(valid)
			for range 1 + r.IntN(3) {
				if len(b) == 0 {
					break
				}
				i := r.IntN(len(b))
				switch r.IntN(4) {
				case 0:
					b[i] ^= byte(1 << r.IntN(8))
				case 1:
					b[i] = byte(r.IntN(256))
				case 2:
					b = append(b[:i], b[i+1:]...)
				case 3:
					b = b[:i]
				}
			}
			checkPutLikeTwoStep(t, b)
		}
	}
}

func FuzzDecodePutBatch(f *testing.F) {
	// Small seeds: the edge cases one record at a time, a few random batches.
	for _, r := range edgeSinkRecords() {
		f.Add(putBytes(f, []*data.SinkRecord{r}))
	}
	for _, rb := range randomRecordBatches(3, 6) {
		f.Add(putBytes(f, rb.sink))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkPutLikeTwoStep(t, b)
	})
}

// Records are allocated in blocks: a small record ahead of large ones does
// not make the decoder allocate for a batch of small records, and records
// of one size get about as many as there are.
func TestPutDecodeRecordBlocks(t *testing.T) {
	batch := func(sizes ...int) []byte {
		var recs []*data.SinkRecord
		for i, n := range sizes {
			recs = append(recs, &data.SinkRecord{Record: data.Record{Topic: "t", Value: data.Raw(bytes.Repeat([]byte{'v'}, n))}, Offset: int64(i)})
		}
		return putBytes(t, recs)
	}
	allocated := func(b []byte, want int) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		recs, err := DecodePutBatch(b)
		runtime.ReadMemStats(&after)
		if err != nil || len(recs) != want {
			t.Fatalf("%d records, %v; want %d", len(recs), err, want)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	sizes := []int{1}
	for range 20 {
		sizes = append(sizes, 64<<10)
	}
	if got := allocated(batch(sizes...), 21); got > 64<<10 {
		t.Errorf("one small record then 20 of 64 KiB: %d bytes allocated", got)
	}
	same := make([]int, 5000)
	for i := range same {
		same[i] = 100
	}
	per := unsafe.Sizeof(data.SinkRecord{}) + 8 // the record and its pointer
	if got := allocated(batch(same...), 5000); got > uint64(5000*per*3) {
		t.Errorf("5000 records of one size: %d bytes allocated, more than 3× the %d they take", got, 5000*per)
	}
}

// BenchmarkBorrowPutPluginSide is the plugin's half of a Put as a sink
// task that borrows its records gets it (BorrowSinkRecordsInto): decoded
// in place, into the memory of the batch before. ...Cold has the batch written again before every decode by a
// goroutine on another thread (so most likely another core), as the
// worker's process writes it: the decoder then reads lines another core
// holds, as it does in a pipeline, rather than its own cache.
func BenchmarkBorrowPutPluginSide(b *testing.B) {
	r, ref := placedSinkBatch(b)
	var buf BorrowBuffer
	b.ReportAllocs()
	for b.Loop() {
		out, err := r.BorrowSinkRecordsInto(ref, &buf)
		if err != nil || len(out) != benchBatch {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/rec")
}

// BenchmarkBorrowPutPluginSideNoBuffer allocates every batch's records.
func BenchmarkBorrowPutPluginSideNoBuffer(b *testing.B) {
	r, ref := placedSinkBatch(b)
	b.ReportAllocs()
	for b.Loop() {
		out, err := r.BorrowSinkRecords(ref)
		if err != nil || len(out) != benchBatch {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/rec")
}

func BenchmarkBorrowPutPluginSideCold(b *testing.B) {
	r, ref := placedSinkBatch(b)
	batch := bytes.Clone(r.mem[ref.GetOffset() : ref.GetOffset()+ref.GetLength()])
	write, stop := make(chan struct{}, 1), make(chan struct{})
	var written atomic.Bool
	go func() {
		for {
			select {
			case <-write:
				copy(r.mem[ref.GetOffset():], batch)
				written.Store(true)
			case <-stop:
				return
			}
		}
	}()
	defer close(stop)
	var buf BorrowBuffer
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		written.Store(false)
		write <- struct{}{}
		// Spin rather than block, so that the writer gets the other
		// processor.
		for !written.Load() {
		}
		b.StartTimer()
		out, err := r.BorrowSinkRecordsInto(ref, &buf)
		if err != nil || len(out) != benchBatch {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/rec")
}

package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// twoStepPoll is the way a Poll answer was written before SourceBatch:
// EncodeSourceRecords, then deterministic protobuf (which the hand encoder
// of fastencode.go matches byte for byte).
func twoStepPoll(t testing.TB, recs []*data.SourceRecord, firstSeq uint64) []byte {
	t.Helper()
	schemas, ps, err := EncodeSourceRecords(recs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&pluginv1.PollResponse{Schemas: schemas, Records: ps, FirstSeq: firstSeq})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hasGoMaps reports whether a value holds a map[string]any of several
// keys, whose entries Go iterates in random order.
func hasGoMaps(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 1 {
			return true
		}
		for _, e := range x {
			if hasGoMaps(e) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(x, hasGoMaps)
	case data.Map:
		return slices.ContainsFunc(x, func(e data.MapEntry) bool { return hasGoMaps(e.Key) || hasGoMaps(e.Value) })
	case *data.Struct:
		return slices.ContainsFunc(x.Values(), hasGoMaps) || hasGoMaps(x.Schema().Default)
	}
	return false
}

func schemaHasGoMaps(s *data.Schema) bool {
	if s == nil {
		return false
	}
	if hasGoMaps(s.Default) || schemaHasGoMaps(s.KeySchema) || schemaHasGoMaps(s.ValueSchema) {
		return true
	}
	return slices.ContainsFunc(s.Fields, func(f data.Field) bool { return schemaHasGoMaps(f.Schema) })
}

func recordsHaveGoMaps(recs []*data.SourceRecord) bool {
	for _, r := range recs {
		if hasGoMaps(r.Key) || hasGoMaps(r.Value) || schemaHasGoMaps(r.KeySchema) || schemaHasGoMaps(r.ValueSchema) {
			return true
		}
		for _, h := range r.Headers {
			if hasGoMaps(h.Value) || schemaHasGoMaps(h.Schema) {
				return true
			}
		}
	}
	return false
}

// canonicalPoll decodes a Poll answer and sorts the entries of every
// ValueMap by their encoding, so that answers differing only in Go's map
// order compare equal.
func canonicalPoll(t testing.TB, b []byte) *pluginv1.PollResponse {
	t.Helper()
	var m pluginv1.PollResponse
	if err := proto.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	sortValueMaps(m.ProtoReflect())
	return &m
}

func sortValueMaps(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap() || fd.Message() == nil:
		case fd.IsList():
			for i := range v.List().Len() {
				sortValueMaps(v.List().Get(i).Message())
			}
		default:
			sortValueMaps(v.Message())
		}
		return true
	})
	if vm, ok := m.Interface().(*pluginv1.ValueMap); ok {
		key := func(e *pluginv1.MapEntry) string {
			b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(e)
			return string(b)
		}
		slices.SortFunc(vm.Entries, func(a, b *pluginv1.MapEntry) int { return strings.Compare(key(a), key(b)) })
	}
}

// checkPollLikeTwoStep writes recs through a SourceBatch (Marshal, and
// PlacePoll into region) and fails unless the bytes are the two-step
// path's; with multi-key Go maps, their entries may come in another order.
// exact reports whether the bytes were identical.
func checkPollLikeTwoStep(t testing.TB, region *SharedRegion, recs []*data.SourceRecord, firstSeq uint64) (exact bool) {
	t.Helper()
	var b SourceBatch
	for i, r := range recs {
		ok, err := b.Add(r, math.MaxInt)
		if err != nil || !ok {
			t.Fatalf("record %d: added %v, %v", i, ok, err)
		}
	}
	want := twoStepPoll(t, recs, firstSeq)
	if b.encodedSize(firstSeq) != len(want) {
		t.Fatalf("sized %d, protobuf wrote %d", b.encodedSize(firstSeq), len(want))
	}
	direct := make([]byte, b.encodedSize(firstSeq))
	if !b.writeTo(direct, firstSeq) {
		t.Fatal("the fused writer refused a plain batch")
	}
	got, err := b.Marshal(firstSeq)
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := region.PlacePoll(&b, firstSeq)
	if !ok || ref.GetOffset() != 0 || ref.GetLength() != uint64(len(want)) {
		t.Fatalf("placed %v (%v), want 0+%d", ref, ok, len(want))
	}
	placed := region.mem[:len(want)]
	if bytes.Equal(got, want) && bytes.Equal(placed, want) && bytes.Equal(direct, want) {
		return true
	}
	if !recordsHaveGoMaps(recs) {
		t.Fatalf("fused\n%x\nplaced\n%x\ntwo-step\n%x", got, placed, want)
	}
	for _, out := range [][]byte{got, placed, direct} {
		if !proto.Equal(canonicalPoll(t, out), canonicalPoll(t, want)) {
			t.Fatalf("fused\n%x\ntwo-step\n%x\n(beyond the order of map entries)", out, want)
		}
	}
	return false
}

// edgeSourceRecords are the edge cases of edgeSinkRecords as source
// records, with every transaction boundary, partition and offset maps
// (shared and not), and a record with none of the optional fields.
func edgeSourceRecords() []*data.SourceRecord {
	part := map[string]any{"file": "/x", "n": int64(1)}
	var out []*data.SourceRecord
	for i, r := range edgeSinkRecords() {
		sr := &data.SourceRecord{Record: r.Record, Transaction: data.TransactionBoundary(i % 3)}
		if i%2 == 0 {
			sr.Partition = data.NoPartition
		}
		switch i % 3 {
		case 0:
			sr.SourcePartition, sr.SourceOffset = part, map[string]any{"pos": int64(i), "f": 1.5}
		case 1:
			sr.SourcePartition = map[string]any{}
		}
		out = append(out, sr)
	}
	return append(out, &data.SourceRecord{}, &data.SourceRecord{Record: data.Record{Partition: data.NoPartition, Value: data.Raw(nil)}})
}

// Every batch, random and hand-made, is written byte for byte as the
// two-step path writes it, into a buffer and into the shared region.
func TestSourceBatchMatchesTwoStep(t *testing.T) {
	region := newTestRegion(t, 8<<20)
	batches := [][]*data.SourceRecord{nil, edgeSourceRecords(), sourceBatch(), rawBatch(), structBatch()}
	for _, r := range edgeSourceRecords() {
		batches = append(batches, []*data.SourceRecord{r})
	}
	for _, rb := range randomRecordBatches(17, 400) {
		batches = append(batches, rb.src)
	}
	exact, records := 0, 0
	for i, recs := range batches {
		for _, fs := range []uint64{0, 1, uint64(i) << 40} {
			if checkPollLikeTwoStep(t, region, recs, fs) {
				exact++
			}
		}
		records += len(recs)
	}
	// Most random batches hold a map[string]any of two keys somewhere.
	if records < 2000 || exact < 200 {
		t.Fatalf("%d records; %d of %d answers byte for byte", records, exact, 3*len(batches))
	}
}

// A record the two-step path cannot encode is refused by Add with its
// error, and leaves the batch as it was.
func TestSourceBatchErrorsLikeEncodeSourceRecords(t *testing.T) {
	st := data.StructBuilder().Name("st").Field("a", data.Int32Schema).Field("b", data.ArrayOf(data.Int8Schema)).MustBuild()
	other := data.StructBuilder().Name("other").Field("a", data.Int32Schema).MustBuild()
	good := data.NewStruct(st).MustPut("a", int32(1)).MustPut("b", []any{int8(1)})
	nullElem := data.NewStruct(st).MustPut("a", int32(1))
	nullElem.SetIndex(1, []any{int8(1), nil})
	rec := func(ks *data.Schema, k any, vs *data.Schema, v any, hs ...data.Header) *data.SourceRecord {
		return &data.SourceRecord{Record: data.Record{Topic: "t", Partition: data.NoPartition, KeySchema: ks, Key: k, ValueSchema: vs, Value: v, Headers: hs},
			SourcePartition: map[string]any{"p": "new"}}
	}
	cases := map[string]*data.SourceRecord{
		"transaction":           {Record: data.Record{Topic: "t"}, Transaction: 3},
		"negative transaction":  {Record: data.Record{Topic: "t"}, Transaction: -1},
		"key type":              rec(data.Int32Schema, "x", nil, nil),
		"key before value":      rec(data.Int32Schema, "x", data.Int8Schema, "y"),
		"key before header":     rec(data.Int32Schema, "x", nil, nil, data.Header{Key: "h", Schema: data.Int8Schema, Value: "z"}),
		"value struct schema":   rec(nil, nil, st, data.NewStruct(other)),
		"nested required null":  rec(nil, nil, st, nullElem),
		"required null field":   rec(nil, nil, st, data.NewStruct(st)),
		"decimal scale":         rec(nil, nil, data.DecimalSchema(2, false), data.Decimal{Unscaled: big.NewInt(1), Scale: 3}),
		"date with a time":      rec(nil, nil, data.DateSchema(false), time.UnixMilli(5).UTC()),
		"schemaless struct":     rec(nil, good, nil, nil),
		"schemaless time":       rec(nil, time.Now(), nil, nil),
		"nested raw":            rec(nil, []any{data.Raw("r")}, nil, nil),
		"unsupported":           rec(nil, struct{}{}, nil, nil),
		"schemaless map value":  rec(nil, map[string]any{"k": []string{"typed"}}, nil, nil),
		"map key schema":        rec(data.MapOf(data.Int8Schema, data.Int8Schema), map[string]any{"k": int8(1)}, nil, nil),
		"data.Map entry":        rec(data.MapOf(data.Int8Schema, data.Int8Schema), data.Map{{Key: int8(1), Value: int8(2)}, {Key: int8(2), Value: "v"}}, nil, nil),
		"invalid schema type":   rec(&data.Schema{Type: 99}, int8(1), nil, nil),
		"array without element": rec(&data.Schema{Type: data.Array}, []any{}, nil, nil),
		"bad default":           rec(&data.Schema{Type: data.Int8, Default: "x"}, int8(1), nil, nil),
		"header":                rec(nil, nil, nil, nil, data.Header{Key: "h1"}, data.Header{Key: "h2", Schema: st, Value: int8(1)}),
		"partition JSON":        {Record: data.Record{Topic: "t"}, SourcePartition: map[string]any{"f": math.NaN()}},
		"offset JSON":           {Record: data.Record{Topic: "t"}, SourceOffset: map[string]any{"c": make(chan int)}},
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			var b SourceBatch
			for _, r := range sourceBatch() {
				if ok, err := b.Add(r, math.MaxInt); !ok || err != nil {
					t.Fatal(ok, err)
				}
			}
			before, _ := b.Marshal(5)
			mark := b.Mark()
			ok, err := b.Add(bad, math.MaxInt)
			_, _, want := EncodeSourceRecords([]*data.SourceRecord{bad})
			if want == nil {
				t.Fatal("EncodeSourceRecords took it")
			}
			if ok || err == nil || "source record 0 (topic "+bad.Topic+"): "+err.Error() != want.Error() {
				t.Fatalf("added %v, error %v\nEncodeSourceRecords: %v", ok, err, want)
			}
			after, _ := b.Marshal(5)
			if m := b.Mark(); m.recs != mark.recs || m.js != mark.js || m.size != mark.size || m.table != mark.table ||
				m.lastSpan != mark.lastSpan || !sameMap(m.lastPart, mark.lastPart) || !bytes.Equal(before, after) {
				t.Fatal("the refused record changed the batch")
			}
		})
	}
}

// Records taken back (Rewind) leave no trace: not their schemas, not their
// JSON, not the partition map they shared.
func TestSourceBatchRewind(t *testing.T) {
	region := newTestRegion(t, 1<<20)
	s1 := data.StructBuilder().Name("one").Field("a", data.Int8Schema).MustBuild()
	s2 := data.StructBuilder().Name("two").Field("a", data.Int8Schema).MustBuild()
	same := data.StructBuilder().Name("two").Field("a", data.Int8Schema).MustBuild()
	part := map[string]any{"p": int64(1)}
	mk := func(s *data.Schema, p map[string]any, n int8) *data.SourceRecord {
		return &data.SourceRecord{Record: data.Record{Topic: "t", Partition: data.NoPartition, ValueSchema: s, Value: data.NewStruct(s).MustPut("a", n),
			Headers: data.Headers{{Key: "h", Schema: data.StringSchema, Value: "v"}}}, SourcePartition: p, SourceOffset: map[string]any{"o": int64(n)}}
	}
	a := []*data.SourceRecord{mk(s1, part, 1), mk(s1, part, 2)}
	dropped := []*data.SourceRecord{mk(s2, map[string]any{"p": int64(2)}, 3), mk(same, part, 4)}
	c := []*data.SourceRecord{mk(same, part, 5), mk(s2, part, 6), mk(s1, map[string]any{"p": int64(2)}, 7)}
	var b SourceBatch
	for _, r := range a {
		b.Add(r, math.MaxInt)
	}
	mark := b.Mark()
	for _, r := range dropped {
		b.Add(r, math.MaxInt)
	}
	if b.Len() != 4 || len(b.schemas.table) != 3 {
		t.Fatalf("%d records, %d schemas before the rewind", b.Len(), len(b.schemas.table))
	}
	b.Rewind(mark)
	for _, r := range c {
		b.Add(r, math.MaxInt)
	}
	all := append(slices.Clone(a), c...)
	want := twoStepPoll(t, all, 9)
	got, err := b.Marshal(9)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after a rewind:\n%x (%v)\nwant\n%x", got, err, want)
	}
	if !slices.Equal(b.Records(), all) {
		t.Fatal("records differ")
	}
	checkPollLikeTwoStep(t, region, all, 9)
}

// What the fused writer does not write (invalid UTF-8, a record changed
// after it was added) is not placed, and Marshal gives protobuf's answer.
func TestSourceBatchFallsBack(t *testing.T) {
	region := newTestRegion(t, 1<<20)
	add := func(recs ...*data.SourceRecord) *SourceBatch {
		var b SourceBatch
		for _, r := range recs {
			if ok, err := b.Add(r, math.MaxInt); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
		return &b
	}
	for name, r := range map[string]*data.SourceRecord{
		"topic":        {Record: data.Record{Topic: "\xff"}},
		"header key":   {Record: data.Record{Headers: data.Headers{{Key: "a\xc0"}}}},
		"string value": {Record: data.Record{ValueSchema: data.StringSchema, Value: "\xfe"}},
		"map key":      {Record: data.Record{Value: map[string]any{"\xfe": int64(1)}}},
		"schema name":  {Record: data.Record{ValueSchema: &data.Schema{Type: data.Int8, Name: "\xff"}, Value: int8(1)}},
	} {
		b := add(sourceBatch()[0], r)
		if ref, ok := region.PlacePoll(b, 1); ok {
			t.Fatalf("%s: invalid UTF-8 placed at %v", name, ref)
		}
		resp, err := b.Proto(1)
		if err != nil {
			t.Fatal(err)
		}
		_, want := proto.MarshalOptions{Deterministic: true}.Marshal(resp)
		if _, err := b.Marshal(1); want == nil || err == nil || err.Error() != want.Error() {
			t.Fatalf("%s: Marshal error %v, protobuf's %v", name, err, want)
		}
	}
	// Records changed after Add: a longer value, a shorter one, a new schema.
	for name, change := range map[string]func(r *data.SourceRecord){
		"longer":     func(r *data.SourceRecord) { r.Value = data.Raw(make([]byte, 300)) },
		"shorter":    func(r *data.SourceRecord) { r.Value = data.Raw(nil) },
		"new schema": func(r *data.SourceRecord) { r.KeySchema, r.Key = data.Int64Schema, int64(1) },
	} {
		r := &data.SourceRecord{Record: data.Record{Topic: "t", Value: data.Raw(make([]byte, 100))}}
		b := add(sourceBatch()[0], r, sourceBatch()[1])
		change(r)
		if ref, ok := region.PlacePoll(b, 1); ok {
			t.Fatalf("%s: a changed record placed at %v", name, ref)
		}
		got, err := b.Marshal(1)
		if err != nil || !bytes.Equal(got, twoStepPoll(t, b.Records(), 1)) {
			t.Fatalf("%s: Marshal gave %x (%v)", name, got, err)
		}
	}
	// Too large for the region, and a closed region.
	big := add(&data.SourceRecord{Record: data.Record{Value: data.Raw(make([]byte, 2<<20))}})
	if _, ok := region.PlacePoll(big, 1); ok {
		t.Fatal("a 2 MiB batch placed in a 1 MiB region")
	}
	small := add(sourceBatch()...)
	if _, ok := region.PlacePoll(small, 1); !ok {
		t.Fatal("not placed")
	}
	region.Close()
	if _, ok := region.PlacePoll(small, 1); ok {
		t.Fatal("placed into a closed region")
	}
}

// Add keeps the encoded answer, first_seq included, within max_bytes, and
// Size is exact.
func TestSourceBatchSize(t *testing.T) {
	recs := randomRecordBatches(8, 60)
	var all []*data.SourceRecord
	for _, rb := range recs {
		all = append(all, rb.src...)
	}
	for _, maxBytes := range []int{0, 100, 1000, 10_000} {
		for rest := all; len(rest) > 0; {
			var b SourceBatch
			n := 0
			for _, r := range rest {
				ok, err := b.Add(r, maxBytes)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				n++
			}
			if n == 0 {
				t.Fatal("the first record did not join")
			}
			got, _ := b.Marshal(math.MaxUint64)
			if len(got) != b.Size()+maxFirstSeqSize {
				t.Fatalf("%d bytes, Size %d", len(got), b.Size())
			}
			if n > 1 && len(got) > maxBytes {
				t.Fatalf("max_bytes %d: %d records in %d bytes", maxBytes, n, len(got))
			}
			rest = rest[n:]
		}
	}
}

func FuzzSourceBatch(f *testing.F) {
	f.Add(uint64(1))
	f.Add(uint64(1 << 40))
	f.Fuzz(func(t *testing.T, seed uint64) {
		region := NewSharedRegion(make([]byte, 1<<20), nil)
		for _, rb := range randomRecordBatches(seed, 4) {
			checkPollLikeTwoStep(t, region, rb.src, rb.firstSeq)
		}
	})
}

// Source offsets of one key, written from a lookup of the key the last
// one had (writeOffset), come out as writeJSON writes them whatever comes
// between: other keys, keys that need escapes, values of every JSON kind,
// maps of several keys or none, and maps shared between records.
func TestSourceBatchOffsetsOfOneKey(t *testing.T) {
	region := newTestRegion(t, 1<<20)
	shared := map[string]any{"seq": int64(5)}
	offsets := []map[string]any{
		{"seq": int64(1)}, {"seq": int64(2)}, {"seq": int64(-3)}, shared, shared,
		{"seq": "a \"quoted\" \\ string\n"}, {"seq": 1.0}, {"seq": float32(2.5)}, {"seq": []byte{0, 1, 2}},
		{"seq": nil}, {"seq": true}, {"seq": []any{int64(1), "x"}}, {"seq": map[string]any{"in": int64(1)}},
		{"seq": json.Number("12.50")}, {"seq": []string{"typed"}},
		{"pos": int64(7)}, {"pos": int64(8)}, {"seq": int64(9)},
		{"k\"\u0001\u00e9": int64(10)}, {"k\"\u0001\u00e9": int64(11)},
		{"": int64(12)}, {"": int64(13)},
		{}, {"seq": int64(14), "pos": int64(15)}, {"seq": int64(16)},
		nil, {"seq": int64(17)},
	}
	var recs []*data.SourceRecord
	for i, off := range offsets {
		recs = append(recs, &data.SourceRecord{Record: data.Record{Topic: "t", Partition: data.NoPartition, Value: data.Raw{byte(i)}},
			SourcePartition: map[string]any{"task": int64(0)}, SourceOffset: off})
	}
	// All at once, and each after every other, so that each meets every
	// key the batch may have learned.
	checkPollLikeTwoStep(t, region, recs, 1)
	for i := range recs {
		for j := range recs {
			checkPollLikeTwoStep(t, region, []*data.SourceRecord{recs[i], recs[j]}, 1)
		}
	}

	// An offset the key lookup finds but cannot write fails as writeJSON
	// fails, and leaves the batch as it was.
	for _, bad := range []any{math.NaN(), make(chan int), map[string]any{"f": math.Inf(1)}} {
		var b SourceBatch
		if ok, err := b.Add(recs[0], math.MaxInt); !ok || err != nil {
			t.Fatal(ok, err)
		}
		before, _ := b.Marshal(1)
		badRec := &data.SourceRecord{Record: data.Record{Topic: "t"}, SourceOffset: map[string]any{"seq": bad}}
		ok, err := b.Add(badRec, math.MaxInt)
		_, _, want := EncodeSourceRecords([]*data.SourceRecord{badRec})
		if ok || err == nil || want == nil || "source record 0 (topic t): "+err.Error() != want.Error() {
			t.Fatalf("%v: added %v, error %v\nEncodeSourceRecords: %v", bad, ok, err, want)
		}
		if after, _ := b.Marshal(1); !bytes.Equal(before, after) || b.Len() != 1 {
			t.Fatalf("%v: the refused record changed the batch", bad)
		}
	}
}

// A batch Reset and filled again answers as a new batch would: no record,
// schema, JSON or partition map of the first filling shows through, and
// it reuses its buffers.
func TestSourceBatchReset(t *testing.T) {
	region := newTestRegion(t, 8<<20)
	var b SourceBatch
	// The same records twice in a row: their partition map is the one
	// the batch met last before the reset.
	same := datagenBatch()
	fillings := [][]*data.SourceRecord{edgeSourceRecords(), same, same, structBatch(), sourceBatch(), same[:3], nil, edgeSourceRecords()}
	for _, rb := range randomRecordBatches(29, 30) {
		fillings = append(fillings, rb.src)
	}
	for i, recs := range fillings {
		b.Reset()
		if b.Len() != 0 || b.Size() != 0 || len(b.schemas.table) != 0 {
			t.Fatalf("filling %d: reset batch holds %d records, %d bytes, %d schemas", i, b.Len(), b.Size(), len(b.schemas.table))
		}
		var fresh SourceBatch
		for _, r := range recs {
			if ok, err := b.Add(r, math.MaxInt); !ok || err != nil {
				t.Fatal(ok, err)
			}
			fresh.Add(r, math.MaxInt)
		}
		got, err1 := b.Marshal(3)
		want, err2 := fresh.Marshal(3)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !bytes.Equal(got, want) && !recordsHaveGoMaps(recs) {
			t.Fatalf("filling %d: a reset batch answers otherwise than a new one", i)
		}
		if !recordsHaveGoMaps(recs) {
			checkPollLikeTwoStep(t, region, recs, 3)
		}
	}
	b.Reset()
	recs := datagenBatch()
	allocs := testing.AllocsPerRun(10, func() {
		b.Reset()
		for _, r := range recs {
			b.Add(r, math.MaxInt)
		}
	})
	if allocs > 2 {
		t.Fatalf("a reset batch filled again allocated %v times", allocs)
	}
}

// A record's source offset is written as it was when the record was
// added: a task that changes the map afterwards (or hands it out again,
// changed, for a later record) changes neither that record's encoding nor
// makes the later record take the earlier JSON.
func TestSourceBatchOffsetChangedAfterAdd(t *testing.T) {
	region := newTestRegion(t, 1<<20)
	off := map[string]any{"seq": int64(1)}
	part := map[string]any{"task": int64(0)}
	rec := func(off map[string]any) *data.SourceRecord {
		return &data.SourceRecord{Record: data.Record{Topic: "t", Partition: data.NoPartition, Value: data.Raw("v")},
			SourcePartition: part, SourceOffset: off}
	}
	var b SourceBatch
	first := rec(off)
	b.Add(first, math.MaxInt)
	off["seq"] = int64(2)
	b.Add(rec(off), math.MaxInt)
	b.Add(rec(map[string]any{"seq": int64(3)}), math.MaxInt)
	got, err := b.Marshal(1)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := []*data.SourceRecord{rec(map[string]any{"seq": int64(1)}), rec(map[string]any{"seq": int64(2)}), rec(map[string]any{"seq": int64(3)})}
	if want := twoStepPoll(t, snapshot, 1); !bytes.Equal(got, want) {
		t.Fatalf("offsets changed after they were added:\n%x\nwant\n%x", got, want)
	}
	if ref, ok := region.PlacePoll(&b, 1); !ok || !bytes.Equal(region.mem[:ref.GetLength()], got) {
		t.Fatal("the placed answer differs from Marshal's")
	}
}

// datagenBatch is a batch as datagen's raw format makes it: a short raw
// key, a 1 KiB raw value, one partition map, an offset map per record.
func datagenBatch() []*data.SourceRecord {
	recs := rawBatch()
	part := map[string]any{"task": int64(0)}
	for i, r := range recs {
		r.Key = data.Raw("key-" + strings.Repeat("7", i%10))
		r.SourcePartition, r.SourceOffset = part, map[string]any{"seq": int64(i)}
	}
	return recs
}

// BenchmarkSharedPollPluginSide is the plugin's half of a Poll answered
// through shared memory: records gathered into a SourceBatch, written into
// the region. ...TwoStep is the way before: converted (EncodeSourceRecords),
// then written (Place).
func BenchmarkSharedPollPluginSide(b *testing.B) {
	benchPoll(b, datagenBatch(), func(r *SharedRegion, recs []*data.SourceRecord) bool {
		var sb SourceBatch
		sb.Grow(len(recs))
		for _, rec := range recs {
			if ok, err := sb.Add(rec, 8<<20); !ok || err != nil {
				return false
			}
		}
		_, ok := r.PlacePoll(&sb, 1)
		return ok
	})
}

// BenchmarkSharedPollPluginSideCold times only the write of a Poll answer
// (1,000 datagen records of 1 KiB), into a part of the region the cache
// does not hold, as in the pipeline, where the worker has read the last
// answer from the other core. Answers were written last record first
// until 2026-12-02: 243–256 ns a record here, against 102–109 front to
// back.
func BenchmarkSharedPollPluginSideCold(b *testing.B) {
	recs := datagenBatch()
	r := NewSharedRegion(make([]byte, 64<<20), nil)
	// Every page of the region is faulted in before the clock runs.
	cacheEvictor(r.mem).evict()
	evict := newCacheEvictor()
	var sb SourceBatch
	off := 0
	for range b.N {
		b.StopTimer()
		evict.evict()
		sb.Reset()
		sb.Grow(len(recs))
		for _, rec := range recs {
			if ok, err := sb.Add(rec, 8<<20); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
		off = (off + 2<<20) % (60 << 20)
		b.StartTimer()
		if !sb.writeTo(r.mem[off:off+sb.encodedSize(1)], 1) {
			b.Fatal("not written")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/rec")
}

func BenchmarkSharedPollPluginSideTwoStep(b *testing.B) {
	benchPoll(b, datagenBatch(), placeTwoStep)
}

func BenchmarkSharedPollPluginSideStruct5(b *testing.B) {
	benchPoll(b, structBatch(), func(r *SharedRegion, recs []*data.SourceRecord) bool {
		var sb SourceBatch
		sb.Grow(len(recs))
		for _, rec := range recs {
			if ok, err := sb.Add(rec, 8<<20); !ok || err != nil {
				return false
			}
		}
		_, ok := r.PlacePoll(&sb, 1)
		return ok
	})
}

func BenchmarkSharedPollPluginSideStruct5TwoStep(b *testing.B) {
	benchPoll(b, structBatch(), placeTwoStep)
}

func placeTwoStep(r *SharedRegion, recs []*data.SourceRecord) bool {
	schemas, ps, err := EncodeSourceRecords(recs)
	if err != nil {
		return false
	}
	_, ok := r.Place(&pluginv1.PollResponse{Schemas: schemas, Records: ps, FirstSeq: 1})
	return ok
}

func benchPoll(b *testing.B, recs []*data.SourceRecord, place func(*SharedRegion, []*data.SourceRecord) bool) {
	r := NewSharedRegion(make([]byte, 8<<20), nil)
	b.ReportAllocs()
	for b.Loop() {
		if !place(r, recs) {
			b.Fatal("not placed")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/rec")
}

package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// twoStepDecodeBatch is the worker's conversion of a Poll answer before
// PollBatch (host/runtime's decodeBatch, as it was): source partitions
// checked where they change, then DecodeSourceRecords over the records
// with their JSON blanked.
func twoStepDecodeBatch(resp *pluginv1.PollResponse) ([]*data.SourceRecord, []SourceCoords, error) {
	prs := resp.GetRecords()
	coords := make([]SourceCoords, len(prs))
	var lastPartition []byte
	for i, p := range prs {
		if p == nil {
			return nil, nil, fmt.Errorf("source record %d: nil record", i)
		}
		c := SourceCoords{Partition: p.SourcePartition, Offset: p.SourceOffset}
		if !bytes.Equal(c.Partition, lastPartition) {
			t := bytes.TrimLeft(c.Partition, " \t\r\n")
			if !(len(t) == 0 || t[0] == '{' && json.Valid(t) || bytes.Equal(bytes.TrimSpace(t), []byte("null"))) {
				return nil, nil, fmt.Errorf("source record %d: source partition: %w", i, fmt.Errorf("not a JSON object: %.40q", c.Partition))
			}
			lastPartition = c.Partition
		}
		coords[i] = c
	}
	for _, p := range prs {
		p.SourcePartition, p.SourceOffset = nil, nil
	}
	recs, err := DecodeSourceRecords(resp.GetSchemas(), prs)
	for i, p := range prs {
		p.SourcePartition, p.SourceOffset = coords[i].Partition, coords[i].Offset
	}
	return recs, coords, err
}

// twoStepPollAnswer is the worker's reading of a Poll answer's bytes
// before PollBatch: decodePollResponse (or protobuf), with
// DecodePollBatch's wording of a parse error.
func twoStepPollAnswer(b []byte) (*pluginv1.PollResponse, error) {
	var m pluginv1.PollResponse
	if !decodePollResponse(b, &m) {
		if err := proto.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("decode poll response (%d bytes): %w", len(b), err)
		}
	}
	return &m, nil
}

// errText is an error's text, "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// diffPolled describes the first difference between two converted
// answers, "" if none: records as diffSinkRecords compares them, plus
// the transaction boundary, plus the JSON coordinates byte for byte.
func diffPolled(got, want []*data.SourceRecord, gc, wc []SourceCoords) string {
	asSink := func(recs []*data.SourceRecord) []*data.SinkRecord {
		if recs == nil {
			return nil
		}
		out := make([]*data.SinkRecord, len(recs))
		for i, r := range recs {
			out[i] = &data.SinkRecord{Record: r.Record, Offset: int64(r.Transaction)}
		}
		return out
	}
	if d := diffSinkRecords(asSink(got), asSink(want)); d != "" {
		return d
	}
	for i := range want {
		if got[i].SourcePartition != nil || got[i].SourceOffset != nil {
			return fmt.Sprintf("record %d: source maps decoded", i)
		}
	}
	if len(gc) != len(wc) {
		return fmt.Sprintf("%d coordinates, want %d", len(gc), len(wc))
	}
	for i := range wc {
		g, w := gc[i], wc[i]
		if (g.Partition == nil) != (w.Partition == nil) || !bytes.Equal(g.Partition, w.Partition) ||
			(g.Offset == nil) != (w.Offset == nil) || !bytes.Equal(g.Offset, w.Offset) {
			return fmt.Sprintf("record %d: coordinates %q %q, want %q %q", i, g.Partition, g.Offset, w.Partition, w.Offset)
		}
	}
	return ""
}

// checkPollLikeTwoStepDecode reads b both ways and fails on any
// difference: in the parse error, first_seq, record count, the conversion
// error, or the records and their coordinates. The answer is also read
// through NewPollBatch from the two-step path's message. fused reports
// whether the fused decoder read b itself.
func checkPollLikeTwoStepDecode(t testing.TB, b []byte) (fused bool) {
	t.Helper()
	m, wantErr := twoStepPollAnswer(bytes.Clone(b))
	pb, gotErr := DecodePollBatch(bytes.Clone(b))
	if errText(gotErr) != errText(wantErr) {
		t.Fatalf("input %x:\nfused error %v\ntwo-step    %v", b, gotErr, wantErr)
	}
	if wantErr != nil {
		return false
	}
	if pb.FirstSeq() != m.GetFirstSeq() || pb.Len() != len(m.GetRecords()) {
		t.Fatalf("input %x: first_seq %d, %d records; want %d, %d", b, pb.FirstSeq(), pb.Len(), m.GetFirstSeq(), len(m.GetRecords()))
	}
	want, wc, wantErr := twoStepDecodeBatch(m)
	for name, pb := range map[string]*PollBatch{"fused": pb, "NewPollBatch": NewPollBatch(m)} {
		got, gc, gotErr := pb.Records()
		if errText(gotErr) != errText(wantErr) {
			t.Fatalf("input %x: %s: records error %v\ntwo-step %v", b, name, gotErr, wantErr)
		}
		if wantErr != nil {
			continue
		}
		if d := diffPolled(got, want, gc, wc); d != "" {
			t.Fatalf("input %x: %s: %s", b, name, d)
		}
	}
	_, fused = fusedPollBatch(bytes.Clone(b))
	return fused
}

// pollSamples are the encodings of valid Poll answers: random ones, the
// benchmarks', the hand-made edge cases, and each edge case alone.
func pollSamples(t testing.TB) [][]byte {
	out := [][]byte{{}, twoStepPoll(t, datagenBatch()[:20], 1), twoStepPoll(t, edgeSourceRecords(), 7),
		twoStepPoll(t, structBatch()[:10], math.MaxUint64), twoStepPoll(t, sourceBatch(), 3)}
	for i, r := range edgeSourceRecords() {
		out = append(out, twoStepPoll(t, []*data.SourceRecord{r}, uint64(i)))
	}
	for _, rb := range randomRecordBatches(13, 300) {
		out = append(out, twoStepPoll(t, rb.src, rb.firstSeq))
	}
	for _, m := range append(fastSamples(t), handBatches()...) {
		if poll, ok := m.(*pluginv1.PollResponse); ok {
			b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(poll)
			out = append(out, b)
		}
	}
	return out
}

// Every valid answer the fused decoder can read, it reads into exactly
// the records, coordinates and first_seq the two-step path gives.
func TestDecodePollBatchMatchesTwoStep(t *testing.T) {
	records, fused := 0, 0
	samples := pollSamples(t)
	for _, b := range samples {
		if checkPollLikeTwoStepDecode(t, b) {
			fused++
		}
		pb, _ := DecodePollBatch(b)
		records += pb.Len()
	}
	// handBatches' poll answer holds an invalid transaction boundary and
	// schema references outside its table: the two-step path reports them.
	if records < 1500 || fused != len(samples)-1 {
		t.Fatalf("%d records; the fused decoder read %d of %d answers", records, fused, len(samples))
	}
}

// The records and coordinates alias the buffer, each capped at its length.
func TestDecodePollBatchAliasesItsBuffer(t *testing.T) {
	want := datagenBatch()[:3]
	b := twoStepPoll(t, want, 1)
	pb, err := DecodePollBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	recs, coords, err := pb.Records()
	if err != nil {
		t.Fatal(err)
	}
	v0 := recs[0].Value.(data.Raw)
	o0 := coords[0].Offset
	if cap(v0) != len(v0) || cap(o0) != len(o0) {
		t.Fatalf("value cap %d, len %d; offset cap %d, len %d", cap(v0), len(v0), cap(o0), len(o0))
	}
	_ = append(v0, 0xFF)
	_ = append(o0, '}')
	for i := range want {
		off, _ := EncodeJSONMap(want[i].SourceOffset)
		if !bytes.Equal(recs[i].Value.(data.Raw), want[i].Value.(data.Raw)) || !bytes.Equal(coords[i].Offset, off) {
			t.Fatalf("record %d changed", i)
		}
	}
	clear(b)
	if bytes.Equal(recs[1].Value.(data.Raw), want[1].Value.(data.Raw)) {
		t.Fatal("the records do not alias the buffer")
	}
}

// A record that repeats the previous record's source partition gets that
// record's slice (the worker's acknowledgement tracker compares addresses
// first); a change of partition starts a new one, and the bytes stay what
// was sent.
func TestDecodePollBatchSharesRepeatedPartitions(t *testing.T) {
	want := datagenBatch()[:5]
	other := map[string]any{"task": int64(1)}
	want[2].SourcePartition = other
	want[4].SourcePartition = nil
	b := twoStepPoll(t, want, 1)
	pb, err := DecodePollBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	_, coords, err := pb.Records()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range want {
		enc, _ := EncodeJSONMap(r.SourcePartition)
		if !bytes.Equal(coords[i].Partition, enc) {
			t.Fatalf("record %d: partition %q, want %q", i, coords[i].Partition, enc)
		}
	}
	same := func(a, b []byte) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }
	if !same(coords[0].Partition, coords[1].Partition) {
		t.Error("records 0 and 1 have the same partition in different slices")
	}
	if same(coords[1].Partition, coords[2].Partition) || same(coords[2].Partition, coords[3].Partition) {
		t.Error("different partitions share a slice")
	}
	if same(coords[0].Partition, coords[3].Partition) {
		t.Error("record 3 shares record 0's slice though record 2 came between them")
	}
	if len(coords[4].Partition) != 0 {
		t.Errorf("record 4 has partition %q, want none", coords[4].Partition)
	}
}

// pollBuilder writes Poll answers field by field, valid or not.
type pollBuilder struct{}

func (pollBuilder) msg(num protowire.Number, fields ...[]byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), bytes.Join(fields, nil))
}

func (pollBuilder) varint(num protowire.Number, x uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), x)
}

func (p pollBuilder) str(num protowire.Number, s string) []byte { return p.msg(num, []byte(s)) }

func (p pollBuilder) schema(t testing.TB, s *data.Schema) []byte {
	ps, err := EncodeSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := proto.Marshal(ps)
	return p.msg(1, b)
}

func (p pollBuilder) record(fields ...[]byte) []byte { return p.msg(2, fields...) }

// Answers the fused decoder leaves to the two-step path, valid and not:
// first_seq, record count, records or errors are that path's, word for
// word, and so is their order (a bad source partition is reported before
// a record that does not convert, whichever comes first).
func TestDecodePollBatchOddAndInvalidLikeTwoStep(t *testing.T) {
	var p pollBuilder
	varint, str, msg, record := p.varint, p.str, p.msg, p.record
	// Data fields of a source record: key 5, value 6.
	value := func(num protowire.Number, ref uint32, kind []byte) []byte {
		return msg(num, varint(3, uint64(ref)), msg(1, kind))
	}
	intKind := func(x int64) []byte { return varint(2, protowire.EncodeZigZag(x)) }
	int8Schema := p.schema(t, data.Int8Schema)
	join := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	valid := twoStepPoll(t, edgeSourceRecords(), 5)
	cases := map[string][]byte{
		"empty":                          {},
		"first_seq only":                 varint(3, 9),
		"first_seq twice":                join(varint(3, 9), varint(3, 4), record()),
		"no records, bad table":          join(msg(1, varint(1, 99)), varint(3, 1)),
		"bad table":                      join(msg(1, varint(1, 99)), record(), varint(3, 1)),
		"shared field":                   join(msg(4, varint(2, 10)), varint(3, 1)),
		"unknown top-level field":        append(bytes.Clone(valid), varint(9, 1)...),
		"first_seq as bytes":             join(str(3, "x"), record()),
		"records as varint":              append(bytes.Clone(valid), varint(2, 1)...),
		"unknown record field":           record(str(3, "t"), varint(40, 3)),
		"kafka partition as bytes":       record(str(4, "x")),
		"source partition as varint":     record(varint(1, 1)),
		"kafka partition twice":          record(varint(4, 1), varint(4, 2)),
		"timestamp twice":                record(varint(7, 1), varint(7, uint64(math.MaxUint64))),
		"negative kafka partition":       record(varint(4, uint64(math.MaxUint64))),
		"unknown transaction":            record(varint(9, 7)),
		"negative transaction":           record(varint(9, uint64(math.MaxUint64))),
		"transaction twice":              record(varint(9, 7), varint(9, 1)),
		"partition null":                 record(str(1, "null")),
		"partition spaced":               record(str(1, " \n{\"a\": [1, {}]} ")),
		"partition an array":             record(str(1, "[1]")),
		"partition a string":             record(str(1, `"p"`)),
		"partition invalid":              record(str(1, `{"a":`)),
		"partition long and invalid":     record(str(1, `{"a":"`+strings.Repeat("x", 100))),
		"partition twice, last bad":      record(str(1, `{}`), str(1, `[`)),
		"partition twice, last good":     record(str(1, `[`), str(1, `{}`)),
		"offset invalid":                 record(str(1, `{}`), str(2, `{"o":`)),
		"empty partition and offset":     record(str(1, ""), str(2, "")),
		"second partition bad":           join(record(str(1, `{"p":1}`)), record(str(1, `{"p":1}`)), record(str(1, `{"p"`))),
		"bad partition after bad record": join(int8Schema, record(value(6, 2, intKind(1))), record(str(1, `[]`))),
		"bad partition, first_seq 0":     join(record(str(1, `1`)), varint(3, 0)),
		"bad record, first_seq 0":        join(int8Schema, record(value(6, 1, intKind(300)))),
		"key twice (merged)":             join(int8Schema, record(msg(5, varint(3, 1)), msg(5, msg(1, intKind(3))))),
		"schema reference outside":       join(int8Schema, record(value(5, 2, intKind(1)))),
		"invalid UTF-8 topic":            record(str(3, "\xff")),
		"invalid UTF-8 header key":       record(msg(8, str(1, "\xff"))),
		"header value twice (merged)":    record(msg(8, str(1, "h"), msg(2, varint(3, 0)), msg(2, str(2, "r")))),
		"truncated":                      valid[:len(valid)-3],
		"garbage":                        bytes.Repeat([]byte{0xFF}, 64),
		"overlong varint":                append(record(), bytes.Repeat([]byte{0x80}, 11)...),
	}
	var fused []string
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if checkPollLikeTwoStepDecode(t, b) {
				fused = append(fused, name)
			}
		})
	}
	want := []string{"empty", "empty partition and offset", "first_seq only", "first_seq twice", "kafka partition twice", "negative kafka partition",
		"offset invalid", "partition null", "partition spaced", "partition twice, last good",
		"timestamp twice", "transaction twice"}
	slices.Sort(fused)
	if !slices.Equal(fused, want) {
		t.Fatalf("read by the fused decoder: %q\nwant %q", fused, want)
	}
	// Two of the cases, spelled out: the errors say what and where.
	for name, wantErr := range map[string]string{
		"bad partition after bad record": `source record 1: source partition: not a JSON object: "[]"`,
		"unknown transaction":            "source record 0 (topic ): unknown transaction boundary 7",
	} {
		pb, err := DecodePollBatch(cases[name])
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := pb.Records(); errText(err) != wantErr {
			t.Fatalf("%s: error %v, want %s", name, err, wantErr)
		}
	}
}

// Random corruptions of valid answers (flipped, replaced, dropped bytes,
// truncations) read as the two-step path reads them.
func TestDecodePollBatchCorruptionsLikeTwoStep(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 4))
	samples := pollSamples(t)
	for _, valid := range [][]byte{samples[1], samples[2], samples[3], samples[4], samples[len(samples)-2]} {
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
			checkPollLikeTwoStepDecode(t, b)
		}
	}
}

// A generated answer read through NewPollBatch converts as the worker
// converted it, nil records included, and is converted once.
func TestNewPollBatch(t *testing.T) {
	schemas, ps, err := EncodeSourceRecords(sourceBatch())
	if err != nil {
		t.Fatal(err)
	}
	m := &pluginv1.PollResponse{Schemas: schemas, Records: ps, FirstSeq: 12}
	pb := NewPollBatch(m)
	if pb.FirstSeq() != 12 || pb.Len() != 4 {
		t.Fatalf("first_seq %d, %d records", pb.FirstSeq(), pb.Len())
	}
	recs, coords, err := pb.Records()
	want, wc, wantErr := twoStepDecodeBatch(m)
	if err != nil || wantErr != nil {
		t.Fatal(err, wantErr)
	}
	if d := diffPolled(recs, want, coords, wc); d != "" {
		t.Fatal(d)
	}
	if again, _, _ := pb.Records(); &again[0] != &recs[0] {
		t.Fatal("converted twice")
	}
	if string(coords[0].Partition) != `{"file":"/tmp/x"}` || string(coords[0].Offset) != `{"f":1.0,"pos":10}` || coords[2].Partition != nil {
		t.Fatalf("coordinates %q", coords)
	}
	m.Records = append(m.Records, nil)
	if _, _, err := NewPollBatch(m).Records(); errText(err) != "source record 4: nil record" {
		t.Fatalf("nil record: %v", err)
	}
	var none *PollBatch
	if r, c, err := none.Records(); none.Len() != 0 || none.FirstSeq() != 0 || r != nil || c != nil || err != nil {
		t.Fatal("a nil batch is not empty")
	}
}

// TakePoll reads what the plugin placed (PlacePoll), and the records stay
// intact when the region is overwritten; references outside the region,
// garbage and a closed region are errors, as Take's.
func TestSharedTakePoll(t *testing.T) {
	r := newTestRegion(t, 1<<20)
	var batches [][]*data.SourceRecord
	for _, rb := range randomRecordBatches(21, 40) {
		batches = append(batches, rb.src)
	}
	batches = append(batches, datagenBatch()[:100], edgeSourceRecords())
	type taken struct {
		recs   []*data.SourceRecord
		coords []SourceCoords
		want   []byte
	}
	var kept []taken
	for i, recs := range batches {
		var sb SourceBatch
		for _, rec := range recs {
			if ok, err := sb.Add(rec, math.MaxInt); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
		ref, ok := r.PlacePoll(&sb, uint64(i+1))
		if !ok {
			t.Fatalf("batch %d not placed", i)
		}
		placed := bytes.Clone(r.mem[:ref.GetLength()])
		pb, err := r.TakePoll(ref)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if pb.FirstSeq() != uint64(i+1) || pb.Len() != len(recs) {
			t.Fatalf("batch %d: first_seq %d, %d records", i, pb.FirstSeq(), pb.Len())
		}
		got, coords, err := pb.Records()
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, taken{got, coords, placed})
	}
	for i := range r.mem {
		r.mem[i] = 0xA5
	}
	for i, k := range kept {
		m, err := twoStepPollAnswer(k.want)
		if err != nil {
			t.Fatal(err)
		}
		want, wc, err := twoStepDecodeBatch(m)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffPolled(k.recs, want, k.coords, wc); d != "" {
			t.Fatalf("batch %d, after the region was overwritten: %s", i, d)
		}
	}
	for _, bad := range []*pluginv1.SharedBatch{
		{Offset: 1 << 20, Length: 1},
		{Offset: 1<<20 + 1, Length: 0},
		{Offset: 1, Length: ^uint64(0)},
	} {
		_, err := r.TakePoll(bad)
		want := r.Take(bad, &pluginv1.PollResponse{})
		if err == nil || err.Error() != want.Error() || !strings.Contains(err.Error(), "outside the 1048576-byte shared region") {
			t.Fatalf("%v: error %v, Take's %v", bad, err, want)
		}
	}
	ref := &pluginv1.SharedBatch{Length: 64}
	want := r.Take(ref, &pluginv1.PollResponse{})
	if _, err := r.TakePoll(ref); err == nil || err.Error() != want.Error() || !strings.HasPrefix(err.Error(), "decode shared batch (64 bytes): ") {
		t.Fatalf("garbage: error %v, Take's %v", err, want)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.TakePoll(&pluginv1.SharedBatch{}); err != ErrSharedClosed {
		t.Fatalf("take from a closed region: %v", err)
	}
}

func FuzzDecodePollBatch(f *testing.F) {
	for i, r := range edgeSourceRecords() {
		f.Add(twoStepPoll(f, []*data.SourceRecord{r}, uint64(i)))
	}
	for _, rb := range randomRecordBatches(5, 6) {
		f.Add(twoStepPoll(f, rb.src, rb.firstSeq))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkPollLikeTwoStepDecode(t, b)
	})
}

// The worker's half of a Poll answered through shared memory: the answer
// copied out of the region and read straight into records and their JSON
// coordinates (TakePoll, Records). ...TwoStep is the way before: Take into
// a PollResponse, then the runner's conversion.
func BenchmarkSharedPollWorkerSide(b *testing.B) {
	benchPollWorker(b, datagenBatch(), takePollFused)
}

func BenchmarkSharedPollWorkerSideTwoStep(b *testing.B) {
	benchPollWorker(b, datagenBatch(), takePollTwoStep)
}

func BenchmarkSharedPollWorkerSideStruct5(b *testing.B) {
	benchPollWorker(b, structBatch(), takePollFused)
}

func BenchmarkSharedPollWorkerSideStruct5TwoStep(b *testing.B) {
	benchPollWorker(b, structBatch(), takePollTwoStep)
}

func takePollFused(r *SharedRegion, ref *pluginv1.SharedBatch) (int, error) {
	pb, err := r.TakePoll(ref)
	if err != nil {
		return 0, err
	}
	recs, _, err := pb.Records()
	return len(recs), err
}

func takePollTwoStep(r *SharedRegion, ref *pluginv1.SharedBatch) (int, error) {
	var m pluginv1.PollResponse
	if err := r.Take(ref, &m); err != nil {
		return 0, err
	}
	recs, _, err := twoStepDecodeBatch(&m)
	return len(recs), err
}

func benchPollWorker(b *testing.B, recs []*data.SourceRecord, take func(*SharedRegion, *pluginv1.SharedBatch) (int, error)) {
	r := NewSharedRegion(make([]byte, 8<<20), nil)
	var sb SourceBatch
	for _, rec := range recs {
		if ok, err := sb.Add(rec, 8<<20); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
	ref, ok := r.PlacePoll(&sb, 1)
	if !ok {
		b.Fatal("not placed")
	}
	b.ReportAllocs()
	for b.Loop() {
		if n, err := take(r, ref); err != nil || n != len(recs) {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/rec")
}

// receivePoll reads b as a Poll reply through ReceivePoll's codec.
func receivePoll(t testing.TB, b []byte) (*pluginv1.PollResponse, *PollBatch, error) {
	t.Helper()
	var pb *PollBatch
	c := ReceivePoll(&pb).(grpc.ForceCodecV2CallOption).CodecV2
	if c.Name() != Codec().Name() {
		t.Fatalf("codec %q", c.Name())
	}
	var resp pluginv1.PollResponse
	// In two pieces, as gRPC may hand a message over.
	half := len(b) / 2
	err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bytes.Clone(b[:half])), mem.SliceBuffer(bytes.Clone(b[half:]))}, &resp)
	return &resp, pb, err
}

// An answer received inline with ReceivePoll reads as DecodePollBatch
// reads it (the two-step path's records, first_seq, errors); one that
// names a shared batch comes back whole in the reply; bytes that are not
// a PollResponse fail as Codec fails; other messages are Codec's.
func TestReceivePoll(t *testing.T) {
	samples := pollSamples(t)
	r := rand.New(rand.NewPCG(2, 2))
	for range 300 {
		b := bytes.Clone(samples[1+r.IntN(len(samples)-1)])
		if len(b) > 0 {
			b[r.IntN(len(b))] ^= byte(1 << r.IntN(8))
		}
		samples = append(samples, b)
	}
	for i, b := range samples {
		resp, pb, err := receivePoll(t, b)
		var want pluginv1.PollResponse
		wantErr := Codec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(bytes.Clone(b))}, &want)
		if errText(err) != errText(wantErr) {
			t.Fatalf("sample %d: error %v, Codec's %v", i, err, wantErr)
		}
		if wantErr != nil {
			continue
		}
		direct, err := DecodePollBatch(bytes.Clone(b))
		if err != nil {
			t.Fatal(err)
		}
		if pb == nil || pb.FirstSeq() != direct.FirstSeq() || pb.Len() != direct.Len() || resp.GetFirstSeq() != want.GetFirstSeq() {
			t.Fatalf("sample %d: batch %v, reply first_seq %d", i, pb, resp.GetFirstSeq())
		}
		got, gc, gotErr := pb.Records()
		wr, wc, wrErr := direct.Records()
		if errText(gotErr) != errText(wrErr) {
			t.Fatalf("sample %d: records error %v, want %v", i, gotErr, wrErr)
		}
		if d := diffPolled(got, wr, gc, wc); wrErr == nil && d != "" {
			t.Fatalf("sample %d: %s", i, d)
		}
	}
	shared := &pluginv1.PollResponse{Shared: &pluginv1.SharedBatch{Offset: 3, Length: 700}}
	b, _ := proto.Marshal(shared)
	resp, pb, err := receivePoll(t, b)
	if err != nil || !proto.Equal(resp, shared) || pb.Len() != 0 {
		t.Fatalf("shared answer: %v, %v, %v", resp, pb, err)
	}
	var ack pluginv1.AckResponse
	var pb2 *PollBatch
	if err := ReceivePoll(&pb2).(grpc.ForceCodecV2CallOption).CodecV2.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{})}, &ack); err != nil || pb2 != nil {
		t.Fatalf("another reply: %v, %v", pb2, err)
	}
}

// sameHeapAsShared is live memory the size of the shared-memory
// benchmarks' region, so that the inline ones run at the same GC pace.
func sameHeapAsShared() []byte { return make([]byte, 8<<20) }

// The worker's half of a Poll answered inline, from the bytes gRPC
// received: read by ReceivePoll's codec, converted (Records). ...TwoStep is
// the way before: Codec into a PollResponse, then the runner's conversion.
func BenchmarkInlinePollWorkerSide(b *testing.B) {
	msg := twoStepPoll(b, datagenBatch(), 1)
	defer runtime.KeepAlive(sameHeapAsShared())
	var pb *PollBatch
	c := ReceivePoll(&pb).(grpc.ForceCodecV2CallOption).CodecV2
	b.ReportAllocs()
	for b.Loop() {
		var resp pluginv1.PollResponse
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(msg)}, &resp); err != nil {
			b.Fatal(err)
		}
		if recs, _, err := pb.Records(); err != nil || len(recs) != benchBatch {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/rec")
}

func BenchmarkInlinePollWorkerSideTwoStep(b *testing.B) {
	msg := twoStepPoll(b, datagenBatch(), 1)
	defer runtime.KeepAlive(sameHeapAsShared())
	b.ReportAllocs()
	for b.Loop() {
		var resp pluginv1.PollResponse
		if err := Codec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(msg)}, &resp); err != nil {
			b.Fatal(err)
		}
		if recs, _, err := twoStepDecodeBatch(&resp); err != nil || len(recs) != benchBatch {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/rec")
}

// Records of one topic share one topic string, in poll answers and in put
// batches: whoever compares or hashes topics per record next reads bytes
// that stay in the cache.
func TestDecodedRecordsShareTopicStrings(t *testing.T) {
	src := datagenBatch()[:4]
	src[2] = &data.SourceRecord{Record: src[2].Record, SourcePartition: src[2].SourcePartition, SourceOffset: src[2].SourceOffset}
	src[2].Topic = "other"
	pb, err := DecodePollBatch(twoStepPoll(t, src, 1))
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := pb.Records()
	if err != nil {
		t.Fatal(err)
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	if recs[0].Topic != src[0].Topic || !same(recs[0].Topic, recs[1].Topic) || recs[2].Topic != "other" || same(recs[1].Topic, recs[2].Topic) {
		t.Fatalf("poll topics %q %q %q %q: the first two not one string, or the third not its own", recs[0].Topic, recs[1].Topic, recs[2].Topic, recs[3].Topic)
	}
	var sink []*data.SinkRecord
	for i, topic := range []string{"a", "a", "b", "b"} {
		sink = append(sink, &data.SinkRecord{Record: data.Record{Topic: topic, Value: data.Raw("v")}, Offset: int64(i)})
	}
	got, err := DecodePutBatch(putBytes(t, sink))
	if err != nil {
		t.Fatal(err)
	}
	if !same(got[0].Topic, got[1].Topic) || !same(got[2].Topic, got[3].Topic) || got[1].Topic != "a" || got[2].Topic != "b" {
		t.Fatalf("put topics %q", []string{got[0].Topic, got[1].Topic, got[2].Topic, got[3].Topic})
	}
}

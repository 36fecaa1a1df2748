package wire

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// randomBatches returns random Poll answers and Put requests built from
// the random schemas and values of roundtrip_test.go, with raw and
// schemaless keys and values, headers, and the scalar fields at their
// edges (zero, negative, largest).
func randomBatches(t testing.TB, seed uint64, n int) []proto.Message {
	var out []proto.Message
	for _, rb := range randomRecordBatches(seed, n) {
		schemas, recs, err := EncodeSourceRecords(rb.src)
		if err != nil {
			t.Fatal(err)
		}
		sschemas, srecs, err := EncodeSinkRecords(rb.sink)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out,
			&pluginv1.PollResponse{Schemas: schemas, Records: recs, FirstSeq: rb.firstSeq},
			&pluginv1.PutRequest{Schemas: sschemas, Records: srecs})
	}
	return out
}

// recordBatch is one random batch of source records and the sink records
// made of the same data.
type recordBatch struct {
	src      []*data.SourceRecord
	sink     []*data.SinkRecord
	firstSeq uint64
}

// randomRecordBatches returns the records randomBatches encodes.
func randomRecordBatches(seed uint64, n int) []recordBatch {
	g := &gen{r: rand.New(rand.NewPCG(seed, 7))}
	edge := []int64{0, 1, -1, 127, 128, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64}
	pick := func() int64 {
		if g.r.IntN(2) == 0 {
			return edge[g.r.IntN(len(edge))]
		}
		return g.r.Int64N(1<<40) - 1<<39
	}
	anyData := func() (*data.Schema, any) {
		switch g.r.IntN(5) {
		case 0:
			return nil, nil
		case 1:
			return nil, data.Raw(bytes.Repeat([]byte{byte(g.r.IntN(256))}, g.r.IntN(40)))
		case 2:
			return nil, map[string]any{"a": pick(), "ü": "x"}
		}
		s := g.schema(3)
		return s, g.value(s, true)
	}
	var out []recordBatch
	for range n {
		var src []*data.SourceRecord
		var sink []*data.SinkRecord
		for range g.r.IntN(12) {
			var rec data.Record
			rec.Topic = []string{"", "t", "tøpic", "a-much-longer-topic-name"}[g.r.IntN(4)]
			rec.Partition = int32(pick())
			if g.r.IntN(3) == 0 {
				rec.Partition = data.NoPartition
			}
			rec.KeySchema, rec.Key = anyData()
			rec.ValueSchema, rec.Value = anyData()
			if g.r.IntN(2) == 0 {
				rec.Timestamp = time.UnixMilli(pick() >> 20).UTC()
			}
			for range g.r.IntN(3) {
				s, v := anyData()
				rec.Headers = append(rec.Headers, data.Header{Key: []string{"", "h", "ключ"}[g.r.IntN(3)], Schema: s, Value: v})
			}
			sr := &data.SourceRecord{Record: rec, Transaction: data.TransactionBoundary(g.r.IntN(3))}
			if g.r.IntN(2) == 0 {
				sr.SourcePartition = map[string]any{"p": pick()}
				sr.SourceOffset = map[string]any{"o": pick()}
			}
			src = append(src, sr)
			if rec.Partition == data.NoPartition {
				rec.Partition = 0
			}
			sink = append(sink, &data.SinkRecord{Record: rec, Offset: pick(), TimestampType: data.TimestampType(g.r.IntN(3)),
				OriginalTopic: rec.Topic, OriginalPartition: int32(pick()), OriginalOffset: pick()})
		}
		out = append(out, recordBatch{src: src, sink: sink, firstSeq: uint64(pick())})
	}
	return out
}

// handValues are Values of every kind, set directly, including oneof
// members at their zero value (which protobuf still writes).
func handValues() []*pluginv1.Value {
	return []*pluginv1.Value{
		{},
		{Kind: &pluginv1.Value_BooleanValue{}},
		{Kind: &pluginv1.Value_BooleanValue{BooleanValue: true}},
		{Kind: &pluginv1.Value_IntValue{}},
		{Kind: &pluginv1.Value_IntValue{IntValue: math.MinInt64}},
		{Kind: &pluginv1.Value_FloatValue{}},
		{Kind: &pluginv1.Value_FloatValue{FloatValue: math.Inf(-1)}},
		{Kind: &pluginv1.Value_FloatValue{FloatValue: -0.5}},
		{Kind: &pluginv1.Value_BytesValue{}},
		{Kind: &pluginv1.Value_StringValue{}},
		{Kind: &pluginv1.Value_ArrayValue{ArrayValue: &pluginv1.ValueList{}}},
		{Kind: &pluginv1.Value_StructValue{StructValue: &pluginv1.ValueList{Values: []*pluginv1.Value{{}, {Kind: &pluginv1.Value_IntValue{IntValue: 3}}}}}},
		{Kind: &pluginv1.Value_MapValue{MapValue: &pluginv1.ValueMap{Entries: []*pluginv1.MapEntry{{}, {Key: &pluginv1.Value{}}, {Value: &pluginv1.Value{}},
			{Key: &pluginv1.Value{Kind: &pluginv1.Value_StringValue{StringValue: "k"}}, Value: &pluginv1.Value{Kind: &pluginv1.Value_BytesValue{BytesValue: []byte{0}}}}}}}},
	}
}

func handBatches() []proto.Message {
	var poll pluginv1.PollResponse
	var put pluginv1.PutRequest
	neg, big := int32(-1), int64(math.MinInt64)
	for i, v := range handValues() {
		d := &pluginv1.Data{Kind: &pluginv1.Data_Value{Value: v}, Schema: uint32(i * 1000)}
		raw := &pluginv1.Data{Kind: &pluginv1.Data_Raw{}}
		poll.Records = append(poll.Records, &pluginv1.SourceRecord{Key: d, Value: raw, KafkaPartition: &neg, TimestampMs: &big,
			Headers: []*pluginv1.Header{{}, {Value: &pluginv1.Data{}}}, Transaction: pluginv1.TransactionBoundary(-1)})
		put.Records = append(put.Records, &pluginv1.SinkRecord{Key: raw, Value: d, Partition: -1, Offset: -1, TimestampMs: -1,
			TimestampType: pluginv1.TimestampType(-2), OriginalPartition: math.MinInt32, OriginalOffset: math.MaxInt64,
			Headers: []*pluginv1.Header{{Key: "k", Value: d}}})
	}
	return []proto.Message{&poll, &put, &pluginv1.PollResponse{Records: []*pluginv1.SourceRecord{{}}}, &pluginv1.PutRequest{Records: []*pluginv1.SinkRecord{{}}}}
}

// The codec writes protobuf's deterministic bytes for every sample, random
// and hand-made, and both protobuf and the hand decoder read back the
// message that was sent.
func TestFastEncodeMatchesProtobuf(t *testing.T) {
	samples := append(fastSamples(t), handBatches()...)
	samples = append(samples, randomBatches(t, 1, 400)...)
	records := 0
	for i, in := range samples {
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		size, ok := fastSize(in)
		if !ok {
			t.Fatalf("sample %d: the hand encoder refused a plain %T", i, in)
		}
		if size != len(want) {
			t.Fatalf("sample %d: sized %d, protobuf wrote %d", i, size, len(want))
		}
		direct := make([]byte, size)
		if !fastEncode(direct, in) || !bytes.Equal(direct, want) {
			t.Fatalf("sample %d: the hand encoder failed or wrote\n%x\nprotobuf\n%x", i, direct, want)
		}
		bs, err := Codec().Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		got := bs.Materialize()
		bs.Free()
		if !bytes.Equal(got, want) {
			t.Fatalf("sample %d: hand encoded\n%x\nprotobuf\n%x", i, got, want)
		}
		plain := in.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(got, plain); err != nil || !proto.Equal(plain, in) {
			t.Fatalf("sample %d: protobuf read back %v (%v)", i, plain, err)
		}
		viaCodec := in.ProtoReflect().New().Interface()
		if err := Codec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(got)}, viaCodec); err != nil || !proto.Equal(viaCodec, in) {
			t.Fatalf("sample %d: the codec read back %v (%v)", i, viaCodec, err)
		}
		switch m := in.(type) {
		case *pluginv1.PollResponse:
			records += len(m.Records)
		case *pluginv1.PutRequest:
			records += len(m.Records)
		}
	}
	if records < 3000 {
		t.Fatalf("only %d records covered", records)
	}
}

// Large messages go into the codec's kept buffers; the bytes stay
// protobuf's when a buffer is reused for a smaller message.
func TestFastEncodeLargeReusedBuffers(t *testing.T) {
	for round, n := range []int{2000, 1500, 1200} {
		in := pollAnswer(n, 1024, byte(round))
		want, _ := proto.Marshal(in)
		bs, err := Codec().Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := bs.Materialize(); !bytes.Equal(got, want) {
			t.Fatalf("round %d: %d bytes unlike protobuf's %d", round, len(got), len(want))
		}
		bs.Free()
	}
}

// What the hand encoder does not write itself goes to proto.Marshal, and
// the codec answers as protobuf does: the same bytes or an error.
func TestFastEncodeFallsBackLikeProtobuf(t *testing.T) {
	unknown := &pluginv1.PollResponse{FirstSeq: 3}
	unknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 5))
	unknownDeep := &pluginv1.PutRequest{Records: []*pluginv1.SinkRecord{{Value: &pluginv1.Data{Kind: &pluginv1.Data_Value{Value: &pluginv1.Value{}}}}}}
	unknownDeep.Records[0].Value.GetValue().ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 40, protowire.VarintType), 1))
	cases := map[string]struct {
		m       proto.Message
		wantErr bool
	}{
		"unknown top-level field":    {unknown, false},
		"unknown field in a value":   {unknownDeep, false},
		"invalid UTF-8 topic":        {&pluginv1.PollResponse{Records: []*pluginv1.SourceRecord{{Topic: "\xff"}}}, true},
		"invalid UTF-8 string value": {&pluginv1.PutRequest{Records: []*pluginv1.SinkRecord{{Key: &pluginv1.Data{Kind: &pluginv1.Data_Value{Value: &pluginv1.Value{Kind: &pluginv1.Value_StringValue{StringValue: "a\xfe"}}}}}}}, true},
		"invalid UTF-8 header key":   {&pluginv1.PutRequest{Records: []*pluginv1.SinkRecord{{Headers: []*pluginv1.Header{{Key: "\xc0"}}}}}, true},
	}
	for name, c := range cases {
		if _, ok := fastSize(c.m); ok {
			t.Fatalf("%s: the hand encoder accepted it", name)
		}
		want, wantErr := proto.MarshalOptions{Deterministic: true}.Marshal(c.m)
		if (wantErr != nil) != c.wantErr {
			t.Fatalf("%s: protobuf error %v", name, wantErr)
		}
		bs, err := Codec().Marshal(c.m)
		if (err != nil) != c.wantErr {
			t.Fatalf("%s: codec error %v, protobuf's %v", name, err, wantErr)
		}
		if err == nil && !bytes.Equal(bs.Materialize(), want) {
			t.Fatalf("%s: codec wrote %x, protobuf %x", name, bs.Materialize(), want)
		}
	}
}

// benchEncode measures marshalling a Poll answer of benchBatch 1 KiB raw
// records, by protobuf and by the codec.
func benchEncode(b *testing.B, marshal func(proto.Message) error) {
	in := pollAnswer(benchBatch, 1024, 1)
	b.ReportAllocs()
	for b.Loop() {
		if err := marshal(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "rec/s")
}

func BenchmarkEncodePollRaw1KiBProtobuf(b *testing.B) {
	benchEncode(b, func(m proto.Message) error {
		_, err := proto.Marshal(m)
		return err
	})
}

func BenchmarkEncodePollRaw1KiBCodec(b *testing.B) {
	benchEncode(b, func(m proto.Message) error {
		bs, err := Codec().Marshal(m)
		bs.Free()
		return err
	})
}

// BenchmarkEncodePollRaw1KiBProtobufReused is the codec before the hand
// encoder: protobuf sizing, then writing into a kept buffer.
func BenchmarkEncodePollRaw1KiBProtobufReused(b *testing.B) {
	var buf []byte
	benchEncode(b, func(m proto.Message) error {
		proto.Size(m)
		var err error
		buf, err = proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf[:0], m)
		return err
	})
}

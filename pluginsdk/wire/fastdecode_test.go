package wire

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// fastSamples are Poll answers and Put requests covering what the hand
// decoder reads itself (raw, bytes and string values, headers, optional
// partition and timestamp, transactions, every timestamp type) and what it
// hands to protobuf (schemas, struct and map values).
func fastSamples(t testing.TB) []proto.Message {
	src := sourceBatch()
	src = append(src,
		&data.SourceRecord{Record: data.Record{Topic: "ü-topic", Partition: -5, KeySchema: data.BytesSchema, Key: []byte{},
			ValueSchema: data.StringSchema, Value: "héllo", Headers: data.Headers{{Key: "b", Schema: data.BytesSchema, Value: []byte("x")}}},
			SourcePartition: map[string]any{}, SourceOffset: map[string]any{"o": int64(-1)}},
		&data.SourceRecord{Record: data.Record{Topic: "t", Partition: data.NoPartition, Key: data.Raw("k"), Value: data.Raw(bytes.Repeat([]byte{7}, 1024))}},
	)
	schemas, recs, err := EncodeSourceRecords(src)
	if err != nil {
		t.Fatal(err)
	}
	var sink []*data.SinkRecord
	for i, r := range src {
		rec := r.Record
		if rec.Partition == data.NoPartition {
			rec.Partition = 0
		}
		sink = append(sink, &data.SinkRecord{Record: rec, Offset: int64(i) - 2, TimestampType: data.TimestampType(i % 3),
			OriginalTopic: "orig", OriginalPartition: int32(i), OriginalOffset: int64(i * 7)})
	}
	sschemas, srecs, err := EncodeSinkRecords(sink)
	if err != nil {
		t.Fatal(err)
	}
	return []proto.Message{
		&pluginv1.PollResponse{},
		&pluginv1.PollResponse{FirstSeq: 1 << 40},
		&pluginv1.PollResponse{Schemas: schemas, Records: recs, FirstSeq: 9},
		&pluginv1.PutRequest{},
		&pluginv1.PutRequest{Schemas: sschemas, Records: srecs},
	}
}

func fastDecode(b []byte, m proto.Message) bool {
	switch m := m.(type) {
	case *pluginv1.PollResponse:
		return decodePollResponse(b, m)
	case *pluginv1.PutRequest:
		return decodePutRequest(b, m)
	}
	panic("not a fast message")
}

// The hand decoder reads every sample itself and gets protobuf's message.
func TestFastDecodeMatchesProtobuf(t *testing.T) {
	for i, in := range fastSamples(t) {
		b, err := proto.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		got := in.ProtoReflect().New().Interface()
		if !fastDecode(bytes.Clone(b), got) {
			t.Fatalf("sample %d: the hand decoder refused a valid %T", i, in)
		}
		if !proto.Equal(got, in) {
			t.Fatalf("sample %d: hand decoded\n%v\nwant\n%v", i, got, in)
		}
		// Through the codec, from a buffer gRPC would free afterwards.
		viaCodec := in.ProtoReflect().New().Interface()
		buf := bytes.Clone(b)
		if err := Codec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(buf)}, viaCodec); err != nil {
			t.Fatal(err)
		}
		clear(buf)
		if !proto.Equal(viaCodec, in) {
			t.Fatalf("sample %d: the codec's message changed with the buffer gRPC received into", i)
		}
	}
}

// Bytes the decoder aliases are capped at their length: appending to one
// record's value must not write into the next record.
func TestFastDecodeCapsAliasedBytes(t *testing.T) {
	in := pollAnswer(3, 16, 1)
	b, _ := proto.Marshal(in)
	var out pluginv1.PollResponse
	if !decodePollResponse(b, &out) {
		t.Fatal("refused")
	}
	v0 := out.Records[0].GetValue().GetRaw()
	if cap(v0) != len(v0) {
		t.Fatalf("cap %d, len %d", cap(v0), len(v0))
	}
	_ = append(v0, 0xFF, 0xFF, 0xFF, 0xFF)
	if !proto.Equal(&out, in) {
		t.Fatal("an append to one value changed the message")
	}
}

// What the hand decoder does not know it leaves to protobuf, and the codec
// then answers exactly as protobuf does: the same error, or the same
// message (unknown fields included).
func TestFastDecodeFallsBackLikeProtobuf(t *testing.T) {
	samples := fastSamples(t)
	valid, _ := proto.Marshal(samples[2])
	cases := map[string][]byte{
		"unknown top-level field": protowire.AppendVarint(protowire.AppendTag(bytes.Clone(valid), 99, protowire.VarintType), 5),
		"first_seq as bytes":      protowire.AppendBytes(protowire.AppendTag(bytes.Clone(valid), 3, protowire.BytesType), []byte("x")),
		"invalid UTF-8 topic": protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType),
			protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), []byte{0xff, 0xfe})),
		"value twice (merged)": protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType),
			append(protowire.AppendBytes(protowire.AppendTag(nil, 6, protowire.BytesType), []byte{0x18, 0x01}),
				protowire.AppendBytes(protowire.AppendTag(nil, 6, protowire.BytesType), []byte{0x12, 0x01, 'a'})...)),
		"truncated": valid[:len(valid)-3],
	}
	for name, b := range cases {
		want := &pluginv1.PollResponse{}
		wantErr := proto.Unmarshal(b, want)
		got := &pluginv1.PollResponse{}
		gotErr := Codec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(bytes.Clone(b))}, got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%s: codec error %v, protobuf's %v", name, gotErr, wantErr)
		}
		if wantErr == nil && !proto.Equal(got, want) {
			t.Fatalf("%s: codec read\n%v\nprotobuf\n%v", name, got, want)
		}
		if name != "truncated" && fastDecode(bytes.Clone(b), &pluginv1.PollResponse{}) {
			t.Fatalf("%s: the hand decoder accepted it", name)
		}
	}
}

// checkLikeProtobuf decodes b with the codec and protobuf and fails on any
// difference.
func checkLikeProtobuf(t testing.TB, b []byte, typ proto.Message) {
	want := typ.ProtoReflect().New().Interface()
	wantErr := proto.Unmarshal(b, want)
	got := typ.ProtoReflect().New().Interface()
	gotErr := Codec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(bytes.Clone(b))}, got)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("input %x: codec error %v, protobuf's %v", b, gotErr, wantErr)
	}
	if wantErr == nil && !proto.Equal(got, want) {
		t.Fatalf("input %x: codec read\n%v\nprotobuf\n%v", b, got, want)
	}
}

// Random corruptions of valid messages (flipped, dropped and inserted
// bytes, truncations) decode through the codec exactly as through
// protobuf.
func TestFastDecodeCorruptionsLikeProtobuf(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	samples := fastSamples(t)
	for _, s := range samples {
		valid, _ := proto.Marshal(s)
		if len(valid) == 0 {
			continue
		}
		for range 3000 {
			b := bytes.Clone(valid)
			for range 1 + r.IntN(3) {
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
				if len(b) == 0 {
					break
				}
			}
			checkLikeProtobuf(t, b, s)
		}
	}
}

func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSamples(f) {
		b, _ := proto.Marshal(s)
		f.Add(b, s.ProtoReflect().Descriptor().Name() == "PutRequest")
	}
	f.Fuzz(func(t *testing.T, b []byte, put bool) {
		var typ proto.Message = &pluginv1.PollResponse{}
		if put {
			typ = &pluginv1.PutRequest{}
		}
		checkLikeProtobuf(t, b, typ)
	})
}

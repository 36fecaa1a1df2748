package wire

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// newTestRegion maps a real shared file, as the worker's memfd is mapped.
func newTestRegion(t *testing.T, size int64) *SharedRegion {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	r, err := MapShared(int(f.Fd()), size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func emptyLike(m proto.Message) proto.Message { return m.ProtoReflect().New().Interface() }

// Every batch placed in the region reads back equal, and the records that
// come out stay intact when the region is overwritten by the next batch.
func TestSharedPlaceTake(t *testing.T) {
	r := newTestRegion(t, 8<<20)
	msgs := append(randomBatches(t, 7, 60), handBatches()...)
	var kept []proto.Message
	for i, m := range msgs {
		ref, ok := r.Place(m)
		if !ok {
			t.Fatalf("batch %d (%d bytes) did not fit an 8 MiB region", i, proto.Size(m))
		}
		want, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if ref.GetOffset() != 0 || ref.GetLength() != uint64(len(want)) {
			t.Fatalf("batch %d: placed at %d+%d, want 0+%d", i, ref.GetOffset(), ref.GetLength(), len(want))
		}
		if got := r.mem[:len(want)]; string(got) != string(want) {
			t.Fatalf("batch %d: region bytes differ from protobuf's", i)
		}
		out := emptyLike(m)
		if err := r.Take(ref, out); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if !proto.Equal(out, m) {
			t.Fatalf("batch %d read back differently", i)
		}
		kept = append(kept, out)
	}
	// Scribble over the region: what was taken must not change.
	for i := range r.mem[:1<<20] {
		r.mem[i] = 0xA5
	}
	for i, m := range msgs {
		if !proto.Equal(kept[i], m) {
			t.Fatalf("batch %d changed when the region was overwritten", i)
		}
	}
}

// What the hand encoder leaves to protobuf is placed by protobuf.
func TestSharedPlaceProtobufFallback(t *testing.T) {
	r := newTestRegion(t, 1<<20)
	m := &pluginv1.PollResponse{FirstSeq: 3, Records: []*pluginv1.SourceRecord{{Topic: "t"}}}
	m.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 5))
	ref, ok := r.Place(m)
	if !ok {
		t.Fatal("not placed")
	}
	out := &pluginv1.PollResponse{}
	if err := r.Take(ref, out); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(out, m) {
		t.Fatalf("read back %v, want %v", out, m)
	}
}

// A batch larger than the region is refused (it goes inline); a reference
// outside the region is an error naming it; a closed region refuses both.
func TestSharedLimits(t *testing.T) {
	r := newTestRegion(t, 4096)
	big := &pluginv1.PutRequest{Records: []*pluginv1.SinkRecord{{Topic: strings.Repeat("x", 5000)}}}
	if _, ok := r.Place(big); ok {
		t.Fatal("a 5000-byte batch was placed in a 4096-byte region")
	}
	small := &pluginv1.PutRequest{Records: []*pluginv1.SinkRecord{{Topic: "t", Offset: 9}}}
	ref, ok := r.Place(small)
	if !ok {
		t.Fatal("small batch not placed")
	}
	for _, bad := range []*pluginv1.SharedBatch{
		{Offset: 4000, Length: 97},
		{Offset: 4097, Length: 0},
		{Offset: 1, Length: ^uint64(0)},
	} {
		err := r.Take(bad, &pluginv1.PutRequest{})
		if err == nil || !strings.Contains(err.Error(), "outside the 4096-byte shared region") {
			t.Fatalf("%v: error %v", bad, err)
		}
	}
	// Garbage in range: a decode error, not a crash.
	for i := range 64 {
		r.mem[i] = 0xFF
	}
	if err := r.Take(&pluginv1.SharedBatch{Length: 64}, &pluginv1.PutRequest{}); err == nil || !strings.Contains(err.Error(), "decode shared batch") {
		t.Fatalf("garbage: error %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Place(small); ok {
		t.Fatal("placed into a closed region")
	}
	if err := r.Take(ref, &pluginv1.PutRequest{}); err != ErrSharedClosed {
		t.Fatalf("take from a closed region: %v", err)
	}
}

// sinkBytesBatch is a Put batch as the worker makes it from ByteArrayConverter
// records: a 14-byte key and a 1 KiB value with the optional bytes schema.
func sinkBytesBatch() []*data.SinkRecord {
	recs := make([]*data.SinkRecord, benchBatch)
	for i := range recs {
		v := make([]byte, 1024)
		for j := range v {
			v[j] = byte(i*7 + j*13)
		}
		recs[i] = &data.SinkRecord{Record: data.Record{Topic: "bench-topic", Partition: int32(i % 6),
			KeySchema: data.OptionalBytesSchema, Key: []byte(fmt.Sprintf("key-%010d", i)),
			ValueSchema: data.OptionalBytesSchema, Value: v, Timestamp: time.UnixMilli(1700000000000 + int64(i))},
			Offset: int64(i), TimestampType: data.CreateTime}
	}
	return recs
}

// The plugin's half of a Put through shared memory; the worker's half is
// BenchmarkSharedPutWorkerSide (putencode_test.go).
//
// BenchmarkSharedPutPluginSide is the plugin's half as the SDK runs it:
// the batch copied out of the region and decoded straight into records
// (TakeSinkRecords). BenchmarkSharedPutPluginSideTwoStep is the way before
// it: decoded into a PutRequest, then converted (Take, DecodeSinkRecords).
func BenchmarkSharedPutPluginSide(b *testing.B) {
	r, ref := placedSinkBatch(b)
	b.ReportAllocs()
	for b.Loop() {
		out, err := r.TakeSinkRecords(ref)
		if err != nil || len(out) != benchBatch {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/rec")
}

func BenchmarkSharedPutPluginSideTwoStep(b *testing.B) {
	r, ref := placedSinkBatch(b)
	b.ReportAllocs()
	for b.Loop() {
		var req pluginv1.PutRequest
		if err := r.Take(ref, &req); err != nil {
			b.Fatal(err)
		}
		out, err := DecodeSinkRecords(req.Schemas, req.Records)
		if err != nil || len(out) != benchBatch {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/rec")
}

// placedSinkBatch places sinkBytesBatch in a region, as the worker does.
func placedSinkBatch(b *testing.B) (*SharedRegion, *pluginv1.SharedBatch) {
	recs := sinkBytesBatch()
	r := NewSharedRegion(make([]byte, 8<<20), nil)
	schemas, ps, err := EncodeSinkRecords(recs)
	if err != nil {
		b.Fatal(err)
	}
	ref, ok := r.Place(&pluginv1.PutRequest{Schemas: schemas, Records: ps})
	if !ok {
		b.Fatal("not placed")
	}
	return r, ref
}

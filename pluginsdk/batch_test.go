package pluginsdk

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

func batchRecords() []*data.SourceRecord {
	s := data.StructBuilder().Name("s").Field("id", data.Int64Schema).Field("name", data.StringSchema).MustBuild()
	recs := []*data.SourceRecord{
		{Record: data.Record{Topic: "t", Partition: data.NoPartition}},
		{Record: data.Record{Topic: "topic", Partition: 3, Key: data.Raw("k"), Value: data.Raw(make([]byte, 1024))},
			SourcePartition: map[string]any{"task": int64(0)}, SourceOffset: map[string]any{"seq": int64(1) << 40}},
		{Record: data.Record{Topic: "t", Partition: -5, ValueSchema: s, Value: data.NewStruct(s).MustPut("id", int64(-1)).MustPut("name", "n"),
			Headers: data.Headers{{Key: "h", Value: data.Raw("v")}, {Key: "h2", Schema: data.StringSchema, Value: "x"}}}},
	}
	for i := range 40 {
		recs = append(recs, &data.SourceRecord{Record: data.Record{Topic: "t", Partition: data.NoPartition,
			KeySchema: data.StringSchema, Key: strings.Repeat("k", i), Value: data.Raw(make([]byte, 100*i))}})
	}
	return recs
}

// A batch stops taking records where its answer would exceed max_bytes, and
// the answer it writes is the one EncodeSourceRecords and protobuf give.
func TestPollBatchHonoursMaxBytes(t *testing.T) {
	all := batchRecords()
	for _, maxBytes := range []int{1, 500, 1500, 5000, 20_000, 100_000} {
		var got []*data.SourceRecord
		for rest := all; len(rest) > 0; {
			b := newPollBatch(1000, maxBytes)
			var err error
			if rest, err = b.add(rest); err != nil {
				t.Fatal(err)
			}
			if b.len() == 0 {
				t.Fatalf("max_bytes %d: an empty batch", maxBytes)
			}
			enc, err := b.enc.Marshal(1 << 40)
			if err != nil {
				t.Fatal(err)
			}
			if b.len() > 1 && len(enc) > maxBytes {
				t.Fatalf("max_bytes %d: %d records take %d bytes", maxBytes, b.len(), len(enc))
			}
			// The next record would not have fitted.
			if len(rest) > 0 {
				next := newPollBatch(1000, 1<<30)
				if _, err := next.add(append(append([]*data.SourceRecord(nil), b.records()...), rest[0])); err != nil {
					t.Fatal(err)
				}
				// Sizes leave room for the largest first_seq.
				if n, _ := next.enc.Marshal(1 << 40); len(n)+maxFirstSeqSize-1-protowire.SizeVarint(1<<40) <= maxBytes {
					t.Fatalf("max_bytes %d: the batch stopped at %d records, yet %d bytes would hold one more", maxBytes, b.len(), len(n))
				}
			}
			schemas, ps, err := wire.EncodeSourceRecords(b.records())
			if err != nil {
				t.Fatal(err)
			}
			want, _ := proto.MarshalOptions{Deterministic: true}.Marshal(&pluginv1.PollResponse{Schemas: schemas, Records: ps, FirstSeq: 1 << 40})
			if !bytes.Equal(enc, want) {
				t.Fatalf("max_bytes %d: the answer differs from protobuf's", maxBytes)
			}
			got = append(got, b.records()...)
		}
		if len(got) != len(all) {
			t.Fatalf("max_bytes %d: %d records came out of %d", maxBytes, len(got), len(all))
		}
		for i := range got {
			if got[i] != all[i] {
				t.Fatalf("max_bytes %d: record %d out of order", maxBytes, i)
			}
		}
	}
}

// A chunk holding a record that cannot be encoded fails whole: none of its
// records joins, the batch writes what it did before, and the error names
// the record as EncodeSourceRecords does.
func TestPollBatchRejectsAChunkWhole(t *testing.T) {
	s := data.StructBuilder().Name("fresh").Field("a", data.Int32Schema).MustBuild()
	good := batchRecords()[:3]
	b := newPollBatch(1000, 1<<20)
	if rest, err := b.add(good); err != nil || len(rest) != 0 {
		t.Fatalf("add: %v (%d left)", err, len(rest))
	}
	before, _ := b.enc.Marshal(7)
	bad := []*data.SourceRecord{
		// A new schema and JSON, then a record whose value does not match its schema.
		{Record: data.Record{Topic: "x", Partition: data.NoPartition, ValueSchema: s, Value: data.NewStruct(s).MustPut("a", int32(1))},
			SourcePartition: map[string]any{"p": "other"}, SourceOffset: map[string]any{"o": int64(1)}},
		{Record: data.Record{Topic: "y", Partition: data.NoPartition, ValueSchema: data.Int32Schema, Value: "not an int"}},
	}
	_, err := b.add(bad)
	_, _, want := wire.EncodeSourceRecords(bad)
	if err == nil || want == nil || err.Error() != "encode polled records: "+want.Error() {
		t.Fatalf("error %v, want encode polled records: %v", err, want)
	}
	if _, err := b.add([]*data.SourceRecord{good[0], nil}); err == nil || !strings.Contains(err.Error(), "source record 1: nil record") {
		t.Fatalf("nil record: %v", err)
	}
	after, _ := b.enc.Marshal(7)
	if b.len() != 3 || !bytes.Equal(before, after) {
		t.Fatalf("the failed chunks changed the batch: %d records", b.len())
	}
}

// BenchmarkPollAnswerPluginSide is the plugin's half of a Poll answered
// through shared memory: 1000 raw 1 KiB records with a key and a source
// partition and offset gathered into a batch and written into the region.
func BenchmarkPollAnswerPluginSide(b *testing.B) {
	task := rawSourceTask()
	si := &sourceInstance{shared: wire.NewSharedRegion(make([]byte, 8<<20), nil)}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		recs, _ := task.Poll(b.Context())
		b.StartTimer()
		pb := newPollBatch(1000, 8<<20)
		if rest, err := pb.add(recs); err != nil || len(rest) != 0 {
			b.Fatal(err)
		}
		resp, err := si.answer(pb, 1)
		if err != nil || resp.GetShared() == nil {
			b.Fatal("not placed", err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/rec")
}

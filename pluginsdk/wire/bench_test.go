package wire

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

const benchBatch = 1000

func rawBatch() []*data.SourceRecord {
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = byte(i)
	}
	recs := make([]*data.SourceRecord, benchBatch)
	for i := range recs {
		recs[i] = &data.SourceRecord{Record: data.Record{Topic: "bench", Partition: data.NoPartition, Value: data.Raw(payload)}}
	}
	return recs
}

func structBatch() []*data.SourceRecord {
	s := data.StructBuilder().Name("bench").
		Field("id", data.Int64Schema).
		Field("name", data.StringSchema).
		Field("score", data.Float64Schema).
		Field("active", data.BooleanSchema).
		Field("at", data.TimestampSchema(false)).
		MustBuild()
	recs := make([]*data.SourceRecord, benchBatch)
	for i := range recs {
		st := data.NewStruct(s).MustPut("id", int64(i)).MustPut("name", "user-name").
			MustPut("score", 0.5).MustPut("active", true).MustPut("at", time.UnixMilli(int64(i)).UTC())
		recs[i] = &data.SourceRecord{Record: data.Record{Topic: "bench", Partition: data.NoPartition, ValueSchema: s, Value: st}}
	}
	return recs
}

// benchConvert measures the data<->proto conversion alone, the part this
// package owns; benchWire adds protobuf marshalling on both sides, i.e. what
// a poll costs apart from the socket.
func benchConvert(b *testing.B, recs []*data.SourceRecord) {
	b.ReportAllocs()
	for b.Loop() {
		schemas, ps, err := EncodeSourceRecords(recs)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeSourceRecords(schemas, ps); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(recs))/b.Elapsed().Seconds(), "rec/s")
}

func benchWire(b *testing.B, recs []*data.SourceRecord) {
	b.ReportAllocs()
	for b.Loop() {
		schemas, ps, err := EncodeSourceRecords(recs)
		if err != nil {
			b.Fatal(err)
		}
		buf, err := proto.Marshal(&pluginv1.PollResponse{Schemas: schemas, Records: ps})
		if err != nil {
			b.Fatal(err)
		}
		var resp pluginv1.PollResponse
		if err := proto.Unmarshal(buf, &resp); err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeSourceRecords(resp.Schemas, resp.Records); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(recs))/b.Elapsed().Seconds(), "rec/s")
}

func BenchmarkConvertRaw1KiB(b *testing.B) { benchConvert(b, rawBatch()) }
func BenchmarkConvertStruct5(b *testing.B) { benchConvert(b, structBatch()) }
func BenchmarkWireRaw1KiB(b *testing.B)    { benchWire(b, rawBatch()) }
func BenchmarkWireStruct5(b *testing.B)    { benchWire(b, structBatch()) }

// cacheEvictor is memory larger than the machine's caches: writing a byte
// of each of its cache lines (evict) leaves what a cold benchmark touches
// next to come from memory, as in the pipeline, where the fetch, the other
// process and the broker pass through the caches between two batches.
type cacheEvictor []byte

func newCacheEvictor() cacheEvictor { return make([]byte, 64<<20) }

func (e cacheEvictor) evict() {
	for i := 0; i < len(e); i += 64 {
		e[i]++
	}
}

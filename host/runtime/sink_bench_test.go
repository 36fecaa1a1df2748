package runtime

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/convert"
	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// benchKafkaRecords are n consumed records as the sink benchmark of make
// bench reads them: 1 KiB values, short keys, no headers, create times,
// six partitions in groups of a poll's size.
func benchKafkaRecords(n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		v := make([]byte, benchRecordSize)
		copy(v, fmt.Sprintf("value-%d", i))
		recs[i] = &kgo.Record{
			Topic: "bench", Partition: int32(i / 100 % 6), Offset: int64(1000000 + i),
			Key: fmt.Appendf(nil, "key-%d", i), Value: v,
			Timestamp: time.UnixMilli(1700000000000 + int64(i)),
		}
	}
	return recs
}

// BenchmarkSinkConvertPut is the worker's own work per sink record,
// without the consumer or a plugin: consumed records converted into a Put
// batch (ByteArrayConverter for keys and values) a poll at a time, as the
// pipelined loop gathers them, then written into shared memory as
// PlacePut writes it for the plugin.
func BenchmarkSinkConvertPut(b *testing.B) {
	recs := benchKafkaRecords(2000)
	conv := convert.ByteArrayConverter{}
	t := &sinkTask{cfg: SinkConfig{Pipeline: Pipeline{KeyConverter: conv, ValueConverter: conv, HeaderConverter: conv}},
		bytesKeys: true, bytesValues: true}
	region := wire.NewSharedRegion(make([]byte, 8<<20), nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var batch *sinkBatch
		for i := 0; i < len(recs); i += DefaultSinkMaxPollRecords {
			var err error
			if batch, err = t.convertMore(ctx, batch, recs[i:i+DefaultSinkMaxPollRecords], false); err != nil {
				b.Fatal(err)
			}
		}
		if _, ok := region.PlacePut(batch.put); !ok {
			b.Fatal("not placed")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/rec")
}

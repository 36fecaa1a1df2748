package pluginsdk

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// BenchmarkPollOneRecordPerTaskPoll measures records per second through the
// SDK's Poll RPC (in-memory gRPC) for a task returning one record per Poll,
// batched 1000 to a response.
func BenchmarkPollOneRecordPerTaskPoll(b *testing.B) {
	schema := &data.Schema{Type: data.StructType, Fields: []data.Field{
		{Name: "task", Index: 0, Schema: data.Int32Schema},
		{Name: "seq", Index: 1, Schema: data.Int64Schema},
	}}
	part := map[string]any{"task": int64(0)}
	c := serve(b, sourceClass(func() SourceTask {
		seq := int64(0)
		return &funcSource{poll: func(context.Context) ([]*data.SourceRecord, error) {
			seq++
			return []*data.SourceRecord{{
				Record: data.Record{Topic: "t", Partition: data.NoPartition, ValueSchema: schema,
					Value: data.NewStruct(schema).MustPut("task", int32(0)).MustPut("seq", seq)},
				SourcePartition: part, SourceOffset: map[string]any{"seq": seq},
			}}, nil
		}}
	}))
	ctx := context.Background()
	if _, err := c.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source"}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	n := 0
	for n < b.N {
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 1000, TimeoutMs: 1000})
		if err != nil {
			b.Fatal(err)
		}
		n += len(resp.GetRecords())
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(n), "cpu-ns/record")
}

// cpuTime is the CPU time (user and system) the process has used: on a
// shared machine, CPU per record is steadier than records per second.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPollRaw1KiB measures records per second through the SDK's Poll
// RPC (in-memory gRPC) for a task returning batches of 1000 ready 1 KiB raw
// records with a key and a source partition and offset, as datagen's raw
// format does; the client decodes each answer, as the worker does. Both
// sides share the process, so this counts the SDK's encoding, protobuf on
// both sides and the worker's decode, not generation.
func BenchmarkPollRaw1KiB(b *testing.B) {
	const batch = 1000
	values := make([]data.Raw, batch)
	for i := range values {
		v := make([]byte, 1024)
		for j := range v {
			v[j] = byte(i*7 + j*13)
		}
		values[i] = v
	}
	part := map[string]any{"task": int64(0)}
	c := serve(b, sourceClass(func() SourceTask {
		seq := int64(0)
		return &funcSource{poll: func(context.Context) ([]*data.SourceRecord, error) {
			recs := make([]*data.SourceRecord, batch)
			for i := range recs {
				seq++
				recs[i] = &data.SourceRecord{
					Record: data.Record{Topic: "t", Partition: data.NoPartition,
						Key: data.Raw("key-" + itoa(seq)), Value: values[i]},
					SourcePartition: part, SourceOffset: map[string]any{"seq": seq},
				}
			}
			return recs, nil
		}}
	}))
	ctx := context.Background()
	if _, err := c.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	n := 0
	for n < b.N {
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: batch, MaxBytes: 8 << 20, TimeoutMs: 1000})
		if err != nil {
			b.Fatal(err)
		}
		// The worker keeps source partitions and offsets as JSON.
		for _, r := range resp.GetRecords() {
			r.SourcePartition, r.SourceOffset = nil, nil
		}
		if _, err := wire.DecodeSourceRecords(resp.GetSchemas(), resp.GetRecords()); err != nil {
			b.Fatal(err)
		}
		n += len(resp.GetRecords())
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(n), "cpu-ns/record")
}

// BenchmarkPutBytes1KiB measures records per second through the SDK's Put
// RPC (in-memory gRPC) for batches of 1000 records with a 14-byte key and a
// 1 KiB value as ByteArrayConverter makes them (optional bytes schema),
// into a task that does nothing: the client's marshal, the SDK's decode
// and the call itself.
func BenchmarkPutBytes1KiB(b *testing.B) {
	const batch = 1000
	recs := bytesSinkRecords(batch)
	schemas, precs, err := wire.EncodeSinkRecords(recs)
	if err != nil {
		b.Fatal(err)
	}
	var got int
	c := serve(b, sinkClass(func() SinkTask {
		return &funcSink{put: func(_ context.Context, recs []*data.SinkRecord) error {
			got += len(recs)
			return nil
		}}
	}))
	ctx := context.Background()
	if _, err := c.SinkTask.Start(ctx, &pluginv1.SinkTaskStartRequest{ConnectorClass: "test.Sink"}); err != nil {
		b.Fatal(err)
	}
	req := &pluginv1.PutRequest{Schemas: schemas, Records: precs}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	n := 0
	for n < b.N {
		if _, err := c.SinkTask.Put(ctx, req); err != nil {
			b.Fatal(err)
		}
		n += batch
	}
	if got != n {
		b.Fatalf("the task got %d records, want %d", got, n)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(n), "cpu-ns/record")
}

// bytesSinkRecords are n records as ByteArrayConverter makes them: a short
// key and a 1 KiB value, both with the optional bytes schema.
func bytesSinkRecords(n int) []*data.SinkRecord {
	recs := make([]*data.SinkRecord, n)
	for i := range recs {
		v := make([]byte, 1024)
		for j := range v {
			v[j] = byte(i*7 + j*13)
		}
		recs[i] = &data.SinkRecord{Record: data.Record{Topic: "t", Partition: int32(i % 6),
			KeySchema: data.OptionalBytesSchema, Key: []byte("key-" + itoa(int64(i))),
			ValueSchema: data.OptionalBytesSchema, Value: v, Timestamp: time.UnixMilli(1700000000000)},
			Offset: int64(i), TimestampType: data.CreateTime}
	}
	return recs
}

package pluginsdk

import (
	"context"
	"os"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// sharedOffer creates a shared file of size bytes, maps it for the test's
// side and returns the offer a Start request carries.
func sharedOffer(t testing.TB, size int64) (*pluginv1.SharedMemory, *wire.SharedRegion) {
	offer, r, _ := sharedFile(t, size)
	return offer, r
}

// sharedFile is sharedOffer that also returns the file.
func sharedFile(t testing.TB, size int64) (*pluginv1.SharedMemory, *wire.SharedRegion, *os.File) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	r, err := wire.MapShared(int(f.Fd()), size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return &pluginv1.SharedMemory{Fd: uint32(f.Fd()), Size: uint64(size)}, r, f
}

// rawSourceTask returns batches of 1000 ready 1 KiB raw records with a key
// and a source partition and offset, as datagen's raw format does.
func rawSourceTask() SourceTask {
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
}

// BenchmarkPollRaw1KiBShared is BenchmarkPollRaw1KiB with the answers in
// shared memory, read by the client as the worker reads them.
func BenchmarkPollRaw1KiBShared(b *testing.B) {
	offer, region := sharedOffer(b, 8<<20)
	c := serve(b, sourceClass(rawSourceTask))
	ctx := context.Background()
	st, err := c.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source", SharedMemory: offer})
	if err != nil || !st.GetSharedMemory() {
		b.Fatalf("start: %v (shared memory accepted: %v)", err, st.GetSharedMemory())
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	n := 0
	for n < b.N {
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 1000, MaxBytes: 8 << 20, TimeoutMs: 1000})
		if err != nil {
			b.Fatal(err)
		}
		if resp.GetShared() == nil {
			b.Fatal("answer not in shared memory")
		}
		var out pluginv1.PollResponse
		if err := region.Take(resp.GetShared(), &out); err != nil {
			b.Fatal(err)
		}
		for _, r := range out.GetRecords() {
			r.SourcePartition, r.SourceOffset = nil, nil
		}
		if _, err := wire.DecodeSourceRecords(out.GetSchemas(), out.GetRecords()); err != nil {
			b.Fatal(err)
		}
		n += len(out.GetRecords())
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(n), "cpu-ns/record")
}

// BenchmarkPutBytes1KiBShared is BenchmarkPutBytes1KiB with the batches in
// shared memory, placed by the client as the worker places them.
func BenchmarkPutBytes1KiBShared(b *testing.B) {
	const batch = 1000
	recs := bytesSinkRecords(batch)
	schemas, precs, err := wire.EncodeSinkRecords(recs)
	if err != nil {
		b.Fatal(err)
	}
	offer, region := sharedOffer(b, 8<<20)
	var got int
	c := serve(b, sinkClass(func() SinkTask {
		return &funcSink{put: func(_ context.Context, recs []*data.SinkRecord) error {
			got += len(recs)
			return nil
		}}
	}))
	ctx := context.Background()
	st, err := c.SinkTask.Start(ctx, &pluginv1.SinkTaskStartRequest{ConnectorClass: "test.Sink", SharedMemory: offer})
	if err != nil || !st.GetSharedMemory() {
		b.Fatalf("start: %v (shared memory accepted: %v)", err, st.GetSharedMemory())
	}
	req := &pluginv1.PutRequest{Schemas: schemas, Records: precs}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	n := 0
	for n < b.N {
		ref, ok := region.Place(req)
		if !ok {
			b.Fatal("not placed")
		}
		if _, err := c.SinkTask.Put(ctx, &pluginv1.PutRequest{Shared: ref}); err != nil {
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

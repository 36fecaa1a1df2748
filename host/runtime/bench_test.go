package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/host/convert"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// The benchmarks measure the runners alone: the fake plugins answer from
// memory (no gRPC, no process), and kfake stores nothing (BlackholeProduce)
// or serves canned batches (SyntheticFetch). BenchmarkRaw* are franz-go by
// itself against the same cluster, the ceiling the runners are compared to.

const benchRecordSize = 1024

// benchSource hands out the same pre-encoded batch of 1 KiB raw records
// with fresh sequence numbers, so the benchmark measures the runner, not
// record encoding in the fake. It answers as a plugin that accepted shared
// memory: the answer in the region, read out as the worker reads it
// (TakePoll), which is the runner's cost.
type benchSource struct {
	process
	batch   *pluginv1.PollResponse
	limit   uint64
	mu      sync.Mutex
	nextSeq uint64
	acked   atomic.Uint64
	mem     []byte
	region  *wire.SharedRegion
	// encoded holds the encoding of the first n records, without
	// first_seq, by n.
	encoded map[uint64][]byte
}

func newBenchSource(batchSize int, limit uint64) *benchSource {
	recs := make([]*data.SourceRecord, batchSize)
	for i := range recs {
		v := make([]byte, benchRecordSize)
		copy(v, fmt.Sprintf("value-%d", i))
		recs[i] = &data.SourceRecord{
			Record:          data.Record{Topic: "bench", Partition: data.NoPartition, Key: data.Raw(fmt.Sprintf("k%d", i)), Value: data.Raw(v)},
			SourcePartition: map[string]any{"file": "bench"},
			SourceOffset:    map[string]any{"pos": int64(i)},
		}
	}
	schemas, precs, err := wire.EncodeSourceRecords(recs)
	if err != nil {
		panic(err)
	}
	mem := make([]byte, 8<<20)
	return &benchSource{
		process: newProcess(&events{}),
		batch:   &pluginv1.PollResponse{Schemas: schemas, Records: precs},
		limit:   limit,
		nextSeq: 1,
		mem:     mem,
		region:  wire.NewSharedRegion(mem, nil),
		encoded: map[uint64][]byte{},
	}
}

func (f *benchSource) launch(context.Context, pluginv1.WorkerServer) (SourcePlugin, error) {
	return f, nil
}

func (f *benchSource) Start(context.Context, *pluginv1.SourceTaskStartRequest) (*pluginv1.SourceTaskStartResponse, error) {
	return &pluginv1.SourceTaskStartResponse{}, nil
}

func (f *benchSource) Poll(ctx context.Context, req *pluginv1.PollRequest) (*wire.PollBatch, error) {
	ref, err := f.answer(ctx, req)
	if ref == nil || err != nil {
		return nil, err
	}
	return f.region.TakePoll(ref)
}

// answer writes the next answer into the region and says where it is; nil
// when there is nothing to answer.
func (f *benchSource) answer(ctx context.Context, req *pluginv1.PollRequest) (*pluginv1.SharedBatch, error) {
	if a := req.GetAcks().GetAckedThrough(); a > f.acked.Load() {
		f.acked.Store(a)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := min(uint64(len(f.batch.Records)), uint64(req.MaxRecords), uint64(req.MaxBytes)/benchRecordSize+1)
	if f.nextSeq+n-1 > f.limit {
		n = f.limit - f.nextSeq + 1
	}
	if n == 0 {
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
		return nil, nil
	}
	enc, ok := f.encoded[n]
	if !ok {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&pluginv1.PollResponse{Schemas: f.batch.Schemas, Records: f.batch.Records[:n]})
		if err != nil {
			return nil, err
		}
		enc, f.encoded[n] = b, b
	}
	// The answer is the records' encoding followed by first_seq (a
	// message's fields may come in any order).
	size := copy(f.mem, enc)
	size += len(protowire.AppendVarint(protowire.AppendTag(f.mem[size:size], 3, protowire.VarintType), f.nextSeq))
	f.nextSeq += n
	return &pluginv1.SharedBatch{Length: uint64(size)}, nil
}

func (f *benchSource) Ack(_ context.Context, req *pluginv1.AckRequest) error {
	if a := req.GetAcks().GetAckedThrough(); a > f.acked.Load() {
		f.acked.Store(a)
	}
	return nil
}
func (f *benchSource) Commit(context.Context) error { return nil }
func (f *benchSource) Stop(context.Context) error   { return nil }

func reportThroughput(b *testing.B, n int, elapsed time.Duration) {
	b.ReportMetric(float64(n)/elapsed.Seconds(), "rec/s")
	b.ReportMetric(float64(n)*benchRecordSize/elapsed.Seconds()/1e6, "MB/s")
}

func BenchmarkSourceRunner(b *testing.B) {
	f := newBenchSource(DefaultSourceMaxPollRecords, uint64(b.N))
	runSourceBench(b, f.launch)
}

// runSourceBench runs one source task whose plugin calls go to launch, on a
// fresh one-broker kfake cluster that discards what it is sent, until b.N
// records are acknowledged; it reports the throughput and returns the wall
// and CPU time (of the whole process) that took. opts are added to the
// task's producer options.
func runSourceBench(b *testing.B, launch SourceLauncher, opts ...kgo.Opt) (elapsed, cpu time.Duration) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "bench"), kfake.BlackholeProduce())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	task, err := NewSourceTask(SourceConfig{
		ID:           TaskID{"bench", 0},
		Launch:       launch,
		Pipeline:     testPipeline(),
		ProducerOpts: append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, opts...),
		Offsets:      newMemOffsets(&events{}),
		Timing:       Timing{OffsetFlushInterval: time.Second},
	})
	if err != nil {
		b.Fatal(err)
	}
	st := task.(*sourceTask)
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	errc := make(chan error, 1)
	go func() { errc <- task.Run(context.Background()) }()
	for st.tracker.acked() < uint64(b.N) {
		time.Sleep(200 * time.Microsecond)
	}
	elapsed, cpu = time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	task.Stop()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	reportThroughput(b, b.N, elapsed)
	return elapsed, cpu
}

// BenchmarkRawProduce is franz-go producing the same records on its own.
func BenchmarkRawProduce(b *testing.B) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "bench"), kfake.BlackholeProduce())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.MaxBufferedRecords(1<<30), kgo.MaxBufferedBytes(DefaultMaxInFlightBytes),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	v := make([]byte, benchRecordSize)
	var done atomic.Int64
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		cl.Produce(context.Background(), &kgo.Record{Topic: "bench", Key: fmt.Appendf(nil, "k%d", i%1000), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
			done.Add(1)
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	reportThroughput(b, b.N, elapsed)
}

// benchSink counts what it is given.
type benchSink struct {
	process
	region  *wire.SharedRegion
	records atomic.Int64
	bytes   atomic.Int64
}

func (f *benchSink) launch(context.Context, pluginv1.WorkerServer) (SinkPlugin, error) { return f, nil }
func (f *benchSink) Start(context.Context, *pluginv1.SinkTaskStartRequest) (*pluginv1.SinkTaskStartResponse, error) {
	return &pluginv1.SinkTaskStartResponse{}, nil
}
func (f *benchSink) Open(context.Context, *pluginv1.OpenRequest) error { return nil }
func (f *benchSink) Put(_ context.Context, b *wire.SinkBatch) error {
	// Write the batch into shared memory as the worker does for a plugin
	// that accepted it, so the benchmark counts the encoding a real Put
	// pays on the worker's side.
	if b.Len() > 0 {
		if _, ok := f.region.PlacePut(b); !ok {
			return fmt.Errorf("a batch of %d bytes did not fit", b.Size())
		}
	}
	n := 0
	for _, r := range b.Records() {
		v, _ := r.Value.([]byte)
		n += len(v)
	}
	f.bytes.Add(int64(n))
	f.records.Add(int64(b.Len()))
	return nil
}
func (f *benchSink) PreCommit(_ context.Context, req *pluginv1.PreCommitRequest) (*pluginv1.PreCommitResponse, error) {
	return &pluginv1.PreCommitResponse{Offsets: req.Offsets}, nil
}
func (f *benchSink) Close(context.Context, *pluginv1.CloseRequest) error { return nil }
func (f *benchSink) Stop(context.Context) error                          { return nil }

// bytesConverter is ByteArrayConverter: bytes in, bytes out.
type bytesConverter struct{}

func (bytesConverter) FromConnectData(_ string, _ data.Headers, _ *data.Schema, v any) ([]byte, error) {
	b, _ := v.([]byte)
	return b, nil
}

func (bytesConverter) ToConnectData(_ string, _ data.Headers, b []byte) (*data.Schema, any, error) {
	return data.OptionalBytesSchema, b, nil
}

func (bytesConverter) FromConnectHeader(_, _ string, _ *data.Schema, v any) ([]byte, error) {
	b, _ := v.([]byte)
	return b, nil
}

func (bytesConverter) ToConnectHeader(_, _ string, b []byte) (*data.Schema, any, error) {
	return data.OptionalBytesSchema, b, nil
}

func syntheticCluster(b *testing.B) *kfake.Cluster {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "bench"),
		kfake.SyntheticFetch(kfake.SyntheticBatch{RecordBytes: benchRecordSize}))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func BenchmarkSinkRunner(b *testing.B) {
	c := syntheticCluster(b)
	defer c.Close()
	f := &benchSink{process: newProcess(&events{}), region: wire.NewSharedRegion(make([]byte, 64<<20), nil)}
	// ByteArrayConverter for keys and values, as a bytes pipeline is
	// configured: the runner converts those itself (passesBytes).
	task, err := NewSinkTask(SinkConfig{
		ID:           TaskID{"bench", 0},
		Launch:       f.launch,
		Pipeline:     Pipeline{KeyConverter: convert.ByteArrayConverter{}, ValueConverter: convert.ByteArrayConverter{}, HeaderConverter: bytesConverter{}},
		Topics:       []string{"bench"},
		ConsumerOpts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)},
		Timing:       Timing{OffsetFlushInterval: time.Second},
	})
	if err != nil {
		b.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- task.Run(context.Background()) }()
	// Exclude the group join: start timing at the first record.
	for f.records.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	b.ResetTimer()
	start, base := time.Now(), f.records.Load()
	for f.records.Load()-base < int64(b.N) {
		time.Sleep(200 * time.Microsecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	task.Stop()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	reportThroughput(b, b.N, elapsed)
}

// BenchmarkRawConsume is franz-go consuming the same records on its own, in
// a group, as the sink runner does.
func BenchmarkRawConsume(b *testing.B) {
	c := syntheticCluster(b)
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumerGroup("raw"), kgo.ConsumeTopics("bench"),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit())
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for len(cl.PollRecords(ctx, 1).Records()) == 0 {
	}
	b.ResetTimer()
	start := time.Now()
	n := 0
	for n < b.N {
		n += len(cl.PollRecords(ctx, DefaultSinkMaxPollRecords).Records())
	}
	reportThroughput(b, b.N, time.Since(start))
}

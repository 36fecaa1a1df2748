//go:build integration

package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The baselines: raw franz-go with its defaults (idempotent, acks=all,
// 10 ms linger, 1 MB batches) against the same broker, except compression:
// the producer sends uncompressed batches, as the worker does by default
// (Kafka's compression.type=none). franz-go's default, snappy, would spend
// CPU on incompressible random values on the cores the pipeline runs on
// and make the two unlike. Pipeline benchmarks report their throughput as
// a ratio to one of these; the consume baselines and the sink benchmarks
// read the same uncompressed topic. The consume-group baselines do a sink's
// work (join a group, commit) where the consume baselines only read.
func init() {
	for _, parts := range []int32{1, 6} {
		Register(Benchmark{
			Name: fmt.Sprintf("baseline/produce-p%d", parts),
			Run: func(ctx context.Context, env *BenchEnv) (Result, error) {
				return produceBaseline(ctx, env, parts)
			},
		})
	}
	for _, parts := range []int32{1, 6} {
		Register(Benchmark{
			Name:    fmt.Sprintf("baseline/consume-p%d", parts),
			Prepare: fillFirst(parts),
			Run: func(ctx context.Context, env *BenchEnv) (Result, error) {
				return consumeBaseline(ctx, env, parts)
			},
		})
	}
	// Right after the bare consumers, so that the table shows the two
	// kinds of consumer side by side (see baseline_group.go). They run
	// before the sinks compared with them, so that the broker has created
	// __consumer_offsets before a sink first joins a group.
	for _, parts := range []int32{1, 6} {
		Register(Benchmark{
			Name:    fmt.Sprintf("baseline/consume-group-p%d", parts),
			Prepare: groupsReady(parts),
			Run: func(ctx context.Context, env *BenchEnv) (Result, error) {
				return consumeGroupBaseline(ctx, env, parts)
			},
		})
	}
}

func produceBaseline(ctx context.Context, env *BenchEnv, parts int32) (Result, error) {
	topic, err := env.NewTopic(ctx, fmt.Sprintf("produce-p%d", parts), parts)
	if err != nil {
		return Result{}, err
	}
	cl, err := env.NewClient(kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	res, err := produceAll(ctx, cl, topic, env.Records, env.Payload)
	if err != nil {
		return Result{}, err
	}
	// The topic now holds exactly the payload: consumers can reuse it
	// instead of producing it again (the first run's topic, if this
	// baseline runs twice); the other runs' topics go.
	env.setFilled(parts, topic)
	env.Discard(ctx, topic)
	return res, nil
}

// produceAll produces n payload records asynchronously and waits for every
// ack; the time covers the first Produce call to the last ack.
func produceAll(ctx context.Context, cl *kgo.Client, topic string, n int, p *Payload) (Result, error) {
	if n > p.Len() {
		return Result{}, fmt.Errorf("payload has %d records, %d wanted", p.Len(), n)
	}
	var (
		failed   atomic.Int64
		firstErr error
		errOnce  sync.Once
	)
	onAck := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
			errOnce.Do(func() { firstErr = err })
		}
	}
	start := time.Now()
	for i := range n {
		// Produce blocks when the client's buffer is full (10k records by
		// default), which is the back-pressure we want to measure under.
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: p.Key(i), Value: p.Value(i)}, onAck)
	}
	if err := cl.Flush(ctx); err != nil {
		return Result{}, fmt.Errorf("flush %s: %w", topic, err)
	}
	secs := time.Since(start).Seconds()
	if f := failed.Load(); f > 0 {
		return Result{}, fmt.Errorf("produce to %s: %d of %d records failed, first: %w", topic, f, n, firstErr)
	}
	return Result{Records: n, Bytes: int64(n) * p.RecordBytes(), Seconds: secs}, nil
}

func consumeBaseline(ctx context.Context, env *BenchEnv, parts int32) (Result, error) {
	topic, err := env.FilledTopic(ctx, parts)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	cl, err := env.NewClient(
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	recs, bytes, err := consumeAll(ctx, cl, topic, env.Records)
	if err != nil {
		return Result{}, err
	}
	secs := time.Since(start).Seconds()
	if recs != env.Records {
		return Result{}, fmt.Errorf("consume %s: read %d records, topic holds %d", topic, recs, env.Records)
	}
	return Result{Records: recs, Bytes: bytes, Seconds: secs}, nil
}

// consumeAll polls cl until it has read n records of topic and returns
// how many records and key+value bytes it read.
func consumeAll(ctx context.Context, cl *kgo.Client, topic string, n int) (int, int64, error) {
	var recs int
	var bytes int64
	for recs < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return recs, bytes, fmt.Errorf("consume %s: %d of %d records: %w", topic, recs, n, err)
		}
		var fetchErr error
		fs.EachError(func(_ string, p int32, err error) { fetchErr = fmt.Errorf("partition %d: %w", p, err) })
		if fetchErr != nil {
			return recs, bytes, fmt.Errorf("consume %s: %w", topic, fetchErr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			recs++
			bytes += int64(len(r.Key) + len(r.Value))
		})
	}
	return recs, bytes, nil
}

// createTopic creates a topic with the broker's default replication factor.
func createTopic(ctx context.Context, cl *kgo.Client, name string, partitions int32) error {
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, name); err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	return nil
}

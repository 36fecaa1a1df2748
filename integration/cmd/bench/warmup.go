//go:build integration

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// What the broker warm-up moves: warmUpProduced records produced (the
// payload over again as many times as it takes), of which the first
// warmUpRead are read back.
const (
	warmUpProduced = 1_000_000
	warmUpRead     = 200_000
)

// warmUp produces payload records to a scratch topic and reads some back,
// unmeasured, before the first benchmark, then deletes the topic.
//
// Reading back: a freshly started JVM interprets and compiles its produce
// and fetch paths during the first seconds of load, which made whichever
// benchmark ran first up to 20% slower than its own second run.
//
// Producing a million: after a warm-up of 200k records, the first
// produce-p1 baseline of a run took 1M records at 333k-350k records/s and
// 3.4-3.6 broker CPU s, and every later produce in the same run, baseline
// or pipeline, at 140k-212k and 4.8-6.6 (docs/benchmarks.md, 2026-12-02).
// Pipelines only ever ran after that first baseline, so their first
// round was compared with a broker phase they never saw. After a warm-up
// of a million the first baseline runs at the later rate (203k). The
// phase's cause is not traced; the warm-up just gets past it.
func warmUp(ctx context.Context, env *BenchEnv) (time.Duration, error) {
	start := time.Now()
	topic, err := env.NewTopic(ctx, "warm-up", 6)
	if err != nil {
		return 0, err
	}
	defer env.Discard(ctx, topic)
	cl, err := env.NewClient(
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	for left := warmUpProduced; left > 0; {
		n := min(left, env.Payload.Len())
		if _, err := produceAll(ctx, cl, topic, n, env.Payload); err != nil {
			return 0, fmt.Errorf("warm-up: %w", err)
		}
		left -= n
	}
	if _, _, err := consumeAll(ctx, cl, topic, min(warmUpRead, warmUpProduced)); err != nil {
		return 0, fmt.Errorf("warm-up: %w", err)
	}
	return time.Since(start), nil
}

//go:build integration

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// warmUpRecords bounds the records the broker warm-up moves.
const warmUpRecords = 200_000

// warmUp produces payload records to a scratch topic and reads them back,
// unmeasured, before the first benchmark. A freshly started JVM interprets
// and compiles its produce and fetch paths during the first seconds of
// load, which made whichever benchmark ran first up to 20% slower than its
// own second run.
func warmUp(ctx context.Context, env *BenchEnv) (time.Duration, error) {
	start := time.Now()
	n := min(env.Records, warmUpRecords)
	topic, err := env.NewTopic(ctx, "warm-up", 6)
	if err != nil {
		return 0, err
	}
	cl, err := env.NewClient(
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if _, err := produceAll(ctx, cl, topic, n, env.Payload); err != nil {
		return 0, fmt.Errorf("warm-up: %w", err)
	}
	if _, _, err := consumeAll(ctx, cl, topic, n); err != nil {
		return 0, fmt.Errorf("warm-up: %w", err)
	}
	return time.Since(start), nil
}

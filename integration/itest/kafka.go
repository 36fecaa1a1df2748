package itest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// opTimeout bounds each admin or produce helper call; generous because a
// freshly started broker on a 2-core machine can be slow for a while.
const opTimeout = 30 * time.Second

// NewClient returns a franz-go client for seeds (plus opts) that is closed
// when the test ends.
func NewClient(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatalf("kafka client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// CreateTopic creates a topic with the broker's default replication factor
// and the given configs (nil for none), and waits until every partition has
// a leader.
func CreateTopic(t testing.TB, cl *kgo.Client, name string, partitions int32, configs map[string]string) {
	t.Helper()
	CreateTopicRF(t, cl, name, partitions, -1, configs)
}

// CreateTopicRF is CreateTopic with an explicit replication factor.
func CreateTopicRF(t testing.TB, cl *kgo.Client, name string, partitions int32, rf int16, configs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	defer cancel()
	if err := createTopic(ctx, cl, name, partitions, rf, configs); err != nil {
		t.Fatal(err)
	}
}

func createTopic(ctx context.Context, cl *kgo.Client, name string, partitions int32, rf int16, configs map[string]string) error {
	adm := kadm.NewClient(cl)
	cfg := make(map[string]*string, len(configs))
	for k, v := range configs {
		cfg[k] = kadm.StringPtr(v)
	}
	if _, err := adm.CreateTopic(ctx, partitions, rf, cfg, name); err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	// CreateTopics returns once the controller committed the topic; brokers
	// learn about it a little later. Producing before that works (kgo
	// retries) but makes timing in tests noisy, so wait here.
	for {
		md, err := adm.Metadata(ctx, name)
		if err == nil {
			if td, ok := md.Topics[name]; ok && td.Err == nil && len(td.Partitions) == int(partitions) && allLed(td) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s created but partitions have no leader: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func allLed(td kadm.TopicDetail) bool {
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

// ProduceStrings produces one record per value (nil key) and waits for all
// acks. It returns the produced records, with partitions and offsets set.
func ProduceStrings(t testing.TB, cl *kgo.Client, topic string, values ...string) []*kgo.Record {
	t.Helper()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(v)}
	}
	Produce(t, cl, recs...)
	return recs
}

// Produce produces recs and waits for all acks, failing the test on the
// first error.
func Produce(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records: %v", len(recs), err)
	}
}

// ErrShort is wrapped by ReadTopic's error when the timeout passed before n
// records arrived.
var ErrShort = errors.New("fewer records than expected")

// ReadTopic reads topic from the start of every partition with a new
// consumer (same seed brokers as cl, plus opts, e.g.
// kgo.FetchIsolationLevel(kgo.ReadCommitted())) until it has n records or
// timeout passes. On timeout it returns what it read and an error wrapping
// ErrShort that names the last fetch error, if any. n <= 0 reads until the
// timeout, returning everything and no error: useful to prove nothing more
// arrives.
func ReadTopic(ctx context.Context, cl *kgo.Client, topic string, n int, timeout time.Duration, opts ...kgo.Opt) ([]*kgo.Record, error) {
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	consumer, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("read %s: consumer: %w", topic, err)
	}
	defer consumer.Close()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var recs []*kgo.Record
	var lastErr error
	for n <= 0 || len(recs) < n {
		fs := consumer.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				lastErr = fmt.Errorf("partition %d: %w", p, err)
			}
		})
		recs = append(recs, fs.Records()...)
		if ctx.Err() != nil {
			break
		}
	}
	if n > 0 && len(recs) < n {
		return recs, fmt.Errorf("read %s: %w: got %d of %d within %s (last fetch error: %v)", topic, ErrShort, len(recs), n, timeout, lastErr)
	}
	if n <= 0 && lastErr != nil && len(recs) == 0 {
		return recs, fmt.Errorf("read %s: nothing read: %w", topic, lastErr)
	}
	return recs, nil
}

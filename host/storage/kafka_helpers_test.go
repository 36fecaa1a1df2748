package storage

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testKafka is an in-process kfake cluster with a client for the test's own
// reads and writes.
type testKafka struct {
	t     *testing.T
	c     *kfake.Cluster
	opts  []kgo.Opt
	cl    *kgo.Client
	adm   *kadm.Client
	spare []*kgo.Client
}

func newTestKafka(t *testing.T) *testKafka {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	k := &testKafka{t: t, c: c, opts: opts, cl: cl, adm: kadm.NewClient(cl)}
	t.Cleanup(func() {
		for _, s := range k.spare {
			s.Close()
		}
		cl.Close()
		c.Close()
	})
	return k
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates a topic with the given partitions and cleanup.policy.
func (k *testKafka) createTopic(name string, partitions int32, policy string) {
	k.t.Helper()
	_, err := k.adm.CreateTopic(testCtx(k.t), partitions, 1, map[string]*string{"cleanup.policy": &policy}, name)
	if err != nil {
		k.t.Fatalf("create topic %s: %v", name, err)
	}
}

// produce writes records with the test's own client (a stand-in for another
// worker, Java or Go) and fails the test on error.
func (k *testKafka) produce(topic string, partition int32, kvs ...[2]string) {
	k.t.Helper()
	var rs []*kgo.Record
	for _, kv := range kvs {
		r := &kgo.Record{Topic: topic, Partition: partition, Key: []byte(kv[0])}
		if kv[1] != "\x00" {
			r.Value = []byte(kv[1])
		}
		rs = append(rs, r)
	}
	cl := k.manualClient()
	if err := cl.ProduceSync(testCtx(k.t), rs...).FirstErr(); err != nil {
		k.t.Fatalf("produce: %v", err)
	}
}

// manualClient returns a client that writes to the partition a record names.
func (k *testKafka) manualClient() *kgo.Client {
	k.t.Helper()
	for _, s := range k.spare {
		return s
	}
	cl, err := kgo.NewClient(append(k.opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		k.t.Fatal(err)
	}
	k.spare = append(k.spare, cl)
	return cl
}

// tombstone marks a nil value in produce's key/value pairs.
const tombstone = "\x00"

// readAll reads every record of the topic from the beginning with a fresh
// client: what is really in the topic, independent of any store.
func (k *testKafka) readAll(topic string) []*kgo.Record {
	k.t.Helper()
	ctx := testCtx(k.t)
	ends, err := k.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		k.t.Fatal(err)
	}
	want := map[int32]int64{}
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset; total += o.Offset })
	cl, err := kgo.NewClient(append(k.opts, kgo.ConsumeTopics(topic))...)
	if err != nil {
		k.t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	got := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if got[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			k.t.Fatalf("read %s: %v (have %d records)", topic, ctx.Err(), len(out))
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			got[r.Partition] = r.Offset + 1
		})
	}
	return out
}

//go:build integration

package kafkatest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/integration/itest"
	"github.com/sluice-io/sluice/integration/kafkatest"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m, kafkatest.Options{})) }

func numbered(prefix string, n int) []string {
	vs := make([]string, n)
	for i := range vs {
		vs[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return vs
}

func readCommitted() kgo.Opt { return kgo.FetchIsolationLevel(kgo.ReadCommitted()) }

// TestSharedTopicsAndTransactions runs on the package's shared cluster (or
// on SLUICE_KAFKA_BOOTSTRAP): topic creation with configs, and transactional
// produce seen through read_committed.
func TestSharedTopicsAndTransactions(t *testing.T) {
	c := kafkatest.Shared(t)
	cl := itest.NewClient(t, c.Bootstrap())
	adm := kadm.NewClient(cl)
	suffix := fmt.Sprint(time.Now().UnixNano())
	compacted, plain, txnTopic := "compacted-"+suffix, "plain-"+suffix, "txn-"+suffix

	itest.CreateTopic(t, cl, compacted, 2, map[string]string{"cleanup.policy": "compact"})
	itest.CreateTopic(t, cl, plain, 3, nil)
	itest.CreateTopic(t, cl, txnTopic, 1, nil)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, compacted, plain)
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]string{compacted: "compact", plain: "delete"} {
		rc, err := rcs.On(topic, nil)
		if err != nil {
			t.Fatalf("describe %s: %v", topic, err)
		}
		got := ""
		for _, cfg := range rc.Configs {
			if cfg.Key == "cleanup.policy" {
				got = cfg.MaybeValue()
			}
		}
		if got != want {
			t.Fatalf("%s cleanup.policy = %q, want %q", topic, got, want)
		}
	}
	details, err := adm.ListTopics(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(details[plain].Partitions); n != 3 {
		t.Fatalf("%s has %d partitions, want 3", plain, n)
	}

	// Three transactions: committed, aborted, committed.
	txn := itest.NewClient(t, c.Bootstrap(), kgo.TransactionalID("kafkatest-"+suffix), kgo.DefaultProduceTopic(txnTopic))
	committed1, aborted, committed2 := numbered("commit1", 5), numbered("abort", 3), numbered("commit2", 2)
	for _, step := range []struct {
		values []string
		end    kgo.TransactionEndTry
	}{{committed1, kgo.TryCommit}, {aborted, kgo.TryAbort}, {committed2, kgo.TryCommit}} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range step.values {
			if err := txn.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if err := txn.EndTransaction(ctx, step.end); err != nil {
			t.Fatalf("end transaction (%v): %v", step.end, err)
		}
	}
	want := append(append([]string{}, committed1...), committed2...)

	// read_committed: exactly the committed records, in order. Reading with
	// no count for a while proves nothing else shows up.
	recs, err := itest.ReadTopic(ctx, cl, txnTopic, 0, 3*time.Second, readCommitted())
	if err != nil {
		t.Fatal(err)
	}
	itest.RequireValuesInOrder(t, want, recs)
	// read_uncommitted sees the aborted records too: they were written.
	recs, err = itest.ReadTopic(ctx, cl, txnTopic, len(want)+len(aborted), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	itest.RequireValuesInOrder(t, append(append(append([]string{}, committed1...), aborted...), committed2...), recs)

	// Keyed produce across partitions; order only holds per partition.
	values := numbered("plain", 300)
	var keyed []*kgo.Record
	for _, v := range values {
		keyed = append(keyed, &kgo.Record{Topic: plain, Key: []byte(v), Value: []byte(v)})
	}
	itest.Produce(t, cl, keyed...)
	recs, err = itest.ReadTopic(ctx, cl, plain, len(values), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	itest.RequireValues(t, values, recs)
	parts := map[int32]bool{}
	for _, r := range recs {
		parts[r.Partition] = true
	}
	if len(parts) < 2 {
		t.Fatalf("300 records landed in %d partition(s) of 3", len(parts))
	}
}

// TestKillRestartSingleNode crashes a broker with SIGKILL and restarts it on
// the same data and ports; committed data must all be there.
func TestKillRestartSingleNode(t *testing.T) {
	start := time.Now()
	c := kafkatest.ForTest(t, kafkatest.Options{})
	t.Logf("1-node cold-JVM start: %s", time.Since(start).Round(time.Millisecond))
	cl := itest.NewClient(t, c.Bootstrap())
	itest.CreateTopic(t, cl, "events", 2, nil)
	itest.CreateTopic(t, cl, "tx", 1, nil)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	values := numbered("event", 500)
	itest.ProduceStrings(t, cl, "events", values...)

	txn := itest.NewClient(t, c.Bootstrap(), kgo.TransactionalID("kill-restart"), kgo.DefaultProduceTopic("tx"))
	committed, aborted := numbered("commit", 4), numbered("abort", 4)
	for _, step := range []struct {
		values []string
		end    kgo.TransactionEndTry
	}{{committed, kgo.TryCommit}, {aborted, kgo.TryAbort}} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range step.values {
			txn.Produce(ctx, kgo.StringRecord(v), nil)
		}
		// EndTransaction does not wait for buffered records.
		if err := txn.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, step.end); err != nil {
			t.Fatalf("end transaction (%v): %v", step.end, err)
		}
	}
	recs, err := itest.ReadTopic(ctx, cl, "tx", len(committed), 20*time.Second, readCommitted())
	if err != nil {
		t.Fatal(err)
	}
	itest.RequireValuesInOrder(t, committed, recs)

	pid := c.Pid(0)
	c.Kill()
	if c.Pid(0) != 0 {
		t.Fatal("node still running after Kill")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("JVM %d survived SIGKILL (kill -0: %v)", pid, err)
	}
	restart := time.Now()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("1-node restart after SIGKILL (log recovery): %s", time.Since(restart).Round(time.Millisecond))
	if c.Pid(0) == pid || c.Pid(0) == 0 {
		t.Fatalf("pid after restart %d (before %d)", c.Pid(0), pid)
	}

	recs, err = itest.ReadTopic(ctx, cl, "events", len(values), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	itest.RequireValues(t, values, recs)
	recs, err = itest.ReadTopic(ctx, cl, "tx", 0, 3*time.Second, readCommitted())
	if err != nil {
		t.Fatal(err)
	}
	itest.RequireValuesInOrder(t, committed, recs)

	// The broker still takes writes after the crash, and a graceful
	// stop/start keeps them too.
	more := numbered("after-crash", 50)
	itest.ProduceStrings(t, cl, "events", more...)
	stop := time.Now()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("1-node graceful stop: %s", time.Since(stop).Round(time.Millisecond))
	restart = time.Now()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("1-node restart after graceful stop: %s", time.Since(restart).Round(time.Millisecond))
	recs, err = itest.ReadTopic(ctx, cl, "events", len(values)+len(more), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	itest.RequireValues(t, append(values, more...), recs)
}

// TestThreeNodesSurviveBrokerLoss: RF=3, min.insync.replicas=2, acks=all.
// With one node killed, produce and consume still work; the node comes back
// into the ISR after a restart.
func TestThreeNodesSurviveBrokerLoss(t *testing.T) {
	start := time.Now()
	c := kafkatest.ForTest(t, kafkatest.Options{Nodes: 3})
	t.Logf("3-node start: %s", time.Since(start).Round(time.Millisecond))
	if got := len(c.Bootstrap()); got != 3 {
		t.Fatalf("Bootstrap has %d addresses, want 3", got)
	}
	cl := itest.NewClient(t, c.Bootstrap(), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	const topic, strict = "replicated", "strict"
	itest.CreateTopicRF(t, cl, topic, 3, 3, map[string]string{"min.insync.replicas": "2"})
	// strict needs all three replicas in sync: with a node down, acks=all
	// writes must fail. This proves the broker really enforces min ISR.
	itest.CreateTopicRF(t, cl, strict, 1, 3, map[string]string{"min.insync.replicas": "3"})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	waitISR(ctx, t, adm, topic, 3)

	before := numbered("before", 90)
	itest.ProduceStrings(t, cl, topic, before...)

	// Kill the leader of partition 0, so failover definitely happens.
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := int(md.Topics[topic].Partitions[0].Leader)
	victim := leader - 1 // node.id is index+1
	kill := time.Now()
	c.KillNode(victim)

	during := numbered("during", 90)
	itest.ProduceStrings(t, cl, topic, during...)
	t.Logf("produce with node %d (leader of p0) dead, incl. failover: %s", leader, time.Since(kill).Round(time.Millisecond))
	waitISR(ctx, t, adm, topic, 2)

	recs, err := itest.ReadTopic(ctx, cl, topic, len(before)+len(during), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	itest.RequireValues(t, append(append([]string{}, before...), during...), recs)

	waitISR(ctx, t, adm, strict, 2)
	// No retries and no idempotence, so the broker's error comes back as
	// it is (the idempotent producer turns exhausted retries into
	// ErrRecordTimeout).
	strictCl := itest.NewClient(t, c.Bootstrap(), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(10*time.Second))
	err = strictCl.ProduceSync(ctx, &kgo.Record{Topic: strict, Value: []byte("must-fail")}).FirstErr()
	if !errors.Is(err, kerr.NotEnoughReplicas) && !errors.Is(err, kerr.NotEnoughReplicasAfterAppend) {
		t.Fatalf("acks=all produce to a min.insync.replicas=3 topic with 2 replicas in sync: %v, want NOT_ENOUGH_REPLICAS", err)
	}

	restart := time.Now()
	if err := c.StartNode(ctx, victim); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart of node %d: %s", leader, time.Since(restart).Round(time.Millisecond))
	waitISR(ctx, t, adm, topic, 3)
	t.Logf("node %d back in every ISR: %s after restart", leader, time.Since(restart).Round(time.Millisecond))

	after := numbered("after", 30)
	itest.ProduceStrings(t, cl, topic, after...)
	recs, err = itest.ReadTopic(ctx, cl, topic, len(before)+len(during)+len(after), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	itest.RequireValues(t, append(append(append([]string{}, before...), during...), after...), recs)

}

// waitISR waits until every partition of topic has exactly n in-sync
// replicas.
func waitISR(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, n int) {
	t.Helper()
	var last string
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			ok := true
			last = ""
			for _, p := range md.Topics[topic].Partitions.Sorted() {
				last += fmt.Sprintf(" p%d isr=%v", p.Partition, p.ISR)
				if len(p.ISR) != n {
					ok = false
				}
			}
			if ok && len(md.Topics[topic].Partitions) > 0 {
				return
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ISR of %s never reached %d:%s", topic, n, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

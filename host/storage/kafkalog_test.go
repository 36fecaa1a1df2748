package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recorder collects what a KafkaLog hands over.
type recorder struct {
	mu   sync.Mutex
	recs []*kgo.Record
}

func (r *recorder) add(rec *kgo.Record) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []*kgo.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*kgo.Record(nil), r.recs...)
}

func (k *testKafka) startLog(topic string, rec *recorder, mod func(*LogConfig)) *KafkaLog {
	k.t.Helper()
	cfg := LogConfig{Topic: topic, ClientOpts: k.opts}
	if mod != nil {
		mod(&cfg)
	}
	l := NewKafkaLog(cfg, rec.add)
	if err := l.Start(testCtx(k.t)); err != nil {
		k.t.Fatalf("start log: %v", err)
	}
	k.t.Cleanup(l.Close)
	return l
}

func TestKafkaLogStartReadsEverythingWrittenBefore(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("log", 3, "compact")
	for p := int32(0); p < 3; p++ {
		var kvs [][2]string
		for i := 0; i < 40; i++ {
			kvs = append(kvs, [2]string{fmt.Sprintf("k%d-%d", p, i), fmt.Sprintf("v%d", i)})
		}
		k.produce("log", p, kvs...)
	}
	rec := &recorder{}
	l := k.startLog("log", rec, nil)
	// Start returned: all 120 records are already handed over, with no
	// sleeping or polling by the test.
	got := rec.snapshot()
	if len(got) != 120 {
		t.Fatalf("after Start: %d records, want 120", len(got))
	}
	next := map[int32]int{}
	for _, r := range got {
		want := fmt.Sprintf("k%d-%d", r.Partition, next[r.Partition])
		if string(r.Key) != want {
			t.Fatalf("partition %d: key %s, want %s (offset order per partition)", r.Partition, r.Key, want)
		}
		next[r.Partition]++
	}
	if l.Partitions() != 3 {
		t.Fatalf("partitions %d", l.Partitions())
	}

	// Writes by someone else after Start are seen after ReadToEnd.
	k.produce("log", 1, [2]string{"late", "x"}, [2]string{"late", tombstone})
	if err := l.ReadToEnd(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	got = rec.snapshot()
	if len(got) != 122 {
		t.Fatalf("after ReadToEnd: %d records, want 122", len(got))
	}
	last := got[len(got)-1]
	if string(last.Key) != "late" || last.Value != nil {
		t.Fatalf("tombstone read back as %q=%q", last.Key, last.Value)
	}
}

func TestKafkaLogSendAndTombstone(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("log", 1, "compact")
	rec := &recorder{}
	l := k.startLog("log", rec, nil)
	if len(rec.snapshot()) != 0 {
		t.Fatal("empty topic handed records over")
	}
	ctx := testCtx(t)
	if err := l.Send(ctx, Entry{Key: []byte("a"), Value: []byte("1")}, Entry{Key: []byte("b"), Value: []byte{}}, Entry{Key: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	if err := l.ReadToEnd(ctx); err != nil {
		t.Fatal(err)
	}
	got := rec.snapshot()
	if len(got) != 3 {
		t.Fatalf("%d records", len(got))
	}
	if string(got[0].Value) != "1" || got[1].Value == nil || len(got[1].Value) != 0 || got[2].Value != nil {
		t.Fatalf("values %q %q %q: want 1, empty, null in write order", got[0].Value, got[1].Value, got[2].Value)
	}
}

func TestKafkaLogTopicEndingInTransactionMarkers(t *testing.T) {
	// A Java worker with exactly-once source support writes the config and
	// offset topics in transactions, so a topic may end in a commit or abort
	// marker that no consumer ever sees as a record.
	for _, readCommitted := range []bool{false, true} {
		t.Run(fmt.Sprintf("read_committed=%v", readCommitted), func(t *testing.T) {
			k := newTestKafka(t)
			k.createTopic("txlog", 1, "compact")
			ctx := testCtx(t)
			tx, err := kgo.NewClient(append(k.opts, kgo.TransactionalID("connect-cluster-test"), kgo.DefaultProduceTopic("txlog"))...)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Close()
			write := func(commit kgo.TransactionEndTry, keys ...string) {
				if err := tx.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				for _, key := range keys {
					if err := tx.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte("v")}).FirstErr(); err != nil {
						t.Fatal(err)
					}
				}
				if err := tx.EndTransaction(ctx, commit); err != nil {
					t.Fatal(err)
				}
			}
			write(kgo.TryCommit, "c1", "c2")
			write(kgo.TryAbort, "a1")
			rec := &recorder{}
			startCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			l := NewKafkaLog(LogConfig{Topic: "txlog", ClientOpts: k.opts, ReadCommitted: readCommitted}, rec.add)
			defer l.Close()
			if err := l.Start(startCtx); err != nil {
				t.Fatalf("start on a topic ending in an abort marker: %v", err)
			}
			want := 3 // read_uncommitted sees the aborted record too
			if readCommitted {
				want = 2
			}
			if n := len(rec.snapshot()); n != want {
				t.Fatalf("%d records handed over, want %d", n, want)
			}
			write(kgo.TryCommit, "c3")
			if err := l.ReadToEnd(startCtx); err != nil {
				t.Fatalf("read to end after a commit marker: %v", err)
			}
			if n := len(rec.snapshot()); n != want+1 {
				t.Fatalf("%d records handed over, want %d", n, want+1)
			}
		})
	}
}

func TestKafkaLogClosed(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("log", 1, "compact")
	l := k.startLog("log", &recorder{}, nil)
	l.Close()
	l.Close()
	if err := l.ReadToEnd(testCtx(t)); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("ReadToEnd after Close: %v", err)
	}
	if err := l.Send(testCtx(t), Entry{Key: []byte("k")}); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	missing := NewKafkaLog(LogConfig{Topic: "missing", ClientOpts: k.opts}, func(*kgo.Record) {})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := missing.Start(ctx); err == nil {
		t.Fatal("Start on a missing topic succeeded")
	}
}

// javaMurmur2 is Kafka's Utils.murmur2, written here from the published
// MurmurHash2 algorithm (seed 0x9747b28c) independently of franz-go's, so the
// partition test below checks franz-go against the algorithm rather than
// against itself.
func javaMurmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := binary.LittleEndian.Uint32(data[i:])
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n-n%4:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// javaPartition is Utils.toPositive(Utils.murmur2(key)) % n.
func javaPartition(key []byte, n int) int32 {
	return (javaMurmur2(key) & 0x7fffffff) % int32(n)
}

func TestMurmur2MatchesKafkaVectors(t *testing.T) {
	// Kafka's UtilsTest.testMurmur2 vectors.
	for key, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		if got := javaMurmur2([]byte(key)); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestKafkaLogPartitionsLikeJava(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("offsets", 25, "compact")
	rec := &recorder{}
	l := k.startLog("offsets", rec, nil)
	keys := []string{
		`["local-file-source",{"filename":"/data/in.txt"}]`,
		`["orders",{"table":"orders"}]`,
		`["jdbc",{"protocol":"1","table":"public.users"}]`,
		`["a",null]`,
		"21", "foobar", "abc",
	}
	ctx := testCtx(t)
	for _, key := range keys {
		if err := l.Send(ctx, Entry{Key: []byte(key), Value: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.ReadToEnd(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int32{}
	for _, r := range rec.snapshot() {
		seen[string(r.Key)] = r.Partition
	}
	spread := map[int32]bool{}
	for _, key := range keys {
		want := javaPartition([]byte(key), 25)
		got, ok := seen[key]
		if !ok || got != want {
			t.Errorf("key %s on partition %d (found %v), Java puts it on %d", key, got, ok, want)
		}
		spread[got] = true
	}
	if len(spread) < 3 {
		t.Fatalf("keys landed on only %d partitions: the check would not notice a constant partitioner", len(spread))
	}
}

package runtime

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// smallBatches makes every Put one poll of n records, so that while the
// plugin works on a Put the next batch is staged (slow Puts give the
// poll time to fill it).
func smallBatches(cfg SinkConfig, n int) SinkConfig {
	cfg.MaxPollRecords, cfg.MaxBatchRecords = n, n
	return cfg
}

// checkContiguous fails unless each partition's successful deliveries,
// in order, are exactly offsets 0..want-1 once each (per partition
// offsets ascending without gap or repeat).
func checkContiguous(t *testing.T, recs []*data.SinkRecord, want map[string]int64) {
	t.Helper()
	next := map[string]int64{}
	for _, r := range recs {
		tp := tpString(r.OriginalTopic, r.OriginalPartition)
		if r.OriginalOffset != next[tp] {
			t.Fatalf("%s: delivered offset %d, want %d", tp, r.OriginalOffset, next[tp])
		}
		next[tp]++
	}
	for tp, n := range want {
		if next[tp] != n {
			t.Errorf("%s: %d records delivered, want %d", tp, next[tp], n)
		}
	}
}

// Partitions the plugin pauses during a Put have no record in any later
// Put, though the next batch was read while that Put ran; resumed, they go
// on from where they stopped.
func TestSinkPipelinedPauseDuringPut(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 2})
	produceTo(t, c, "a", 0, 0, 40)
	produceTo(t, c, "a", 1, 0, 40)
	f := newFakeSink(&events{})
	both := []*pluginv1.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}}
	paused := make(chan struct{})
	f.putHook = func(_ context.Context, call int, _ []*data.SinkRecord) error {
		time.Sleep(30 * time.Millisecond) // the next batch is read meanwhile
		if call == 2 {
			if _, err := f.workerServer().Pause(context.Background(), &pluginv1.PartitionsRequest{Partitions: both}); err != nil {
				t.Error(err)
			}
			close(paused)
		}
		return nil
	}
	task, err := NewSinkTask(smallBatches(sinkConfig(c, f, nil, "a"), 5))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	<-paused
	time.Sleep(300 * time.Millisecond)
	if n := f.putCalls(); n != 2 {
		t.Fatalf("%d Puts, want 2: every partition was paused during the second", n)
	}
	if _, err := f.workerServer().Resume(context.Background(), &pluginv1.PartitionsRequest{Partitions: both}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rest delivered", func() bool { return len(f.deliveredList()) == 80 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	checkContiguous(t, f.deliveredList(), map[string]int64{"a-0": 40, "a-1": 40})
	if got := committedOffsets(t, c, "connect-snk"); got["a-0"] != 40 || got["a-1"] != 40 {
		t.Errorf("committed %v", got)
	}
}

// A rewind during a Put wins over the batch read meanwhile: the next Put
// of that partition starts at the rewound offset.
func TestSinkPipelinedRewindDuringPut(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 60)
	f := newFakeSink(&events{})
	f.putHook = func(_ context.Context, call int, recs []*data.SinkRecord) error {
		if call == 3 {
			if _, err := f.workerServer().Rewind(context.Background(), &pluginv1.RewindRequest{Offsets: []*pluginv1.PartitionOffset{{Topic: "a", Partition: 0, Offset: 2}}}); err != nil {
				t.Error(err)
			}
		}
		time.Sleep(30 * time.Millisecond)
		return nil
	}
	task, err := NewSinkTask(smallBatches(sinkConfig(c, f, nil, "a"), 10))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "all delivered", func() bool { return deliveredCounts(f.deliveredList())["a-0@59"] == 1 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	batches := f.batches
	f.mu.Unlock()
	if len(batches) < 4 || batches[3][0].OriginalOffset != 2 {
		t.Fatalf("put 4 starts at %d, want the rewound offset 2", batches[3][0].OriginalOffset)
	}
	// Offsets 0..29 once, then 2..59 once: contiguous from the rewind on.
	recs := f.deliveredList()
	checkContiguous(t, recs[:30], map[string]int64{"a-0": 30})
	for i, r := range recs[30:] {
		if r.OriginalOffset != int64(i+2) {
			t.Fatalf("after the rewind, record %d is offset %d, want %d", i, r.OriginalOffset, i+2)
		}
	}
	if got := committedOffsets(t, c, "connect-snk"); got["a-0"] != 60 {
		t.Errorf("committed %v", got)
	}
}

// An ABORTED Put is delivered again as it was, though the next batch was
// read while it ran; nothing is lost, doubled or reordered.
func TestSinkPipelinedAbortedPut(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 2})
	produceTo(t, c, "a", 0, 0, 40)
	produceTo(t, c, "a", 1, 0, 40)
	f := newFakeSink(&events{})
	f.putHook = func(_ context.Context, call int, _ []*data.SinkRecord) error {
		time.Sleep(30 * time.Millisecond)
		if call == 3 {
			return wire.Retriable("busy")
		}
		return nil
	}
	cfg := smallBatches(sinkConfig(c, f, nil, "a"), 6)
	cfg.RetryBackoff = 50 * time.Millisecond
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "all delivered", func() bool { return len(f.deliveredList()) == 80 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	batches := f.batches
	f.mu.Unlock()
	key := func(b []*data.SinkRecord) string {
		var ks []string
		for _, r := range b {
			ks = append(ks, fmt.Sprintf("%d@%d", r.OriginalPartition, r.OriginalOffset))
		}
		return strings.Join(ks, " ")
	}
	if key(batches[3]) != key(batches[2]) {
		t.Errorf("redelivery differs:\n%s\n%s", key(batches[2]), key(batches[3]))
	}
	checkContiguous(t, f.deliveredList(), map[string]int64{"a-0": 40, "a-1": 40})
}

// A rebalance waiting while a Put runs gets its turn before the staged
// batch goes out: the revoked partitions' staged records are not
// delivered by the first task, and the second starts at what the first
// committed, so every record is delivered exactly once.
func TestSinkPipelinedRevocation(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"r": 4})
	for p := range int32(4) {
		produceTo(t, c, "r", p, 0, 100)
	}
	slow := func(context.Context, int, []*data.SinkRecord) error {
		time.Sleep(20 * time.Millisecond)
		return nil
	}
	f1, f2 := newFakeSink(&events{}), newFakeSink(&events{})
	f1.putHook, f2.putHook = slow, slow
	task1, err := NewSinkTask(smallBatches(sinkConfig(c, f1, nil, "r"), 10))
	if err != nil {
		t.Fatal(err)
	}
	wait1 := runTask(t, task1)
	eventually(t, "task 1 under way", func() bool { return len(f1.deliveredList()) >= 30 })
	cfg2 := smallBatches(sinkConfig(c, f2, nil, "r"), 10)
	cfg2.ID.Task = 1
	task2, err := NewSinkTask(cfg2)
	if err != nil {
		t.Fatal(err)
	}
	wait2 := runTask(t, task2)
	eventually(t, "all delivered", func() bool { return len(f1.deliveredList())+len(f2.deliveredList()) >= 400 })
	time.Sleep(200 * time.Millisecond)
	stopDeliveredOnce(t, 400, []Task{task1, task2}, []func() error{wait1, wait2}, f1, f2)
	if len(f2.deliveredList()) == 0 {
		t.Fatal("the rebalance gave task 2 nothing to do")
	}
}

// Pipelined Puts run on one goroutine for the task's life (a goroutine per
// Put would grow its stack through gRPC's call path every time), which
// ends with the task.
func TestSinkPipelinedPutsShareAGoroutine(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 60)
	f := newFakeSink(&events{})
	var mu sync.Mutex
	goroutines := map[string]int{} // "goroutine N" → Puts run on it
	f.putHook = func(context.Context, int, []*data.SinkRecord) error {
		buf := make([]byte, 64)
		id, _, _ := strings.Cut(string(buf[:runtime.Stack(buf, false)]), " [")
		mu.Lock()
		goroutines[id]++
		mu.Unlock()
		time.Sleep(10 * time.Millisecond) // the next batch is staged meanwhile
		return nil
	}
	task, err := NewSinkTask(smallBatches(sinkConfig(c, f, nil, "a"), 5))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "every record delivered", func() bool { return len(f.deliveredList()) == 60 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	checkContiguous(t, f.deliveredList(), map[string]int64{"a-0": 60})
	mu.Lock()
	defer mu.Unlock()
	// The first Put of a run of batches goes from the task goroutine
	// (nothing staged yet); the others from the putter.
	if n := f.putCalls(); n < 6 || len(goroutines) > 2 {
		t.Fatalf("%d Puts ran on %d goroutines, want at most 2: %v", n, len(goroutines), goroutines)
	}
	// The putter's goroutine may still be returning right after Stop.
	stacks := make([]byte, 1<<20)
	putterAlive := func() bool {
		return strings.Contains(string(stacks[:runtime.Stack(stacks, true)]), "(*putter).start")
	}
	for deadline := time.Now().Add(time.Second); putterAlive() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if putterAlive() {
		t.Fatalf("the putter outlived its task:\n%s", stacks)
	}
}

package runtime

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

func sourceConfig(c *kfake.Cluster, f *fakeSource, st *memOffsets, l Listener) SourceConfig {
	return SourceConfig{
		ID:             TaskID{"src", 0},
		ConnectorClass: "FakeSource",
		TaskConfig:     map[string]string{"task.class": "FakeSourceTask"},
		Launch:         f.launch,
		Pipeline:       testPipeline(),
		ProducerOpts:   []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)},
		Offsets:        st,
		Timing:         Timing{OffsetFlushInterval: time.Hour, ShutdownTimeout: 5 * time.Second},
		PollTimeout:    50 * time.Millisecond,
		MaxPollRecords: 100,
		Listener:       l,
	}
}

func TestSourceValidation(t *testing.T) {
	_, err := NewSourceTask(SourceConfig{ID: TaskID{"", -1}})
	if err == nil {
		t.Fatal("empty config accepted")
	}
	for _, want := range []string{"no connector name", "negative task number", "no launcher", "no offset store", "no key converter", "no value converter", "no header converter"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := (TaskID{"orders", 3}).String(); got != "orders-3" {
		t.Errorf("TaskID.String = %q", got)
	}
}

// Every polled record lands in Kafka exactly once, in its partition, with
// its bytes; every record is acknowledged; the final offsets are stored.
func TestSourceWritesEveryRecordOnce(t *testing.T) {
	const n = 2000
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = n
	st := newMemOffsets(ev)
	l := newRecListener()
	task, err := NewSourceTask(sourceConfig(c, f, st, l))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	l.await(t, "running")
	eventually(t, "all records acknowledged", func() bool { return task.(*sourceTask).tracker.acked() == n })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := l.list(); !slices.Equal(got, []string{"running", "stopped"}) {
		t.Errorf("states = %v", got)
	}
	if f.acked() != n {
		t.Errorf("plugin was told acked_through=%d, want %d", f.acked(), n)
	}
	if f.mu.Lock(); f.shared == 0 || f.shared == f.polls {
		t.Errorf("%d of %d answers through shared memory; want some of each way", f.shared, f.polls)
	}
	f.mu.Unlock()
	start := f.startReq
	if start.ConnectorName != "src" || start.TaskId != 0 || start.ConnectorClass != "FakeSource" ||
		start.WorkerTarget != "unix:///fake/worker.sock" || start.Config["task.class"] != "FakeSourceTask" {
		t.Errorf("start request = %v", start)
	}

	recs := readAll(t, c, "t", n)
	if len(recs) != n {
		t.Fatalf("read %d records, want %d", len(recs), n)
	}
	seen := map[uint64]bool{}
	for _, r := range recs {
		seq, err := strconv.ParseUint(strings.TrimPrefix(string(r.Key), "k"), 10, 64)
		if err != nil {
			t.Fatalf("key %q", r.Key)
		}
		if seen[seq] {
			t.Fatalf("record %d written twice", seq)
		}
		seen[seq] = true
		want := defaultSourceRecord(seq)
		if r.Partition != want.Partition {
			t.Errorf("record %d in partition %d, want %d", seq, r.Partition, want.Partition)
		}
		if string(r.Value) != string(want.Value.(data.Raw)) {
			t.Errorf("record %d value differs", seq)
		}
	}
	// Source partition sp=0 holds the even records, sp=1 the odd ones.
	if got := st.get(`{"sp":0}`); got != fmt.Sprintf(`{"o":%d}`, n) {
		t.Errorf("offset of sp=0 = %s", got)
	}
	if got := st.get(`{"sp":1}`); got != fmt.Sprintf(`{"o":%d}`, n-1) {
		t.Errorf("offset of sp=1 = %s", got)
	}
	// The drain: the last Set, then Commit, then Stop, then Kill.
	set, commit, stop, kill := ev.lastIndex("set "), ev.lastIndex("commit"), ev.lastIndex("stop"), ev.lastIndex("kill")
	if !(set >= 0 && set < commit && commit < stop && stop < kill) {
		t.Errorf("drain order wrong: %v", ev.list())
	}
	if f.kills() != 1 {
		t.Errorf("killed %d times", f.kills())
	}
}

// The tracker alone: acknowledgements out of order, across source
// partitions; only the contiguous prefix counts.
func TestAckTrackerPrefix(t *testing.T) {
	tr := newAckTracker()
	tr.recordAcks = true
	part := func(i int) []byte { return []byte(fmt.Sprintf(`{"p":%d}`, i)) }
	off := func(i int) []byte { return []byte(fmt.Sprintf(`{"o":%d}`, i)) }
	var coords []sourceCoords
	for seq := 1; seq <= 6; seq++ {
		coords = append(coords, sourceCoords{part(seq % 2), off(seq)})
	}
	h0, err := tr.add(1, coords[:4], nil)
	if err != nil {
		t.Fatal(err)
	}
	h4, err := tr.add(5, coords[4:], nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := []uint64{h0, h0 + 1, h0 + 2, h0 + 3, h4, h4 + 1}
	for _, h := range hs {
		if !tr.tryProduce(h, 10, 60) {
			t.Fatal("no room under the limit")
		}
	}
	if _, err := tr.add(3, coords[:1], nil); err == nil {
		t.Error("a repeated sequence number was accepted")
	}
	written := &kgo.Record{Topic: "t", Partition: 1, Offset: 7, Timestamp: time.UnixMilli(5)}
	// 2, 3 and 5 first: nothing contiguous from 1 yet.
	tr.ack(hs[1], written)
	tr.ack(hs[2], written)
	tr.ack(hs[4], nil)
	if tr.acked() != 0 || tr.takeOffsets() != nil {
		t.Fatalf("prefix moved without record 1: acked=%d", tr.acked())
	}
	// Record 5 was not written (a tolerated failure), but it leaves the
	// in-flight count like the written ones.
	if b, n := tr.inflight(); b != 30 || n != 3 {
		t.Errorf("in flight = %d bytes, %d records; want 30, 3", b, n)
	}
	h7, _ := tr.add(7, []sourceCoords{{part(1), off(7)}}, nil)
	if tr.tryProduce(h7, 35, 60) {
		t.Error("a record beyond the limit was let through")
	}
	ab := tr.take()
	if ab.AckedThrough != 0 || len(ab.Records) != 3 {
		t.Fatalf("take = %v", ab)
	}
	if ab.Records[2].Seq != 5 || ab.Records[2].Written || !ab.Records[0].Written || ab.Records[0].Offset != 7 || ab.Records[0].TimestampMs != 5 {
		t.Errorf("record acks = %v", ab.Records)
	}
	// 1 closes the gap: the prefix is 1..3; 4 is missing, 5 waits.
	tr.ack(hs[0], written)
	tr.ack(hs[0], written) // repeated: ignored
	if tr.acked() != 3 {
		t.Fatalf("acked through %d, want 3", tr.acked())
	}
	offs := tr.takeOffsets()
	if len(offs) != 2 || string(offs[`{"p":1}`].offset) != `{"o":3}` || string(offs[`{"p":0}`].offset) != `{"o":2}` {
		t.Fatalf("offsets = %v", offs)
	}
	// A failed store puts them back, below newer ones.
	tr.ack(hs[3], written) // 4: prefix through 5 now
	if tr.acked() != 5 {
		t.Fatalf("acked through %d, want 5", tr.acked())
	}
	tr.restoreOffsets(offs)
	offs = tr.takeOffsets()
	if string(offs[`{"p":1}`].offset) != `{"o":5}` || string(offs[`{"p":0}`].offset) != `{"o":4}` {
		t.Fatalf("restored offsets overwrote newer ones: p1=%s p0=%s", offs[`{"p":1}`].offset, offs[`{"p":0}`].offset)
	}
	ab = tr.take()
	if ab.AckedThrough != 5 || len(ab.Records) != 2 {
		t.Fatalf("take = %v", ab)
	}
	if tr.take() != nil {
		t.Error("take with nothing new returned a batch")
	}
	if tr.unsettled() != 2 {
		t.Errorf("unsettled = %d, want 2", tr.unsettled())
	}
	tr.ack(hs[5], written)
	tr.ack(h7, nil)
	if tr.acked() != 7 || tr.unsettled() != 0 {
		t.Errorf("acked=%d unsettled=%d", tr.acked(), tr.unsettled())
	}
	if b, n := tr.inflight(); b != 0 || n != 0 {
		t.Errorf("in flight after all acks = %d, %d", b, n)
	}
}

// samePartition compares JSON, by address when it can.
func TestSamePartition(t *testing.T) {
	a := []byte(`{"sp":0}`)
	for _, c := range []struct {
		x, y []byte
		want bool
	}{
		{a, a, true},
		{a, []byte(`{"sp":0}`), true},
		{a, []byte(`{"sp":1}`), false},
		{a, a[:len(a)-1], false},
		{nil, []byte{}, true},
		{nil, a, false},
	} {
		if got := samePartition(c.x, c.y); got != c.want {
			t.Errorf("samePartition(%q, %q) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}

// Records of a partition in runs: the prefix stores each partition's last
// offset, across runs, gaps without a partition, and partitions that come
// back after another's run.
func TestAckTrackerOffsetRuns(t *testing.T) {
	tr := newAckTracker()
	type rec struct{ part, off string }
	recs := []rec{{"A", "1"}, {"A", "2"}, {"A", "3"}, {"B", "1"}, {"", ""}, {"B", "2"}, {"A", "4"}, {"C", "1"}, {"C", "2"}, {"", ""}}
	coords := make([]sourceCoords, len(recs))
	for i, r := range recs {
		if r.part != "" {
			coords[i] = sourceCoords{[]byte(`{"p":"` + r.part + `"}`), []byte(`{"o":` + r.off + `}`)}
		}
	}
	h0, err := tr.add(1, coords, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The whole answer joins the prefix in one step when its first
	// record is acknowledged last.
	for i := len(recs) - 1; i >= 0; i-- {
		tr.ack(h0+uint64(i), nil)
	}
	// The coordinates alias the answer: once the prefix has passed them
	// (which finishes the answer, so its memory may be reused), overwrite
	// them, as a reused answer would be, before reading the stored
	// offsets.
	if tr.acked() != uint64(len(recs)) {
		t.Fatalf("acked through %d, want %d", tr.acked(), len(recs))
	}
	for _, c := range coords {
		clear(c.partition)
		clear(c.offset)
	}
	offs := tr.takeOffsets()
	want := map[string]string{`{"p":"A"}`: `{"o":4}`, `{"p":"B"}`: `{"o":2}`, `{"p":"C"}`: `{"o":2}`}
	if len(offs) != len(want) {
		t.Fatalf("offsets of %d partitions, want %d: %v", len(offs), len(want), offs)
	}
	for p, o := range want {
		if got := offs[p]; got == nil || string(got.offset) != o {
			t.Errorf("partition %s: offset %v, want %s", p, got, o)
		}
	}
	if tr.acked() != uint64(len(recs)) {
		t.Errorf("acked through %d, want %d", tr.acked(), len(recs))
	}
}

// Compaction keeps handles valid across many records.
func TestAckTrackerCompaction(t *testing.T) {
	tr := newAckTracker()
	const n = 10 * compactMin
	hs := make([]uint64, 0, n)
	for seq := uint64(1); seq <= n; seq++ {
		h, _ := tr.add(seq, []sourceCoords{{[]byte(`{"p":0}`), []byte(fmt.Sprintf(`{"o":%d}`, seq))}}, nil)
		if !tr.tryProduce(h, 1, 1<<30) {
			t.Fatal("no room")
		}
		hs = append(hs, h)
	}
	// Acknowledge all but the first, in reverse, then the first.
	for i := len(hs) - 1; i >= 1; i-- {
		tr.ack(hs[i], &kgo.Record{})
	}
	if tr.acked() != 0 {
		t.Fatal("prefix moved past the first record")
	}
	tr.ack(hs[0], &kgo.Record{})
	if tr.acked() != n {
		t.Fatalf("acked %d", tr.acked())
	}
	// Interleave: ack the first half in order, add more, then the rest.
	hs = hs[:0]
	for seq := uint64(n + 1); seq <= 3*n; seq++ {
		h, _ := tr.add(seq, []sourceCoords{{partition: []byte(`{"p":0}`)}}, nil)
		hs = append(hs, h)
		if len(hs) > compactMin {
			tr.ack(hs[len(hs)-compactMin-1], nil)
			// Read the prefix, which moves it (and compacts) as
			// it goes.
			if got, want := tr.acked(), n+uint64(len(hs)-compactMin); got != want {
				t.Fatalf("acked %d, want %d", got, want)
			}
		}
	}
	for _, h := range hs {
		tr.ack(h, nil)
	}
	if tr.acked() != 3*n || tr.unsettled() != 0 {
		t.Fatalf("acked %d unsettled %d", tr.acked(), tr.unsettled())
	}
	offs := tr.takeOffsets()
	if p := offs[`{"p":0}`]; p == nil || p.seq != 3*n || p.offset != nil {
		t.Errorf("offset after tombstone records = %+v", p)
	}
}

// holdPartition makes the broker that leads topic-partition hold its
// produce requests until release is closed; the other broker answers.
func holdPartition(t *testing.T, c *kfake.Cluster, topic string, partition int32, release <-chan struct{}) {
	t.Helper()
	leader := c.LeaderFor(topic, partition)
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if c.CurrentNode() != leader {
			return nil, nil, false
		}
		select {
		case <-release:
		default:
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
}

// splitCluster is two brokers and topic t with partitions 0 and 1 led by
// different ones, so that one partition's produce requests can be held
// (holdPartition) while the other's go through.
func splitCluster(t *testing.T) *kfake.Cluster {
	c := newCluster(t, 2, map[string]int32{"t": 2})
	if c.LeaderFor("t", 0) == c.LeaderFor("t", 1) {
		other := int32(0)
		if c.LeaderFor("t", 0) == 0 {
			other = 1
		}
		if err := c.MoveTopicPartition("t", 1, other); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// Acknowledgements arrive out of order across Kafka partitions: the stored
// offsets and acked_through stay at the contiguous prefix until the gap
// closes, while per-record acks report what was written.
func TestSourceStoresOnlyTheAcknowledgedPrefix(t *testing.T) {
	c := splitCluster(t)
	release := make(chan struct{})
	holdPartition(t, c, "t", 0, release)
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	const n = 40
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = n
	f.recordAcks = true
	// Odd records go to partition 1 (answered), even ones to partition 0
	// (held); all share one source partition.
	f.gen = func(seq uint64) *data.SourceRecord {
		r := defaultSourceRecord(seq)
		r.Partition = int32(seq % 2)
		r.SourcePartition = map[string]any{"file": "f"}
		return r
	}
	st := newMemOffsets(ev)
	cfg := sourceConfig(c, f, st, nil)
	cfg.OffsetFlushInterval = 20 * time.Millisecond
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "odd records written", func() bool {
		written := 0
		for _, ra := range f.recordAckList() {
			if ra.Written {
				written++
			}
		}
		return written == n/2
	})
	time.Sleep(100 * time.Millisecond) // several flush intervals
	for _, ra := range f.recordAckList() {
		if ra.Seq%2 != 1 || ra.Partition != 1 || ra.Topic != "t" {
			t.Errorf("record ack for a held record or wrong coordinates: %v", ra)
		}
	}
	// Record 1 is written, record 2 is not: the prefix is record 1.
	if got := st.get(`{"file":"f"}`); got != `{"o":1}` {
		t.Errorf("stored offset while record 2 is held = %q, want {\"o\":1}", got)
	}
	if f.acked() != 1 {
		t.Errorf("acked_through while record 2 is held = %d, want 1", f.acked())
	}
	close(release)
	eventually(t, "all acknowledged", func() bool { return len(f.recordAckList()) == n })
	eventually(t, "final offset stored", func() bool { return st.get(`{"file":"f"}`) == fmt.Sprintf(`{"o":%d}`, n) })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if f.acked() != n {
		t.Errorf("acked_through = %d", f.acked())
	}
	// Each record acknowledged exactly once.
	seen := map[uint64]int{}
	for _, ra := range f.recordAckList() {
		seen[ra.Seq]++
	}
	for seq := uint64(1); seq <= n; seq++ {
		if seen[seq] != 1 {
			t.Errorf("record %d acknowledged %d times", seq, seen[seq])
		}
	}
}

// Each flush stores offsets, then calls Commit; a store failure skips the
// Commit and keeps the offsets for the next flush.
func TestSourceFlushCommitsAfterStoring(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = 10
	st := newMemOffsets(ev)
	st.fail = fmt.Errorf("disk full")
	cfg := sourceConfig(c, f, st, nil)
	cfg.OffsetFlushInterval = 30 * time.Millisecond
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "records acknowledged", func() bool { return task.(*sourceTask).tracker.acked() == 10 })
	// Flushes with nothing to store still call Commit (as Kafka Connect
	// does); once there are offsets and storing them fails, Commit stops.
	time.Sleep(50 * time.Millisecond)
	commits := strings.Count(strings.Join(ev.list(), "\n"), "commit")
	time.Sleep(150 * time.Millisecond)
	if n := strings.Count(strings.Join(ev.list(), "\n"), "commit"); n != commits {
		t.Fatalf("Commit called although storing failed: %v", ev.list())
	}
	st.mu.Lock()
	st.fail = nil
	st.mu.Unlock()
	eventually(t, "the offsets stored", func() bool { return ev.lastIndex("set ") >= 0 })
	eventually(t, "a commit after them", func() bool { return ev.lastIndex("commit") > ev.lastIndex("set ") })
	l := ev.list()
	set := slices.IndexFunc(l, func(s string) bool { return strings.HasPrefix(s, "set ") })
	if l[set] != `set {"sp":0}={"o":10} {"sp":1}={"o":9}` || l[set+1] != "commit" {
		t.Errorf("the kept offsets were not stored, then committed: %v", l)
	}
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// runWithBlockedStore runs a source task of limit records, polled 100 at
// a time, 5 ms a Poll (flushes, every 10 ms, are due long before the last
// record is polled), whose offset store holds its first Set until unblock.
func runWithBlockedStore(t *testing.T, limit uint64) (task Task, ev *events, wait func() error, unblock func()) {
	t.Helper()
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev = &events{}
	f := newFakeSource(ev)
	f.limit = limit
	f.pollHook = func(*pluginv1.PollRequest) { time.Sleep(5 * time.Millisecond) }
	st := newMemOffsets(ev)
	block := make(chan struct{})
	st.block = block
	unblock = sync.OnceFunc(func() { close(block) })
	t.Cleanup(unblock) // a failed check must not leave Run stuck in Set
	cfg := sourceConfig(c, f, st, nil)
	cfg.OffsetFlushInterval = 10 * time.Millisecond
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return task, ev, runTask(t, task), unblock
}

// A slow offset store does not hold up the records: offsets are stored off
// the poll loop (as Kafka Connect's offset committer thread does), so the
// task goes on polling and producing while a flush waits on the store, and
// the flush then stores what was acknowledged and calls Commit.
func TestSourceSlowOffsetStoreDoesNotStallPolling(t *testing.T) {
	task, ev, wait, unblock := runWithBlockedStore(t, 2000)
	eventually(t, "a flush waiting on the store", func() bool { return ev.lastIndex("set blocked") >= 0 })
	if n := task.(*sourceTask).tracker.acked(); n >= 2000 {
		t.Fatalf("all %d records were acknowledged before the first flush; the test proves nothing", n)
	}
	eventually(t, "every record acknowledged while the store blocks", func() bool { return task.(*sourceTask).tracker.acked() == 2000 })
	if ev.lastIndex("set {") >= 0 {
		t.Fatalf("the blocked store returned: %v", ev.list())
	}
	unblock()
	eventually(t, "the last offsets stored", func() bool {
		return ev.lastIndex(`set {"sp":0}={"o":2000} {"sp":1}={"o":1999}`) >= 0
	})
	eventually(t, "a commit after them", func() bool { return ev.lastIndex("commit") > ev.lastIndex("set {") })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// Stop while a flush waits on the store: the drain waits for that flush,
// then stores the last offsets and calls Commit before Stop; nothing is
// stored after Stop.
func TestSourceStopWaitsForTheFlush(t *testing.T) {
	task, ev, wait, unblock := runWithBlockedStore(t, 500)
	eventually(t, "a flush waiting on the store", func() bool { return ev.lastIndex("set blocked") >= 0 })
	eventually(t, "every record acknowledged", func() bool { return task.(*sourceTask).tracker.acked() == 500 })
	task.Stop()
	// The drain finishes the records in flight, then waits for the flush.
	time.Sleep(100 * time.Millisecond)
	if i := ev.lastIndex("stop"); i >= 0 {
		t.Fatalf("Stop called while a flush was storing offsets: %v", ev.list())
	}
	unblock()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	l := ev.list()
	last := ev.lastIndex(`set {"sp":0}={"o":500} {"sp":1}={"o":499}`)
	commit, stop := ev.lastIndex("commit"), ev.lastIndex("stop")
	if last < 0 || commit < last || stop < commit {
		t.Fatalf("want the last offsets stored, then Commit, then Stop: %v", l)
	}
	if strings.Count(strings.Join(l[stop:], "\n"), "set ") != 0 {
		t.Errorf("offsets stored after Stop: %v", l)
	}
}

// Records a transform drops are acknowledged as not written, and their
// offsets are stored like any other.
func TestSourceDroppedRecordsAreAcknowledged(t *testing.T) {
	const n = 20
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = n
	f.recordAcks = true
	f.gen = func(seq uint64) *data.SourceRecord {
		r := defaultSourceRecord(seq)
		r.SourcePartition = map[string]any{"sp": 0}
		return r
	}
	st := newMemOffsets(ev)
	cfg := sourceConfig(c, f, st, nil)
	cfg.Transforms = transformFunc(func(r *data.Record) (*data.Record, error) {
		seq, _ := strconv.Atoi(strings.TrimPrefix(string(r.Key.(data.Raw)), "k"))
		if seq%2 == 0 {
			return nil, nil
		}
		out := *r
		out.Topic = "t"
		return &out, nil
	})
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "all acknowledged", func() bool { return task.(*sourceTask).tracker.acked() == n })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	acks := f.recordAckList()
	if len(acks) != n {
		t.Fatalf("%d record acks, want %d", len(acks), n)
	}
	for _, ra := range acks {
		if ra.Written != (ra.Seq%2 == 1) {
			t.Errorf("record %d: written=%v", ra.Seq, ra.Written)
		}
		if !ra.Written && (ra.Topic != "" || ra.Offset != 0) {
			t.Errorf("dropped record %d has coordinates %v", ra.Seq, ra)
		}
	}
	// The last record (20) was dropped; its offset is stored all the same.
	if got := st.get(`{"sp":0}`); got != fmt.Sprintf(`{"o":%d}`, n) {
		t.Errorf("stored offset = %s", got)
	}
	recs := readAll(t, c, "t", n/2)
	if len(recs) != n/2 {
		t.Errorf("%d records written, want %d", len(recs), n/2)
	}
}

// data.Raw keys, values and header values skip the converters; the rest go
// through them.
func TestSourceRawBypassesConverters(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 1})
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = 2
	f.gen = func(seq uint64) *data.SourceRecord {
		r := &data.SourceRecord{Record: data.Record{Topic: "t", Partition: data.NoPartition,
			Timestamp: time.UnixMilli(1700000000000 + int64(seq))}}
		if seq == 1 {
			r.Key, r.KeySchema = "key", data.StringSchema
			r.Value = data.Raw("\x00raw")
			r.Headers = data.Headers{{Key: "h1", Value: data.Raw("rawh")}, {Key: "h2", Schema: data.StringSchema, Value: "conv"}}
		} else {
			r.Key = data.Raw("rawkey")
			r.Value, r.ValueSchema = "value", data.StringSchema
		}
		return r
	}
	task, err := NewSourceTask(sourceConfig(c, f, newMemOffsets(ev), nil))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	recs := readAll(t, c, "t", 2)
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	r1, r2 := recs[0], recs[1]
	if string(r1.Key) != "C:key" || string(r1.Value) != "\x00raw" {
		t.Errorf("record 1 key/value = %q/%q", r1.Key, r1.Value)
	}
	if len(r1.Headers) != 2 || string(r1.Headers[0].Value) != "rawh" || string(r1.Headers[1].Value) != "H:conv" || r1.Headers[1].Key != "h2" {
		t.Errorf("record 1 headers = %v", r1.Headers)
	}
	if string(r2.Key) != "rawkey" || string(r2.Value) != "C:value" {
		t.Errorf("record 2 key/value = %q/%q", r2.Key, r2.Value)
	}
	if r1.Timestamp.UnixMilli() != 1700000000001 {
		t.Errorf("timestamp = %v", r1.Timestamp)
	}
}

// With a broker that does not answer, polling stops once the in-flight
// bound is reached, and resumes when the broker answers.
func TestSourceBackpressure(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	release := make(chan struct{})
	holdPartition(t, c, "t", 0, release) // one broker: holds everything
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	const limit = 64 << 10
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = 1000
	st := newMemOffsets(ev)
	cfg := sourceConfig(c, f, st, nil)
	cfg.MaxInFlightBytes = limit
	var maxInflight atomic.Int64
	var task Task
	var ready sync.WaitGroup
	ready.Add(1)
	f.pollHook = func(req *pluginv1.PollRequest) {
		ready.Wait()
		b, _ := task.(*sourceTask).tracker.inflight()
		if b > maxInflight.Load() {
			maxInflight.Store(b)
		}
		if int64(req.MaxBytes)+b > limit {
			t.Errorf("poll asked for %d bytes with %d in flight (limit %d)", req.MaxBytes, b, limit)
		}
	}
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ready.Done()
	wait := runTask(t, task)
	eventually(t, "the in-flight bound", func() bool {
		b, _ := task.(*sourceTask).tracker.inflight()
		return b > limit-2048
	})
	polls, handed := f.pollCount(), f.handedOut()
	time.Sleep(300 * time.Millisecond)
	// Nothing completes while the broker stalls: the producer's buffer is
	// exactly what is in flight, and stays under the bound.
	if buffered := task.(*sourceTask).client.BufferedProduceBytes(); buffered > limit {
		t.Errorf("producer buffers %d bytes, bound %d", buffered, limit)
	}
	if f.pollCount() != polls || f.handedOut() != handed {
		t.Errorf("polling went on under backpressure: polls %d→%d, records %d→%d", polls, f.pollCount(), handed, f.handedOut())
	}
	if handed*1024 > limit {
		t.Errorf("%d records (%d bytes) taken from the plugin with a %d-byte bound", handed, handed*1024, limit)
	}
	close(release)
	eventually(t, "all records acknowledged", func() bool { return task.(*sourceTask).tracker.acked() == 1000 })
	if m := maxInflight.Load(); m > limit {
		t.Errorf("in flight reached %d bytes, bound %d", m, limit)
	}
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// Paused: no Poll. Resumed: records move again.
func TestSourcePauseResume(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	l := newRecListener()
	task, err := NewSourceTask(sourceConfig(c, f, newMemOffsets(ev), l))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	l.await(t, "running")
	eventually(t, "records moving", func() bool { return f.handedOut() > 100 })
	task.Pause()
	l.await(t, "paused")
	polls := f.pollCount()
	time.Sleep(200 * time.Millisecond)
	if got := f.pollCount(); got != polls {
		t.Errorf("%d polls while paused", got-polls)
	}
	handed := f.handedOut()
	task.Resume()
	l.await(t, "running")
	eventually(t, "records moving again", func() bool { return f.handedOut() > handed+100 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got := l.list(); !slices.Equal(got, []string{"running", "paused", "running", "stopped"}) {
		t.Errorf("states = %v", got)
	}
}

// A task paused before it runs never polls and reports PAUSED first.
func TestSourceStartsPaused(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	l := newRecListener()
	task, err := NewSourceTask(sourceConfig(c, f, newMemOffsets(ev), l))
	if err != nil {
		t.Fatal(err)
	}
	task.Pause()
	wait := runTask(t, task)
	l.await(t, "paused")
	time.Sleep(100 * time.Millisecond)
	if f.pollCount() != 0 {
		t.Errorf("%d polls while paused", f.pollCount())
	}
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got := l.list(); !slices.Equal(got, []string{"paused", "stopped"}) {
		t.Errorf("states = %v", got)
	}
}

// delayProduce makes every produce request wait d before being answered.
func delayProduce(c *kfake.Cluster, d time.Duration) {
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { time.Sleep(d) })
		return nil, nil, false
	})
}

// stopWithRecordsInFlight runs a source task (whose produce requests are
// answered late: see delayProduce) until more than 50 records are in
// flight, then stops it and waits for it to end.
func stopWithRecordsInFlight(t *testing.T, cfg SourceConfig) *sourceTask {
	t.Helper()
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "records in flight", func() bool {
		_, n := task.(*sourceTask).tracker.inflight()
		return n > 50
	})
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	return task.(*sourceTask)
}

// Stop drains: everything in flight is written and acknowledged before the
// plugin's Stop, and the final offsets are stored.
func TestSourceStopDrains(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	delayProduce(c, 200*time.Millisecond)
	ev := &events{}
	f := newFakeSource(ev)
	st := newMemOffsets(ev)
	task := stopWithRecordsInFlight(t, sourceConfig(c, f, st, nil))
	handed := f.handedOut()
	if _, n := task.tracker.inflight(); n != 0 {
		t.Errorf("%d records still in flight after the drain", n)
	}
	stop := ev.lastIndex("stop")
	if stop < 0 || ev.list()[stop] != fmt.Sprintf("stop acked=%d", handed) {
		t.Errorf("plugin stopped before all %d records were acknowledged: %v", handed, ev.list())
	}
	if got := st.get(fmt.Sprintf(`{"sp":%d}`, handed%2)); got != fmt.Sprintf(`{"o":%d}`, handed) {
		t.Errorf("final offset = %s, want o=%d", got, handed)
	}
	if n := len(readAll(t, c, "t", int(handed))); n != int(handed) {
		t.Errorf("%d records in Kafka, want %d", n, handed)
	}
}

// A plugin whose Stop hangs is killed at the drain deadline; the task still
// ends STOPPED.
func TestSourceHungStopIsKilled(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	f.stopHang = true
	l := newRecListener()
	cfg := sourceConfig(c, f, newMemOffsets(ev), l)
	cfg.ShutdownTimeout = 300 * time.Millisecond
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	l.await(t, "running")
	start := time.Now()
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stop took %s with a 300ms drain bound", took)
	}
	if f.kills() != 1 || ev.lastIndex("kill") < ev.lastIndex("stop") {
		t.Errorf("hung plugin not killed after Stop: %v", ev.list())
	}
	if got := l.list(); got[len(got)-1] != "stopped" {
		t.Errorf("states = %v", got)
	}
}

// A crash fails the task with the plugin's trace, whether the task is in a
// call or idle.
func TestSourceCrashFails(t *testing.T) {
	for _, idle := range []bool{false, true} {
		t.Run(fmt.Sprintf("idle=%v", idle), func(t *testing.T) {
			c := newCluster(t, 1, map[string]int32{"t": 3})
			ev := &events{}
			f := newFakeSource(ev)
			l := newRecListener()
			task, err := NewSourceTask(sourceConfig(c, f, newMemOffsets(ev), l))
			if err != nil {
				t.Fatal(err)
			}
			if idle {
				task.Pause()
			}
			wait := runTask(t, task)
			if idle {
				l.await(t, "paused")
			} else {
				eventually(t, "records moving", func() bool { return f.handedOut() > 10 })
			}
			f.crash()
			err = wait()
			if wire.KindOf(err) != wire.KindCrashed {
				t.Fatalf("Run returned %v (kind %v), want a crash", err, wire.KindOf(err))
			}
			l.await(t, "failed")
			if l.trace != crashTrace {
				t.Errorf("trace = %q", l.trace)
			}
			if f.kills() != 1 {
				t.Errorf("killed %d times", f.kills())
			}
			if ev.lastIndex("stop") >= 0 {
				t.Errorf("Stop called on a dead plugin")
			}
		})
	}
}

// The Worker service: SourceOffsets answers from the store; RaiseError
// fails the task; sink calls are refused.
func TestSourceWorkerService(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	st := newMemOffsets(ev)
	st.data[`{"a":1,"b":2}`] = []byte(`{"pos":7}`)
	l := newRecListener()
	cfg := sourceConfig(c, f, st, l)
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	task.Pause()
	wait := runTask(t, task)
	l.await(t, "paused")
	w := f.workerServer()
	ctx := context.Background()
	resp, err := w.SourceOffsets(ctx, &pluginv1.SourceOffsetsRequest{Partitions: [][]byte{[]byte(`{"b":2, "a":1}`), []byte(`{"x":0}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Offsets) != 2 || string(resp.Offsets[0].Partition) != `{"b":2, "a":1}` || string(resp.Offsets[0].Offset) != `{"pos":7}` || len(resp.Offsets[1].Offset) != 0 {
		t.Errorf("offsets = %v", resp.Offsets)
	}
	if _, err := w.SourceOffsets(ctx, &pluginv1.SourceOffsetsRequest{Partitions: [][]byte{[]byte(`{`)}}); err == nil {
		t.Error("invalid partition JSON accepted")
	}
	if _, err := w.Pause(ctx, &pluginv1.PartitionsRequest{}); err == nil {
		t.Error("sink call accepted by a source task")
	}
	if _, err := w.RequestTaskReconfiguration(ctx, &pluginv1.RequestTaskReconfigurationRequest{}); err == nil {
		t.Error("task reconfiguration accepted from a task")
	}
	if _, err := w.RaiseError(ctx, &pluginv1.RaiseErrorRequest{Message: "lost the file", Trace: "at Reader.read"}); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err == nil || err.Error() != "lost the file" {
		t.Fatalf("Run = %v", err)
	}
	if l.trace != "at Reader.read" {
		t.Errorf("trace = %q", l.trace)
	}
	// A live plugin that failed is stopped, then killed.
	if ev.lastIndex("stop") < 0 || ev.lastIndex("kill") < ev.lastIndex("stop") {
		t.Errorf("events = %v", ev.list())
	}
}

// A record Kafka refuses fails the task (no error tolerance yet).
func TestSourceProduceErrorFails(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	f.gen = func(seq uint64) *data.SourceRecord {
		r := defaultSourceRecord(seq)
		r.Partition = 7 // the topic has 3
		return r
	}
	l := newRecListener()
	task, err := NewSourceTask(sourceConfig(c, f, newMemOffsets(ev), l))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	err = wait()
	if err == nil || !strings.Contains(err.Error(), string(StageProduce)) {
		t.Fatalf("Run = %v", err)
	}
	l.await(t, "failed")
}

// Stop before Run: Run launches nothing and reports STOPPED; a second Run
// is refused.
func TestStopBeforeRun(t *testing.T) {
	ev := &events{}
	f := newFakeSource(ev)
	l := newRecListener()
	cfg := sourceConfig(newCluster(t, 1, nil), f, newMemOffsets(ev), l)
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	task.Stop()
	if err := task.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := l.list(); !slices.Equal(got, []string{"stopped"}) {
		t.Errorf("states = %v", got)
	}
	if len(ev.list()) != 0 {
		t.Errorf("events = %v", ev.list())
	}
	if err := task.Run(context.Background()); err == nil {
		t.Error("second Run accepted")
	}
	sk, err := NewSinkTask(sinkConfig(newCluster(t, 1, nil), newFakeSink(ev), l, "a"))
	if err != nil {
		t.Fatal(err)
	}
	sk.Stop()
	if err := sk.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := l.list(); !slices.Equal(got, []string{"stopped", "stopped"}) {
		t.Errorf("states = %v", got)
	}
}

// Cancelling Run's context is a hard stop: no drain, the process killed.
func TestSourceContextCancelKills(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	l := newRecListener()
	task, err := NewSourceTask(sourceConfig(c, f, newMemOffsets(ev), l))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- task.Run(ctx) }()
	l.await(t, "running")
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancellation")
	}
	if f.kills() != 1 || ev.lastIndex("stop") >= 0 {
		t.Errorf("events %v", ev.list())
	}
	l.await(t, "stopped")
}

// A Poll answer whose records do not convert fails the task, whether it
// came through shared memory or inline, naming the record: a source
// partition that is not a JSON object is reported before a record before
// it that does not convert; first_seq 0 is checked before either. Nothing
// of the batch reaches Kafka.
func TestSourceBadPollAnswerFails(t *testing.T) {
	value := &pluginv1.Data{Kind: &pluginv1.Data_Raw{Raw: []byte("v")}}
	good := func() *pluginv1.SourceRecord {
		return &pluginv1.SourceRecord{Topic: "t", SourcePartition: []byte(`{"p":1}`), SourceOffset: []byte(`{"o":1}`), Value: value}
	}
	badRef := &pluginv1.SourceRecord{Topic: "t", Value: &pluginv1.Data{Schema: 3, Kind: &pluginv1.Data_Value{Value: &pluginv1.Value{}}}}
	badPart := &pluginv1.SourceRecord{Topic: "t", SourcePartition: []byte(`[1]`), Value: value}
	for _, tc := range []struct {
		name     string
		recs     []*pluginv1.SourceRecord
		firstSeq bool
		kind     wire.Kind
		want     string
	}{
		{"partition", []*pluginv1.SourceRecord{good(), badPart}, true, wire.KindInvalid,
			`poll: decode records: source record 1: source partition: not a JSON object: "[1]"`},
		{"partition after a bad record", []*pluginv1.SourceRecord{good(), badRef, good(), badPart}, true, wire.KindInvalid,
			`poll: decode records: source record 3: source partition: not a JSON object: "[1]"`},
		{"schema reference", []*pluginv1.SourceRecord{good(), badRef}, true, wire.KindInvalid,
			`poll: decode records: source record 1 (topic t): value: schema reference 3 outside the batch's table of 0`},
		{"first_seq 0", []*pluginv1.SourceRecord{good(), badPart}, false, wire.KindFatal,
			"poll: a batch with records has first_seq 0 (sequence numbers start at 1)"},
	} {
		for _, shared := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/shared=%v", tc.name, shared), func(t *testing.T) {
				c := newCluster(t, 1, map[string]int32{"t": 3})
				ev := &events{}
				f := newFakeSource(ev)
				f.answer = func(first uint64, _ []*data.SourceRecord) (*wire.PollBatch, error) {
					m := &pluginv1.PollResponse{Records: tc.recs}
					if tc.firstSeq {
						m.FirstSeq = first
					}
					if !shared {
						return wire.NewPollBatch(m), nil
					}
					b, err := proto.Marshal(m)
					if err != nil {
						return nil, err
					}
					r := wire.NewSharedRegion(b, nil)
					return r.TakePoll(&pluginv1.SharedBatch{Length: uint64(len(b))})
				}
				l := newRecListener()
				task, err := NewSourceTask(sourceConfig(c, f, newMemOffsets(ev), l))
				if err != nil {
					t.Fatal(err)
				}
				err = runTask(t, task)()
				if wire.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Run = %v (kind %v), want %v %q", err, wire.KindOf(err), tc.kind, tc.want)
				}
				l.await(t, "failed")
				if got := task.(*sourceTask).tracker.acked(); got != 0 {
					t.Errorf("%d records acknowledged", got)
				}
			})
		}
	}
}

// Each reader of the prefix moves it first: acknowledgements of records
// outside any Poll answer's memory (nothing completes) reach take and
// takeOffsets with no other reader in between.
func TestAckTrackerReadersMovePrefix(t *testing.T) {
	coords := []sourceCoords{{[]byte(`{"p":0}`), []byte(`{"o":1}`)}, {[]byte(`{"p":0}`), []byte(`{"o":2}`)}}
	ackAll := func() *ackTracker {
		tr := newAckTracker()
		h, err := tr.add(1, coords, nil)
		if err != nil {
			t.Fatal(err)
		}
		tr.ack(h+1, nil)
		tr.ack(h, nil)
		return tr
	}
	if ab := ackAll().take(); ab == nil || ab.AckedThrough != 2 {
		t.Errorf("take = %v, want acked through 2", ab)
	}
	if offs := ackAll().takeOffsets(); offs[`{"p":0}`] == nil || string(offs[`{"p":0}`].offset) != `{"o":2}` {
		t.Errorf("takeOffsets = %v, want {\"o\":2}", offs)
	}
	if bytes, recs := ackAll().inflight(); bytes != 0 || recs != 0 {
		t.Errorf("inflight = %d, %d", bytes, recs)
	}
	if n := ackAll().unsettled(); n != 0 {
		t.Errorf("unsettled = %d, want 0", n)
	}
}

package runtime

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// Source task semantics measured against Kafka Connect's
// AbstractWorkerSourceTask / WorkerSourceTask.

// A task that fails with a live plugin (here a Poll that fails for good)
// ends as Kafka Connect's does (finalOffsetCommit, then close): every
// record Kafka acknowledged reaches the plugin (commitRecord), their
// offsets are stored, Commit follows, then Stop. Records acknowledged
// after the last Poll must not be stored without the plugin hearing of
// them.
func TestSourceFailureAcknowledgesAndCommitsBeforeStop(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	f.recordAcks = true
	f.pollErr = func(n int) error {
		if n >= 3 {
			return &wire.Error{Kind: wire.KindFatal, Message: "source gone", Trace: "at Source.poll"}
		}
		return nil
	}
	// Records are acknowledged before the failing Poll; the acks of the
	// second answer only ride on that Poll if the fake waits for them.
	f.pollHook = func(*pluginv1.PollRequest) { time.Sleep(50 * time.Millisecond) }
	st := newMemOffsets(ev)
	l := newRecListener()
	task, err := NewSourceTask(sourceConfig(c, f, st, l))
	if err != nil {
		t.Fatal(err)
	}
	err = runTask(t, task)()
	if err == nil || !strings.Contains(err.Error(), "source gone") {
		t.Fatalf("Run = %v", err)
	}
	l.await(t, "failed")
	if l.trace != "at Source.poll" {
		t.Errorf("trace = %q", l.trace)
	}
	const n = 200 // two answers of 100 before the failing Poll
	if got := st.get(`{"sp":0}`); got != fmt.Sprintf(`{"o":%d}`, n) {
		t.Fatalf("stored offset of sp=0 = %s, want o=%d", got, n)
	}
	if f.acked() != n {
		t.Errorf("plugin told acked_through=%d, want %d (offsets of %d records stored)", f.acked(), n, n)
	}
	if got := len(f.recordAckList()); got != n {
		t.Errorf("%d records reached CommitRecord, want %d", got, n)
	}
	set, commit, stop, kill := ev.lastIndex("set "), ev.lastIndex("commit"), ev.lastIndex("stop"), ev.lastIndex("kill")
	if !(set >= 0 && set < commit && commit < stop && stop < kill) {
		t.Errorf("want the offsets stored, then Commit, then Stop, then the kill: %v", ev.list())
	}
}

// A plugin whose Ack fails (Kafka Connect logs a commitRecord that throws
// and goes on) does not keep the acknowledged records' offsets from being
// stored, nor Commit from being called: the final flush of a stop stores
// the offsets of every record written.
func TestSourceFailedAckDoesNotHoldBackOffsets(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	delayProduce(c, 200*time.Millisecond)
	ev := &events{}
	f := newFakeSource(ev)
	f.ackErr = &wire.Error{Kind: wire.KindFatal, Message: "commitRecord threw"}
	st := newMemOffsets(ev)
	l := newRecListener()
	stopWithRecordsInFlight(t, sourceConfig(c, f, st, l))
	handed := f.handedOut()
	if ev.lastIndex("ack ") < 0 {
		t.Fatalf("no Ack at the drain; the test proves nothing: %v", ev.list())
	}
	if got := st.get(fmt.Sprintf(`{"sp":%d}`, handed%2)); got != fmt.Sprintf(`{"o":%d}`, handed) {
		t.Errorf("final offset = %q, want o=%d", got, handed)
	}
	ack, set, commit, stop := ev.lastIndex("ack "), ev.lastIndex("set "), ev.lastIndex("commit"), ev.lastIndex("stop")
	if !(ack < set && set < commit && commit < stop) {
		t.Errorf("want Ack, the offsets stored, Commit, then Stop: %v", ev.list())
	}
	if got := l.list(); got[len(got)-1] != "stopped" {
		t.Errorf("states = %v", got)
	}
}

// Offsets are flushed every offset.flush.interval.ms (Kafka Connect's
// committer runs on a schedule of its own), also while the task waits
// for room to produce the rest of a Poll answer: records acknowledged
// before a Kafka partition stalled have their offsets stored while it
// stalls.
func TestSourceFlushesWhileWaitingForRoom(t *testing.T) {
	c := splitCluster(t)
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer releaseOnce()
	holdPartition(t, c, "t", 0, release)
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = 100
	// Records 1-5 go to partition 1 (answered), the rest to partition 0
	// (held); small records, each counted minRecordCharge, so that one
	// answer holds more than MaxInFlightBytes allows in flight.
	f.gen = func(seq uint64) *data.SourceRecord {
		r := defaultSourceRecord(seq)
		r.Value = data.Raw("v")
		r.Partition = 0
		if seq <= 5 {
			r.Partition = 1
		}
		r.SourcePartition = map[string]any{"file": "f"}
		return r
	}
	st := newMemOffsets(ev)
	cfg := sourceConfig(c, f, st, nil)
	cfg.OffsetFlushInterval = 20 * time.Millisecond
	cfg.MaxInFlightBytes = 4096
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "records 1-5 acknowledged", func() bool { return task.(*sourceTask).tracker.acked() == 5 })
	if f.pollCount() != 1 {
		t.Fatalf("%d polls; want the task waiting inside the first answer", f.pollCount())
	}
	eventually(t, "the offset of record 5 stored while partition 0 stalls", func() bool { return st.get(`{"file":"f"}`) == `{"o":5}` })
	releaseOnce()
	eventually(t, "all acknowledged", func() bool { return task.(*sourceTask).tracker.acked() == 100 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got := st.get(`{"file":"f"}`); got != `{"o":100}` {
		t.Errorf("final offset = %s", got)
	}
}

// A Poll answered ABORTED (a RetriableException) is logged and polled
// again, as often as it takes; the task does not fail.
func TestSourceRetriablePollIsPolledAgain(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = 10
	f.pollErr = func(n int) error {
		if n <= 5 {
			return &wire.Error{Kind: wire.KindRetriable, Message: "source busy"}
		}
		return nil
	}
	l := newRecListener()
	task, err := NewSourceTask(sourceConfig(c, f, newMemOffsets(ev), l))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "all records acknowledged", func() bool { return task.(*sourceTask).tracker.acked() == 10 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got := l.list(); !slices.Equal(got, []string{"running", "stopped"}) {
		t.Errorf("states = %v", got)
	}
	if f.pollCount() < 6 {
		t.Errorf("%d polls", f.pollCount())
	}
}

// Records with no source partition, or no offset, are written and
// acknowledged like any other: the first store nothing, the second store
// a null offset (a tombstone) for their partition.
func TestSourceNullPartitionsAndOffsets(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = 9
	f.recordAcks = true
	f.gen = func(seq uint64) *data.SourceRecord {
		r := defaultSourceRecord(seq)
		switch seq % 3 {
		case 0:
			r.SourcePartition, r.SourceOffset = nil, nil
		case 1:
			r.SourcePartition = map[string]any{"p": "a"}
		case 2:
			r.SourcePartition, r.SourceOffset = map[string]any{"p": "b"}, nil
		}
		return r
	}
	st := newMemOffsets(ev)
	task, err := NewSourceTask(sourceConfig(c, f, st, nil))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "all records acknowledged", func() bool { return task.(*sourceTask).tracker.acked() == 9 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.recordAckList()); n != 9 {
		t.Errorf("%d records acknowledged to the plugin", n)
	}
	if i := ev.lastIndex("set "); i < 0 || ev.list()[i] != `set {"p":"a"}={"o":7} {"p":"b"}=` {
		t.Errorf("offsets stored: %v", ev.list())
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.data) != 2 {
		t.Errorf("store holds %d partitions, want 2", len(st.data))
	}
}

// A task whose Start fails is stopped and killed, as Kafka Connect stops a
// task that threw from start, but never asked to Commit: it never ran.
func TestSourceFailedStartIsStoppedNotCommitted(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	f.startErr = &wire.Error{Kind: wire.KindInvalid, Message: "no such file", Trace: "at Task.start"}
	l := newRecListener()
	task, err := NewSourceTask(sourceConfig(c, f, newMemOffsets(ev), l))
	if err != nil {
		t.Fatal(err)
	}
	err = runTask(t, task)()
	if err == nil || err.Error() != "start: no such file" {
		t.Fatalf("Run = %v", err)
	}
	l.await(t, "failed")
	if l.trace != "at Task.start" {
		t.Errorf("trace = %q", l.trace)
	}
	if got := ev.list(); !slices.Equal(got, []string{"launch", "pool", "start", "stop acked=0", "kill"}) {
		t.Errorf("events = %v; want Stop then the kill, no Commit, no poll", got)
	}
	if f.pollCount() != 0 {
		t.Errorf("%d polls", f.pollCount())
	}
}

// A record for a topic that does not exist, on a cluster that does not
// create topics on its own, waits in the producer; Stop still ends the
// task within the drain deadline, STOPPED, with the offsets of the records
// before it stored (Kafka Connect's
// testSourceTaskNotBlockedOnShutdownWithNonExistentTopic).
func TestSourceStopsPromptlyWithAMissingTopic(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = 5
	f.gen = func(seq uint64) *data.SourceRecord {
		r := defaultSourceRecord(seq)
		r.SourcePartition = map[string]any{"file": "f"}
		if seq == 3 {
			r.Topic, r.Partition = "missing", data.NoPartition
		}
		return r
	}
	st := newMemOffsets(ev)
	l := newRecListener()
	cfg := sourceConfig(c, f, st, l)
	cfg.ShutdownTimeout = 300 * time.Millisecond
	// Tolerated: whether the producer gives up on the record before the
	// drain deadline or not, the task ends STOPPED.
	cfg.Errors = &retryingHandler{}
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "the records around the missing topic's written", func() bool {
		return f.handedOut() == 5 && task.(*sourceTask).tracker.acked() >= 2
	})
	start := time.Now()
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Stop took %s with a 300ms drain deadline", took)
	}
	l.await(t, "stopped")
	if got := st.get(`{"file":"f"}`); got != `{"o":2}` && got != `{"o":5}` {
		t.Errorf("stored offset = %s; want record 2's (the missing topic's record pending) or record 5's (skipped)", got)
	}
}

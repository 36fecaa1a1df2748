package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/storage"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// The memory of a Poll answer is reused once the prefix has passed its
// last record. The task tests below run in phases. While held, the last
// record of every fifth answer stays in flight (its Kafka partition's
// broker does not answer) as the task polls reuseHeld answers, paced; the
// other answers are acknowledged whole, so that memory reused too early
// (a batch whose own records are all acknowledged but which the prefix
// has not passed, or one whose last record is still held) is written over
// while something still reads it. Once the held records are let go and
// acknowledged, the task polls the rest one answer at a time, each after
// the one before is acknowledged, so that memory is reused for each.

const (
	reuseBatch   = 100 // records per answer: sourceConfig's MaxPollRecords
	reuseAnswers = 60
	reuseRecords = reuseBatch * reuseAnswers
	reuseHeld    = 25 // answers polled while held
)

// reuseValue is record seq's value: 1 KiB that differ from record to
// record throughout, so that a record written from another's memory shows.
func reuseValue(seq uint64) []byte {
	pat := fmt.Sprintf("<%d>", seq)
	return bytes.Repeat([]byte(pat), 1024/len(pat)+1)[:1024]
}

// reuseRecord is record seq, with offset {"o":seq} in a source partition
// of its answer's own, {"sp":k} for the k-th answer from 0 (reuseAnswer);
// its Kafka partition is set per answer (pooledAnswers).
func reuseRecord(seq uint64) *data.SourceRecord {
	return &data.SourceRecord{
		Record: data.Record{
			Topic: "t", Partition: data.NoPartition,
			Key: data.Raw(fmt.Sprintf("k%d", seq)), Value: data.Raw(reuseValue(seq)),
		},
		SourcePartition: map[string]any{"sp": int64(reuseAnswer(seq))},
		SourceOffset:    map[string]any{"o": int64(seq)},
	}
}

// reuseAnswer is the answer record seq is in, from 0.
func reuseAnswer(seq uint64) uint64 { return (seq - 1) / reuseBatch }

// reusePartition is where record seq goes: the last record of every fifth
// answer to partition 0 (held), the others to partition 1.
func reusePartition(seq uint64) int32 {
	if seq%reuseBatch == 0 && reuseAnswer(seq)%5 == 0 {
		return 0
	}
	return 1
}

// ctxKey marks the run's context in tests.
type ctxKey struct{}

// The tracker alone: a batch is finished when the prefix passes its last
// record, not before, however its records are acknowledged; a kept batch
// is not reused; offsets are the tracker's own copies once the batch is
// finished; a finished batch refers to nothing of its answer.
func TestAckTrackerFinishesBatches(t *testing.T) {
	tr := newAckTracker()
	pool := &batchPool{max: 8}
	ctx := context.WithValue(context.Background(), ctxKey{}, "run")
	var mem []byte // the answers' bytes, written over once finished
	add := func(first uint64, n int, part string) (*sourceBatch, uint64) {
		b := pool.get(ctx, n)
		coords := b.coords
		for i := range coords {
			start := len(mem)
			mem = append(mem, part...)
			p := mem[start:len(mem):len(mem)]
			start = len(mem)
			mem = fmt.Appendf(mem, `{"o":%d}`, first+uint64(i))
			coords[i] = sourceCoords{partition: p, offset: mem[start:len(mem):len(mem)]}
		}
		h, err := tr.add(first, coords, b)
		if err != nil {
			t.Fatal(err)
		}
		// The Kafka records and their bookkeeping, as pollOnce makes
		// them: pointing into the answer.
		for i := range n {
			b.slab[i] = kgo.Record{Topic: "t", Key: coords[i].partition, Value: coords[i].offset, Context: &b.meta[i]}
			b.meta[i].h, b.meta[i].r, b.meta[i].c, b.meta[i].b = h+uint64(i), &data.SourceRecord{}, coords[i], b
		}
		return b, h
	}
	// cleared fails unless b refers to nothing of its answer, its
	// produced keeping the run's context.
	cleared := func(b *sourceBatch) {
		t.Helper()
		for i := range b.slab {
			m := &b.meta[i]
			if !reflect.ValueOf(b.slab[i]).IsZero() || m.r != nil || m.c.partition != nil || m.c.offset != nil || m.b != nil ||
				b.coords[i].partition != nil || b.coords[i].offset != nil {
				t.Fatalf("record %d of a finished batch still refers to its answer", i)
			}
			if m.Context != ctx {
				t.Fatalf("record %d of a finished batch lost its context", i)
			}
		}
		if b.answer != nil {
			t.Fatal("a finished batch keeps its answer")
		}
	}
	mem = make([]byte, 0, 4096)    // never reallocated: coords alias it
	b1, h1 := add(1, 3, `{"p":1}`) // records 1-3
	b2, h2 := add(4, 2, `{"p":2}`) // records 4-5
	b3, h3 := add(6, 4, `{"p":1}`) // records 6-9
	b3.keep.Store(true)
	finished := func() []*sourceBatch {
		pool.mu.Lock()
		defer pool.mu.Unlock()
		return slices.Clone(pool.free)
	}
	steps := []struct {
		h    uint64
		want []*sourceBatch
	}{
		{h2 + 1, nil},                    // record 5: batch 2's last, ahead of the prefix
		{h1, nil},                        // record 1
		{h1 + 1, nil},                    // record 2: the prefix reaches batch 1's last record
		{h2, nil},                        // record 4: batch 2 all acknowledged, behind record 3
		{h3 + 3, nil},                    // record 9
		{h1 + 2, []*sourceBatch{b1, b2}}, // record 3: the prefix passes 5
		{h3, []*sourceBatch{b1, b2}},
		{h3 + 1, []*sourceBatch{b1, b2}},
		{h3 + 2, []*sourceBatch{b1, b2}}, // batch 3 is kept
	}
	for i, st := range steps {
		// No reader of the prefix runs: the acknowledgement that
		// completes the oldest answer moves it.
		tr.ack(st.h, nil)
		if got := finished(); !slices.Equal(got, st.want) {
			t.Fatalf("step %d (handle %d): finished %v, want %v", i, st.h, got, st.want)
		}
	}
	cleared(b1)
	cleared(b2)
	// The kept batch is left as it is: the error handler may hold it.
	if b3.slab[0].Key == nil || b3.meta[0].r == nil {
		t.Fatal("a kept batch was cleared")
	}
	// A batch from the pool comes clear, with the run's context.
	if b := pool.get(ctx, 2); b != b2 || len(b.slab) != 2 {
		t.Fatalf("the pool gave %p (%d records), want the last finished, %p", b, len(b.slab), b2)
	} else {
		cleared(b)
		pool.put(b)
	}
	// The answers' memory is reused: the offsets to store are copies.
	for i := range mem {
		mem[i] = 'X'
	}
	offs := tr.takeOffsets()
	if len(offs) != 2 || string(offs[`{"p":1}`].offset) != `{"o":9}` || string(offs[`{"p":2}`].offset) != `{"o":5}` {
		t.Fatalf("offsets after the answers were written over: %v", offs)
	}
	if tr.acked() != 9 || tr.unsettled() != 0 || len(tr.batches) != 0 {
		t.Fatalf("acked %d, unsettled %d, %d batches", tr.acked(), tr.unsettled(), len(tr.batches))
	}
	// A drained pool keeps nothing, a closed one takes nothing.
	pool.drain()
	if len(finished()) != 0 {
		t.Fatal("a drained pool kept batches")
	}
	pool.close()
	b4, h4 := add(10, 1, `{"p":1}`)
	tr.ack(h4, nil)
	if len(finished()) != 0 || b4.answer != nil {
		t.Fatal("a closed pool kept a batch")
	}
}

// pooledAnswers answers Polls as a plugin that accepted shared memory,
// read the way the worker reads it (TakePollPooled, into the task's pool:
// use), and notes which answers were read into memory an earlier answer
// had.
type pooledAnswers struct {
	region *wire.SharedRegion
	// partition is the Kafka partition of record seq; nil: reusePartition.
	partition func(seq uint64) int32

	mu   sync.Mutex
	pool *wire.PollPool
	// spans are the address ranges of the answers' record keys, in the
	// order answered; each keeps one key, so that its memory is not
	// freed and handed out again by the allocator: an answer in the range
	// of an earlier one is in memory reused through the pool.
	spans  []valueSpan
	reused int
}

type valueSpan struct {
	lo, hi uintptr
	keep   []byte
	reused bool
}

func newPooledAnswers() *pooledAnswers {
	return &pooledAnswers{region: wire.NewSharedRegion(make([]byte, 4<<20), nil)}
}

// use takes the task's pool (fakeSource.usePool).
func (a *pooledAnswers) use(p *wire.PollPool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pool = p
}

func (a *pooledAnswers) answer(first uint64, recs []*data.SourceRecord) (*wire.PollBatch, error) {
	partition := a.partition
	if partition == nil {
		partition = reusePartition
	}
	for i, r := range recs {
		r.Partition = partition(first + uint64(i))
	}
	schemas, precs, err := wire.EncodeSourceRecords(recs)
	if err != nil {
		return nil, err
	}
	ref, ok := a.region.Place(&pluginv1.PollResponse{Schemas: schemas, Records: precs, FirstSeq: first})
	if !ok {
		return nil, fmt.Errorf("an answer of %d records does not fit the region", len(recs))
	}
	a.mu.Lock()
	pool := a.pool
	a.mu.Unlock()
	if pool == nil {
		return nil, errors.New("no pool from the task")
	}
	pb, err := a.region.TakePollPooled(ref, pool)
	if err != nil {
		return nil, err
	}
	got, _, err := pb.Records()
	if err != nil {
		return nil, err
	}
	span := valueSpan{lo: ^uintptr(0)}
	for _, r := range got {
		k := r.Key.(data.Raw)
		p := uintptr(unsafe.Pointer(unsafe.SliceData(k)))
		span.lo, span.hi = min(span.lo, p), max(span.hi, p+uintptr(len(k)))
		span.keep = k[:0]
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.spans {
		if span.lo < s.hi && s.lo < span.hi {
			a.reused++
			span.reused = true
			break
		}
	}
	a.spans = append(a.spans, span)
	return pb, nil
}

func (a *pooledAnswers) reuses() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reused
}

// reusedAt reports whether answer k (from 0) was read into reused memory.
func (a *pooledAnswers) reusedAt(k int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.spans[k].reused
}

// slabReuse counts, from the Kafka records a task produces (a producer
// hook), the batches made in the slab of an earlier one: a batch from the
// task's pool. It notes each batch by a weak pointer, so that a batch
// freed and another allocated at its address do not count.
type slabReuse struct {
	mu      sync.Mutex
	seen    map[weak.Pointer[sourceBatch]]bool
	batches []bool // per batch, in order produced: made in an earlier's slab
}

func newSlabReuse() *slabReuse {
	return &slabReuse{seen: map[weak.Pointer[sourceBatch]]bool{}}
}

// OnProduceRecordBuffered implements kgo.HookProduceRecordBuffered. The
// first record of a batch is the first of its slab.
func (s *slabReuse) OnProduceRecordBuffered(r *kgo.Record) {
	m := r.Context.(*produced)
	if r != &m.b.slab[0] {
		return
	}
	w := weak.Make(m.b)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, s.seen[w])
	s.seen[w] = true
}

// reuses is how many batches were made in an earlier one's slab.
func (s *slabReuse) reuses() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.batches {
		if r {
			n++
		}
	}
	return n
}

// reusedAt reports whether batch k (from 0) was made in an earlier's slab.
func (s *slabReuse) reusedAt(k int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batches[k]
}

// reuseCluster is two brokers, topic t with partition 0 on one and
// partition 1 on the other, and partition 0's produce requests held until
// the returned function is called.
func reuseCluster(t *testing.T) (*kfake.Cluster, func()) {
	c := splitCluster(t)
	release := make(chan struct{})
	holdPartition(t, c, "t", 0, release)
	let := sync.OnceFunc(func() { close(release) })
	t.Cleanup(let)
	return c, let
}

// reuseSource hands out reuseHeld answers of reuseRecord, through a.
func reuseSource(ev *events, a *pooledAnswers) *fakeSource {
	f := newFakeSource(ev)
	f.limit = reuseHeld * reuseBatch
	f.gen = reuseRecord
	f.answer = a.answer
	f.usePool = a.use
	return f
}

// runPhases runs a task over f (reuseSource) through the phases: held
// (created runs before the task does, during while it is held), let go,
// one at a time. It returns when every record
// is acknowledged and the task has stopped, with how many answers were
// polled one at a time.
func runPhases(t *testing.T, cfg SourceConfig, f *fakeSource, let func(), created func(*sourceTask), during func()) (st *sourceTask, after int) {
	t.Helper()
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st = task.(*sourceTask)
	if created != nil {
		created(st)
	}
	var oneAtATime atomic.Bool
	f.pollHook = func(*pluginv1.PollRequest) {
		if !oneAtATime.Load() {
			time.Sleep(2 * time.Millisecond) // paced: the held records stay in flight across Polls
			return
		}
		deadline := time.Now().Add(10 * time.Second)
		for peekAcked(st.tracker) < f.handedOut() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	wait := runTask(t, task)
	eventually(t, "answers polled while held", func() bool { return f.handedOut() == reuseHeld*reuseBatch })
	// Everything but the held records is acknowledged; the prefix ends
	// before the first.
	eventually(t, "all but the held records acknowledged", func() bool {
		_, n := st.tracker.inflight()
		return n == reuseHeld/5
	})
	if got := st.tracker.acked(); got != reuseBatch-1 {
		t.Errorf("acked through %d while record %d is held", got, reuseBatch)
	}
	if during != nil {
		during()
	}
	let()
	eventually(t, "held records acknowledged", func() bool { return st.tracker.acked() == reuseHeld*reuseBatch })
	oneAtATime.Store(true)
	f.mu.Lock()
	f.limit = reuseRecords
	f.mu.Unlock()
	eventually(t, "all records acknowledged", func() bool { return st.tracker.acked() == reuseRecords })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return st, reuseAnswers - reuseHeld
}

// checkReused fails unless memory was reused for the answers polled one
// at a time (but perhaps the first: the runner lets its free batches go
// on the empty answers before it).
func checkReused(t *testing.T, what string, reused, after int) {
	t.Helper()
	if reused < after-1 {
		t.Errorf("%s reused %d times; %d answers were polled one at a time", what, reused, after)
	}
}

// Records stay in flight across many Polls; every record lands in Kafka
// once, in its partition, with exactly the bytes the plugin sent, though
// the memory of answers was reused. A batch reused while one of its
// records is still in franz-go's hands shows as a record with another's
// key or value, or one missing and another twice.
func TestSourceReusesBatchesOnlyOnceAcknowledged(t *testing.T) {
	c, let := reuseCluster(t)
	ev := &events{}
	a := newPooledAnswers()
	f := reuseSource(ev, a)
	slabs := newSlabReuse()
	cfg := sourceConfig(c, f, newMemOffsets(ev), nil)
	cfg.ProducerOpts = append(cfg.ProducerOpts, kgo.WithHooks(slabs))
	_, after := runPhases(t, cfg, f, let, func(st *sourceTask) {
		if st.batches.max != maxPooledAnswers {
			t.Fatalf("pools of %d answers at the default bounds", st.batches.max)
		}
	}, nil)

	recs := readAll(t, c, "t", reuseRecords)
	if len(recs) != reuseRecords {
		t.Fatalf("read %d records, want %d", len(recs), reuseRecords)
	}
	seen := make(map[uint64]bool, reuseRecords)
	bad := 0
	for _, r := range recs {
		seq, err := strconv.ParseUint(strings.TrimPrefix(string(r.Key), "k"), 10, 64)
		if err != nil || seq == 0 || seq > reuseRecords {
			t.Fatalf("key %q", r.Key)
		}
		if seen[seq] {
			t.Errorf("record %d written twice", seq)
		}
		seen[seq] = true
		if !bytes.Equal(r.Value, reuseValue(seq)) || r.Partition != reusePartition(seq) {
			if bad++; bad <= 5 {
				t.Errorf("record %d in partition %d (want %d) with value %.40q...", seq, r.Partition, reusePartition(seq), r.Value)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d records differ from what the plugin sent", bad)
	}
	// Reuse happened: answers were read into memory of earlier ones, and
	// batches' Kafka records were made again in earlier slabs.
	checkReused(t, "answers' memory", a.reuses(), after)
	checkReused(t, "Kafka record slabs", slabs.reuses(), after)
}

// checkedOffsets is memOffsets that checks every write: a source
// partition's offset only moves forward, is one of its own records' (each
// answer has a source partition of its own) and never passes the
// acknowledged prefix. An offset read from memory that was reused for a
// later answer shows as one of another answer's records, or as invalid
// JSON (which fails the task).
type checkedOffsets struct {
	*memOffsets
	t     *testing.T
	acked func() uint64

	mu     sync.Mutex
	last   map[string]uint64
	writes int
}

func (s *checkedOffsets) Set(ctx context.Context, connector string, entries []storage.OffsetEntry) error {
	acked := s.acked()
	s.mu.Lock()
	for _, e := range entries {
		var p struct{ Sp *uint64 }
		var o struct{ O *uint64 }
		if json.Unmarshal(e.Partition, &p) != nil || json.Unmarshal(e.Offset, &o) != nil || p.Sp == nil || o.O == nil {
			s.t.Errorf("stored %s = %s", e.Partition, e.Offset)
			continue
		}
		switch {
		case *o.O == 0 || reuseAnswer(*o.O) != *p.Sp:
			s.t.Errorf("stored offset %d for source partition %d", *o.O, *p.Sp)
		case *o.O > acked:
			s.t.Errorf("stored offset %d past the prefix, %d", *o.O, acked)
		case *o.O < s.last[string(e.Partition)]:
			s.t.Errorf("stored offset %d for %s after %d", *o.O, e.Partition, s.last[string(e.Partition)])
		}
		s.last[string(e.Partition)] = *o.O
	}
	s.writes++
	s.mu.Unlock()
	return s.memOffsets.Set(ctx, connector, entries)
}

// Offsets are flushed often while answers' memory is reused: each stored
// offset is one of an acknowledged record of its own source partition,
// and the final ones are the last records'.
func TestSourceStoresOffsetsRightWhileReusing(t *testing.T) {
	c, let := reuseCluster(t)
	ev := &events{}
	a := newPooledAnswers()
	f := reuseSource(ev, a)
	store := &checkedOffsets{memOffsets: newMemOffsets(ev), t: t, last: map[string]uint64{}}
	cfg := sourceConfig(c, f, nil, nil)
	cfg.Offsets = store
	cfg.OffsetFlushInterval = 5 * time.Millisecond
	// Pools of one answer (as much in flight as one Poll brings): each
	// answer polled one at a time is read into the memory of the one
	// before, whose offsets wait for the next flush.
	cfg.MaxPollBytes, cfg.MaxInFlightBytes = 1<<20, 1<<20
	if n := answerPoolSize(&cfg); n != 1 {
		t.Fatalf("pools of %d answers", n)
	}
	_, after := runPhases(t, cfg, f, let, func(st *sourceTask) { store.acked = st.tracker.acked }, func() {
		// While record 100 is held, the prefix ends at 99.
		eventually(t, "offsets of the prefix stored", func() bool { return store.get(`{"sp":0}`) == `{"o":99}` })
		for k := 1; k < reuseHeld; k++ {
			if got := store.get(fmt.Sprintf(`{"sp":%d}`, k)); got != "" {
				t.Errorf("offset %s stored for answer %d while the first is held", got, k)
			}
		}
	})
	for k := range uint64(reuseAnswers) {
		part, want := fmt.Sprintf(`{"sp":%d}`, k), fmt.Sprintf(`{"o":%d}`, (k+1)*reuseBatch)
		if got := store.get(part); got != want {
			t.Errorf("final offset of %s = %s, want %s", part, got, want)
		}
	}
	store.mu.Lock()
	writes := store.writes
	store.mu.Unlock()
	if writes < 10 {
		t.Errorf("offsets stored %d times, want many", writes)
	}
	checkReused(t, "answers' memory", a.reuses(), after)
}

// handlerFunc adapts a function to ErrorHandler.
type handlerFunc func(context.Context, ErrantRecord) error

func (f handlerFunc) Handle(ctx context.Context, r ErrantRecord) error { return f(ctx, r) }

// A batch a record of which went to the error handler is never reused:
// the handler may keep the record, whose key aliases the answer.
func TestSourceKeepsBatchesTheErrorHandlerSaw(t *testing.T) {
	const answers = 24
	c := newCluster(t, 1, map[string]int32{"t": 2})
	ev := &events{}
	a := newPooledAnswers()
	f := reuseSource(ev, a)
	f.limit = answers * reuseBatch
	// In every other odd answer one record fails its conversion
	// (prefixConverter takes no numbers), in the others one is refused by
	// Kafka (the topic has no partition 7); both are skipped.
	unconvertible := func(seq uint64) bool { return reuseAnswer(seq)%4 == 1 && seq%reuseBatch == 7 }
	unwritable := func(seq uint64) bool { return reuseAnswer(seq)%4 == 3 && seq%reuseBatch == 13 }
	f.gen = func(seq uint64) *data.SourceRecord {
		r := reuseRecord(seq)
		if unconvertible(seq) {
			r.Value = int64(seq)
		}
		return r
	}
	a.partition = func(seq uint64) int32 {
		if unwritable(seq) {
			return 7
		}
		return reusePartition(seq)
	}
	var mu sync.Mutex
	var reported []*data.SourceRecord
	cfg := sourceConfig(c, f, newMemOffsets(ev), nil)
	cfg.Errors = handlerFunc(func(_ context.Context, er ErrantRecord) error {
		mu.Lock()
		reported = append(reported, er.Source)
		mu.Unlock()
		return nil
	})
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := task.(*sourceTask)
	// One answer at a time: each Poll finds the batch before finished.
	f.pollHook = func(*pluginv1.PollRequest) {
		deadline := time.Now().Add(10 * time.Second)
		for peekAcked(st.tracker) < f.handedOut() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	wait := runTask(t, task)
	eventually(t, "all records acknowledged", func() bool { return st.tracker.acked() == answers*reuseBatch })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != answers/2 {
		t.Fatalf("%d records reported, want %d", len(reported), answers/2)
	}
	seen := map[uint64]bool{}
	for _, r := range reported {
		seq, err := strconv.ParseUint(strings.TrimPrefix(string(r.Key.(data.Raw)), "k"), 10, 64)
		var ok bool
		switch {
		case err != nil || seen[seq]:
		case unconvertible(seq):
			ok = r.Value == int64(seq)
		case unwritable(seq):
			v, _ := r.Value.(data.Raw)
			ok = bytes.Equal(v, reuseValue(seq))
		}
		if !ok {
			t.Errorf("reported record %q = %.20q: written over after it was reported", r.Key, r.Value)
		}
		seen[seq] = true
	}
	// The even answers' memory was reused all the same, each by the
	// answer after it.
	if n := a.reuses(); n != answers/2 {
		t.Errorf("%d answers were read into reused memory, want %d", n, answers/2)
	}
}

// A paused task keeps none of the memory of finished answers: once every
// record is acknowledged and the task is PAUSED, its batch pool is empty,
// and the first answer after Resume is read into new memory, its Kafka
// records made in a new slab; the answer after that reuses both again.
// A stopped task's pools are closed. The pools are the size its bounds
// give, and the plugin is given the answers' pool before Start.
func TestSourcePausedKeepsNoPooledMemory(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 2})
	ev := &events{}
	a := newPooledAnswers()
	f := reuseSource(ev, a)
	f.limit = 0 // answers never run out: no empty answer empties the pools
	slabs := newSlabReuse()
	l := newRecListener()
	cfg := sourceConfig(c, f, newMemOffsets(ev), l)
	cfg.ProducerOpts = append(cfg.ProducerOpts, kgo.WithHooks(slabs))
	// Pools of two answers.
	cfg.MaxPollBytes, cfg.MaxInFlightBytes = 1<<20, 2<<20+1
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := task.(*sourceTask)
	if st.batches.max != 2 {
		t.Fatalf("a pool of %d batches, want 2", st.batches.max)
	}
	pooled := func() int {
		st.batches.mu.Lock()
		defer st.batches.mu.Unlock()
		return len(st.batches.free)
	}
	// One answer at a time, each once the one before is finished; the
	// fourth Poll waits for the test.
	gate, waiting := make(chan struct{}), make(chan struct{})
	var polls atomic.Int32
	f.pollHook = func(*pluginv1.PollRequest) {
		deadline := time.Now().Add(10 * time.Second)
		for peekAcked(st.tracker) < f.handedOut() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if polls.Add(1) == 4 {
			close(waiting)
			<-gate
		}
	}
	wait := runTask(t, task)
	l.await(t, "running")
	<-waiting
	// Three answers went through; the third's memory waits in the pools.
	if got := pooled(); got != 1 {
		t.Fatalf("%d batches pooled while running, want 1", got)
	}
	task.Pause()
	close(gate) // the fourth answer, polled before the pause took hold
	l.await(t, "paused")
	if got := pooled(); got != 0 {
		t.Errorf("%d batches pooled while paused", got)
	}
	if got := f.handedOut(); got != 4*reuseBatch {
		t.Fatalf("%d records handed out before the pause, want %d", got, 4*reuseBatch)
	}
	task.Resume()
	l.await(t, "running")
	eventually(t, "two answers after Resume", func() bool { return st.tracker.acked() >= 6*reuseBatch })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for k, want := range []bool{false, true, true, true, false, true} {
		if got := a.reusedAt(k); got != want {
			t.Errorf("answer %d read into reused memory: %v, want %v", k, got, want)
		}
		if got := slabs.reusedAt(k); got != want {
			t.Errorf("answer %d's Kafka records made in a reused slab: %v, want %v", k, got, want)
		}
	}
	st.batches.mu.Lock()
	closed, free := st.batches.closed, len(st.batches.free)
	st.batches.mu.Unlock()
	if !closed || free != 0 {
		t.Errorf("stopped: batch pool closed %v, with %d batches", closed, free)
	}
	if p, s := ev.lastIndex("pool"), ev.lastIndex("start"); p < 0 || p > s {
		t.Errorf("the pool was given at %d, Start at %d: %v", p, s, ev.list())
	}
}

// pooledBenchSource is benchSource answering as the worker now reads an
// answer in shared memory: into memory from the task's pool
// (TakePollPooled), given back by the task once the batch is finished.
type pooledBenchSource struct {
	*benchSource
	pool  *wire.PollPool // the task's: set before Start, then read-only
	polls atomic.Int64   // answers with records
}

func (f *pooledBenchSource) UsePollPool(p *wire.PollPool) { f.pool = p }

func (f *pooledBenchSource) launch(context.Context, pluginv1.WorkerServer) (SourcePlugin, error) {
	return f, nil
}

func (f *pooledBenchSource) Poll(ctx context.Context, req *pluginv1.PollRequest) (*wire.PollBatch, error) {
	ref, err := f.answer(ctx, req)
	if ref == nil || err != nil {
		return nil, err
	}
	f.polls.Add(1)
	return f.region.TakePollPooled(ref, f.pool)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSourceRunnerPooled is BenchmarkSourceRunner with answers read
// as the worker reads them from shared memory; cpu-ns/rec is the CPU time
// of the whole process (runner, franz-go, kfake) per record.
func BenchmarkSourceRunnerPooled(b *testing.B) {
	f := &pooledBenchSource{benchSource: newBenchSource(DefaultSourceMaxPollRecords, uint64(b.N))}
	slabs := newSlabReuse()
	_, cpu := runSourceBench(b, f.launch, kgo.WithHooks(slabs))
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/rec")
	b.ReportMetric(float64(slabs.reuses()), "reused")
	b.ReportMetric(float64(f.polls.Load()), "polls")
}

// peekAcked is the end of the acknowledged prefix as it stands, without
// moving it as acked does: a test waiting in a Poll for acknowledgements
// must not do the work whose effect it checks (the batches' memory back in
// the pools before the answer is read).
func peekAcked(tr *ackTracker) uint64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.ackedThrough
}

// A record added without its answer's memory (a test's, or a future
// caller's) does not count towards the answer after it: that answer still
// finishes on the acknowledgement of its own last record.
func TestAckTrackerBatchCountsOnlyItsRecords(t *testing.T) {
	tr := newAckTracker()
	pool := &batchPool{max: 8}
	h0, err := tr.add(1, []sourceCoords{{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := pool.get(context.Background(), 2)
	h1, err := tr.add(2, b.coords, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []uint64{h0, h1, h1 + 1} {
		tr.ack(h, nil)
	}
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if len(pool.free) != 1 || pool.free[0] != b {
		t.Fatalf("pool %v after every record was acknowledged, want the answer finished", pool.free)
	}
}

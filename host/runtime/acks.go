package runtime

import (
	"bytes"
	"fmt"
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// ackTracker follows a source task's polled records from Poll to Kafka's
// acknowledgement. Records enter in poll order; acknowledgements (from the
// producer's callbacks, any goroutine, any order across partitions) mark
// them. The acknowledged prefix — the longest run of acknowledged records
// from the oldest one — moves forward over the records acknowledged by then
// whenever the oldest Poll answer is all acknowledged and whenever it is
// read, and only it counts: acked_through is the last sequence number of
// the prefix, and the offsets to store are, per source partition, the
// offset of the latest record in the prefix. A record acknowledged after an unacknowledged one
// waits until the gap closes, so a stored offset never passes a record that
// may still be lost.
type ackTracker struct {
	mu         sync.Mutex
	recordAcks bool

	// entries[head:] are the records not yet in the prefix, in poll order;
	// entries[:head] wait for compaction. A record's handle is its index
	// plus base.
	entries []ackEntry
	head    int
	base    uint64

	lastSeq      uint64 // highest sequence number added
	ackedThrough uint64 // last sequence number of the prefix
	sentThrough  uint64 // acked_through the plugin was last sent
	recAcks      []*pluginv1.RecordAck

	// offsets holds, per source partition (its JSON as the plugin sent it),
	// the latest offset in the prefix that is not yet stored.
	offsets map[string]*pendingOffset

	inflightBytes int64 // produced, not yet acknowledged
	inflightRecs  int

	// batches are the Poll answers with records not yet in the prefix, in
	// poll order, each with the handle after its last record.
	batches []trackedBatch

	// notify is signalled (without blocking) whenever an acknowledgement
	// lands, so a task waiting for room or for the drain wakes up.
	notify chan struct{}
}

type ackEntry struct {
	seq       uint64
	done      bool
	inflight  bool // produced: counted in inflightBytes and inflightRecs
	size      int64
	partition []byte // nil: the record has no source partition
	offset    []byte
}

type trackedBatch struct {
	start, end uint64 // the handles of its first record and after its last
	b          *sourceBatch
	pending    int // its records not yet acknowledged
}

// pendingOffset is a source partition's latest offset in the prefix. Its
// bytes are the tracker's own copy (buf), not the Poll answer's: the
// answer's memory is reused once the prefix passes its last record, and
// the offset waits for the next flush. storeOffsets reads them only
// through canonicalOffsets, which copies them (storage.CanonicalJSON), so
// that a pendingOffset given back by restoreOffsets may be written over.
type pendingOffset struct {
	seq    uint64
	offset []byte // nil: a null offset; else buf
	buf    []byte
}

// set makes offset the partition's latest, copied.
func (p *pendingOffset) set(seq uint64, offset []byte) {
	p.seq = seq
	if offset == nil {
		p.offset = nil
		return
	}
	p.buf = append(p.buf[:0], offset...)
	p.offset = p.buf
}

// compactMin is how many settled entries may pile up before they are
// dropped from the front of the queue.
const compactMin = 1024

func newAckTracker() *ackTracker {
	return &ackTracker{offsets: map[string]*pendingOffset{}, notify: make(chan struct{}, 1)}
}

// add enters the records of one Poll answer, sequence numbers first,
// first+1, ..., and returns the handle of the first; the others follow.
// Sequence numbers must increase (the contract: they never repeat in a
// process). The coordinates are kept as they are (they alias the answer)
// until their record joins the prefix. b, if not nil, is the answer's
// memory: its finish runs once the prefix has passed its last record.
func (t *ackTracker) add(first uint64, coords []sourceCoords, b *sourceBatch) (uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if first <= t.lastSeq {
		return 0, fmt.Errorf("record sequence number %d does not follow %d", first, t.lastSeq)
	}
	// The last sequence number must not wrap around: it would let the
	// next answer repeat sequence numbers of this one.
	if n := uint64(len(coords)); n > 0 && first-1 > math.MaxUint64-n {
		return 0, fmt.Errorf("record sequence numbers from %d for %d records run past the largest, %d", first, n, uint64(math.MaxUint64))
	}
	h := t.base + uint64(len(t.entries))
	for i, c := range coords {
		partition := c.partition
		if len(partition) == 0 {
			partition = nil
		}
		t.entries = append(t.entries, ackEntry{seq: first + uint64(i), partition: partition, offset: c.offset})
	}
	t.lastSeq = first + uint64(len(coords)) - 1
	if b != nil {
		t.batches = append(t.batches, trackedBatch{start: h, end: h + uint64(len(coords)), b: b, pending: len(coords)})
	}
	return h, nil
}

// tryProduce counts a record of size bytes as in flight if it fits under
// limit (or nothing is in flight: a record larger than the limit goes
// alone) and reports whether it did.
func (t *ackTracker) tryProduce(h uint64, size, limit int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inflightRecs > 0 && t.inflightBytes+size > limit {
		return false
	}
	e := &t.entries[h-t.base]
	e.size, e.inflight = size, true
	t.inflightBytes += size
	t.inflightRecs++
	return true
}

// ack marks a record acknowledged: written to Kafka (r is the produced
// record, with its partition and offset) or not written (r nil: dropped by
// a transform or by error tolerance). Only the first call for a handle
// counts.
func (t *ackTracker) ack(h uint64, r *kgo.Record) {
	t.mu.Lock()
	if h < t.base+uint64(t.head) || h >= t.base+uint64(len(t.entries)) {
		t.mu.Unlock()
		return
	}
	e := &t.entries[h-t.base]
	if e.done {
		t.mu.Unlock()
		return
	}
	e.done = true
	if e.inflight {
		t.inflightBytes -= e.size
		t.inflightRecs--
	}
	if t.recordAcks {
		ra := &pluginv1.RecordAck{Seq: e.seq}
		if r != nil {
			ra.Written = true
			ra.Topic = r.Topic
			ra.Partition = r.Partition
			ra.Offset = r.Offset
			ra.TimestampMs = r.Timestamp.UnixMilli()
		}
		t.recAcks = append(t.recAcks, ra)
	}
	// The prefix moves once the oldest Poll answer is all acknowledged,
	// so that its memory is back in the pools for the next Poll, and
	// when someone reads it (take, takeOffsets, inflight, acked,
	// unsettled) — not at every acknowledgement: the producer
	// acknowledges records one callback each, and moving the prefix per
	// record looked the partition up and copied its offset per record,
	// a tenth of the worker's CPU on a generator's pipeline.
	if t.settleBatch(h) {
		t.advanceLocked()
	}
	t.mu.Unlock()
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// settleBatch counts record h of its Poll answer as acknowledged and
// reports whether that completed the oldest answer still tracked. Answers
// are few (at most what MaxInFlightBytes holds) and a record is most often
// of the oldest, so the search from the front is short.
func (t *ackTracker) settleBatch(h uint64) bool {
	for i := range t.batches {
		if h < t.batches[i].end {
			if h < t.batches[i].start {
				return false // a record added without its memory
			}
			t.batches[i].pending--
			return i == 0 && t.batches[0].pending == 0
		}
	}
	return false
}

// advanceLocked moves the prefix over the acknowledged records at its
// front (every reader of the prefix calls it first), and finishes the Poll
// answers it passed: from here on the tracker holds nothing of theirs (a
// partition's JSON is copied into the map's key, its offset into the
// pendingOffset), and neither does anything else that handled their
// records (sourceBatch). finish runs under t.mu; it only puts memory on
// free lists, whose locks never wait for t.mu.
func (t *ackTracker) advanceLocked() {
	// Records of one source partition come in runs (a task reading one
	// file, a generator): only the last offset of a run is stored, and the
	// partition is looked up once per run rather than once per record.
	var (
		run     *pendingOffset // the partition of the current run
		runPart []byte
		runSeq  uint64
		runOff  []byte
	)
	for t.head < len(t.entries) && t.entries[t.head].done {
		e := &t.entries[t.head]
		if e.partition != nil {
			if run == nil || !samePartition(e.partition, runPart) {
				if run != nil {
					run.set(runSeq, runOff)
				}
				run, runPart = t.pendingFor(e.partition), e.partition
			}
			runSeq, runOff = e.seq, e.offset
		}
		t.ackedThrough = e.seq
		*e = ackEntry{}
		t.head++
	}
	if run != nil {
		run.set(runSeq, runOff)
	}
	prefix := t.base + uint64(t.head) // the first handle not in the prefix
	n := 0
	for n < len(t.batches) && t.batches[n].end <= prefix {
		t.batches[n].b.finish()
		n++
	}
	if n > 0 {
		k := copy(t.batches, t.batches[n:])
		clear(t.batches[k:])
		t.batches = t.batches[:k]
	}
	switch {
	case t.head == len(t.entries):
		t.base += uint64(t.head)
		t.entries = t.entries[:0]
		t.head = 0
	case t.head >= compactMin && t.head*2 >= len(t.entries):
		n := copy(t.entries, t.entries[t.head:])
		clear(t.entries[n:])
		t.base += uint64(t.head)
		t.entries = t.entries[:n]
		t.head = 0
	}
}

// samePartition reports whether two source partitions' JSON are equal. The
// decoder gives records that repeat the previous record's partition the
// same slice (wire.PollBatch), so most runs compare addresses and never
// read the bytes, which by the time acknowledgements arrive have usually
// left the cache.
func samePartition(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || bytes.Equal(a, b)
}

// pendingFor returns the pending offset of a source partition (its JSON),
// adding it on first sight.
func (t *ackTracker) pendingFor(partition []byte) *pendingOffset {
	p, ok := t.offsets[string(partition)]
	if !ok {
		p = &pendingOffset{}
		t.offsets[string(partition)] = p
	}
	return p
}

// take returns the acknowledgements the plugin has not been sent, or nil.
func (t *ackTracker) take() *pluginv1.AckBatch {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advanceLocked()
	if t.ackedThrough == t.sentThrough && len(t.recAcks) == 0 {
		return nil
	}
	b := &pluginv1.AckBatch{AckedThrough: t.ackedThrough, Records: t.recAcks}
	t.sentThrough = t.ackedThrough
	t.recAcks = nil
	return b
}

// takeOffsets returns the prefix's offsets not yet stored, keyed by the
// source partition's JSON, and forgets them.
func (t *ackTracker) takeOffsets() map[string]*pendingOffset {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advanceLocked()
	if len(t.offsets) == 0 {
		return nil
	}
	m := t.offsets
	t.offsets = make(map[string]*pendingOffset, len(m))
	return m
}

// restoreOffsets puts back offsets whose storing failed, unless a newer
// offset of the same partition arrived meanwhile.
func (t *ackTracker) restoreOffsets(m map[string]*pendingOffset) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range m {
		if cur, ok := t.offsets[k]; !ok || cur.seq < v.seq {
			t.offsets[k] = v
		}
	}
}

// inflight returns the bytes and records produced and not yet
// acknowledged. It moves the prefix first, so that once it reports none in
// flight every Poll answer whose records were all produced is finished.
func (t *ackTracker) inflight() (int64, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advanceLocked()
	return t.inflightBytes, t.inflightRecs
}

// unsettled is how many records are not yet in the prefix.
func (t *ackTracker) unsettled() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advanceLocked()
	return len(t.entries) - t.head
}

// acked returns the last sequence number of the prefix.
func (t *ackTracker) acked() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advanceLocked()
	return t.ackedThrough
}

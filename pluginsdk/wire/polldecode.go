package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// On the worker side, a Poll answer in shared memory is read from its
// bytes straight into the source records the runner produces, the mirror
// of DecodePutBatch: no generated PollResponse in between, no second walk
// over it. The records' source partitions and offsets stay JSON bytes
// (SourceCoords): the runner stores them as they are, and decoding them
// into maps for every record would cost more than all the rest it does
// per record.
//
// The result is what the two steps give: decodePollResponse (or protobuf),
// then the conversion PollBatch.Records does for a generated message. The
// fused decoder accepts only what it reads exactly as that path does; on
// anything else (what DecodePutBatch also leaves, a record that does not
// convert, a source partition that is not a JSON object) the two-step
// path reads the answer, so that errors are that path's own.

// SourceCoords are a polled record's source partition and source offset,
// the JSON bytes the plugin sent (nil when absent).
type SourceCoords struct {
	Partition, Offset []byte
}

// PollBatch is a Poll answer as the worker reads it: its first_seq and
// record count at once, its records when Records is called. An answer
// whose records do not convert is still a well-formed answer: Records
// reports why, after the caller has looked at FirstSeq and Len (a task
// checks first_seq before anything else).
//
// A PollBatch is not safe for concurrent use.
type PollBatch struct {
	firstSeq uint64
	n        int
	// Either the records, decoded from the answer's bytes...
	recs   []*data.SourceRecord
	coords []SourceCoords
	// ...or the generated message, converted by the first Records call.
	msg       *pluginv1.PollResponse
	converted bool
	err       error
	// undecoded: an answer of more records than asked for, left as bytes
	// (undecodedBatch).
	undecoded bool
	// mem, from pool, holds the answer's bytes and the decoded records
	// until Release.
	pool *PollPool
	mem  *pollMem
}

// Release says the caller is done with the batch: nothing reads its
// records, their bytes, their source partitions or offsets any more, and
// nothing will. A batch read into a PollPool's memory (TakePollPooled)
// gives that memory back to the pool, for a later answer to be written
// over; for any other batch Release does nothing. The batch must not be
// used afterwards (its Records are nil). Release of a nil batch does
// nothing; a batch may be released once.
func (b *PollBatch) Release() {
	if b == nil || b.mem == nil {
		return
	}
	m := b.mem
	// The records go now, not when the memory is next written: the pool
	// may keep m long (a paused task), and a record's values, schemas and
	// strings are not all the memory's own. The next decode relies on the
	// slabs being clear (absent fields stay as they are).
	clear(m.store[:b.n])
	clear(m.coords[:b.n])
	b.mem, b.recs, b.coords = nil, nil, nil
	b.pool.put(m)
}

// NewPollBatch wraps an answer that came inline, as a generated message;
// its records are converted when Records is first called. The message
// must not change afterwards: the records alias its bytes.
func NewPollBatch(m *pluginv1.PollResponse) *PollBatch {
	return &PollBatch{firstSeq: m.GetFirstSeq(), n: len(m.GetRecords()), msg: m}
}

// DecodePollBatch reads the encoding of a PollResponse (without its shared
// field). The records alias b: b must be the caller's own and stay
// unchanged while any record or coordinate is in use. Bytes that are not a
// PollResponse give an error wrapping protobuf's.
func DecodePollBatch(b []byte) (*PollBatch, error) {
	pb, err := decodePollBatch(b)
	if err != nil {
		return nil, fmt.Errorf("decode poll response (%d bytes): %w", len(b), err)
	}
	return pb, nil
}

// decodePollBatch returns protobuf's error when b is not a PollResponse.
func decodePollBatch(b []byte) (*PollBatch, error) {
	if pb, ok := fusedPollBatch(b); ok {
		return pb, nil
	}
	m := new(pluginv1.PollResponse)
	if !decodePollResponse(b, m) {
		if err := proto.Unmarshal(b, m); err != nil {
			return nil, err
		}
	}
	return NewPollBatch(m), nil
}

// TakePoll copies the Poll answer ref names out of the region and decodes
// it (DecodePollBatch): the records alias the copy, not the region, so
// they stay valid after the plugin writes its next answer there. The
// errors are Take's: a reference outside the region, "decode shared batch"
// for bytes that are not a PollResponse. Records that do not convert are
// reported by Records.
func (r *SharedRegion) TakePoll(ref *pluginv1.SharedBatch) (*PollBatch, error) {
	b, err := r.copyOut(ref)
	if err != nil {
		return nil, err
	}
	pb, err := decodePollBatch(b)
	if err != nil {
		return nil, fmt.Errorf("decode shared batch (%d bytes): %w", len(b), err)
	}
	return pb, nil
}

// PollPool is a free list of the memory Poll answers are read into from a
// shared region: the copy of the answer and the records decoded from it.
// Reading a batch of megabytes into memory allocated for it costs the
// clearing of that memory and, for the records, which hold pointers, the
// garbage collector's scanning of it; a worker task knows when it is done
// with a batch (the acknowledged prefix has passed its last record) and
// hands its memory back with PollBatch.Release, for the next answer.
//
// The pool keeps at most a few batches' memory, its owner's choice (the
// worker keeps no more than a task's bound of bytes in flight); a batch
// released into a full pool is left to the garbage collector (the
// smallest one is, so the pool keeps what fits the largest answers), and
// so is all of it on Drain and Close. A PollPool is safe for concurrent
// use: batches are released from whatever goroutine finished them.
type PollPool struct {
	mu     sync.Mutex
	free   []*pollMem
	max    int
	closed bool
}

// pollMem is one answer's memory: its bytes and its records. The record
// slabs of memory in the pool are clear (PollBatch.Release): the records
// refer to nothing, so memory the pool drops is freed whatever kept it.
type pollMem struct {
	buf    []byte
	store  []data.SourceRecord
	recs   []*data.SourceRecord
	coords []SourceCoords
	// topic is the last topic name decoded into this memory, a copy:
	// the next answer's records, most likely of the same topic, share it
	// instead of copying it again.
	topic string
}

// NewPollPool returns a pool that keeps the memory of at most n batches
// (at least 1).
func NewPollPool(n int) *PollPool {
	return &PollPool{max: max(n, 1)}
}

// get returns memory for an answer of n bytes: the pool's whose buffer is
// the smallest that holds n, or else another entry of the pool (whose
// record slabs are reused; the caller replaces its buffer), or new memory.
func (p *PollPool) get(n int) *pollMem {
	p.mu.Lock()
	best := -1
	for i, m := range p.free {
		if cap(m.buf) >= n && (best < 0 || cap(m.buf) < cap(p.free[best].buf)) {
			best = i
		}
	}
	if best < 0 {
		best = len(p.free) - 1
	}
	var m *pollMem
	if best >= 0 {
		m = p.free[best]
		last := len(p.free) - 1
		p.free[best], p.free[last] = p.free[last], nil
		p.free = p.free[:last]
	}
	p.mu.Unlock()
	if m == nil {
		m = &pollMem{}
	}
	return m
}

// put keeps m for a later get, unless the pool is closed or full of larger
// memory. m's record slabs are clear.
func (p *PollPool) put(m *pollMem) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if len(p.free) < p.max {
		p.free = append(p.free, m)
		return
	}
	small := 0
	for i, f := range p.free {
		if cap(f.buf) < cap(p.free[small].buf) {
			small = i
		}
	}
	if cap(m.buf) > cap(p.free[small].buf) {
		p.free[small] = m
	}
}

// Drain lets the garbage collector have the memory the pool keeps: a task
// whose source has nothing to give (an empty answer), or that is paused,
// may stay idle long. Batches released later fill it again.
func (p *PollPool) Drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.free)
	p.free = p.free[:0]
}

// Close drains the pool for good: batches released from then on are left
// to the garbage collector (a task that stopped reads no more answers).
// Answers may still be read into a closed pool, in new memory.
func (p *PollPool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	clear(p.free)
	p.free = nil
}

// TakePollPooled is TakePoll reading the answer into memory from pool,
// which the batch keeps until its Release: the records alias that memory,
// so they stay valid after the plugin writes its next answer in the
// region, and until Release. Unlike TakePoll's, the records' strings
// (topics, header keys, string values) are copies, as strings must never
// change: their holders (franz-go's topic maps, the worker's topic
// tracker, acknowledgements on their way to the plugin) may keep them
// past Release. Their bytes (keys, values, header values, bytes values,
// source partitions and offsets) alias the memory and must not be used
// after Release. An answer the fused decoder declines is decoded the
// two-step way, whose records keep the copy for good (its strings alias
// it): the pool gets the record slabs back at once, and Release does
// nothing. A nil pool is TakePoll.
func (r *SharedRegion) TakePollPooled(ref *pluginv1.SharedBatch, pool *PollPool) (*PollBatch, error) {
	return r.TakePollPooledAtMost(ref, pool, 0)
}

// TakePollPooledAtMost is TakePollPooled for an answer of at most
// maxRecords records (no bound when maxRecords is 0 or less). An answer
// with more is copied but not decoded: decoded, a record costs the worker
// many times its encoded size (a few bytes), so a plugin that ignored the
// bound could make it run out of memory. Its batch has first_seq and the
// record count; Records reports the excess.
func (r *SharedRegion) TakePollPooledAtMost(ref *pluginv1.SharedBatch, pool *PollPool, maxRecords int) (*PollBatch, error) {
	if pool == nil {
		if maxRecords <= 0 {
			return r.TakePoll(ref)
		}
		// Counted in the copy: the plugin may write the region meanwhile.
		b, err := r.copyOut(ref)
		if err != nil {
			return nil, err
		}
		if pb, ok := fusedPollBatchInto(b, nil, maxRecords); ok {
			return pb, nil
		}
		if over := tooManyRecords(b, maxRecords); over != nil {
			return over, nil
		}
		pb, err := decodePollBatch(b)
		if err != nil {
			return nil, fmt.Errorf("decode shared batch (%d bytes): %w", len(b), err)
		}
		return pb, nil
	}
	var m *pollMem
	b, err := r.copyOutWith(ref, func(b []byte) []byte {
		m = pool.get(len(b))
		if cap(m.buf) < len(b) {
			m.buf = cachedCloneSpare(b)
		} else {
			m.buf = m.buf[:len(b)]
			cachedCopy(m.buf, b)
		}
		return m.buf
	})
	if err != nil {
		return nil, err
	}
	if pb, ok := fusedPollBatchInto(b, m, maxRecords); ok {
		if pb.undecoded {
			pool.put(m) // the slabs are untouched, the copy unused
			return pb, nil
		}
		pb.pool, pb.mem = pool, m
		return pb, nil
	}
	// The fused decoder may have filled part of the slabs before it
	// declined: clear them before they go back (rare; all of them).
	clear(m.store)
	clear(m.coords)
	if over := tooManyRecords(b, maxRecords); over != nil {
		pool.put(m)
		return over, nil
	}
	pb, err := decodePollBatch(b)
	if err != nil {
		pool.put(m) // nothing refers to the copy
		return nil, fmt.Errorf("decode shared batch (%d bytes): %w", len(b), err)
	}
	// The two-step path's strings alias the copy: it is the batch's own
	// from here on, and the garbage collector's once the records are gone.
	m.buf = nil
	pool.put(m)
	return pb, nil
}

// tooManyRecords returns the undecoded batch of an answer b with more than
// maxRecords records, or nil (fewer, no bound, or bytes that do not parse:
// decoding reports those). Only for answers the fused decoder declined,
// which counts the records itself.
func tooManyRecords(b []byte, maxRecords int) *PollBatch {
	if maxRecords <= 0 {
		return nil
	}
	n, first := 0, uint64(0)
	for rest := b; len(rest) > 0; {
		num, typ, l := protowire.ConsumeField(rest)
		if l < 0 {
			return nil
		}
		switch {
		case num == 2:
			n++
		case num == 3 && typ == protowire.VarintType:
			first, _ = protowire.ConsumeVarint(rest[protowire.SizeTag(num):])
		}
		rest = rest[l:]
	}
	if n <= maxRecords {
		return nil
	}
	return undecodedBatch(first, n, maxRecords)
}

// undecodedBatch is the batch of an answer of n records, more than the
// maxRecords asked for, left undecoded: decoded, a record costs the worker
// many times its encoded size.
func undecodedBatch(first uint64, n, maxRecords int) *PollBatch {
	return &PollBatch{firstSeq: first, n: n, converted: true, undecoded: true,
		err: fmt.Errorf("the answer has %d records, more than the %d asked for; not decoded", n, maxRecords)}
}

// FirstSeq is the answer's first_seq; 0 for a nil batch.
func (b *PollBatch) FirstSeq() uint64 {
	if b == nil {
		return 0
	}
	return b.firstSeq
}

// Len is the number of records in the answer; 0 for a nil batch.
func (b *PollBatch) Len() int {
	if b == nil {
		return 0
	}
	return b.n
}

// Records returns the answer's records, whose SourcePartition and
// SourceOffset maps are nil, and their source partitions and offsets as
// JSON. Every source partition is checked to be a JSON object (or null)
// where it differs from the record before's; offsets are not checked.
// The error names the record: "source record 3: source partition: not a
// JSON object: ...", or DecodeSourceRecords' error.
func (b *PollBatch) Records() ([]*data.SourceRecord, []SourceCoords, error) {
	if b == nil {
		return nil, nil, nil
	}
	if b.msg != nil && !b.converted {
		b.recs, b.coords, b.err = pollRecords(b.msg)
		b.converted = true
	}
	return b.recs, b.coords, b.err
}

// pollRecords converts a generated answer: the two-step path.
func pollRecords(m *pluginv1.PollResponse) ([]*data.SourceRecord, []SourceCoords, error) {
	prs := m.GetRecords()
	coords := make([]SourceCoords, len(prs))
	var last []byte
	for i, p := range prs {
		if p == nil {
			return nil, nil, fmt.Errorf("source record %d: nil record", i)
		}
		c := SourceCoords{Partition: p.SourcePartition, Offset: p.SourceOffset}
		if !bytes.Equal(c.Partition, last) {
			if err := checkJSONObject(c.Partition); err != nil {
				return nil, nil, fmt.Errorf("source record %d: source partition: %w", i, err)
			}
			last = c.Partition
		}
		coords[i] = c
	}
	recs, err := decodeSourceRecords(m.GetSchemas(), prs, false)
	if err != nil {
		return nil, nil, err
	}
	return recs, coords, nil
}

// checkJSONObject accepts empty input (null), JSON null and JSON objects.
func checkJSONObject(b []byte) error {
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 || t[0] == '{' && json.Valid(t) || bytes.Equal(bytes.TrimSpace(t), []byte("null")) {
		return nil
	}
	return fmt.Errorf("not a JSON object: %.40q", b)
}

// fusedPollBatch decodes b, or reports false for the two-step path.
func fusedPollBatch(b []byte) (*PollBatch, bool) { return fusedPollBatchInto(b, nil, 0) }

// fusedPollBatchInto is fusedPollBatch with the records in m's slabs, when
// m is not nil; their strings are then copies (see TakePollPooled). An
// answer of more than maxRecords records (when positive) is not decoded:
// its undecodedBatch, with m untouched.
func fusedPollBatchInto(b []byte, m *pollMem, maxRecords int) (*PollBatch, bool) {
	// The schema table may come anywhere in the message: read it, count
	// the records and take first_seq, first.
	var tableBuf [4]*pluginv1.Schema
	table := tableBuf[:0]
	count := 0
	var firstSeq uint64
	for rest := b; len(rest) > 0; {
		num, typ, x, sub, n, ok := pfield(rest)
		if !ok {
			return nil, false
		}
		rest = rest[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			s, ok := schema(sub)
			if !ok {
				return nil, false
			}
			table = append(table, s)
		case num == 2 && typ == protowire.BytesType:
			count++
		case num == 3 && typ == protowire.VarintType:
			firstSeq = x
		default:
			return nil, false
		}
	}
	if maxRecords > 0 && count > maxRecords {
		return undecodedBatch(firstSeq, count, maxRecords), true
	}
	pb := &PollBatch{firstSeq: firstSeq, n: count}
	dec, err := NewSchemaDecoder(table)
	if err != nil {
		return nil, false
	}
	d := putDecoder{schemas: dec}
	var store []data.SourceRecord
	if m == nil {
		store = make([]data.SourceRecord, count)
		pb.recs = make([]*data.SourceRecord, count)
		pb.coords = make([]SourceCoords, count)
	} else {
		d.borrowed, d.topic = true, m.topic
		if cap(m.store) < count {
			m.store = make([]data.SourceRecord, count)
			m.recs = make([]*data.SourceRecord, count)
			m.coords = make([]SourceCoords, count)
		}
		// What the last answer left was cleared by its Release (a
		// record is decoded field by field, and fields absent from the
		// answer stay).
		store = m.store[:count]
		pb.recs, pb.coords = m.recs[:count], m.coords[:count]
	}
	i := 0
	for rest := b; len(rest) > 0; {
		num, _, _, sub, n, _ := pfield(rest)
		rest = rest[n:]
		if num != 2 {
			continue
		}
		if !d.sourceRecord(sub, &store[i], &pb.coords[i]) {
			return nil, false
		}
		pb.recs[i] = &store[i]
		i++
	}
	// A record whose source partition repeats the previous record's gets
	// that record's slice, so that whoever reads the coordinates later
	// (the worker's acknowledgement tracker, when the answer has left the
	// cache) can tell equal partitions by address.
	var last []byte
	for i := range pb.coords {
		c := &pb.coords[i]
		if bytes.Equal(c.Partition, last) {
			if len(last) > 0 {
				c.Partition = last
			}
			continue
		}
		if checkJSONObject(c.Partition) != nil {
			return nil, false
		}
		last = c.Partition
	}
	if m != nil {
		m.topic = d.topic
	}
	return pb, true
}

// sourceRecord decodes a SourceRecord message into r and c, as the
// two-step path converts the generated one.
func (d *putDecoder) sourceRecord(b []byte, r *data.SourceRecord, c *SourceCoords) bool {
	r.Partition = data.NoPartition
	var tx int32
	var haveKey, haveValue bool
	for len(b) > 0 {
		num, typ, x, sub, n, ok := pfield(b)
		if !ok {
			return false
		}
		b = b[n:]
		if typ == protowire.VarintType {
			switch num {
			case 4:
				r.Partition = int32(x)
			case 7:
				r.Timestamp = time.UnixMilli(int64(x)).UTC()
			case 9:
				tx = int32(x)
			default:
				return false
			}
			continue
		}
		switch {
		case num == 1:
			c.Partition = plainBytes(sub)
		case num == 2:
			c.Offset = plainBytes(sub)
		case num == 3:
			if r.Topic, ok = d.topicName(sub); !ok {
				return false
			}
		case num == 5 && !haveKey:
			haveKey = true
			if r.KeySchema, r.Key, ok = d.data(sub); !ok {
				return false
			}
		case num == 6 && !haveValue:
			haveValue = true
			if r.ValueSchema, r.Value, ok = d.data(sub); !ok {
				return false
			}
		case num == 8:
			if r.Headers == nil {
				r.Headers = make(data.Headers, 0, 1+countField(b, 8))
			}
			h, ok := d.header(sub)
			if !ok {
				return false
			}
			r.Headers = append(r.Headers, h)
		default:
			return false
		}
	}
	switch pluginv1.TransactionBoundary(tx) {
	case pluginv1.TransactionBoundary_TRANSACTION_BOUNDARY_UNSPECIFIED:
		r.Transaction = data.NoBoundary
	case pluginv1.TransactionBoundary_TRANSACTION_BOUNDARY_COMMIT:
		r.Transaction = data.CommitAfter
	case pluginv1.TransactionBoundary_TRANSACTION_BOUNDARY_ABORT:
		r.Transaction = data.AbortAfter
	default:
		return false
	}
	return true
}

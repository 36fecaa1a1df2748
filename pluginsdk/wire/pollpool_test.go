package wire

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// placeAnswer writes the answer of recs into r, as a plugin does, and
// returns where it is and a copy of its bytes.
func placeAnswer(t *testing.T, r *SharedRegion, recs []*data.SourceRecord, firstSeq uint64) (*pluginv1.SharedBatch, []byte) {
	t.Helper()
	schemas, precs, err := EncodeSourceRecords(recs)
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := r.Place(&pluginv1.PollResponse{Schemas: schemas, Records: precs, FirstSeq: firstSeq})
	if !ok {
		t.Fatalf("an answer of %d records does not fit", len(recs))
	}
	return ref, bytes.Clone(r.mem[:ref.GetLength()])
}

// wantPolled is the two-step reading of an answer's bytes.
func wantPolled(t *testing.T, b []byte) ([]*data.SourceRecord, []SourceCoords) {
	t.Helper()
	m, err := twoStepPollAnswer(bytes.Clone(b))
	if err != nil {
		t.Fatal(err)
	}
	recs, coords, err := twoStepDecodeBatch(m)
	if err != nil {
		t.Fatal(err)
	}
	return recs, coords
}

// sourceStrings lists every string of recs (recordStrings).
func sourceStrings(recs []*data.SourceRecord) []string {
	sink := make([]*data.SinkRecord, len(recs))
	for i, r := range recs {
		sink[i] = &data.SinkRecord{Record: r.Record}
	}
	return recordStrings(sink)
}

func pooledBatches() [][]*data.SourceRecord {
	var batches [][]*data.SourceRecord
	for _, rb := range randomRecordBatches(31, 30) {
		batches = append(batches, rb.src)
	}
	batches = append(batches, datagenBatch()[:100], edgeSourceRecords(), datagenBatch()[:7])
	for _, rb := range randomRecordBatches(32, 10) {
		batches = append(batches, rb.src)
	}
	return batches
}

// Answers read into reused memory are read as the two-step path reads
// them, with nothing left of the answer before (each batch differs in
// shape: headers, schemas, keys present or not); their strings are
// copies that stay as they were after the memory is written over; their
// bytes are the memory's; a released batch has no records, and its memory
// holds none either.
func TestTakePollPooled(t *testing.T) {
	r := NewSharedRegion(make([]byte, 1<<20), nil)
	pool := NewPollPool(2)
	batches := pooledBatches()
	var live, snap [][]string
	var prev *PollBatch
	// bufs keeps every answer's buffer, so that an address seen again is
	// memory from the pool, not memory freed and allocated anew.
	var bufs [][]byte
	reused := 0
	for i, recs := range batches {
		ref, placed := placeAnswer(t, r, recs, uint64(i+1))
		pb, err := r.TakePollPooled(ref, pool)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if pb.FirstSeq() != uint64(i+1) || pb.Len() != len(recs) {
			t.Fatalf("batch %d: first_seq %d, %d records", i, pb.FirstSeq(), pb.Len())
		}
		if pb.mem == nil {
			t.Fatalf("batch %d was not read into pooled memory", i)
		}
		for _, b := range bufs {
			if unsafe.SliceData(b) == unsafe.SliceData(pb.mem.buf) {
				reused++
				break
			}
		}
		bufs = append(bufs, pb.mem.buf)
		got, gc, err := pb.Records()
		if err != nil {
			t.Fatal(err)
		}
		// The region is the plugin's again: the records must not alias it.
		clear(r.mem)
		want, wc := wantPolled(t, placed)
		if d := diffPolled(got, want, gc, wc); d != "" {
			t.Fatalf("batch %d: %s", i, d)
		}
		// The raw bytes are the pooled memory's.
		for _, rec := range got {
			if raw, ok := rec.Value.(data.Raw); ok && len(raw) > 0 && !sameMemory(raw, pb.mem.buf) {
				t.Fatalf("batch %d: a raw value outside the answer's memory", i)
			}
		}
		strs := sourceStrings(got)
		live = append(live, strs)
		snap = append(snap, sourceStrings(want))
		// Two batches live at a time: the one before is done.
		if prev != nil {
			m, n := prev.mem, prev.Len()
			prev.Release()
			if recs, coords, err := prev.Records(); recs != nil || coords != nil || err != nil {
				t.Fatalf("batch %d has records after its Release", i-1)
			}
			for j := range n {
				if !reflect.ValueOf(m.store[j]).IsZero() || m.coords[j].Partition != nil || m.coords[j].Offset != nil {
					t.Fatalf("batch %d: record %d is still in the memory after its Release", i-1, j)
				}
			}
		}
		prev.Release() // a second Release does nothing
		prev = pb
	}
	// Answers larger than any buffer free get a new one.
	if reused < len(batches)/2 {
		t.Errorf("memory reused for %d of %d answers", reused, len(batches))
	}
	for i := range live {
		if len(live[i]) != len(snap[i]) {
			t.Fatalf("batch %d: %d strings, want %d", i, len(live[i]), len(snap[i]))
		}
		for j := range live[i] {
			if live[i][j] != snap[i][j] {
				t.Fatalf("batch %d: string %d is %.30q after its memory was reused, was %.30q", i, j, live[i][j], snap[i][j])
			}
		}
	}
}

// sameMemory reports whether b lies within mem's backing array.
func sameMemory(b, mem []byte) bool {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(cap(mem))
}

// An answer the fused decoder declines (here for a field it does not
// know) is read the two-step way from the copy, which it keeps: other
// answers read into the pool after its Release leave it intact. Errors
// are TakePoll's, and leave the pool as it was.
func TestTakePollPooledDeclinedAndErrors(t *testing.T) {
	r := NewSharedRegion(make([]byte, 1<<20), nil)
	pool := NewPollPool(2)
	recs := datagenBatch()[:50]
	schemas, precs, err := EncodeSourceRecords(recs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(&pluginv1.PollResponse{Schemas: schemas, Records: precs, FirstSeq: 9})
	if err != nil {
		t.Fatal(err)
	}
	b = protowire.AppendVarint(protowire.AppendTag(b, 99, protowire.VarintType), 1)
	n := copy(r.mem, b)
	declined, err := r.TakePollPooled(&pluginv1.SharedBatch{Length: uint64(n)}, pool)
	if err != nil {
		t.Fatal(err)
	}
	if declined.mem != nil || declined.FirstSeq() != 9 || declined.Len() != 50 {
		t.Fatalf("declined answer: pooled %v, first_seq %d, %d records", declined.mem != nil, declined.FirstSeq(), declined.Len())
	}
	declined.Release()
	for i := range 4 {
		ref, _ := placeAnswer(t, r, datagenBatch()[:60], uint64(100+i))
		pb, err := r.TakePollPooled(ref, pool)
		if err != nil {
			t.Fatal(err)
		}
		pb.Release()
	}
	got, gc, err := declined.Records()
	if err != nil {
		t.Fatal(err)
	}
	want, wc := wantPolled(t, b)
	if d := diffPolled(got, want, gc, wc); d != "" {
		t.Fatalf("declined answer after the pool was reused: %s", d)
	}

	free := slices.Clone(pool.free)
	for _, bad := range []*pluginv1.SharedBatch{{Offset: 1 << 20, Length: 1}, {Offset: 1, Length: ^uint64(0)}} {
		_, err := r.TakePollPooled(bad, pool)
		if want := r.Take(bad, &pluginv1.PollResponse{}); err == nil || err.Error() != want.Error() {
			t.Fatalf("%v: error %v, Take's %v", bad, err, want)
		}
	}
	if !slices.Equal(pool.free, free) {
		t.Fatalf("a reference outside the region took memory from the pool")
	}
	copy(r.mem, bytes.Repeat([]byte{0xff}, 64))
	ref := &pluginv1.SharedBatch{Length: 64}
	_, err = r.TakePollPooled(ref, pool)
	if want := r.Take(ref, &pluginv1.PollResponse{}); err == nil || err.Error() != want.Error() || !strings.HasPrefix(err.Error(), "decode shared batch (64 bytes): ") {
		t.Fatalf("garbage: error %v, Take's %v", err, want)
	}
	if len(pool.free) != len(free) {
		t.Fatalf("garbage kept memory from the pool: %d free, was %d", len(pool.free), len(free))
	}
	for _, m := range pool.free {
		for j := range m.store {
			if !reflect.ValueOf(m.store[j]).IsZero() || m.coords[j].Partition != nil || m.coords[j].Offset != nil {
				t.Fatalf("memory back from an answer declined or not decoded holds record %d", j)
			}
		}
	}
	// Without a pool it is TakePoll, and Release does nothing.
	ref, _ = placeAnswer(t, r, recs, 1)
	pb, err := r.TakePollPooled(ref, nil)
	if err != nil || pb.mem != nil {
		t.Fatalf("no pool: %v, pooled %v", err, pb.mem != nil)
	}
	pb.Release()
	if got, _, _ := pb.Records(); len(got) != len(recs) {
		t.Fatalf("Release of a batch without a pool dropped its records")
	}
	var none *PollBatch
	none.Release()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.TakePollPooled(&pluginv1.SharedBatch{}, pool); err != ErrSharedClosed {
		t.Fatalf("take from a closed region: %v", err)
	}
}

// The pool keeps at most its bound, the largest memory it is given; get
// takes the smallest buffer that fits, and keeps the record slabs of one
// that does not.
func TestPollPoolBound(t *testing.T) {
	p := NewPollPool(2)
	for _, n := range []int{100, 400, 200, 300} {
		p.put(&pollMem{buf: make([]byte, 0, n)})
	}
	if len(p.free) != 2 || cap(p.free[0].buf)+cap(p.free[1].buf) != 700 {
		t.Fatalf("pool kept %d entries", len(p.free))
	}
	if m := p.get(250); cap(m.buf) != 300 {
		t.Fatalf("get(250) gave a buffer of %d", cap(m.buf))
	}
	slab := make([]data.SourceRecord, 10)
	p.free[0].store = slab
	if m := p.get(1000); &m.store[0] != &slab[0] {
		t.Fatal("get(1000) did not keep the slabs of memory whose buffer is too small")
	}
	if len(p.free) != 0 {
		t.Fatalf("%d free", len(p.free))
	}
	if m := p.get(10); m == nil || m.buf != nil {
		t.Fatal("get from an empty pool")
	}
	p.put(&pollMem{})
	p.Drain()
	if len(p.free) != 0 {
		t.Fatal("Drain kept memory")
	}
	p.put(&pollMem{})
	p.Close()
	p.put(&pollMem{})
	if len(p.free) != 0 {
		t.Fatal("a closed pool kept memory")
	}
	b := bytes.Repeat([]byte{7}, 1000)
	if c := cachedCloneSpare(b); !bytes.Equal(c, b) || cap(c) != 1000+1000/8 || bytes.ContainsRune(c[len(c):cap(c)], 7) {
		t.Fatalf("cachedCloneSpare: %d/%d", len(c), cap(c))
	}
	if NewPollPool(0).max != 1 {
		t.Fatal("a pool of no memory")
	}
}

// Batches are released from other goroutines (a task's producer
// callbacks) while answers are read.
func TestPollPoolConcurrentRelease(t *testing.T) {
	r := NewSharedRegion(make([]byte, 1<<20), nil)
	pool := NewPollPool(3)
	done := make(chan *PollBatch, 8)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for pb := range done {
				got, _, _ := pb.Records()
				for _, rec := range got {
					_ = bytes.Clone(rec.Value.(data.Raw)) // read, as franz-go does
				}
				pb.Release()
			}
		})
	}
	for i := range 50 {
		ref, placed := placeAnswer(t, r, datagenBatch()[:20+i%7], uint64(i+1))
		pb, err := r.TakePollPooled(ref, pool)
		if err != nil {
			t.Fatal(err)
		}
		got, gc, _ := pb.Records()
		want, wc := wantPolled(t, placed)
		if d := diffPolled(got, want, gc, wc); d != "" {
			t.Fatalf("answer %d: %s", i, d)
		}
		done <- pb
	}
	close(done)
	wg.Wait()
}

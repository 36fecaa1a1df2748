package main

import (
	"fmt"
	"unsafe"

	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// A record Poll returns lives in a polled, with the memory behind it: its
// offset map, the slots its raw key, raw value and offset's seq are boxed
// in (rec's interface values point at them, data.RawAt and data.Int64At:
// writing a slot changes what the record holds without touching the record
// or its map, so a slot is written only while the record is the task's),
// and the bytes of the key and value. When the SDK is done with a record
// (it wrote the worker's copy into shared memory) it gives the record back
// (RecycleRecords), and Poll fills it again instead of allocating a record,
// a map and a value for every record and leaving the garbage collector to
// find them: most of what a record cost beyond its JSON and the copies of
// its bytes. Records the SDK does not give back (answered inline) are the
// garbage collector's, as before.
type polled struct {
	// rec is first: a record given back is the address of its polled.
	rec        data.SourceRecord
	key, value data.Raw
	seq        int64
	buf        []byte // where key and value are written
}

var _ pluginsdk.RecordRecycler = (*DatagenTask)(nil)

// RecycleRecords takes back records Poll returned, to fill them again.
//
// A record given back is taken for the polled it is the rec of, by its
// address (rec is polled's first field). That holds only for records of
// this task: every record its Poll returns is made by take, in a []polled
// block (or is one take got back), and the SDK's contract
// (pluginsdk.RecordRecycler) is to hand back only records this task's Poll
// returned, each at most once. Any other record taken for a polled would
// have memory that is not its own written over when filled. The guard is
// the source partition: every record this task makes holds the task's own
// map (t.partition, made in Start), which no other record does, so a
// record without it makes RecycleRecords panic before it is taken (the
// SDK then stops recycling; see RecordRecycler). One pointer comparison a
// record. (A record of this task given back twice is not caught: it would
// be filled twice over, which is the SDK's contract to prevent.)
func (t *DatagenTask) RecycleRecords(recs []*data.SourceRecord) {
	own := mapID(t.partition)
	for _, r := range recs {
		if id := mapID(r.SourcePartition); id != own || id == nil {
			panic(fmt.Sprintf("datagen: RecycleRecords got a record this task did not make (source partition %v)", r.SourcePartition))
		}
		t.free = append(t.free, (*polled)(unsafe.Pointer(r)))
	}
}

// mapID is what tells maps apart: a map value is a pointer to the map.
func mapID(m map[string]any) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&m))
}

// take returns a record to fill, of those given back if any, else new
// (from a block of up to want, the records Poll still has to fill).
func (t *DatagenTask) take(want int) *polled {
	if n := len(t.free); n > 0 {
		p := t.free[n-1]
		t.free[n-1] = nil
		t.free = t.free[:n-1]
		return p
	}
	if len(t.block) == 0 {
		t.block = make([]polled, want)
	}
	p := &t.block[0]
	t.block = t.block[1:]
	p.rec.Topic, p.rec.Partition = t.s.topic, data.NoPartition
	p.rec.SourcePartition = t.partition
	p.rec.SourceOffset = map[string]any{seqField: data.Int64At(&p.seq)}
	if t.s.raw {
		if t.g.keyIdx >= 0 {
			p.rec.Key = data.RawAt(&p.key)
		}
		p.rec.Value = data.RawAt(&p.value)
	}
	return p
}

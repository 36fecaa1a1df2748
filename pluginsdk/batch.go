package pluginsdk

import (
	"fmt"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// pollBatch gathers the records of several task.Poll calls into one Poll
// answer, bounded by the worker's max_records and max_bytes. A record is
// checked and sized as it joins (wire.SourceBatch) and converted once,
// when the answer is written: straight into the shared region, or into
// the generated message for an answer sent inline.
type pollBatch struct {
	maxRecords int
	maxBytes   int
	enc        wire.SourceBatch
}

func newPollBatch(maxRecords, maxBytes int) *pollBatch {
	return &pollBatch{maxRecords: maxRecords, maxBytes: maxBytes}
}

func (b *pollBatch) len() int { return b.enc.Len() }

// records returns the batch's records, in order.
func (b *pollBatch) records() []*data.SourceRecord { return b.enc.Records() }

// full reports whether no further record may join.
func (b *pollBatch) full() bool { return b.len() >= b.maxRecords || b.enc.Size() >= b.maxBytes }

// within reports whether the batch respects bounds tighter than its own.
func (b *pollBatch) within(maxRecords, maxBytes int) bool {
	return b.len() <= maxRecords && (b.len() <= 1 || b.enc.Size()+maxFirstSeqSize <= maxBytes)
}

// maxFirstSeqSize bounds the answer's first_seq field, which Size leaves out.
const maxFirstSeqSize = 11

// add appends as many of recs as fit and returns the rest, in order; a
// batch always takes its first record, however large, so an oversized
// record cannot wedge the task. A record that cannot be encoded fails the
// whole call: none of recs joins.
func (b *pollBatch) add(recs []*data.SourceRecord) ([]*data.SourceRecord, error) {
	mark := b.enc.Mark()
	b.enc.Grow(min(len(recs), b.maxRecords-b.len()))
	for i, r := range recs {
		if b.full() {
			return recs[i:], nil
		}
		if r == nil {
			b.enc.Rewind(mark)
			return nil, fmt.Errorf("encode polled records: source record %d: nil record", i)
		}
		ok, err := b.enc.Add(r, b.maxBytes)
		if err != nil {
			b.enc.Rewind(mark)
			return nil, fmt.Errorf("encode polled records: source record %d (topic %s): %w", i, r.Topic, err)
		}
		if !ok {
			return recs[i:], nil
		}
	}
	return nil, nil
}

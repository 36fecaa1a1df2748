package pluginsdk

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// pollBatch gathers the records of several task.Poll calls into one
// PollResponse, bounded by the worker's max_records and max_bytes. Each
// chunk is encoded on its own (wire.EncodeSourceRecords) and its schema
// table merged into the batch's, so a schema shared by every chunk travels
// once.
type pollBatch struct {
	maxRecords int
	maxBytes   int
	size       int

	schemas   []*pluginv1.Schema
	schemaIdx map[string]uint32 // deterministic encoding → 1-based index
	recs      []*pluginv1.SourceRecord
	data      []*data.SourceRecord
}

func newPollBatch(maxRecords, maxBytes int) *pollBatch {
	return &pollBatch{maxRecords: maxRecords, maxBytes: maxBytes, schemaIdx: map[string]uint32{}}
}

func (b *pollBatch) len() int { return len(b.recs) }

// full reports whether no further record may join.
func (b *pollBatch) full() bool { return len(b.recs) >= b.maxRecords || b.size >= b.maxBytes }

// add encodes recs and appends as many as fit. It returns the records that did
// not fit, in order; a batch always takes its first record, however large,
// so an oversized record cannot wedge the task.
func (b *pollBatch) add(recs []*data.SourceRecord) ([]*data.SourceRecord, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	schemas, encoded, err := wire.EncodeSourceRecords(recs)
	if err != nil {
		return nil, fmt.Errorf("encode polled records: %w", err)
	}
	remap := make([]uint32, len(schemas)+1)
	for i, r := range encoded {
		if b.full() {
			return recs[i:], nil
		}
		// Size of the record within the response, and any schema it brings
		// into the table.
		size := recordSize(r)
		var added []*pluginv1.Schema
		var refBuf [4]*pluginv1.Data
		refs := appendDataRefs(refBuf[:0], r)
		for _, d := range refs {
			if d.GetSchema() == 0 || remap[d.GetSchema()] != 0 {
				continue
			}
			s := schemas[d.GetSchema()-1]
			key, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
			if err != nil {
				return nil, fmt.Errorf("encode schema: %w", err)
			}
			if idx, ok := b.schemaIdx[string(key)]; ok {
				remap[d.GetSchema()] = idx
				continue
			}
			idx := uint32(len(b.schemas) + len(added) + 1)
			added = append(added, s)
			b.schemaIdx[string(key)] = idx
			remap[d.GetSchema()] = idx
			size += len(key) + 4
		}
		if len(b.recs) > 0 && b.size+size > b.maxBytes {
			// Undo the schema table entries this record would have added.
			for _, s := range added {
				key, _ := proto.MarshalOptions{Deterministic: true}.Marshal(s)
				delete(b.schemaIdx, string(key))
			}
			return recs[i:], nil
		}
		b.schemas = append(b.schemas, added...)
		for _, d := range refs {
			if d.GetSchema() != 0 {
				d.Schema = remap[d.GetSchema()]
			}
		}
		b.size += size
		b.recs = append(b.recs, r)
		b.data = append(b.data, recs[i])
	}
	return nil, nil
}

// appendDataRefs appends the Data of a record that may reference the schema
// table: the key, the value and header values that carry a schema.
func appendDataRefs(out []*pluginv1.Data, r *pluginv1.SourceRecord) []*pluginv1.Data {
	if d := r.GetKey(); d.GetSchema() != 0 {
		out = append(out, d)
	}
	if d := r.GetValue(); d.GetSchema() != 0 {
		out = append(out, d)
	}
	for _, h := range r.GetHeaders() {
		if d := h.GetValue(); d.GetSchema() != 0 {
			out = append(out, d)
		}
	}
	return out
}

// fieldOverhead bounds a field's tag and length prefix (or a varint's
// value): one byte of tag and up to ten of varint.
const fieldOverhead = 11

// recordSize bounds the encoded size of r within a PollResponse, tag and
// length prefix included. Raw keys and values, the common bulk case, are
// counted from their lengths, without protobuf's sizing walk (which the
// gRPC codec repeats anyway); Connect values are sized exactly.
func recordSize(r *pluginv1.SourceRecord) int {
	n := 2*fieldOverhead + // the record's own tag and length, transaction
		3*fieldOverhead + len(r.GetSourcePartition()) + len(r.GetSourceOffset()) + len(r.GetTopic()) +
		2*fieldOverhead + // kafka_partition, timestamp_ms
		dataSize(r.GetKey()) + dataSize(r.GetValue())
	for _, h := range r.GetHeaders() {
		n += 2*fieldOverhead + len(h.GetKey()) + dataSize(h.GetValue())
	}
	return n
}

// dataSize bounds the encoded size of d as a field, tag and length included.
func dataSize(d *pluginv1.Data) int {
	if d == nil {
		return 0
	}
	n := 2 * fieldOverhead // the field, and the schema reference
	switch k := d.GetKind().(type) {
	case *pluginv1.Data_Raw:
		n += fieldOverhead + len(k.Raw)
	case *pluginv1.Data_Value:
		n += fieldOverhead + proto.Size(k.Value)
	}
	return n
}

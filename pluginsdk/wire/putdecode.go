package wire

import (
	"fmt"
	"math"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// A Put batch is read on the plugin side straight from its bytes into the
// records the sink task gets, without the generated PutRequest in between:
// the hand decoder of fastdecode.go followed by DecodeSinkRecords costs a
// slab of protobuf structs per batch and a second walk over them, and the
// plugin side of a Put is where a sink pipeline waits.
//
// The result is what DecodeSinkRecords(decodePutRequest(b)) gives, value
// for value and type for type. The fused decoder accepts only what it
// reads exactly as that path does (the forms the encoders write); on
// anything else (an unknown field, a field repeated that protobuf would
// merge, a wire type other than the schema's, invalid UTF-8, malformed
// bytes) and on every conversion error it gives up and the two-step path
// decodes the batch, so that errors are that path's own, word for word.
// Within a record key, value or header value, what it does not read
// itself goes through proto.Unmarshal and DecodeValue, as before.

// maxFusedDepth bounds the nesting of values the fused decoder follows;
// deeper ones go through protobuf, which has its own recursion limit.
const maxFusedDepth = 64

// DecodePutBatch reads the encoding of a PutRequest (without its shared
// field) into the sink records DecodeSinkRecords would return for it. The
// records alias b (bytes values and raw data are sub-slices of it, strings
// point into it): b must be the caller's own and stay unchanged while any
// record is in use. Bytes that are not a PutRequest give an error wrapping
// protobuf's; records that do not convert give DecodeSinkRecords' error.
func DecodePutBatch(b []byte) ([]*data.SinkRecord, error) {
	recs, parseErr, err := decodePutBatch(b)
	if parseErr != nil {
		return nil, fmt.Errorf("decode put request (%d bytes): %w", len(b), parseErr)
	}
	return recs, err
}

// decodePutBatch returns parseErr when b is not a PutRequest and convErr
// when its records do not convert.
func decodePutBatch(b []byte) (recs []*data.SinkRecord, parseErr, convErr error) {
	if recs, ok := fusedPutBatch(b, false); ok {
		return recs, nil, nil
	}
	return twoStepPutBatch(b)
}

// twoStepPutBatch is decodePutBatch's path for what the fused decoder does
// not read.
func twoStepPutBatch(b []byte) (recs []*data.SinkRecord, parseErr, convErr error) {
	var m pluginv1.PutRequest
	if !decodePutRequest(b, &m) {
		if err := proto.Unmarshal(b, &m); err != nil {
			return nil, err, nil
		}
	}
	recs, err := DecodeSinkRecords(m.Schemas, m.Records)
	return recs, nil, err
}

// putDecoder reads one batch's records.
type putDecoder struct {
	schemas *SchemaDecoder
	// borrowed: strings are copied (a string must never change, and a
	// task may keep one, as a map key say, after Put), bytes values and
	// raw data alias the batch.
	borrowed bool
	// topic is the last topic name read (topicName).
	topic string
	// boxes holds the bytes values and raw data of the records.
	boxes sliceBoxes
}

// fusedPutBatch decodes b, or reports false for the two-step path.
// Borrowed is putDecoder's.
//
// One pass: the encoders (SinkBatch, protobuf) write the schema table
// before the records. A batch of megabytes does not stay in the cache, so
// a first pass to count the records costs a memory read per record; the
// records are allocated in blocks sized from the encoding of the record
// that starts each block instead. A table entry after a record is left to
// the two-step path.
func fusedPutBatch(b []byte, borrowed bool) ([]*data.SinkRecord, bool) {
	return fusedPutBatchInto(b, borrowed, nil)
}

// fusedPutBatchInto is fusedPutBatch decoding into buf's memory, if buf
// is not nil.
func fusedPutBatchInto(b []byte, borrowed bool, buf *BorrowBuffer) ([]*data.SinkRecord, bool) {
	var tableBuf [4]*pluginv1.Schema
	table := tableBuf[:0]
	rest := b
	for len(rest) > 0 {
		num, sub, n := topField(rest)
		if n < 0 || num != 1 {
			break
		}
		s, ok := schema(sub)
		if !ok {
			return nil, false
		}
		table = append(table, s)
		rest = rest[n:]
	}
	dec, err := NewSchemaDecoder(table)
	if err != nil {
		return nil, false
	}
	d := putDecoder{schemas: dec, borrowed: borrowed}
	var out []*data.SinkRecord
	var recBlocks *reuseBlocks[data.SinkRecord]
	if buf != nil {
		buf.recs.rewind()
		buf.boxes.rewind()
		recBlocks, d.boxes.reuse = &buf.recs, &buf.boxes
		out = buf.out[:0]
	}
	var store []data.SinkRecord
	for len(rest) > 0 {
		num, sub, n := topField(rest)
		if n < 0 || num != 2 {
			return nil, false
		}
		if len(store) == 0 {
			if store = recBlocks.take(); store == nil {
				// As many more as records of this size would fill the
				// rest, but at most as many again as decoded so far (and
				// 64): a small first record must not size a block for a
				// batch of large ones. Records of one size get blocks of
				// 64, 128, ... and a last one that fits.
				store = make([]data.SinkRecord, min(len(rest)/n+1, 64+len(out), maxRecordBlock))
				recBlocks.keep(store, maxBorrowRecords)
			}
		}
		r := &store[0]
		store = store[1:]
		if !d.record(sub, r) {
			return nil, false
		}
		out = append(out, r)
		rest = rest[n:]
	}
	if out == nil {
		out = []*data.SinkRecord{}
	}
	if buf != nil && cap(out) <= maxBorrowRecords {
		buf.out = out
	}
	return out, true
}

// BorrowBuffer is the memory one sink task's borrowed batches are decoded
// into (BorrowSinkRecordsInto), batch after batch: the records of a batch,
// the slice of pointers to them, and the interface boxes of their bytes
// values and raw data (sliceBoxes) are those of the batch before it,
// cleared and written again, rather than allocated anew and left to the
// garbage collector, which for a batch of small records costs about as
// much as decoding it. What records hold besides (strings, structs,
// arrays, maps, header lists) is allocated for each batch, as before.
//
// At most maxBorrowRecords records and twice as many boxes are kept
// between batches; a larger batch allocates the rest for itself. The zero
// BorrowBuffer is ready for use. It is not safe for concurrent use.
type BorrowBuffer struct {
	recs  reuseBlocks[data.SinkRecord]
	boxes reuseBlocks[[]byte]
	out   []*data.SinkRecord
}

// maxBorrowRecords bounds the records a BorrowBuffer keeps between batches
// (about 3 MiB of them).
const maxBorrowRecords = 1 << 14

// BorrowSinkRecordsInto is BorrowSinkRecords, decoding into buf: the
// records it returns, and the []byte and data.Raw values in them (at any
// depth), are overwritten by the next call with buf, as the region's bytes
// they point into are by the next batch. Strings, and the structs, arrays
// and maps a record holds, are not reused. A nil buf keeps nothing: each
// batch is decoded into memory of its own, as BorrowSinkRecords does.
func (r *SharedRegion) BorrowSinkRecordsInto(ref *pluginv1.SharedBatch, buf *BorrowBuffer) ([]*data.SinkRecord, error) {
	r.mu.Lock()
	b, err := r.batch(ref)
	var recs []*data.SinkRecord
	ok := false
	if err == nil {
		recs, ok = fusedPutBatchInto(b, true, buf)
	}
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if ok {
		return recs, nil
	}
	// What the fused decoder declined in place, it declines on a copy.
	return r.takeSinkRecords(ref, twoStepPutBatch)
}

// reuseBlocks are blocks of T handed out again, in the same order, batch
// after batch (a nil *reuseBlocks keeps nothing).
type reuseBlocks[T any] struct {
	blocks [][]T
	kept   int // elements in blocks
	next   int // the block take hands out next
}

// rewind starts a batch: take hands out the first block again.
func (rb *reuseBlocks[T]) rewind() { rb.next = 0 }

// take returns the next kept block, cleared, or nil when none is left.
func (rb *reuseBlocks[T]) take() []T {
	if rb == nil || rb.next == len(rb.blocks) {
		return nil
	}
	b := rb.blocks[rb.next]
	rb.next++
	clear(b)
	return b
}

// keep adds b, just allocated after take found no block, to the blocks
// kept, if they stay within max elements.
func (rb *reuseBlocks[T]) keep(b []T, max int) {
	if rb == nil || rb.kept+len(b) > max {
		return
	}
	rb.blocks = append(rb.blocks, b)
	rb.kept += len(b)
	rb.next = len(rb.blocks)
}

// maxRecordBlock bounds the records allocated at once.
const maxRecordBlock = 1 << 14

// str is a string field of the batch: aliasing it, or a copy when
// borrowed.
func (d *putDecoder) str(b []byte) (string, bool) {
	s, ok := aliasString(b)
	if !ok || !d.borrowed {
		return s, ok
	}
	return strings.Clone(s), true
}

// topicName is str for topic names, which repeat from record to record:
// equal to the last one, it is the last one. Records of a topic then
// share one string, whose bytes stay in the cache for whoever compares or
// hashes it per record next (franz-go's partitioner, the worker's topic
// tracker), instead of each pointing at its own place in a batch long
// evicted.
func (d *putDecoder) topicName(b []byte) (string, bool) {
	if d.topic != "" && string(b) == d.topic {
		return d.topic, true
	}
	s, ok := d.str(b)
	if ok {
		d.topic = s
	}
	return s, ok
}

// topField reads one field of a PutRequest, all of whose fields are
// length-delimited; n < 0 for anything else.
func topField(b []byte) (protowire.Number, []byte, int) {
	num, typ, _, sub, n, ok := pfield(b)
	if !ok || typ != protowire.BytesType {
		return 0, nil, -1
	}
	return num, sub, n
}

// pfield is field with the common cases read in line: a one-byte tag, a
// length of one or two bytes.
func pfield(b []byte) (num protowire.Number, typ protowire.Type, v uint64, sub []byte, n int, ok bool) {
	if len(b) >= 2 && b[0] < 0x80 && b[0] >= 8 {
		num, typ = protowire.Number(b[0]>>3), protowire.Type(b[0]&7)
		switch {
		case typ == protowire.VarintType:
			if b[1] < 0x80 {
				return num, typ, uint64(b[1]), nil, 2, true
			}
			if x, m := protowire.ConsumeVarint(b[1:]); m > 0 {
				return num, typ, x, nil, 1 + m, true
			}
		case typ != protowire.BytesType:
		case b[1] < 0x80:
			if l := 2 + int(b[1]); l <= len(b) {
				return num, typ, 0, b[2:l:l], l, true
			}
		case len(b) >= 3 && b[2] < 0x80:
			if l := 3 + (int(b[1]&0x7f) | int(b[2])<<7); l <= len(b) {
				return num, typ, 0, b[3:l:l], l, true
			}
		}
	}
	return field(b)
}

// countField counts the occurrences of field num in the message b.
func countField(b []byte, num protowire.Number) int {
	c := 0
	for len(b) > 0 {
		f, _, n := protowire.ConsumeField(b)
		if n < 0 {
			break
		}
		if f == num {
			c++
		}
		b = b[n:]
	}
	return c
}

// record decodes a SinkRecord message into r, as DecodeSinkRecords
// converts the generated one.
func (d *putDecoder) record(b []byte, r *data.SinkRecord) bool {
	var ts int64
	var tt int32
	var haveKey, haveValue bool
	for len(b) > 0 {
		num, typ, x, sub, n, ok := pfield(b)
		if !ok {
			return false
		}
		b = b[n:]
		if typ == protowire.VarintType {
			switch num {
			case 2:
				r.Partition = int32(x)
			case 3:
				r.Offset = int64(x)
			case 4:
				ts = int64(x)
			case 5:
				tt = int32(x)
			case 10:
				r.OriginalPartition = int32(x)
			case 11:
				r.OriginalOffset = int64(x)
			default:
				return false
			}
			continue
		}
		switch {
		case num == 1:
			if r.Topic, ok = d.topicName(sub); !ok {
				return false
			}
		case num == 6 && !haveKey:
			haveKey = true
			if r.KeySchema, r.Key, ok = d.data(sub); !ok {
				return false
			}
		case num == 7 && !haveValue:
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
		case num == 9:
			if r.OriginalTopic, ok = d.topicName(sub); !ok {
				return false
			}
		default:
			return false
		}
	}
	if ts != noTimestamp {
		r.Timestamp = time.UnixMilli(ts).UTC()
	}
	switch pluginv1.TimestampType(tt) {
	case pluginv1.TimestampType_TIMESTAMP_TYPE_UNSPECIFIED:
		r.TimestampType = data.NoTimestampType
	case pluginv1.TimestampType_TIMESTAMP_TYPE_CREATE_TIME:
		r.TimestampType = data.CreateTime
	case pluginv1.TimestampType_TIMESTAMP_TYPE_LOG_APPEND_TIME:
		r.TimestampType = data.LogAppendTime
	default:
		return false
	}
	return true
}

// header decodes a Header message, as decodeHeaders converts one.
func (d *putDecoder) header(b []byte) (data.Header, bool) {
	var h data.Header
	haveValue := false
	for len(b) > 0 {
		num, typ, _, sub, n, ok := pfield(b)
		if !ok || typ != protowire.BytesType {
			return h, false
		}
		b = b[n:]
		switch {
		case num == 1:
			if h.Key, ok = d.str(sub); !ok {
				return h, false
			}
		case num == 2 && !haveValue:
			haveValue = true
			if h.Schema, h.Value, ok = d.data(sub); !ok {
				return h, false
			}
		default:
			return h, false
		}
	}
	return h, true
}

// data decodes a Data message, as decodeData converts one.
func (d *putDecoder) data(b []byte) (*data.Schema, any, bool) {
	var kind protowire.Number
	var payload []byte
	var ref uint32
	for len(b) > 0 {
		num, typ, x, sub, n, ok := pfield(b)
		if !ok {
			return nil, nil, false
		}
		b = b[n:]
		switch {
		case (num == 1 || num == 2) && typ == protowire.BytesType && kind == 0:
			kind, payload = num, sub
		case num == 3 && typ == protowire.VarintType:
			ref = uint32(x)
		default:
			return nil, nil, false
		}
	}
	if kind == 2 {
		if len(payload) == 0 {
			return nil, data.Raw{}, true
		}
		return nil, d.boxes.raw(capped(payload)), true
	}
	s, err := d.schemas.Schema(ref)
	if err != nil {
		return nil, nil, false
	}
	if kind == 0 {
		return s, nil, true
	}
	v, ok := d.value(s, payload, false, 0)
	if !ok {
		// What the fused decoder does not read (or an error): the value
		// alone goes the two-step way.
		pv := new(pluginv1.Value)
		if proto.Unmarshal(payload, pv) != nil {
			return nil, nil, false
		}
		var err error
		if v, err = DecodeValue(s, pv); err != nil {
			return nil, nil, false
		}
	}
	return s, v, true
}

// value decodes the Value message b of schema s as DecodeValue converts
// the generated one (nested: as decodeNested, which refuses a null the
// schema does not allow). false means "not read here" or an error.
func (d *putDecoder) value(s *data.Schema, b []byte, nested bool, depth int) (any, bool) {
	if len(b) == 0 {
		if nested && checkNull(s) != nil {
			return nil, false
		}
		return nil, true
	}
	if depth > maxFusedDepth {
		return nil, false
	}
	// Exactly one field, the kind, of the wire type its number has.
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return nil, false
	}
	b = b[n:]
	var x uint64
	var sub []byte
	switch {
	case typ == protowire.VarintType && (num == 1 || num == 2):
		x, n = protowire.ConsumeVarint(b)
	case typ == protowire.Fixed64Type && num == 3:
		x, n = protowire.ConsumeFixed64(b)
	case typ == protowire.BytesType && num >= 4 && num <= 8:
		sub, n = protowire.ConsumeBytes(b)
	default:
		return nil, false
	}
	if n != len(b) {
		return nil, false
	}
	if s == nil {
		return d.schemaless(num, x, sub, depth)
	}
	v, ok := d.physical(s, num, x, sub, depth)
	if !ok || s.Name == "" || !data.IsLogical(s) {
		return v, ok
	}
	v, err := data.FromPhysical(s, v)
	return v, err == nil
}

// physical is decodePhysical over one Value field.
func (d *putDecoder) physical(s *data.Schema, num protowire.Number, x uint64, sub []byte, depth int) (any, bool) {
	switch s.Type {
	case data.Int8, data.Int16, data.Int32, data.Int64:
		if num != 2 {
			return nil, false
		}
		n := protowire.DecodeZigZag(x)
		switch s.Type {
		case data.Int8:
			return int8(n), n >= math.MinInt8 && n <= math.MaxInt8
		case data.Int16:
			return int16(n), n >= math.MinInt16 && n <= math.MaxInt16
		case data.Int32:
			return int32(n), n >= math.MinInt32 && n <= math.MaxInt32
		}
		return n, true
	case data.Float32:
		return float32(math.Float64frombits(x)), num == 3
	case data.Float64:
		return math.Float64frombits(x), num == 3
	case data.Boolean:
		return protowire.DecodeBool(x), num == 1
	case data.String:
		if num != 5 {
			return nil, false
		}
		return d.str(sub)
	case data.Bytes:
		if num != 4 {
			return nil, false
		}
		return d.boxes.bytes(bytesValue(sub)), true
	case data.Array:
		if num != 6 {
			return nil, false
		}
		return d.array(s.ValueSchema, sub, depth)
	case data.MapType:
		if num != 7 {
			return nil, false
		}
		return d.mapValue(s.KeySchema, s.ValueSchema, sub, depth)
	case data.StructType:
		if num != 8 {
			return nil, false
		}
		return d.structValue(s, sub, depth)
	}
	return nil, false
}

// schemaless is decodeSchemaless over one Value field.
func (d *putDecoder) schemaless(num protowire.Number, x uint64, sub []byte, depth int) (any, bool) {
	switch num {
	case 1:
		return protowire.DecodeBool(x), true
	case 2:
		return protowire.DecodeZigZag(x), true
	case 3:
		return math.Float64frombits(x), true
	case 4:
		return d.boxes.bytes(bytesValue(sub)), true
	case 5:
		return d.str(sub)
	case 6:
		return d.array(nil, sub, depth)
	case 7:
		return d.mapValue(nil, nil, sub, depth)
	}
	// A struct needs a schema.
	return nil, false
}

// Converting a []byte (or data.Raw) to an interface allocates a copy of its
// header for the interface to point at: the key and the value of every
// record, and the largest cost of decoding a batch of bytes records after
// the records themselves. sliceBoxes hands out interface values that point
// into blocks of headers instead (data.BytesAt, data.RawAt): one
// allocation per block. They are ordinary interface values to every
// reader. The slot each points at is not written again while the batch is
// in use: a block kept for reuse (BorrowBuffer) is written again only by
// the next batch, once the task is done with this one. []byte and data.Raw
// have one layout, so one block serves both; the interface says which it
// holds.
type sliceBoxes struct {
	block [][]byte // unused slots of the current block
	next  int      // size of the block after it
	// reuse, if not nil, hands out blocks of a batch before (BorrowBuffer)
	// and keeps new ones.
	reuse *reuseBlocks[[]byte]
}

// Box block sizes: blocks grow from the first, so that a batch of a few
// records takes little, up to the last.
const (
	firstBoxBlock = 16
	maxBoxBlock   = 512
)

// bytes returns b as an interface value, as any(b) does.
func (s *sliceBoxes) bytes(b []byte) any { return data.BytesAt(s.slot(b)) }

// raw returns b as a data.Raw in an interface value, as any(data.Raw(b))
// does.
func (s *sliceBoxes) raw(b []byte) any { return data.RawAt((*data.Raw)(s.slot(b))) }

// slot returns the next unused slot, holding b.
func (s *sliceBoxes) slot(b []byte) *[]byte {
	if len(s.block) == 0 {
		s.refill()
	}
	p := &s.block[0]
	*p = b
	s.block = s.block[1:]
	return p
}

// refill starts a block: one kept from a batch before, else a new one,
// larger than the last.
func (s *sliceBoxes) refill() {
	if s.block = s.reuse.take(); s.block != nil {
		s.next = len(s.block)
		return
	}
	s.next = min(max(2*s.next, firstBoxBlock), maxBoxBlock)
	s.block = make([][]byte, s.next)
	s.reuse.keep(s.block, 2*maxBorrowRecords)
}

// bytesValue is a bytes_value as DecodeValue returns it: never nil.
func bytesValue(b []byte) []byte {
	if len(b) == 0 {
		return []byte{}
	}
	return capped(b)
}

// listLen counts the values of a ValueList message; false if it holds
// anything else.
func listLen(b []byte) (int, bool) {
	n := 0
	for len(b) > 0 {
		num, typ, _, _, l, ok := pfield(b)
		if !ok || num != 1 || typ != protowire.BytesType {
			return 0, false
		}
		b = b[l:]
		n++
	}
	return n, true
}

// nextElem returns the next value of a ValueList listLen accepted.
func nextElem(b []byte) (elem, rest []byte) {
	_, _, _, sub, n, _ := pfield(b)
	return sub, b[n:]
}

func (d *putDecoder) array(es *data.Schema, b []byte, depth int) (any, bool) {
	n, ok := listLen(b)
	if !ok {
		return nil, false
	}
	out := make([]any, n)
	for i := range out {
		var e []byte
		e, b = nextElem(b)
		if out[i], ok = d.value(es, e, true, depth+1); !ok {
			return nil, false
		}
	}
	return out, true
}

func (d *putDecoder) structValue(s *data.Schema, b []byte, depth int) (any, bool) {
	n, ok := listLen(b)
	if !ok || n != len(s.Fields) {
		return nil, false
	}
	st := data.NewStruct(s)
	for i := range n {
		var e []byte
		e, b = nextElem(b)
		v, ok := d.value(s.Fields[i].Schema, e, true, depth+1)
		if !ok {
			return nil, false
		}
		st.SetIndex(i, v)
	}
	return st, true
}

// mapValue is decodeMap over a ValueMap message.
func (d *putDecoder) mapValue(ks, vs *data.Schema, b []byte, depth int) (any, bool) {
	n, ok := listLen(b) // entries are field 1 too
	if !ok {
		return nil, false
	}
	out := make(data.Map, n)
	allStrings := true
	for i := range out {
		var e []byte
		e, b = nextElem(b)
		var kb, vb []byte
		var haveK, haveV bool
		for len(e) > 0 {
			num, typ, _, sub, l, ok := pfield(e)
			if !ok || typ != protowire.BytesType {
				return nil, false
			}
			e = e[l:]
			switch {
			case num == 1 && !haveK:
				kb, haveK = sub, true
			case num == 2 && !haveV:
				vb, haveV = sub, true
			default:
				return nil, false
			}
		}
		// An absent key or value is a null, as an empty one is.
		k, ok := d.value(ks, kb, true, depth+1)
		if !ok {
			return nil, false
		}
		v, ok := d.value(vs, vb, true, depth+1)
		if !ok {
			return nil, false
		}
		if _, ok := k.(string); !ok {
			allStrings = false
		}
		out[i] = data.MapEntry{Key: k, Value: v}
	}
	if !allStrings {
		return out, true
	}
	sm := make(map[string]any, len(out))
	for _, e := range out {
		sm[e.Key.(string)] = e.Value
	}
	return sm, true
}

package wire

import (
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// SinkBatch is a Put batch being put together from a sink task's records,
// on the worker side: the mirror of SourceBatch. A record is checked and
// sized when it joins (Add), the way EncodeSinkRecords would convert it;
// its encoding is written once, when the batch is (SharedRegion.PlacePut,
// Marshal), straight from the record: no generated message is built for
// it in between.
//
// The bytes are those of Proto's message under deterministic marshalling,
// i.e. EncodeSinkRecords and the hand encoder of fastencode.go, with the
// one difference SourceBatch has: the entries of a map[string]any value
// with several keys come in Go's map order, in either encoding. What the
// fused writer refuses (invalid UTF-8, which protobuf rejects) goes
// through Proto and protobuf, as before.
//
// The zero SinkBatch is an empty batch. A SinkBatch is not safe for
// concurrent use, and the records must not change once added: they are
// read again when the batch is written.
type SinkBatch struct {
	recs    []*data.SinkRecord
	schemas SchemaEncoder
	// sizes are the records' encoded sizes (their fields of the
	// PutRequest), so that each is written into its own place, front to
	// back: written last record first, as before 2026-12-02, a batch
	// went into memory outside the cache at less than half the speed
	// (BenchmarkSharedPollPluginSideCold, BenchmarkSharedPutWorkerSideCold).
	sizes []int32
	// size is the encoded size of the schema table and the records.
	size int
}

// Len is the number of records in the batch; 0 for a nil batch.
func (b *SinkBatch) Len() int {
	if b == nil {
		return 0
	}
	return len(b.recs)
}

// Size is the encoded size of the batch, a PutRequest without its shared
// field.
func (b *SinkBatch) Size() int {
	if b == nil {
		return 0
	}
	return b.size
}

// Records returns the batch's records, in order; the slice is the batch's.
func (b *SinkBatch) Records() []*data.SinkRecord {
	if b == nil {
		return nil
	}
	return b.recs
}

// Grow makes room for n more records.
func (b *SinkBatch) Grow(n int) {
	if n > 0 {
		b.recs = slices.Grow(b.recs, n)
		b.sizes = slices.Grow(b.sizes, n)
	}
}

// Add appends r. An error is EncodeSinkRecords' for a batch of the
// records added so far followed by r, naming r by the index it would have
// had ("sink record 3 (orders-0@17): value: ..."); the batch is then as it
// was before the call.
func (b *SinkBatch) Add(r *data.SinkRecord) error {
	i := len(b.recs)
	if r == nil {
		return fmt.Errorf("sink record %d: nil record", i)
	}
	table := len(b.schemas.table)
	n, ok := bytesRecordSize(r, &b.schemas)
	if !ok {
		w := pollWriter{schemas: &b.schemas}
		if err := w.sinkRecord(r); err != nil {
			b.schemas.truncate(table)
			return fmt.Errorf("sink record %d (%s-%d@%d): %w", i, r.Topic, r.Partition, r.Offset, err)
		}
		n = -w.p
	}
	if n > math.MaxInt32 {
		b.schemas.truncate(table)
		return fmt.Errorf("sink record %d (%s-%d@%d): %d bytes encoded, more than a Put may carry", i, r.Topic, r.Partition, r.Offset, n)
	}
	b.sizes = append(b.sizes, int32(n))
	for _, s := range b.schemas.table[table:] {
		n += sizeLen(proto.Size(s))
	}
	b.size += n
	b.recs = append(b.recs, r)
	return nil
}

// writeTo writes the batch into dst, of Size bytes; false means "use Proto
// and protobuf" (invalid UTF-8, or records that changed since they were
// added).
//
// The schema table comes first, then each record in its place (sizes),
// front to back; within its place a record is written back to front, as
// the writers do.
func (b *SinkBatch) writeTo(dst []byte) bool {
	table := len(b.schemas.table)
	p, ok := writeTable(dst, b.schemas.table)
	if !ok {
		return false
	}
	var valid string // a topic found to be valid UTF-8
	for i, r := range b.recs {
		end := p + int(b.sizes[i])
		if end > len(dst) {
			return false
		}
		if start, ok := writeBytesRecord(dst[:end], end, r, &b.schemas, &valid); ok {
			if start != p {
				return false // changed since it was added
			}
			p = end
			continue
		}
		w := pollWriter{b: dst[:end], p: end, schemas: &b.schemas}
		if w.sinkRecord(r) != nil || w.bad || w.p != p || len(b.schemas.table) != table {
			b.schemas.truncate(table)
			return false
		}
		p = end
	}
	return p == len(dst)
}

// writeTable writes a batch's schema table at the start of dst and returns
// where the records start.
func writeTable(dst []byte, table []*pluginv1.Schema) (int, bool) {
	p := 0
	for _, s := range table {
		p += sizeLen(proto.Size(s))
	}
	if p > len(dst) {
		return 0, false
	}
	bw := backWriter{b: dst, p: p}
	return p, bw.schemas(table) && bw.p == 0
}

// Proto converts the batch into the generated message (EncodeSinkRecords),
// for a Put sent inline; an empty request for a nil batch.
func (b *SinkBatch) Proto() (*pluginv1.PutRequest, error) {
	if b.Len() == 0 {
		return &pluginv1.PutRequest{}, nil
	}
	schemas, recs, err := EncodeSinkRecords(b.recs)
	if err != nil {
		return nil, err
	}
	return &pluginv1.PutRequest{Schemas: schemas, Records: recs}, nil
}

// Marshal returns the encoded batch: deterministic protobuf of Proto().
func (b *SinkBatch) Marshal() ([]byte, error) {
	out := make([]byte, b.Size())
	if b.Len() == 0 || b.writeTo(out) {
		return out, nil
	}
	m, err := b.Proto()
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// PlacePut writes b at the start of the region, as Place writes b.Proto(),
// without building that message. ok is false when it does not fit, the
// region is closed or the batch holds what only protobuf writes (invalid
// UTF-8, which it rejects): send b.Proto inline then.
func (r *SharedRegion) PlacePut(b *SinkBatch) (ref *pluginv1.SharedBatch, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	size := b.Size()
	if r.closed || size > len(r.mem) {
		return nil, false
	}
	if b.Len() > 0 && !b.writeTo(r.mem[:size]) {
		return nil, false
	}
	return &pluginv1.SharedBatch{Offset: 0, Length: uint64(size)}, true
}

// sinkRecord is field 2 of a PutRequest: EncodeSinkRecords' conversion of
// one record and backWriter.sinkRecord in one. Counting, it fails as
// EncodeSinkRecords does, without the record's prefix.
func (w *pollWriter) sinkRecord(r *data.SinkRecord) error {
	var tt pluginv1.TimestampType
	switch r.TimestampType {
	case data.NoTimestampType:
		tt = pluginv1.TimestampType_TIMESTAMP_TYPE_UNSPECIFIED
	case data.CreateTime:
		tt = pluginv1.TimestampType_TIMESTAMP_TYPE_CREATE_TIME
	case data.LogAppendTime:
		tt = pluginv1.TimestampType_TIMESTAMP_TYPE_LOG_APPEND_TIME
	default:
		return fmt.Errorf("invalid timestamp type %d", r.TimestampType)
	}
	end := w.p
	w.plainVarint(11, uint64(r.OriginalOffset))
	w.plainVarint(10, uint64(int64(r.OriginalPartition)))
	w.plainString(9, r.OriginalTopic)
	if w.counting() {
		if err := w.data(6, r.KeySchema, r.Key); err != nil {
			return fmt.Errorf("key: %w", err)
		}
		if err := w.data(7, r.ValueSchema, r.Value); err != nil {
			return fmt.Errorf("value: %w", err)
		}
	}
	if err := w.headers(8, r.Headers); err != nil {
		return err
	}
	if !w.counting() {
		if err := w.data(7, r.ValueSchema, r.Value); err != nil {
			return err
		}
		if err := w.data(6, r.KeySchema, r.Key); err != nil {
			return err
		}
	}
	ts := int64(noTimestamp)
	if !r.Timestamp.IsZero() {
		ts = r.Timestamp.UnixMilli()
	}
	w.plainVarint(5, uint64(tt))
	w.plainVarint(4, uint64(ts))
	w.plainVarint(3, uint64(r.Offset))
	w.plainVarint(2, uint64(int64(r.Partition)))
	w.plainString(1, r.Topic)
	w.lenField(2, end)
	return nil
}

// bytesRecordSize is the size sinkRecord counts for a record of the shape
// a sink consuming with ByteArrayConverter (or raw data) produces: no
// headers, a key and a value each data.Raw, absent, or a []byte (nil
// included) under the BYTES schemas of package data. It sizes the record
// from its lengths instead of walking the writer, which costs as much as
// writing it; the schemas it meets join the table as they would there.
// false: any other shape, for the writer to size (and check).
func bytesRecordSize(r *data.SinkRecord, schemas *SchemaEncoder) (int, bool) {
	if len(r.Headers) != 0 || r.TimestampType < data.NoTimestampType || r.TimestampType > data.LogAppendTime {
		return 0, false
	}
	key, ok := bytesDataSize(r.KeySchema, r.Key, schemas)
	if !ok {
		return 0, false
	}
	value, ok := bytesDataSize(r.ValueSchema, r.Value, schemas)
	if !ok {
		return 0, false
	}
	ts := int64(noTimestamp)
	if !r.Timestamp.IsZero() {
		ts = r.Timestamp.UnixMilli()
	}
	// TimestampType's values are the protobuf enum's (checked by
	// TestBytesRecordSize).
	n := plainVarintSize(uint64(r.OriginalOffset)) + plainVarintSize(uint64(int64(r.OriginalPartition))) +
		plainStringSize(r.OriginalTopic) + key + value +
		plainVarintSize(uint64(r.TimestampType)) + plainVarintSize(uint64(ts)) + plainVarintSize(uint64(r.Offset)) +
		plainVarintSize(uint64(int64(r.Partition))) + plainStringSize(r.Topic)
	return sizeLen(n), true
}

// bytesDataSize is the size data counts for a key or value of that shape.
func bytesDataSize(s *data.Schema, v any, schemas *SchemaEncoder) (int, bool) {
	if raw, ok := v.(data.Raw); ok {
		return sizeLen(sizeLen(len(raw))), true
	}
	if s == nil && v == nil {
		return 0, true
	}
	if s != data.BytesSchema && s != data.OptionalBytesSchema {
		return 0, false
	}
	value := 0 // a null: an empty Value
	if v != nil {
		b, ok := v.([]byte)
		if !ok {
			return 0, false
		}
		value = sizeLen(len(b))
	}
	ref, err := schemas.Ref(s)
	if err != nil {
		return 0, false
	}
	return sizeLen(sizeLen(value) + plainVarintSize(uint64(ref))), true
}

// plainVarintSize and plainStringSize are what plainVarint and plainString
// write, for a field numbered below 16.
func plainVarintSize(x uint64) int {
	if x == 0 {
		return 0
	}
	return tagLen + protowire.SizeVarint(x)
}

func plainStringSize(s string) int {
	if s == "" {
		return 0
	}
	return sizeLen(len(s))
}

// The shapes of a key or value in a bytes-shaped record (bytesRecordSize):
// absent (no schema, no value), raw bytes, or a BYTES schema with a null
// (an empty Value) or a []byte (nil included: an empty bytes_value).
type dataShape uint8

const (
	shapeAbsent dataShape = iota
	shapeRaw
	shapeNull
	shapeBytes
)

// bytesDataOf classifies a key or value as bytesDataSize does; ok is false
// for any other shape. The schema of a null or a []byte gets its table
// reference.
func bytesDataOf(s *data.Schema, v any, schemas *SchemaEncoder) (kind dataShape, b []byte, ref uint32, ok bool) {
	switch x := v.(type) {
	case data.Raw:
		return shapeRaw, x, 0, true
	case nil:
		if s == nil {
			return shapeAbsent, nil, 0, true
		}
		kind = shapeNull
	case []byte:
		kind, b = shapeBytes, x
	default:
		return 0, nil, 0, false
	}
	if s != data.BytesSchema && s != data.OptionalBytesSchema {
		return 0, nil, 0, false
	}
	ref, err := schemas.Ref(s)
	if err != nil {
		return 0, nil, 0, false
	}
	return kind, b, ref, true
}

// bytesRecordSlack bounds the bytes a bytes-shaped record takes beyond
// its topics, key and value: a tag and a varint of at most 10 bytes for
// each of the 17 fields and messages it may hold (the record, 6 numbers,
// 2 strings, and a Data, a Value, a reference and bytes in each of key
// and value).
const bytesRecordSlack = 17 * 11

// writeBytesRecord writes r, a record of the shape bytesRecordSize sizes,
// ending at dst[p], as sinkRecord writes it (back to front), and returns
// where it starts. It writes the same bytes with plain code for the one
// shape: no walk through the general writer's steps. ok is false, nothing
// written, for any other shape, a topic that is not valid UTF-8, or too
// little room left: the general writer takes the record then (and fails
// where it must). valid is a topic known valid, checked once per batch
// rather than per record.
func writeBytesRecord(dst []byte, p int, r *data.SinkRecord, schemas *SchemaEncoder, valid *string) (int, bool) {
	if len(r.Headers) != 0 || r.TimestampType < data.NoTimestampType || r.TimestampType > data.LogAppendTime {
		return p, false
	}
	kk, kb, kref, ok := bytesDataOf(r.KeySchema, r.Key, schemas)
	if !ok {
		return p, false
	}
	vk, vb, vref, ok := bytesDataOf(r.ValueSchema, r.Value, schemas)
	if !ok {
		return p, false
	}
	if p < len(r.Topic)+len(r.OriginalTopic)+len(kb)+len(vb)+bytesRecordSlack ||
		!validTopic(r.Topic, valid) || !validTopic(r.OriginalTopic, valid) {
		return p, false
	}
	end := p
	p = backPlainVarint(dst, p, 11<<3|byte(protowire.VarintType), uint64(r.OriginalOffset))
	p = backPlainVarint(dst, p, 10<<3|byte(protowire.VarintType), uint64(int64(r.OriginalPartition)))
	p = backPlainString(dst, p, 9<<3|byte(protowire.BytesType), r.OriginalTopic)
	p = backBytesData(dst, p, 7<<3|byte(protowire.BytesType), vk, vb, vref)
	p = backBytesData(dst, p, 6<<3|byte(protowire.BytesType), kk, kb, kref)
	ts := int64(noTimestamp)
	if !r.Timestamp.IsZero() {
		ts = r.Timestamp.UnixMilli()
	}
	// TimestampType's values are the protobuf enum's.
	p = backPlainVarint(dst, p, 5<<3|byte(protowire.VarintType), uint64(r.TimestampType))
	p = backPlainVarint(dst, p, 4<<3|byte(protowire.VarintType), uint64(ts))
	p = backPlainVarint(dst, p, 3<<3|byte(protowire.VarintType), uint64(r.Offset))
	p = backPlainVarint(dst, p, 2<<3|byte(protowire.VarintType), uint64(int64(r.Partition)))
	p = backPlainString(dst, p, 1<<3|byte(protowire.BytesType), r.Topic)
	p = backVarint(dst, p, uint64(end-p))
	p--
	dst[p] = 2<<3 | byte(protowire.BytesType)
	return p, true
}

// validTopic reports whether s is valid UTF-8, remembering the last topic
// it checked in valid: a batch's records mostly share one topic string.
func validTopic(s string, valid *string) bool {
	if s == *valid {
		return true
	}
	if !utf8.ValidString(s) {
		return false
	}
	*valid = s
	return true
}

// backBytesData writes a key or value of the shape kind (bytesDataOf) as
// field tag, ending at dst[p], as pollWriter.data does.
func backBytesData(dst []byte, p int, tag byte, kind dataShape, b []byte, ref uint32) int {
	end := p
	switch kind {
	case shapeAbsent:
		return p
	case shapeRaw:
		// A oneof member: written even when empty.
		p = backBytes(dst, p, 2<<3|byte(protowire.BytesType), b)
	default:
		if kind == shapeBytes {
			p = backBytes(dst, p, 4<<3|byte(protowire.BytesType), b)
		}
		// The Value (a oneof member, so present even when empty), then,
		// before it, the schema reference.
		p = backVarint(dst, p, uint64(end-p))
		p--
		dst[p] = 1<<3 | byte(protowire.BytesType)
		p = backPlainVarint(dst, p, 3<<3|byte(protowire.VarintType), uint64(ref))
	}
	p = backVarint(dst, p, uint64(end-p))
	p--
	dst[p] = tag
	return p
}

// backVarint writes x ending at dst[p] and returns where it starts. The
// one-byte case is inlined; tags and most numbers of a record take it.
func backVarint(dst []byte, p int, x uint64) int {
	if x < 1<<7 {
		p--
		dst[p] = byte(x)
		return p
	}
	return backLongVarint(dst, p, x)
}

// backLongVarint is backVarint's other cases, kept out of line so that
// backVarint inlines.
//
//go:noinline
func backLongVarint(dst []byte, p int, x uint64) int {
	if x < 1<<14 { // lengths of values up to 16 KiB
		p -= 2
		b := dst[p : p+2]
		b[0], b[1] = byte(x)|0x80, byte(x>>7)
		return p
	}
	n := protowire.SizeVarint(x)
	p -= n
	b := dst[p : p+n]
	for i := range n - 1 {
		b[i] = byte(x) | 0x80
		x >>= 7
	}
	b[n-1] = byte(x)
	return p
}

// backPlainVarint writes an implicit-presence varint field (nothing for
// 0) whose tag byte is tag.
func backPlainVarint(dst []byte, p int, tag byte, x uint64) int {
	if x == 0 {
		return p
	}
	p = backVarint(dst, p, x)
	p--
	dst[p] = tag
	return p
}

// backBytes writes a length-delimited field, present even when empty.
func backBytes(dst []byte, p int, tag byte, b []byte) int {
	p -= len(b)
	copy(dst[p:], b)
	p = backVarint(dst, p, uint64(len(b)))
	p--
	dst[p] = tag
	return p
}

// backPlainString writes an implicit-presence string field (nothing when
// empty).
func backPlainString(dst []byte, p int, tag byte, s string) int {
	if s == "" {
		return p
	}
	p -= len(s)
	copy(dst[p:], s)
	p = backVarint(dst, p, uint64(len(s)))
	p--
	dst[p] = tag
	return p
}

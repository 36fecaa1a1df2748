package wire

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// SourceBatch is a Poll answer being put together from a source task's
// records. A record is checked and sized when it joins (Add), the way
// EncodeSourceRecords would convert it, its source partition and offset
// written as JSON; the rest of its encoding is written once, when the
// answer is (SharedRegion.PlacePoll, Marshal), straight from the record:
// no generated message is built for it in between.
//
// The bytes are those of Proto's message under deterministic marshalling,
// i.e. EncodeSourceRecords and the hand encoder of fastencode.go: the same
// schema table (SchemaEncoder over the records in order), the same fields
// in the same order. The one way to tell them apart is a map[string]any
// value with several keys, whose entries each encoding writes in Go's map
// order. What the fused writer refuses (invalid UTF-8, which protobuf
// rejects) goes through Proto and protobuf, as before.
//
// A SourceBatch is not safe for concurrent use, and the records must not
// change once added: they are read again when the answer is written.
type SourceBatch struct {
	recs    []*data.SourceRecord
	schemas SchemaEncoder
	// The JSON of every record's source partition and offset, in one
	// buffer; spans holds two per record (start < 0: none).
	js       jsonBuf
	spans    []span
	lastPart map[string]any
	lastSpan span
	// offKey is the key of the last source offset of one key written
	// (haveOffKey), offOpen the JSON that opens such an offset:
	// `{"key":`. See writeOffset.
	offKey     string
	offOpen    []byte
	haveOffKey bool
	// sizes are the records' encoded sizes, so that each is written
	// into its own place front to back (as SinkBatch.sizes).
	sizes []int32
	// size is the encoded size of the schema table and the records.
	size int
}

type span struct{ start, end int }

// SourceBatchMark is a state of a SourceBatch to go back to (Rewind).
type SourceBatchMark struct {
	recs, js, size, table int
	lastPart              map[string]any
	lastSpan              span
}

// maxFirstSeqSize bounds the encoded first_seq field.
const maxFirstSeqSize = tagLen + 10

// Len is the number of records in the batch.
func (b *SourceBatch) Len() int { return len(b.recs) }

// Size is the encoded size of the answer without its first_seq field,
// which takes at most 11 bytes more.
func (b *SourceBatch) Size() int { return b.size }

// Records returns the batch's records, in order; the slice is the batch's.
func (b *SourceBatch) Records() []*data.SourceRecord { return b.recs }

// Grow makes room for n more records, so that adding them allocates less.
func (b *SourceBatch) Grow(n int) {
	if n <= 0 {
		return
	}
	b.recs = slices.Grow(b.recs, n)
	b.spans = slices.Grow(b.spans, 2*n)
	b.sizes = slices.Grow(b.sizes, n)
	// As EncodeSourceRecords: room for a small source offset per record.
	b.js.b = slices.Grow(b.js.b, 32*n)
}

// Mark returns the batch's state, for Rewind.
func (b *SourceBatch) Mark() SourceBatchMark {
	return SourceBatchMark{recs: len(b.recs), js: len(b.js.b), size: b.size, table: len(b.schemas.table),
		lastPart: b.lastPart, lastSpan: b.lastSpan}
}

// Rewind takes the batch back to a state Mark returned, dropping the
// records added since and the schemas only they brought.
func (b *SourceBatch) Rewind(m SourceBatchMark) {
	clear(b.recs[m.recs:])
	b.recs = b.recs[:m.recs]
	b.spans = b.spans[:2*m.recs]
	b.sizes = b.sizes[:m.recs]
	b.js.b = b.js.b[:m.js]
	b.size = m.size
	b.lastPart, b.lastSpan = m.lastPart, m.lastSpan
	b.schemas.truncate(m.table)
}

// Reset empties the batch, keeping its memory for the records of the next
// answer.
func (b *SourceBatch) Reset() { b.Rewind(SourceBatchMark{}) }

// Add appends r if the encoded answer, first_seq included, stays within
// maxBytes; the first record joins whatever its size. It reports whether r
// joined. An error says why r cannot be encoded, in EncodeSourceRecords'
// words (without its "source record i" prefix); the batch is then as it
// was before the call.
func (b *SourceBatch) Add(r *data.SourceRecord, maxBytes int) (bool, error) {
	if r == nil {
		return false, errors.New("nil record")
	}
	m := b.Mark()
	n, err := b.add(r)
	if err != nil {
		b.Rewind(m)
		return false, err
	}
	if len(b.recs) > 0 && b.size+n+maxFirstSeqSize > maxBytes {
		b.Rewind(m)
		return false, nil
	}
	b.size += n
	b.recs = append(b.recs, r)
	return true, nil
}

// add writes r's JSON and sizes the rest; n counts r and the schemas it
// brought into the table.
func (b *SourceBatch) add(r *data.SourceRecord) (n int, err error) {
	sp := span{-1, -1}
	switch {
	case r.SourcePartition == nil:
	case b.lastSpan.start >= 0 && sameMap(r.SourcePartition, b.lastPart):
		// A task commonly gives every record the same partition map.
		sp = b.lastSpan
	default:
		start := len(b.js.b)
		if err := writeJSON(&b.js, r.SourcePartition); err != nil {
			return 0, fmt.Errorf("source partition: %w", err)
		}
		sp = span{start, len(b.js.b)}
		b.lastPart, b.lastSpan = r.SourcePartition, sp
	}
	off := span{-1, -1}
	if r.SourceOffset != nil {
		start := len(b.js.b)
		if err := b.writeOffset(r.SourceOffset); err != nil {
			return 0, fmt.Errorf("source offset: %w", err)
		}
		off = span{start, len(b.js.b)}
	}
	b.spans = append(b.spans, sp, off)
	table := len(b.schemas.table)
	w := pollWriter{schemas: &b.schemas}
	if err := w.sourceRecord(r, b.json(sp), b.json(off)); err != nil {
		return 0, err
	}
	n = -w.p
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("%d bytes encoded, more than a Poll answer may carry", n)
	}
	b.sizes = append(b.sizes, int32(n))
	for _, s := range b.schemas.table[table:] {
		n += sizeLen(proto.Size(s))
	}
	return n, nil
}

// writeOffset writes m as writeJSON does. Source offsets are mostly maps
// of one key, the same key record after record ({"seq": n}); such a map is
// written from a lookup of that key instead of a walk over the map, whose
// start (a random draw) and steps cost more than the rest of the JSON.
func (b *SourceBatch) writeOffset(m map[string]any) error {
	if len(m) != 1 {
		return writeJSON(&b.js, m)
	}
	if b.haveOffKey {
		if v, ok := m[b.offKey]; ok {
			start := len(b.js.b)
			b.js.b = append(b.js.b, b.offOpen...)
			if writeJSON(&b.js, v) == nil {
				b.js.writeByte('}')
				return nil
			}
			// Let writeJSON fail in its own words.
			b.js.b = b.js.b[:start]
		}
	}
	if err := writeJSON(&b.js, m); err != nil {
		return err
	}
	for k := range m {
		open := jsonBuf{b: b.offOpen[:0]}
		open.writeByte('{')
		writeJSONString(&open, k)
		open.writeByte(':')
		b.offKey, b.offOpen, b.haveOffKey = k, open.b, true
	}
	return nil
}

func (b *SourceBatch) json(sp span) []byte {
	if sp.start < 0 {
		return nil
	}
	return b.js.b[sp.start:sp.end]
}

// encodedSize is the size of the answer with first_seq.
func (b *SourceBatch) encodedSize(firstSeq uint64) int {
	return b.size + sizeVarintField(firstSeq)
}

// writeTo writes the answer into dst, of encodedSize bytes; false means
// "use Proto and protobuf" (invalid UTF-8, or records that changed since
// they were added).
func (b *SourceBatch) writeTo(dst []byte, firstSeq uint64) bool {
	// The table, then each record in its place, front to back (within its
	// place a record is written back to front), then first_seq.
	table := len(b.schemas.table)
	p, ok := writeTable(dst, b.schemas.table)
	if !ok {
		return false
	}
	for i, r := range b.recs {
		end := p + int(b.sizes[i])
		if end > len(dst) {
			return false
		}
		w := pollWriter{b: dst[:end], p: end, schemas: &b.schemas}
		if w.sourceRecord(r, b.json(b.spans[2*i]), b.json(b.spans[2*i+1])) != nil || w.bad || w.p != p {
			return false
		}
		p = end
	}
	if len(b.schemas.table) != table {
		return false
	}
	w := pollWriter{b: dst, p: len(dst)}
	w.plainVarint(3, firstSeq)
	return w.p == p
}

// Proto converts the batch into the generated message (EncodeSourceRecords),
// for the inline gRPC answer.
func (b *SourceBatch) Proto(firstSeq uint64) (*pluginv1.PollResponse, error) {
	schemas, recs, err := EncodeSourceRecords(b.recs)
	if err != nil {
		return nil, err
	}
	return &pluginv1.PollResponse{Schemas: schemas, Records: recs, FirstSeq: firstSeq}, nil
}

// Marshal returns the encoded answer: deterministic protobuf of
// Proto(firstSeq).
func (b *SourceBatch) Marshal(firstSeq uint64) ([]byte, error) {
	out := make([]byte, b.encodedSize(firstSeq))
	if b.writeTo(out, firstSeq) {
		return out, nil
	}
	m, err := b.Proto(firstSeq)
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// PlacePoll writes b with first_seq firstSeq at the start of the region,
// as Place writes b.Proto(firstSeq), without building that message. ok is
// false when it does not fit, the region is closed or the batch holds what
// only protobuf writes (invalid UTF-8, which it rejects): answer with
// b.Proto inline then.
func (r *SharedRegion) PlacePoll(b *SourceBatch, firstSeq uint64) (ref *pluginv1.SharedBatch, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	size := b.encodedSize(firstSeq)
	if r.closed || size > len(r.mem) {
		return nil, false
	}
	if !b.writeTo(r.mem[:size], firstSeq) {
		return nil, false
	}
	return &pluginv1.SharedBatch{Offset: 0, Length: uint64(size)}, true
}

// pollWriter walks source records as EncodeSourceRecords converts them and
// the hand encoder writes the result: back to front into b, or, with b nil,
// only counting (p goes below zero by the encoded size) and checking, in
// the order EncodeSourceRecords does, so that the first error is the one
// it would report. Writing never fails midway: running out of room leaves
// p below zero and the rest unwritten, for the caller to see.
type pollWriter struct {
	b       []byte
	p       int
	schemas *SchemaEncoder
	// bad: a string protobuf refuses (invalid UTF-8) was met while writing.
	bad bool
}

func (w *pollWriter) counting() bool { return w.b == nil }

// room moves p back n bytes and returns them to fill; nil when counting or
// out of room.
func (w *pollWriter) room(n int) []byte {
	w.p -= n
	if w.b == nil || w.p < 0 {
		return nil
	}
	return w.b[w.p : w.p+n]
}

func (w *pollWriter) varint(x uint64) {
	n := protowire.SizeVarint(x)
	b := w.room(n)
	if b == nil {
		return
	}
	for i := 0; i < n-1; i++ {
		b[i] = byte(x) | 0x80
		x >>= 7
	}
	b[n-1] = byte(x)
}

// tag writes the tag of a field numbered below 16.
func (w *pollWriter) tag(num protowire.Number, typ protowire.Type) {
	if b := w.room(tagLen); b != nil {
		b[0] = byte(uint64(num)<<3 | uint64(typ))
	}
}

// lenField closes a length-delimited field whose contents end at end.
func (w *pollWriter) lenField(num protowire.Number, end int) {
	w.varint(uint64(end - w.p))
	w.tag(num, protowire.BytesType)
}

func (w *pollWriter) varintField(num protowire.Number, x uint64) {
	w.varint(x)
	w.tag(num, protowire.VarintType)
}

func (w *pollWriter) bytesField(num protowire.Number, v []byte) {
	if b := w.room(len(v)); b != nil {
		copy(b, v)
	}
	w.varint(uint64(len(v)))
	w.tag(num, protowire.BytesType)
}

func (w *pollWriter) stringField(num protowire.Number, s string) {
	if w.b != nil && !utf8.ValidString(s) {
		w.bad = true
	}
	if b := w.room(len(s)); b != nil {
		copy(b, s)
	}
	w.varint(uint64(len(s)))
	w.tag(num, protowire.BytesType)
}

// Implicit-presence fields: left out when zero.
func (w *pollWriter) plainVarint(num protowire.Number, x uint64) {
	if x != 0 {
		w.varintField(num, x)
	}
}

func (w *pollWriter) plainBytes(num protowire.Number, b []byte) {
	if len(b) != 0 {
		w.bytesField(num, b)
	}
}

func (w *pollWriter) plainString(num protowire.Number, s string) {
	if s != "" {
		w.stringField(num, s)
	}
}

// at returns the index to visit j-th of n elements: in order when
// counting (errors come in EncodeValue's order), in reverse when writing
// back to front.
func (w *pollWriter) at(j, n int) int {
	if w.counting() {
		return j
	}
	return n - 1 - j
}

// sourceRecord is field 2 of a PollResponse: encodeSourceRecord and
// backWriter.sourceRecord in one, given the record's JSON.
func (w *pollWriter) sourceRecord(r *data.SourceRecord, part, off []byte) error {
	if r.Transaction < 0 || int(r.Transaction) >= len(transactionToProto) {
		return fmt.Errorf("invalid transaction boundary %d", r.Transaction)
	}
	end := w.p
	w.plainVarint(9, uint64(int64(transactionToProto[r.Transaction])))
	if w.counting() {
		if err := w.data(5, r.KeySchema, r.Key); err != nil {
			return fmt.Errorf("key: %w", err)
		}
		if err := w.data(6, r.ValueSchema, r.Value); err != nil {
			return fmt.Errorf("value: %w", err)
		}
	}
	if err := w.headers(8, r.Headers); err != nil {
		return err
	}
	if !r.Timestamp.IsZero() {
		w.varintField(7, uint64(r.Timestamp.UnixMilli()))
	}
	if !w.counting() {
		if err := w.data(6, r.ValueSchema, r.Value); err != nil {
			return err
		}
		if err := w.data(5, r.KeySchema, r.Key); err != nil {
			return err
		}
	}
	if r.Partition != data.NoPartition {
		w.varintField(4, uint64(int64(r.Partition)))
	}
	w.plainString(3, r.Topic)
	w.plainBytes(2, off)
	w.plainBytes(1, part)
	w.lenField(2, end)
	return nil
}

// data is a Data field as encodeData builds it: raw bytes, nothing for a
// null without a schema, else a Value and its schema's table reference.
// headers writes hs as field num, one Header message each, in the order
// the writer's pass needs (w.at).
func (w *pollWriter) headers(num protowire.Number, hs data.Headers) error {
	for j := range hs {
		h := &hs[w.at(j, len(hs))]
		hend := w.p
		if err := w.data(2, h.Schema, h.Value); err != nil {
			return fmt.Errorf("header %s: %w", h.Key, err)
		}
		w.plainString(1, h.Key)
		w.lenField(num, hend)
	}
	return nil
}

func (w *pollWriter) data(num protowire.Number, s *data.Schema, v any) error {
	end := w.p
	if raw, ok := v.(data.Raw); ok {
		// A oneof member: written even when empty.
		w.bytesField(2, raw)
		w.lenField(num, end)
		return nil
	}
	if v == nil && s == nil {
		return nil
	}
	ref, err := w.schemas.Ref(s)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	// Protobuf writes the oneof (value) after the schema reference.
	if err := w.value(s, v); err != nil {
		return err
	}
	w.lenField(1, end)
	w.plainVarint(3, uint64(ref))
	w.lenField(num, end)
	return nil
}

// nested is a ValueList element (num 1) or a MapEntry key or value as
// encodeNested builds it: a null is an empty Value, refused when s
// requires a value and has no default.
func (w *pollWriter) nested(num protowire.Number, s *data.Schema, v any) error {
	if v == nil {
		if err := checkNull(s); err != nil {
			return err
		}
	}
	end := w.p
	if err := w.value(s, v); err != nil {
		return err
	}
	w.lenField(num, end)
	return nil
}

// value writes the contents of the Value EncodeValue(s, v) returns (no
// field at all for a null) and fails as it does.
func (w *pollWriter) value(s *data.Schema, v any) error {
	if v == nil {
		return nil
	}
	if s == nil {
		return w.schemaless(v)
	}
	if s.Name != "" && data.IsLogical(s) {
		if t, ok := v.(time.Time); ok && s.Name == data.TimestampName && s.Type == data.Int64 {
			// ToPhysical's answer, without boxing the int64.
			w.intValue(t.UnixMilli())
			return nil
		}
		pv, err := data.ToPhysical(s, v)
		if err != nil {
			return err
		}
		v = pv
	}
	switch s.Type {
	case data.Int8:
		if x, ok := v.(int8); ok {
			w.intValue(int64(x))
			return nil
		}
	case data.Int16:
		if x, ok := v.(int16); ok {
			w.intValue(int64(x))
			return nil
		}
	case data.Int32:
		if x, ok := v.(int32); ok {
			w.intValue(int64(x))
			return nil
		}
	case data.Int64:
		if x, ok := v.(int64); ok {
			w.intValue(x)
			return nil
		}
	case data.Float32:
		if x, ok := v.(float32); ok {
			w.floatValue(float64(x))
			return nil
		}
	case data.Float64:
		if x, ok := v.(float64); ok {
			w.floatValue(x)
			return nil
		}
	case data.Boolean:
		if x, ok := v.(bool); ok {
			w.boolValue(x)
			return nil
		}
	case data.String:
		if x, ok := v.(string); ok {
			w.stringField(5, x)
			return nil
		}
	case data.Bytes:
		if x, ok := v.([]byte); ok {
			w.bytesField(4, x)
			return nil
		}
	case data.Array:
		if x, ok := v.([]any); ok {
			return w.array(s.ValueSchema, x)
		}
	case data.MapType:
		switch x := v.(type) {
		case map[string]any:
			return w.stringMap(s.KeySchema, s.ValueSchema, x)
		case data.Map:
			return w.mapValue(s.KeySchema, s.ValueSchema, x)
		}
	case data.StructType:
		if x, ok := v.(*data.Struct); ok {
			return w.structValue(s, x)
		}
	default:
		return fmt.Errorf("invalid schema type %s", s.Type)
	}
	return fmt.Errorf("value of type %T does not match schema type %s", v, s.Type)
}

func (w *pollWriter) intValue(x int64) { w.varintField(2, protowire.EncodeZigZag(x)) }

func (w *pollWriter) boolValue(x bool) {
	if x {
		w.varintField(1, 1)
	} else {
		w.varintField(1, 0)
	}
}

func (w *pollWriter) floatValue(x float64) {
	if b := w.room(8); b != nil {
		bits := math.Float64bits(x)
		for i := range 8 {
			b[i] = byte(bits >> (8 * i))
		}
	}
	w.tag(3, protowire.Fixed64Type)
}

func (w *pollWriter) array(es *data.Schema, arr []any) error {
	end := w.p
	for j := range arr {
		i := w.at(j, len(arr))
		if err := w.nested(1, es, arr[i]); err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
	}
	w.lenField(6, end)
	return nil
}

// entry writes one MapEntry: both key and value, an empty Value for a
// null, as encodeStringMap and encodeMap fill them.
func (w *pollWriter) entry(ks, vs *data.Schema, k, v any) (keyErr, valueErr error) {
	end := w.p
	if w.counting() {
		if err := w.nested(1, ks, k); err != nil {
			return err, nil
		}
		if err := w.nested(2, vs, v); err != nil {
			return nil, err
		}
	} else {
		if err := w.nested(2, vs, v); err != nil {
			return nil, err
		}
		if err := w.nested(1, ks, k); err != nil {
			return err, nil
		}
	}
	w.lenField(1, end)
	return nil, nil
}

func (w *pollWriter) stringMap(ks, vs *data.Schema, m map[string]any) error {
	end := w.p
	for k, v := range m {
		kerr, verr := w.entry(ks, vs, k, v)
		if kerr != nil {
			return fmt.Errorf("map key %q: %w", k, kerr)
		}
		if verr != nil {
			return fmt.Errorf("map value for key %q: %w", k, verr)
		}
	}
	w.lenField(7, end)
	return nil
}

func (w *pollWriter) mapValue(ks, vs *data.Schema, m data.Map) error {
	end := w.p
	for j := range m {
		i := w.at(j, len(m))
		kerr, verr := w.entry(ks, vs, m[i].Key, m[i].Value)
		if kerr != nil {
			return fmt.Errorf("map entry %d key: %w", i, kerr)
		}
		if verr != nil {
			return fmt.Errorf("map entry %d value: %w", i, verr)
		}
	}
	w.lenField(7, end)
	return nil
}

func (w *pollWriter) structValue(s *data.Schema, st *data.Struct) error {
	if ss := st.Schema(); ss != s && !data.StructSchemaMatches(ss, s) {
		return errors.New("struct's schema does not match the schema it is sent with")
	}
	vals := st.Values()
	end := w.p
	for j := range vals {
		i := w.at(j, len(vals))
		f := &s.Fields[i]
		if err := w.nested(1, f.Schema, vals[i]); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	w.lenField(8, end)
	return nil
}

// schemaless is encodeSchemalessInto for a non-null v.
func (w *pollWriter) schemaless(v any) error {
	switch x := v.(type) {
	case int8:
		w.intValue(int64(x))
	case int16:
		w.intValue(int64(x))
	case int32:
		w.intValue(int64(x))
	case int64:
		w.intValue(x)
	case int:
		w.intValue(int64(x))
	case float32:
		w.floatValue(float64(x))
	case float64:
		w.floatValue(x)
	case bool:
		w.boolValue(x)
	case string:
		w.stringField(5, x)
	case []byte:
		w.bytesField(4, x)
	case []any:
		return w.array(nil, x)
	case map[string]any:
		return w.stringMap(nil, nil, x)
	case data.Map:
		return w.mapValue(nil, nil, x)
	case *data.Struct:
		return errors.New("struct value without a schema: send it with its struct schema")
	case data.Decimal, time.Time:
		return fmt.Errorf("logical value of type %T without a schema: send it with its logical schema", v)
	case data.Raw:
		return errors.New("data.Raw is only valid as a whole record key, value or header value")
	default:
		return fmt.Errorf("unsupported schemaless value of type %T", v)
	}
	return nil
}

package wire

import (
	"fmt"
	"reflect"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// batchEncoder encodes one batch: its schema table, and slabs the batch's
// Data messages are carved from, so a record's key and value cost no
// allocation of their own.
type batchEncoder struct {
	schemas SchemaEncoder
	datas   []pluginv1.Data
	raws    []pluginv1.Data_Raw
	values  []pluginv1.Data_Value
	// Slabs for the top-level bytes and string values that the byte array
	// and string converters produce on the sink side.
	vals    []pluginv1.Value
	bytesV  []pluginv1.Value_BytesValue
	stringV []pluginv1.Value_StringValue
	// chunk is the slab size: about one of each per record.
	chunk int
}

// plainValue encodes a top-level BYTES or STRING value from the slabs; ok is
// false for anything else (logical types included), which EncodeValue
// handles.
func (e *batchEncoder) plainValue(s *data.Schema, v any) (*pluginv1.Value, bool) {
	if s.Name != "" {
		return nil, false
	}
	var p *pluginv1.Value
	take := func() *pluginv1.Value {
		if len(e.vals) == 0 {
			e.vals = make([]pluginv1.Value, e.chunk)
		}
		p := &e.vals[0]
		e.vals = e.vals[1:]
		return p
	}
	switch x := v.(type) {
	case []byte:
		if s.Type != data.Bytes {
			return nil, false
		}
		if len(e.bytesV) == 0 {
			e.bytesV = make([]pluginv1.Value_BytesValue, e.chunk)
		}
		k := &e.bytesV[0]
		e.bytesV = e.bytesV[1:]
		k.BytesValue = x
		p = take()
		p.Kind = k
	case string:
		if s.Type != data.String {
			return nil, false
		}
		if len(e.stringV) == 0 {
			e.stringV = make([]pluginv1.Value_StringValue, e.chunk)
		}
		k := &e.stringV[0]
		e.stringV = e.stringV[1:]
		k.StringValue = x
		p = take()
		p.Kind = k
	default:
		return nil, false
	}
	return p, true
}

func newBatchEncoder(records int) *batchEncoder {
	return &batchEncoder{chunk: min(max(records, 16), 4096)}
}

func (e *batchEncoder) newData() *pluginv1.Data {
	if len(e.datas) == 0 {
		e.datas = make([]pluginv1.Data, 2*e.chunk)
	}
	d := &e.datas[0]
	e.datas = e.datas[1:]
	return d
}

func (e *batchEncoder) newRaw(b []byte) *pluginv1.Data_Raw {
	if len(e.raws) == 0 {
		e.raws = make([]pluginv1.Data_Raw, e.chunk)
	}
	r := &e.raws[0]
	e.raws = e.raws[1:]
	r.Raw = b
	return r
}

func (e *batchEncoder) newValue(v *pluginv1.Value) *pluginv1.Data_Value {
	if len(e.values) == 0 {
		e.values = make([]pluginv1.Data_Value, e.chunk)
	}
	r := &e.values[0]
	e.values = e.values[1:]
	r.Value = v
	return r
}

// encodeData converts a record key, value or header value. A data.Raw value
// travels as Data.raw with no schema; a nil value with no schema is an
// absent Data; anything else is a Value with its schema reference.
func (e *batchEncoder) encodeData(s *data.Schema, v any) (*pluginv1.Data, error) {
	if raw, ok := v.(data.Raw); ok {
		if raw == nil {
			raw = data.Raw{}
		}
		d := e.newData()
		d.Kind = e.newRaw(raw)
		return d, nil
	}
	if v == nil && s == nil {
		return nil, nil
	}
	ref, err := e.schemas.Ref(s)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	pv, ok := (*pluginv1.Value)(nil), false
	if s != nil {
		pv, ok = e.plainValue(s, v)
	}
	if !ok {
		if pv, err = EncodeValue(s, v); err != nil {
			return nil, err
		}
	}
	d := e.newData()
	d.Kind, d.Schema = e.newValue(pv), ref
	return d, nil
}

func decodeData(dec *SchemaDecoder, p *pluginv1.Data) (*data.Schema, any, error) {
	if p == nil {
		return nil, nil, nil
	}
	switch k := p.Kind.(type) {
	case *pluginv1.Data_Raw:
		if k.Raw == nil {
			return nil, data.Raw{}, nil
		}
		return nil, data.Raw(k.Raw), nil
	case *pluginv1.Data_Value:
		s, err := dec.Schema(p.Schema)
		if err != nil {
			return nil, nil, err
		}
		v, err := DecodeValue(s, k.Value)
		if err != nil {
			return nil, nil, err
		}
		return s, v, nil
	default:
		// Neither kind: a null with (possibly) a schema.
		s, err := dec.Schema(p.Schema)
		return s, nil, err
	}
}

func (e *batchEncoder) encodeHeaders(hs data.Headers) ([]*pluginv1.Header, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	out := make([]*pluginv1.Header, len(hs))
	for i, h := range hs {
		d, err := e.encodeData(h.Schema, h.Value)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", h.Key, err)
		}
		out[i] = &pluginv1.Header{Key: h.Key, Value: d}
	}
	return out, nil
}

func decodeHeaders(dec *SchemaDecoder, ps []*pluginv1.Header) (data.Headers, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	out := make(data.Headers, len(ps))
	for i, p := range ps {
		s, v, err := decodeData(dec, p.GetValue())
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", p.GetKey(), err)
		}
		out[i] = data.Header{Key: p.GetKey(), Schema: s, Value: v}
	}
	return out, nil
}

// encodeRecord fills what source and sink records share.
func (e *batchEncoder) encodeRecord(r *data.Record) (key, value *pluginv1.Data, hs []*pluginv1.Header, err error) {
	if key, err = e.encodeData(r.KeySchema, r.Key); err != nil {
		return nil, nil, nil, fmt.Errorf("key: %w", err)
	}
	if value, err = e.encodeData(r.ValueSchema, r.Value); err != nil {
		return nil, nil, nil, fmt.Errorf("value: %w", err)
	}
	if hs, err = e.encodeHeaders(r.Headers); err != nil {
		return nil, nil, nil, err
	}
	return key, value, hs, nil
}

func decodeRecord(dec *SchemaDecoder, r *data.Record, key, value *pluginv1.Data, hs []*pluginv1.Header) error {
	var err error
	if r.KeySchema, r.Key, err = decodeData(dec, key); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if r.ValueSchema, r.Value, err = decodeData(dec, value); err != nil {
		return fmt.Errorf("value: %w", err)
	}
	if r.Headers, err = decodeHeaders(dec, hs); err != nil {
		return err
	}
	return nil
}

var transactionToProto = [...]pluginv1.TransactionBoundary{
	data.NoBoundary:  pluginv1.TransactionBoundary_TRANSACTION_BOUNDARY_UNSPECIFIED,
	data.CommitAfter: pluginv1.TransactionBoundary_TRANSACTION_BOUNDARY_COMMIT,
	data.AbortAfter:  pluginv1.TransactionBoundary_TRANSACTION_BOUNDARY_ABORT,
}

// EncodeSourceRecords converts a batch of source records into the batch's
// schema table and records. Records, their Data messages and the JSON of
// their source partitions and offsets are carved from a few batch-wide
// allocations instead of several per record: that keeps the poll path fast.
func EncodeSourceRecords(recs []*data.SourceRecord) ([]*pluginv1.Schema, []*pluginv1.SourceRecord, error) {
	enc := newBatchEncoder(len(recs))
	store := make([]pluginv1.SourceRecord, len(recs))
	out := make([]*pluginv1.SourceRecord, len(recs))
	// Every record's partition and offset JSON goes into one buffer; spans
	// are turned into slices once it has stopped growing.
	type span struct{ start, end int }
	spans := make([]span, 2*len(recs))
	js := jsonBuf{b: make([]byte, 0, 32*len(recs))}
	// A task commonly gives every record the same partition map: encode it
	// once per batch.
	var lastPart map[string]any
	lastSpan := span{-1, -1}
	for i, r := range recs {
		if r == nil {
			return nil, nil, fmt.Errorf("source record %d: nil record", i)
		}
		p := &store[i]
		switch {
		case r.SourcePartition == nil:
			spans[2*i] = span{-1, -1}
		case lastSpan.start >= 0 && sameMap(r.SourcePartition, lastPart):
			spans[2*i] = lastSpan
		default:
			start := len(js.b)
			if err := writeJSON(&js, r.SourcePartition); err != nil {
				return nil, nil, fmt.Errorf("source record %d (topic %s): source partition: %w", i, r.Topic, err)
			}
			spans[2*i] = span{start, len(js.b)}
			lastPart, lastSpan = r.SourcePartition, spans[2*i]
		}
		spans[2*i+1] = span{-1, -1}
		if r.SourceOffset != nil {
			start := len(js.b)
			if err := writeJSON(&js, r.SourceOffset); err != nil {
				return nil, nil, fmt.Errorf("source record %d (topic %s): source offset: %w", i, r.Topic, err)
			}
			spans[2*i+1] = span{start, len(js.b)}
		}
		if err := encodeSourceRecord(enc, r, p); err != nil {
			return nil, nil, fmt.Errorf("source record %d (topic %s): %w", i, r.Topic, err)
		}
		out[i] = p
	}
	for i := range store {
		if sp := spans[2*i]; sp.start >= 0 {
			store[i].SourcePartition = js.b[sp.start:sp.end:sp.end]
		}
		if sp := spans[2*i+1]; sp.start >= 0 {
			store[i].SourceOffset = js.b[sp.start:sp.end:sp.end]
		}
	}
	return enc.schemas.Schemas(), out, nil
}

// sameMap reports whether a and b are the same map (not merely equal).
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// encodeSourceRecord fills everything but the source partition and offset.
func encodeSourceRecord(enc *batchEncoder, r *data.SourceRecord, p *pluginv1.SourceRecord) error {
	var err error
	p.Topic = r.Topic
	if r.Partition != data.NoPartition {
		part := r.Partition
		p.KafkaPartition = &part
	}
	if !r.Timestamp.IsZero() {
		ms := r.Timestamp.UnixMilli()
		p.TimestampMs = &ms
	}
	if r.Transaction < 0 || int(r.Transaction) >= len(transactionToProto) {
		return fmt.Errorf("invalid transaction boundary %d", r.Transaction)
	}
	p.Transaction = transactionToProto[r.Transaction]
	p.Key, p.Value, p.Headers, err = enc.encodeRecord(&r.Record)
	return err
}

// DecodeSourceRecords is the inverse of EncodeSourceRecords.
func DecodeSourceRecords(schemas []*pluginv1.Schema, recs []*pluginv1.SourceRecord) ([]*data.SourceRecord, error) {
	return decodeSourceRecords(schemas, recs, true)
}

// decodeSourceRecords is DecodeSourceRecords; without coords it leaves the
// source partitions and offsets alone (the records' maps stay nil), as the
// worker wants them (PollBatch).
func decodeSourceRecords(schemas []*pluginv1.Schema, recs []*pluginv1.SourceRecord, coords bool) ([]*data.SourceRecord, error) {
	dec, err := NewSchemaDecoder(schemas)
	if err != nil {
		return nil, err
	}
	store := make([]data.SourceRecord, len(recs))
	out := make([]*data.SourceRecord, len(recs))
	for i, p := range recs {
		r := &store[i]
		if err := decodeSourceRecord(dec, p, r, coords); err != nil {
			return nil, fmt.Errorf("source record %d (topic %s): %w", i, p.GetTopic(), err)
		}
		out[i] = r
	}
	return out, nil
}

func decodeSourceRecord(dec *SchemaDecoder, p *pluginv1.SourceRecord, r *data.SourceRecord, coords bool) error {
	if p == nil {
		return fmt.Errorf("nil record")
	}
	var err error
	if coords {
		if r.SourcePartition, err = DecodeJSONMap(p.SourcePartition); err != nil {
			return fmt.Errorf("source partition: %w", err)
		}
		if r.SourceOffset, err = DecodeJSONMap(p.SourceOffset); err != nil {
			return fmt.Errorf("source offset: %w", err)
		}
	}
	r.Topic = p.Topic
	r.Partition = data.NoPartition
	if p.KafkaPartition != nil {
		r.Partition = *p.KafkaPartition
	}
	if p.TimestampMs != nil {
		r.Timestamp = time.UnixMilli(*p.TimestampMs).UTC()
	}
	switch p.Transaction {
	case pluginv1.TransactionBoundary_TRANSACTION_BOUNDARY_UNSPECIFIED:
		r.Transaction = data.NoBoundary
	case pluginv1.TransactionBoundary_TRANSACTION_BOUNDARY_COMMIT:
		r.Transaction = data.CommitAfter
	case pluginv1.TransactionBoundary_TRANSACTION_BOUNDARY_ABORT:
		r.Transaction = data.AbortAfter
	default:
		return fmt.Errorf("unknown transaction boundary %v", p.Transaction)
	}
	return decodeRecord(dec, &r.Record, p.Key, p.Value, p.Headers)
}

// noTimestamp is Kafka's "no timestamp" (RecordBatch.NO_TIMESTAMP); a sink
// record with a zero Timestamp carries it in timestamp_ms.
const noTimestamp = -1

// EncodeSinkRecords converts a batch of sink records.
func EncodeSinkRecords(recs []*data.SinkRecord) ([]*pluginv1.Schema, []*pluginv1.SinkRecord, error) {
	enc := newBatchEncoder(len(recs))
	store := make([]pluginv1.SinkRecord, len(recs))
	out := make([]*pluginv1.SinkRecord, len(recs))
	for i, r := range recs {
		if r == nil {
			return nil, nil, fmt.Errorf("sink record %d: nil record", i)
		}
		p := &store[i]
		p.Topic = r.Topic
		p.Partition = r.Partition
		p.Offset = r.Offset
		p.TimestampMs = noTimestamp
		if !r.Timestamp.IsZero() {
			p.TimestampMs = r.Timestamp.UnixMilli()
		}
		switch r.TimestampType {
		case data.NoTimestampType:
			p.TimestampType = pluginv1.TimestampType_TIMESTAMP_TYPE_UNSPECIFIED
		case data.CreateTime:
			p.TimestampType = pluginv1.TimestampType_TIMESTAMP_TYPE_CREATE_TIME
		case data.LogAppendTime:
			p.TimestampType = pluginv1.TimestampType_TIMESTAMP_TYPE_LOG_APPEND_TIME
		default:
			return nil, nil, fmt.Errorf("sink record %d (%s-%d@%d): invalid timestamp type %d", i, r.Topic, r.Partition, r.Offset, r.TimestampType)
		}
		p.OriginalTopic = r.OriginalTopic
		p.OriginalPartition = r.OriginalPartition
		p.OriginalOffset = r.OriginalOffset
		var err error
		if p.Key, p.Value, p.Headers, err = enc.encodeRecord(&r.Record); err != nil {
			return nil, nil, fmt.Errorf("sink record %d (%s-%d@%d): %w", i, r.Topic, r.Partition, r.Offset, err)
		}
		out[i] = p
	}
	return enc.schemas.Schemas(), out, nil
}

// DecodeSinkRecords is the inverse of EncodeSinkRecords.
func DecodeSinkRecords(schemas []*pluginv1.Schema, recs []*pluginv1.SinkRecord) ([]*data.SinkRecord, error) {
	dec, err := NewSchemaDecoder(schemas)
	if err != nil {
		return nil, err
	}
	store := make([]data.SinkRecord, len(recs))
	out := make([]*data.SinkRecord, len(recs))
	for i, p := range recs {
		if p == nil {
			return nil, fmt.Errorf("sink record %d: nil record", i)
		}
		r := &store[i]
		r.Topic = p.Topic
		r.Partition = p.Partition
		r.Offset = p.Offset
		if p.TimestampMs != noTimestamp {
			r.Timestamp = time.UnixMilli(p.TimestampMs).UTC()
		}
		switch p.TimestampType {
		case pluginv1.TimestampType_TIMESTAMP_TYPE_UNSPECIFIED:
			r.TimestampType = data.NoTimestampType
		case pluginv1.TimestampType_TIMESTAMP_TYPE_CREATE_TIME:
			r.TimestampType = data.CreateTime
		case pluginv1.TimestampType_TIMESTAMP_TYPE_LOG_APPEND_TIME:
			r.TimestampType = data.LogAppendTime
		default:
			return nil, fmt.Errorf("sink record %d (%s-%d@%d): unknown timestamp type %v", i, p.Topic, p.Partition, p.Offset, p.TimestampType)
		}
		r.OriginalTopic = p.OriginalTopic
		r.OriginalPartition = p.OriginalPartition
		r.OriginalOffset = p.OriginalOffset
		if err := decodeRecord(dec, &r.Record, p.Key, p.Value, p.Headers); err != nil {
			return nil, fmt.Errorf("sink record %d (%s-%d@%d): %w", i, p.Topic, p.Partition, p.Offset, err)
		}
		out[i] = r
	}
	return out, nil
}

package wire

import (
	"fmt"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// encodeData converts a record key, value or header value. A data.Raw value
// travels as Data.raw with no schema; a nil value with no schema is an
// absent Data; anything else is a Value with its schema reference.
func encodeData(enc *SchemaEncoder, s *data.Schema, v any) (*pluginv1.Data, error) {
	if raw, ok := v.(data.Raw); ok {
		if raw == nil {
			raw = data.Raw{}
		}
		return &pluginv1.Data{Kind: &pluginv1.Data_Raw{Raw: raw}}, nil
	}
	if v == nil && s == nil {
		return nil, nil
	}
	ref, err := enc.Ref(s)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	pv, err := EncodeValue(s, v)
	if err != nil {
		return nil, err
	}
	return &pluginv1.Data{Kind: &pluginv1.Data_Value{Value: pv}, Schema: ref}, nil
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

func encodeHeaders(enc *SchemaEncoder, hs data.Headers) ([]*pluginv1.Header, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	out := make([]*pluginv1.Header, len(hs))
	for i, h := range hs {
		d, err := encodeData(enc, h.Schema, h.Value)
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
func encodeRecord(enc *SchemaEncoder, r *data.Record) (key, value *pluginv1.Data, hs []*pluginv1.Header, err error) {
	if key, err = encodeData(enc, r.KeySchema, r.Key); err != nil {
		return nil, nil, nil, fmt.Errorf("key: %w", err)
	}
	if value, err = encodeData(enc, r.ValueSchema, r.Value); err != nil {
		return nil, nil, nil, fmt.Errorf("value: %w", err)
	}
	if hs, err = encodeHeaders(enc, r.Headers); err != nil {
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
// schema table and records. Records are stored contiguously: one allocation
// for the batch instead of one per record keeps the poll path fast.
func EncodeSourceRecords(recs []*data.SourceRecord) ([]*pluginv1.Schema, []*pluginv1.SourceRecord, error) {
	var enc SchemaEncoder
	store := make([]pluginv1.SourceRecord, len(recs))
	out := make([]*pluginv1.SourceRecord, len(recs))
	for i, r := range recs {
		if r == nil {
			return nil, nil, fmt.Errorf("source record %d: nil record", i)
		}
		p := &store[i]
		if err := encodeSourceRecord(&enc, r, p); err != nil {
			return nil, nil, fmt.Errorf("source record %d (topic %s): %w", i, r.Topic, err)
		}
		out[i] = p
	}
	return enc.Schemas(), out, nil
}

func encodeSourceRecord(enc *SchemaEncoder, r *data.SourceRecord, p *pluginv1.SourceRecord) error {
	var err error
	if p.SourcePartition, err = EncodeJSONMap(r.SourcePartition); err != nil {
		return fmt.Errorf("source partition: %w", err)
	}
	if p.SourceOffset, err = EncodeJSONMap(r.SourceOffset); err != nil {
		return fmt.Errorf("source offset: %w", err)
	}
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
	p.Key, p.Value, p.Headers, err = encodeRecord(enc, &r.Record)
	return err
}

// DecodeSourceRecords is the inverse of EncodeSourceRecords.
func DecodeSourceRecords(schemas []*pluginv1.Schema, recs []*pluginv1.SourceRecord) ([]*data.SourceRecord, error) {
	dec, err := NewSchemaDecoder(schemas)
	if err != nil {
		return nil, err
	}
	store := make([]data.SourceRecord, len(recs))
	out := make([]*data.SourceRecord, len(recs))
	for i, p := range recs {
		r := &store[i]
		if err := decodeSourceRecord(dec, p, r); err != nil {
			return nil, fmt.Errorf("source record %d (topic %s): %w", i, p.GetTopic(), err)
		}
		out[i] = r
	}
	return out, nil
}

func decodeSourceRecord(dec *SchemaDecoder, p *pluginv1.SourceRecord, r *data.SourceRecord) error {
	if p == nil {
		return fmt.Errorf("nil record")
	}
	var err error
	if r.SourcePartition, err = DecodeJSONMap(p.SourcePartition); err != nil {
		return fmt.Errorf("source partition: %w", err)
	}
	if r.SourceOffset, err = DecodeJSONMap(p.SourceOffset); err != nil {
		return fmt.Errorf("source offset: %w", err)
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
	var enc SchemaEncoder
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
		if p.Key, p.Value, p.Headers, err = encodeRecord(&enc, &r.Record); err != nil {
			return nil, nil, fmt.Errorf("sink record %d (%s-%d@%d): %w", i, r.Topic, r.Partition, r.Offset, err)
		}
		out[i] = p
	}
	return enc.Schemas(), out, nil
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

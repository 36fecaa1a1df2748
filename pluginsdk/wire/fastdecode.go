package wire

import (
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// The data path's two large messages, a Poll answer (read by the worker)
// and a Put request (read by the SDK), are decoded by hand instead of by
// protobuf's reflection-driven unmarshal, which costs about ten
// allocations and a copy of every bytes field per record. The hand decoder
// reads the same wire bytes into the same generated types, with two
// differences in how, not what:
//
//   - bytes and string fields alias the buffer (strings through
//     unsafe.String, each slice capped at its length so an append cannot
//     run into the next field). The buffer is therefore the message's own:
//     the codec hands these messages a fresh copy of what gRPC received,
//     never a pooled buffer, and the garbage collector frees it once no
//     record refers to it.
//   - records, their Data and Value messages, Value kinds and optional
//     scalars come from a few slabs per batch.
//
// It accepts only what it knows: a field it does not expect, a wire type
// that differs from the schema's, a singular message field or oneof member
// seen twice (which protobuf merges), invalid UTF-8 in a string, anything
// malformed. On any of these it reports false and the codec runs
// proto.Unmarshal on the same bytes, so errors and unknown fields behave
// exactly as before. Schemas (once per batch) and Values other than a
// top-level bytes or string (structs, arrays, maps, numbers) go through
// proto.Unmarshal of their sub-message, which gives the same result as
// decoding them in place.

// fastDecoder holds the slabs of one message.
type fastDecoder struct {
	*batchEncoder
	int32s  []int32
	int64s  []int64
	headers []pluginv1.Header
}

func newFastDecoder(records int) *fastDecoder {
	return &fastDecoder{batchEncoder: newBatchEncoder(records)}
}

// aliasString returns b as a string without copying; ok is false for
// invalid UTF-8, which protobuf rejects for proto3 strings.
func aliasString(b []byte) (string, bool) {
	if len(b) == 0 {
		return "", true
	}
	if !utf8.Valid(b) {
		return "", false
	}
	return unsafe.String(&b[0], len(b)), true
}

// capped returns b with its capacity cut to its length.
func capped(b []byte) []byte { return b[:len(b):len(b)] }

// plainBytes is a proto3 bytes field outside a oneof: empty reads as nil,
// as protobuf reads it.
func plainBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return capped(b)
}

// field reads one tag and value. For VarintType v holds the value; for
// BytesType sub holds the payload. n < 0 on malformed input; other wire
// types are reported with their type and ok false.
func field(b []byte) (num protowire.Number, typ protowire.Type, v uint64, sub []byte, n int, ok bool) {
	num, typ, tn := protowire.ConsumeTag(b)
	if tn < 0 {
		return 0, 0, 0, nil, -1, false
	}
	switch typ {
	case protowire.VarintType:
		x, vn := protowire.ConsumeVarint(b[tn:])
		if vn < 0 {
			return 0, 0, 0, nil, -1, false
		}
		return num, typ, x, nil, tn + vn, true
	case protowire.BytesType:
		s, sn := protowire.ConsumeBytes(b[tn:])
		if sn < 0 {
			return 0, 0, 0, nil, -1, false
		}
		return num, typ, 0, s, tn + sn, true
	}
	return num, typ, 0, nil, -1, false
}

// countRecords counts the occurrences of field 2 (records in both
// messages), so the record slab is allocated once.
func countRecords(b []byte) (int, bool) {
	n := 0
	for len(b) > 0 {
		num, _, l := protowire.ConsumeField(b)
		if l < 0 {
			return 0, false
		}
		if num == 2 {
			n++
		}
		b = b[l:]
	}
	return n, true
}

func (d *fastDecoder) newInt32(x int32) *int32 {
	if len(d.int32s) == 0 {
		d.int32s = make([]int32, d.chunk)
	}
	p := &d.int32s[0]
	d.int32s = d.int32s[1:]
	*p = x
	return p
}

func (d *fastDecoder) newInt64(x int64) *int64 {
	if len(d.int64s) == 0 {
		d.int64s = make([]int64, d.chunk)
	}
	p := &d.int64s[0]
	d.int64s = d.int64s[1:]
	*p = x
	return p
}

func (d *fastDecoder) newHeader() *pluginv1.Header {
	if len(d.headers) == 0 {
		d.headers = make([]pluginv1.Header, d.chunk)
	}
	h := &d.headers[0]
	d.headers = d.headers[1:]
	return h
}

// value decodes a Value: a lone bytes_value or string_value from the
// slabs, anything else through proto.Unmarshal.
func (d *fastDecoder) value(b []byte) (*pluginv1.Value, bool) {
	num, typ, _, sub, n, ok := field(b)
	if ok && n == len(b) && typ == protowire.BytesType {
		switch num {
		case 4:
			if len(d.bytesV) == 0 {
				d.bytesV = make([]pluginv1.Value_BytesValue, d.chunk)
			}
			k := &d.bytesV[0]
			d.bytesV = d.bytesV[1:]
			k.BytesValue = capped(sub)
			p := d.newVal()
			p.Kind = k
			return p, true
		case 5:
			s, ok := aliasString(sub)
			if !ok {
				return nil, false
			}
			if len(d.stringV) == 0 {
				d.stringV = make([]pluginv1.Value_StringValue, d.chunk)
			}
			k := &d.stringV[0]
			d.stringV = d.stringV[1:]
			k.StringValue = s
			p := d.newVal()
			p.Kind = k
			return p, true
		}
	}
	v := new(pluginv1.Value)
	if err := proto.Unmarshal(b, v); err != nil {
		return nil, false
	}
	return v, true
}

func (d *fastDecoder) newVal() *pluginv1.Value {
	if len(d.vals) == 0 {
		d.vals = make([]pluginv1.Value, d.chunk)
	}
	p := &d.vals[0]
	d.vals = d.vals[1:]
	return p
}

// data decodes a Data message.
func (d *fastDecoder) data(b []byte) (*pluginv1.Data, bool) {
	p := d.newData()
	for len(b) > 0 {
		num, typ, x, sub, n, ok := field(b)
		if !ok {
			return nil, false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType && p.Kind == nil:
			v, ok := d.value(sub)
			if !ok {
				return nil, false
			}
			p.Kind = d.newValue(v)
		case num == 2 && typ == protowire.BytesType && p.Kind == nil:
			// A oneof bytes member reads as non-nil even when empty.
			p.Kind = d.newRaw(capped(sub))
		case num == 3 && typ == protowire.VarintType:
			p.Schema = uint32(x)
		default:
			return nil, false
		}
	}
	return p, true
}

// header decodes a Header message.
func (d *fastDecoder) header(b []byte) (*pluginv1.Header, bool) {
	h := d.newHeader()
	for len(b) > 0 {
		num, typ, _, sub, n, ok := field(b)
		if !ok || typ != protowire.BytesType {
			return nil, false
		}
		b = b[n:]
		switch {
		case num == 1:
			if h.Key, ok = aliasString(sub); !ok {
				return nil, false
			}
		case num == 2 && h.Value == nil:
			if h.Value, ok = d.data(sub); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return h, true
}

func (d *fastDecoder) sourceRecord(b []byte, r *pluginv1.SourceRecord) bool {
	for len(b) > 0 {
		num, typ, x, sub, n, ok := field(b)
		if !ok {
			return false
		}
		b = b[n:]
		if typ == protowire.VarintType {
			switch num {
			case 4:
				r.KafkaPartition = d.newInt32(int32(x))
			case 7:
				r.TimestampMs = d.newInt64(int64(x))
			case 9:
				r.Transaction = pluginv1.TransactionBoundary(int32(x))
			default:
				return false
			}
			continue
		}
		switch {
		case num == 1:
			r.SourcePartition = plainBytes(sub)
		case num == 2:
			r.SourceOffset = plainBytes(sub)
		case num == 3:
			if r.Topic, ok = aliasString(sub); !ok {
				return false
			}
		case num == 5 && r.Key == nil:
			if r.Key, ok = d.data(sub); !ok {
				return false
			}
		case num == 6 && r.Value == nil:
			if r.Value, ok = d.data(sub); !ok {
				return false
			}
		case num == 8:
			h, ok := d.header(sub)
			if !ok {
				return false
			}
			r.Headers = append(r.Headers, h)
		default:
			return false
		}
	}
	return true
}

func (d *fastDecoder) sinkRecord(b []byte, r *pluginv1.SinkRecord) bool {
	for len(b) > 0 {
		num, typ, x, sub, n, ok := field(b)
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
				r.TimestampMs = int64(x)
			case 5:
				r.TimestampType = pluginv1.TimestampType(int32(x))
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
			if r.Topic, ok = aliasString(sub); !ok {
				return false
			}
		case num == 6 && r.Key == nil:
			if r.Key, ok = d.data(sub); !ok {
				return false
			}
		case num == 7 && r.Value == nil:
			if r.Value, ok = d.data(sub); !ok {
				return false
			}
		case num == 8:
			h, ok := d.header(sub)
			if !ok {
				return false
			}
			r.Headers = append(r.Headers, h)
		case num == 9:
			if r.OriginalTopic, ok = aliasString(sub); !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// schema decodes one entry of a batch's schema table.
func schema(b []byte) (*pluginv1.Schema, bool) {
	s := new(pluginv1.Schema)
	if err := proto.Unmarshal(b, s); err != nil {
		return nil, false
	}
	return s, true
}

// decodePollResponse fills an empty m from b, which it aliases; false means
// "use proto.Unmarshal".
func decodePollResponse(b []byte, m *pluginv1.PollResponse) bool {
	count, ok := countRecords(b)
	if !ok {
		return false
	}
	d := newFastDecoder(count)
	var store []pluginv1.SourceRecord
	if count > 0 {
		store = make([]pluginv1.SourceRecord, count)
		m.Records = make([]*pluginv1.SourceRecord, 0, count)
	}
	for len(b) > 0 {
		num, typ, x, sub, n, ok := field(b)
		if !ok {
			return false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			s, ok := schema(sub)
			if !ok {
				return false
			}
			m.Schemas = append(m.Schemas, s)
		case num == 2 && typ == protowire.BytesType:
			r := &store[len(m.Records)]
			if !d.sourceRecord(sub, r) {
				return false
			}
			m.Records = append(m.Records, r)
		case num == 3 && typ == protowire.VarintType:
			m.FirstSeq = x
		default:
			return false
		}
	}
	return true
}

// decodePutRequest fills an empty m from b, which it aliases; false means
// "use proto.Unmarshal".
func decodePutRequest(b []byte, m *pluginv1.PutRequest) bool {
	count, ok := countRecords(b)
	if !ok {
		return false
	}
	d := newFastDecoder(count)
	var store []pluginv1.SinkRecord
	if count > 0 {
		store = make([]pluginv1.SinkRecord, count)
		m.Records = make([]*pluginv1.SinkRecord, 0, count)
	}
	for len(b) > 0 {
		num, typ, _, sub, n, ok := field(b)
		if !ok || typ != protowire.BytesType {
			return false
		}
		b = b[n:]
		switch num {
		case 1:
			s, ok := schema(sub)
			if !ok {
				return false
			}
			m.Schemas = append(m.Schemas, s)
		case 2:
			r := &store[len(m.Records)]
			if !d.sinkRecord(sub, r) {
				return false
			}
			m.Records = append(m.Records, r)
		default:
			return false
		}
	}
	return true
}

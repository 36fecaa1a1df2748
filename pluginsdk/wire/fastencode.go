package wire

import (
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// Poll answers and Put requests are also encoded by hand, the mirror of
// fastdecode.go: protobuf's marshal walks every message by reflection
// tables and sizes it first, which for a batch of a thousand records is a
// good share of what a poll or a put costs. The hand encoder makes one
// sizing pass over the generated types, then writes the message back to
// front into a buffer of exactly that size, so no nested length has to be
// known before its contents are written and nothing is copied twice.
//
// The bytes are protobuf's deterministic output: fields in number order
// (a oneof, as protobuf has it, after the other fields),
// proto3 zero values and empty bytes left out except as oneof members,
// negative int32s and enums sign-extended to ten bytes. Schemas (once per
// batch) go through protobuf itself, deterministically.
//
// It refuses (and the codec runs proto.Marshal, which then answers as
// before) anything it would write differently: unknown fields on any
// message it walks, nil entries in repeated fields, a oneof wrapper
// holding a nil message, invalid UTF-8 in a string (protobuf's error).

// Tags of fields 1..15 take one byte.
const tagLen = 1

func sizeLen(n int) int { return tagLen + protowire.SizeVarint(uint64(n)) + n }

func hasUnknown(m proto.Message) bool { return len(m.ProtoReflect().GetUnknown()) != 0 }

// sizeValue returns the encoded size of v; ok false means "use protobuf".
func sizeValue(v *pluginv1.Value) (int, bool) {
	if hasUnknown(v) {
		return 0, false
	}
	switch k := v.Kind.(type) {
	case nil:
		return 0, true
	case *pluginv1.Value_BooleanValue:
		return tagLen + 1, true
	case *pluginv1.Value_IntValue:
		return tagLen + protowire.SizeVarint(protowire.EncodeZigZag(k.IntValue)), true
	case *pluginv1.Value_FloatValue:
		return tagLen + 8, true
	case *pluginv1.Value_BytesValue:
		return sizeLen(len(k.BytesValue)), true
	case *pluginv1.Value_StringValue:
		if !utf8.ValidString(k.StringValue) {
			return 0, false
		}
		return sizeLen(len(k.StringValue)), true
	case *pluginv1.Value_ArrayValue:
		n, ok := sizeValueList(k.ArrayValue)
		return sizeLen(n), ok
	case *pluginv1.Value_StructValue:
		n, ok := sizeValueList(k.StructValue)
		return sizeLen(n), ok
	case *pluginv1.Value_MapValue:
		n, ok := sizeValueMap(k.MapValue)
		return sizeLen(n), ok
	}
	return 0, false
}

func sizeValueList(l *pluginv1.ValueList) (int, bool) {
	if l == nil || hasUnknown(l) {
		return 0, false
	}
	n := 0
	for _, v := range l.Values {
		if v == nil {
			return 0, false
		}
		s, ok := sizeValue(v)
		if !ok {
			return 0, false
		}
		n += sizeLen(s)
	}
	return n, true
}

func sizeValueMap(m *pluginv1.ValueMap) (int, bool) {
	if m == nil || hasUnknown(m) {
		return 0, false
	}
	n := 0
	for _, e := range m.Entries {
		if e == nil || hasUnknown(e) {
			return 0, false
		}
		s := 0
		if e.Key != nil {
			k, ok := sizeValue(e.Key)
			if !ok {
				return 0, false
			}
			s += sizeLen(k)
		}
		if e.Value != nil {
			v, ok := sizeValue(e.Value)
			if !ok {
				return 0, false
			}
			s += sizeLen(v)
		}
		n += sizeLen(s)
	}
	return n, true
}

func sizeData(d *pluginv1.Data) (int, bool) {
	if hasUnknown(d) {
		return 0, false
	}
	n := 0
	switch k := d.Kind.(type) {
	case nil:
	case *pluginv1.Data_Value:
		if k.Value == nil {
			return 0, false
		}
		s, ok := sizeValue(k.Value)
		if !ok {
			return 0, false
		}
		n += sizeLen(s)
	case *pluginv1.Data_Raw:
		n += sizeLen(len(k.Raw))
	default:
		return 0, false
	}
	if d.Schema != 0 {
		n += tagLen + protowire.SizeVarint(uint64(d.Schema))
	}
	return n, true
}

// sizeOptData adds a singular Data field, absent when nil.
func sizeOptData(d *pluginv1.Data) (int, bool) {
	if d == nil {
		return 0, true
	}
	s, ok := sizeData(d)
	return sizeLen(s), ok
}

func sizeString(s string) (int, bool) {
	if s == "" {
		return 0, true
	}
	if !utf8.ValidString(s) {
		return 0, false
	}
	return sizeLen(len(s)), true
}

func sizeHeaders(hs []*pluginv1.Header) (int, bool) {
	n := 0
	for _, h := range hs {
		if h == nil || hasUnknown(h) {
			return 0, false
		}
		k, ok := sizeString(h.Key)
		if !ok {
			return 0, false
		}
		v, ok := sizeOptData(h.Value)
		if !ok {
			return 0, false
		}
		n += sizeLen(k + v)
	}
	return n, true
}

func sizeVarintField(x uint64) int {
	if x == 0 {
		return 0
	}
	return tagLen + protowire.SizeVarint(x)
}

func sizeBytesField(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	return sizeLen(len(b))
}

func sizeSourceRecord(r *pluginv1.SourceRecord) (int, bool) {
	if hasUnknown(r) {
		return 0, false
	}
	n := sizeBytesField(r.SourcePartition) + sizeBytesField(r.SourceOffset)
	t, ok := sizeString(r.Topic)
	if !ok {
		return 0, false
	}
	n += t
	if r.KafkaPartition != nil {
		n += tagLen + protowire.SizeVarint(uint64(int64(*r.KafkaPartition)))
	}
	k, ok := sizeOptData(r.Key)
	if !ok {
		return 0, false
	}
	v, ok := sizeOptData(r.Value)
	if !ok {
		return 0, false
	}
	n += k + v
	if r.TimestampMs != nil {
		n += tagLen + protowire.SizeVarint(uint64(*r.TimestampMs))
	}
	h, ok := sizeHeaders(r.Headers)
	if !ok {
		return 0, false
	}
	return n + h + sizeVarintField(uint64(int64(r.Transaction))), true
}

func sizeSinkRecord(r *pluginv1.SinkRecord) (int, bool) {
	if hasUnknown(r) {
		return 0, false
	}
	t, ok := sizeString(r.Topic)
	if !ok {
		return 0, false
	}
	n := t + sizeVarintField(uint64(int64(r.Partition))) + sizeVarintField(uint64(r.Offset)) +
		sizeVarintField(uint64(r.TimestampMs)) + sizeVarintField(uint64(int64(r.TimestampType)))
	k, ok := sizeOptData(r.Key)
	if !ok {
		return 0, false
	}
	v, ok := sizeOptData(r.Value)
	if !ok {
		return 0, false
	}
	h, ok := sizeHeaders(r.Headers)
	if !ok {
		return 0, false
	}
	ot, ok := sizeString(r.OriginalTopic)
	if !ok {
		return 0, false
	}
	return n + k + v + h + ot + sizeVarintField(uint64(int64(r.OriginalPartition))) +
		sizeVarintField(uint64(r.OriginalOffset)), true
}

var schemaOpts = proto.MarshalOptions{Deterministic: true, UseCachedSize: true}

// sizeSchemas sizes the schema table through protobuf, which caches each
// schema's size for the write (schemaOpts.UseCachedSize).
func sizeSchemas(ss []*pluginv1.Schema) (int, bool) {
	n := 0
	for _, s := range ss {
		if s == nil {
			return 0, false
		}
		n += sizeLen(proto.Size(s))
	}
	return n, true
}

// sizePollResponse and sizePutRequest size a whole message; ok false means
// "use proto.Marshal".
func sizePollResponse(m *pluginv1.PollResponse) (int, bool) {
	if hasUnknown(m) || m.Shared != nil {
		return 0, false
	}
	n, ok := sizeSchemas(m.Schemas)
	if !ok {
		return 0, false
	}
	for _, r := range m.Records {
		if r == nil {
			return 0, false
		}
		s, ok := sizeSourceRecord(r)
		if !ok {
			return 0, false
		}
		n += sizeLen(s)
	}
	return n + sizeVarintField(m.FirstSeq), true
}

func sizePutRequest(m *pluginv1.PutRequest) (int, bool) {
	if hasUnknown(m) || m.Shared != nil {
		return 0, false
	}
	n, ok := sizeSchemas(m.Schemas)
	if !ok {
		return 0, false
	}
	for _, r := range m.Records {
		if r == nil {
			return 0, false
		}
		s, ok := sizeSinkRecord(r)
		if !ok {
			return 0, false
		}
		n += sizeLen(s)
	}
	return n, true
}

// backWriter fills b from the end; p is where the written part starts.
// Everything it writes was sized and checked before, so it cannot fail.
type backWriter struct {
	b []byte
	p int
}

func (w *backWriter) varint(x uint64) {
	n := protowire.SizeVarint(x)
	w.p -= n
	b := w.b[w.p : w.p+n]
	for i := 0; i < n-1; i++ {
		b[i] = byte(x) | 0x80
		x >>= 7
	}
	b[n-1] = byte(x)
}

func (w *backWriter) tag(num protowire.Number, typ protowire.Type) {
	w.p--
	w.b[w.p] = byte(uint64(num)<<3 | uint64(typ))
}

// lenField closes a length-delimited field whose contents end at end.
func (w *backWriter) lenField(num protowire.Number, end int) {
	w.varint(uint64(end - w.p))
	w.tag(num, protowire.BytesType)
}

func (w *backWriter) bytesField(num protowire.Number, b []byte) {
	w.p -= len(b)
	copy(w.b[w.p:], b)
	w.varint(uint64(len(b)))
	w.tag(num, protowire.BytesType)
}

func (w *backWriter) stringField(num protowire.Number, s string) {
	w.p -= len(s)
	copy(w.b[w.p:], s)
	w.varint(uint64(len(s)))
	w.tag(num, protowire.BytesType)
}

func (w *backWriter) varintField(num protowire.Number, x uint64) {
	w.varint(x)
	w.tag(num, protowire.VarintType)
}

// Implicit-presence fields: left out when zero.
func (w *backWriter) plainVarint(num protowire.Number, x uint64) {
	if x != 0 {
		w.varintField(num, x)
	}
}

func (w *backWriter) plainBytes(num protowire.Number, b []byte) {
	if len(b) != 0 {
		w.bytesField(num, b)
	}
}

func (w *backWriter) plainString(num protowire.Number, s string) {
	if s != "" {
		w.stringField(num, s)
	}
}

func (w *backWriter) value(v *pluginv1.Value) {
	switch k := v.Kind.(type) {
	case *pluginv1.Value_BooleanValue:
		x := uint64(0)
		if k.BooleanValue {
			x = 1
		}
		w.varintField(1, x)
	case *pluginv1.Value_IntValue:
		w.varintField(2, protowire.EncodeZigZag(k.IntValue))
	case *pluginv1.Value_FloatValue:
		w.p -= 8
		bits := math.Float64bits(k.FloatValue)
		for i := range 8 {
			w.b[w.p+i] = byte(bits >> (8 * i))
		}
		w.tag(3, protowire.Fixed64Type)
	case *pluginv1.Value_BytesValue:
		w.bytesField(4, k.BytesValue)
	case *pluginv1.Value_StringValue:
		w.stringField(5, k.StringValue)
	case *pluginv1.Value_ArrayValue:
		end := w.p
		w.valueList(k.ArrayValue)
		w.lenField(6, end)
	case *pluginv1.Value_MapValue:
		end := w.p
		w.valueMap(k.MapValue)
		w.lenField(7, end)
	case *pluginv1.Value_StructValue:
		end := w.p
		w.valueList(k.StructValue)
		w.lenField(8, end)
	}
}

func (w *backWriter) valueList(l *pluginv1.ValueList) {
	for i := len(l.Values) - 1; i >= 0; i-- {
		end := w.p
		w.value(l.Values[i])
		w.lenField(1, end)
	}
}

func (w *backWriter) valueMap(m *pluginv1.ValueMap) {
	for i := len(m.Entries) - 1; i >= 0; i-- {
		e := m.Entries[i]
		end := w.p
		if e.Value != nil {
			vend := w.p
			w.value(e.Value)
			w.lenField(2, vend)
		}
		if e.Key != nil {
			kend := w.p
			w.value(e.Key)
			w.lenField(1, kend)
		}
		w.lenField(1, end)
	}
}

func (w *backWriter) data(num protowire.Number, d *pluginv1.Data) {
	if d == nil {
		return
	}
	end := w.p
	// Protobuf writes a (non-synthetic) oneof after the other fields.
	switch k := d.Kind.(type) {
	case *pluginv1.Data_Value:
		vend := w.p
		w.value(k.Value)
		w.lenField(1, vend)
	case *pluginv1.Data_Raw:
		w.bytesField(2, k.Raw)
	}
	w.plainVarint(3, uint64(d.Schema))
	w.lenField(num, end)
}

func (w *backWriter) headers(hs []*pluginv1.Header) {
	for i := len(hs) - 1; i >= 0; i-- {
		end := w.p
		w.data(2, hs[i].Value)
		w.plainString(1, hs[i].Key)
		w.lenField(8, end)
	}
}

func (w *backWriter) sourceRecord(r *pluginv1.SourceRecord) {
	end := w.p
	w.plainVarint(9, uint64(int64(r.Transaction)))
	w.headers(r.Headers)
	if r.TimestampMs != nil {
		w.varintField(7, uint64(*r.TimestampMs))
	}
	w.data(6, r.Value)
	w.data(5, r.Key)
	if r.KafkaPartition != nil {
		w.varintField(4, uint64(int64(*r.KafkaPartition)))
	}
	w.plainString(3, r.Topic)
	w.plainBytes(2, r.SourceOffset)
	w.plainBytes(1, r.SourcePartition)
	w.lenField(2, end)
}

func (w *backWriter) sinkRecord(r *pluginv1.SinkRecord) {
	end := w.p
	w.plainVarint(11, uint64(r.OriginalOffset))
	w.plainVarint(10, uint64(int64(r.OriginalPartition)))
	w.plainString(9, r.OriginalTopic)
	w.headers(r.Headers)
	w.data(7, r.Value)
	w.data(6, r.Key)
	w.plainVarint(5, uint64(int64(r.TimestampType)))
	w.plainVarint(4, uint64(r.TimestampMs))
	w.plainVarint(3, uint64(r.Offset))
	w.plainVarint(2, uint64(int64(r.Partition)))
	w.plainString(1, r.Topic)
	w.lenField(2, end)
}

// schemas writes the schema table through protobuf, into place: each
// schema's size was cached by sizeSchemas.
func (w *backWriter) schemas(ss []*pluginv1.Schema) bool {
	for i := len(ss) - 1; i >= 0; i-- {
		n := proto.Size(ss[i])
		start := w.p - n
		out, err := schemaOpts.MarshalAppend(w.b[start:start:w.p], ss[i])
		if err != nil || len(out) != n || (n > 0 && &out[0] != &w.b[start]) {
			return false
		}
		w.p = start
		w.varint(uint64(n))
		w.tag(1, protowire.BytesType)
	}
	return true
}

// encodePollResponse writes m into b, which has exactly the size
// sizePollResponse reported; false means "use proto.Marshal".
func encodePollResponse(b []byte, m *pluginv1.PollResponse) bool {
	w := backWriter{b: b, p: len(b)}
	w.plainVarint(3, m.FirstSeq)
	for i := len(m.Records) - 1; i >= 0; i-- {
		w.sourceRecord(m.Records[i])
	}
	return w.schemas(m.Schemas) && w.p == 0
}

// encodePutRequest writes m into b, which has exactly the size
// sizePutRequest reported; false means "use proto.Marshal".
func encodePutRequest(b []byte, m *pluginv1.PutRequest) bool {
	w := backWriter{b: b, p: len(b)}
	for i := len(m.Records) - 1; i >= 0; i-- {
		w.sinkRecord(m.Records[i])
	}
	return w.schemas(m.Schemas) && w.p == 0
}

// fastSize sizes v if the hand encoder handles it.
func fastSize(v any) (int, bool) {
	switch m := v.(type) {
	case *pluginv1.PollResponse:
		return sizePollResponse(m)
	case *pluginv1.PutRequest:
		return sizePutRequest(m)
	}
	return 0, false
}

// fastEncode writes v, sized by fastSize, into b.
func fastEncode(b []byte, v any) bool {
	switch m := v.(type) {
	case *pluginv1.PollResponse:
		return encodePollResponse(b, m)
	case *pluginv1.PutRequest:
		return encodePutRequest(b, m)
	}
	return false
}

package convert

import (
	"encoding/binary"
	"math"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// ByteArrayConverter is Kafka Connect's ByteArrayConverter: BYTES values pass
// through unchanged, and bytes read back as an optional BYTES value. It keeps
// no state; the zero value is ready to use.
type ByteArrayConverter struct{}

// FromConnectData implements Converter.
func (ByteArrayConverter) FromConnectData(_ string, _ data.Headers, s *data.Schema, v any) ([]byte, error) {
	if s != nil && s.Type != data.Bytes {
		if r, ok := v.(data.Raw); ok {
			return r, nil // already serialized, whatever its schema
		}
		return nil, dataErr("Invalid schema type for ByteArrayConverter: %s", upperType(s.Type))
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return x, nil
	case data.Raw:
		return x, nil
	}
	return nil, dataErr("ByteArrayConverter is not compatible with objects of type %T", v)
}

// ToConnectData implements Converter.
func (ByteArrayConverter) ToConnectData(_ string, _ data.Headers, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return data.OptionalBytesSchema, nil, nil
	}
	return data.OptionalBytesSchema, b, nil
}

// FromConnectHeader implements HeaderConverter.
func (c ByteArrayConverter) FromConnectHeader(topic, _ string, s *data.Schema, v any) ([]byte, error) {
	return c.FromConnectData(topic, nil, s, v)
}

// ToConnectHeader implements HeaderConverter.
func (c ByteArrayConverter) ToConnectHeader(topic, _ string, b []byte) (*data.Schema, any, error) {
	return c.ToConnectData(topic, nil, b)
}

// number describes one of Kafka's fixed-width number serializers.
type number struct {
	typeName string // Kafka's display name in messages: "short", "integer", ...
	deser    string // the deserializer named in Kafka's size message
	size     int
	schema   *data.Schema
}

var (
	shortNumber   = number{"short", "ShortDeserializer", 2, data.OptionalInt16Schema}
	integerNumber = number{"integer", "IntegerDeserializer", 4, data.OptionalInt32Schema}
	longNumber    = number{"long", "LongDeserializer", 8, data.OptionalInt64Schema}
	// Kafka's float and double deserializers name themselves "Deserializer".
	floatNumber  = number{"float", "Deserializer", 4, data.OptionalFloat32Schema}
	doubleNumber = number{"double", "Deserializer", 8, data.OptionalFloat64Schema}
)

// encode writes v big-endian as Kafka's number serializers do; like Kafka's
// NumberConverter it ignores the schema and wants exactly the Go type of the
// converter's schema type.
func (n number) encode(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if r, ok := v.(data.Raw); ok {
		return r, nil
	}
	b := make([]byte, n.size)
	switch x := v.(type) {
	case int16:
		if n.size == 2 {
			binary.BigEndian.PutUint16(b, uint16(x))
			return b, nil
		}
	case int32:
		if n.schema.Type == data.Int32 {
			binary.BigEndian.PutUint32(b, uint32(x))
			return b, nil
		}
	case int64:
		if n.schema.Type == data.Int64 {
			binary.BigEndian.PutUint64(b, uint64(x))
			return b, nil
		}
	case float32:
		if n.schema.Type == data.Float32 {
			binary.BigEndian.PutUint32(b, math.Float32bits(x))
			return b, nil
		}
	case float64:
		if n.schema.Type == data.Float64 {
			binary.BigEndian.PutUint64(b, math.Float64bits(x))
			return b, nil
		}
	}
	return nil, dataErr("Failed to serialize to %s (was %T)", n.typeName, v)
}

func (n number) decode(b []byte) (*data.Schema, any, error) {
	if b == nil {
		return n.schema, nil, nil
	}
	if len(b) != n.size {
		return nil, nil, dataErr("Failed to deserialize %s: Size of data received by %s is not %d", n.typeName, n.deser, n.size)
	}
	switch n.schema.Type {
	case data.Int16:
		return n.schema, int16(binary.BigEndian.Uint16(b)), nil
	case data.Int32:
		return n.schema, int32(binary.BigEndian.Uint32(b)), nil
	case data.Int64:
		return n.schema, int64(binary.BigEndian.Uint64(b)), nil
	case data.Float32:
		return n.schema, math.Float32frombits(binary.BigEndian.Uint32(b)), nil
	default:
		return n.schema, math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	}
}

// ShortConverter is Kafka Connect's ShortConverter: int16 as 2 big-endian bytes.
type ShortConverter struct{}

// IntegerConverter is Kafka Connect's IntegerConverter: int32 as 4 big-endian bytes.
type IntegerConverter struct{}

// LongConverter is Kafka Connect's LongConverter: int64 as 8 big-endian bytes.
type LongConverter struct{}

// FloatConverter is Kafka Connect's FloatConverter: float32 as its 4 IEEE 754 bytes, big-endian.
type FloatConverter struct{}

// DoubleConverter is Kafka Connect's DoubleConverter: float64 as its 8 IEEE 754 bytes, big-endian.
type DoubleConverter struct{}

// FromConnectData implements Converter.
func (ShortConverter) FromConnectData(_ string, _ data.Headers, _ *data.Schema, v any) ([]byte, error) {
	return shortNumber.encode(v)
}

// ToConnectData implements Converter.
func (ShortConverter) ToConnectData(_ string, _ data.Headers, b []byte) (*data.Schema, any, error) {
	return shortNumber.decode(b)
}

// FromConnectHeader implements HeaderConverter.
func (ShortConverter) FromConnectHeader(_, _ string, _ *data.Schema, v any) ([]byte, error) {
	return shortNumber.encode(v)
}

// ToConnectHeader implements HeaderConverter.
func (ShortConverter) ToConnectHeader(_, _ string, b []byte) (*data.Schema, any, error) {
	return shortNumber.decode(b)
}

// FromConnectData implements Converter.
func (IntegerConverter) FromConnectData(_ string, _ data.Headers, _ *data.Schema, v any) ([]byte, error) {
	return integerNumber.encode(v)
}

// ToConnectData implements Converter.
func (IntegerConverter) ToConnectData(_ string, _ data.Headers, b []byte) (*data.Schema, any, error) {
	return integerNumber.decode(b)
}

// FromConnectHeader implements HeaderConverter.
func (IntegerConverter) FromConnectHeader(_, _ string, _ *data.Schema, v any) ([]byte, error) {
	return integerNumber.encode(v)
}

// ToConnectHeader implements HeaderConverter.
func (IntegerConverter) ToConnectHeader(_, _ string, b []byte) (*data.Schema, any, error) {
	return integerNumber.decode(b)
}

// FromConnectData implements Converter.
func (LongConverter) FromConnectData(_ string, _ data.Headers, _ *data.Schema, v any) ([]byte, error) {
	return longNumber.encode(v)
}

// ToConnectData implements Converter.
func (LongConverter) ToConnectData(_ string, _ data.Headers, b []byte) (*data.Schema, any, error) {
	return longNumber.decode(b)
}

// FromConnectHeader implements HeaderConverter.
func (LongConverter) FromConnectHeader(_, _ string, _ *data.Schema, v any) ([]byte, error) {
	return longNumber.encode(v)
}

// ToConnectHeader implements HeaderConverter.
func (LongConverter) ToConnectHeader(_, _ string, b []byte) (*data.Schema, any, error) {
	return longNumber.decode(b)
}

// FromConnectData implements Converter.
func (FloatConverter) FromConnectData(_ string, _ data.Headers, _ *data.Schema, v any) ([]byte, error) {
	return floatNumber.encode(v)
}

// ToConnectData implements Converter.
func (FloatConverter) ToConnectData(_ string, _ data.Headers, b []byte) (*data.Schema, any, error) {
	return floatNumber.decode(b)
}

// FromConnectHeader implements HeaderConverter.
func (FloatConverter) FromConnectHeader(_, _ string, _ *data.Schema, v any) ([]byte, error) {
	return floatNumber.encode(v)
}

// ToConnectHeader implements HeaderConverter.
func (FloatConverter) ToConnectHeader(_, _ string, b []byte) (*data.Schema, any, error) {
	return floatNumber.decode(b)
}

// FromConnectData implements Converter.
func (DoubleConverter) FromConnectData(_ string, _ data.Headers, _ *data.Schema, v any) ([]byte, error) {
	return doubleNumber.encode(v)
}

// ToConnectData implements Converter.
func (DoubleConverter) ToConnectData(_ string, _ data.Headers, b []byte) (*data.Schema, any, error) {
	return doubleNumber.decode(b)
}

// FromConnectHeader implements HeaderConverter.
func (DoubleConverter) FromConnectHeader(_, _ string, _ *data.Schema, v any) ([]byte, error) {
	return doubleNumber.encode(v)
}

// ToConnectHeader implements HeaderConverter.
func (DoubleConverter) ToConnectHeader(_, _ string, b []byte) (*data.Schema, any, error) {
	return doubleNumber.decode(b)
}

// BooleanConverter is Kafka Connect's BooleanConverter: one byte, 1 for true
// and 0 for false.
type BooleanConverter struct{}

// FromConnectData implements Converter.
func (BooleanConverter) FromConnectData(_ string, _ data.Headers, s *data.Schema, v any) ([]byte, error) {
	if s != nil && s.Type != data.Boolean {
		if r, ok := v.(data.Raw); ok {
			return r, nil // already serialized, whatever its schema
		}
		return nil, dataErr("Invalid schema type for BooleanConverter: %s", upperType(s.Type))
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case data.Raw:
		return x, nil
	case bool:
		if x {
			return []byte{1}, nil
		}
		return []byte{0}, nil
	}
	return nil, dataErr("BooleanConverter is not compatible with objects of type %T", v)
}

// ToConnectData implements Converter.
func (BooleanConverter) ToConnectData(_ string, _ data.Headers, b []byte) (*data.Schema, any, error) {
	switch {
	case b == nil:
		return data.OptionalBooleanSchema, nil, nil
	case len(b) != 1:
		return nil, nil, dataErr("Failed to deserialize boolean: Size of data received by BooleanDeserializer is not 1")
	case b[0] == 1:
		return data.OptionalBooleanSchema, true, nil
	case b[0] == 0:
		return data.OptionalBooleanSchema, false, nil
	}
	// Java prints the byte signed.
	return nil, nil, dataErr("Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: %d", int8(b[0]))
}

// FromConnectHeader implements HeaderConverter.
func (c BooleanConverter) FromConnectHeader(topic, _ string, s *data.Schema, v any) ([]byte, error) {
	return c.FromConnectData(topic, nil, s, v)
}

// ToConnectHeader implements HeaderConverter.
func (c BooleanConverter) ToConnectHeader(topic, _ string, b []byte) (*data.Schema, any, error) {
	return c.ToConnectData(topic, nil, b)
}

// upperTypeNames are the schema types as Kafka prints Schema.Type.
var upperTypeNames = map[data.Type]string{
	data.Int8: "INT8", data.Int16: "INT16", data.Int32: "INT32", data.Int64: "INT64",
	data.Float32: "FLOAT32", data.Float64: "FLOAT64", data.Boolean: "BOOLEAN", data.String: "STRING",
	data.Bytes: "BYTES", data.Array: "ARRAY", data.MapType: "MAP", data.StructType: "STRUCT",
}

// upperType is the schema type as Kafka prints Schema.Type ("INT32").
func upperType(t data.Type) string {
	if n, ok := upperTypeNames[t]; ok {
		return n
	}
	return t.String()
}

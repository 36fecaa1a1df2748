package wire

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// EncodeValue converts v, a value of schema s, to its proto form. Logical
// values travel in their physical representation (data.ToPhysical). nil
// encodes as a null Value at any level; inside structs, arrays and maps a
// null is rejected when its schema is required and has no default. With a
// nil schema, v is schemaless: integers, floats, bool, string, []byte, []any,
// map[string]any and data.Map, recursively.
func EncodeValue(s *data.Schema, v any) (*pluginv1.Value, error) {
	p := &pluginv1.Value{}
	if err := encodeInto(p, s, v); err != nil {
		return nil, err
	}
	return p, nil
}

// encodeInto fills p, which the caller allocated (structs and arrays
// allocate their elements in one block: one allocation per container
// instead of one per element).
func encodeInto(p *pluginv1.Value, s *data.Schema, v any) error {
	if v == nil {
		return nil
	}
	if s == nil {
		return encodeSchemalessInto(p, v)
	}
	if s.Name != "" && data.IsLogical(s) {
		pv, err := data.ToPhysical(s, v)
		if err != nil {
			return err
		}
		v = pv
	}
	switch s.Type {
	case data.Int8:
		if x, ok := v.(int8); ok {
			p.Kind = &pluginv1.Value_IntValue{IntValue: int64(x)}
			return nil
		}
	case data.Int16:
		if x, ok := v.(int16); ok {
			p.Kind = &pluginv1.Value_IntValue{IntValue: int64(x)}
			return nil
		}
	case data.Int32:
		if x, ok := v.(int32); ok {
			p.Kind = &pluginv1.Value_IntValue{IntValue: int64(x)}
			return nil
		}
	case data.Int64:
		if x, ok := v.(int64); ok {
			p.Kind = &pluginv1.Value_IntValue{IntValue: x}
			return nil
		}
	case data.Float32:
		if x, ok := v.(float32); ok {
			p.Kind = &pluginv1.Value_FloatValue{FloatValue: float64(x)}
			return nil
		}
	case data.Float64:
		if x, ok := v.(float64); ok {
			p.Kind = &pluginv1.Value_FloatValue{FloatValue: x}
			return nil
		}
	case data.Boolean:
		if x, ok := v.(bool); ok {
			p.Kind = &pluginv1.Value_BooleanValue{BooleanValue: x}
			return nil
		}
	case data.String:
		if x, ok := v.(string); ok {
			p.Kind = &pluginv1.Value_StringValue{StringValue: x}
			return nil
		}
	case data.Bytes:
		if x, ok := v.([]byte); ok {
			p.Kind = &pluginv1.Value_BytesValue{BytesValue: x}
			return nil
		}
	case data.Array:
		if x, ok := v.([]any); ok {
			return encodeArray(p, s.ValueSchema, x)
		}
	case data.MapType:
		switch x := v.(type) {
		case map[string]any:
			return encodeStringMap(p, s.KeySchema, s.ValueSchema, x)
		case data.Map:
			return encodeMap(p, s.KeySchema, s.ValueSchema, x)
		}
	case data.StructType:
		if x, ok := v.(*data.Struct); ok {
			return encodeStruct(p, s, x)
		}
	default:
		return fmt.Errorf("invalid schema type %s", s.Type)
	}
	return fmt.Errorf("value of type %T does not match schema type %s", v, s.Type)
}

// checkNull rejects a nested null whose schema neither allows null nor
// supplies a default (ConnectSchema.validateValue).
func checkNull(s *data.Schema) error {
	if s == nil || s.Optional || s.Default != nil {
		return nil
	}
	return fmt.Errorf("null used for required %s", s.Type)
}

func encodeNested(p *pluginv1.Value, s *data.Schema, v any) error {
	if v == nil {
		return checkNull(s)
	}
	return encodeInto(p, s, v)
}

func encodeArray(p *pluginv1.Value, es *data.Schema, arr []any) error {
	slab := make([]pluginv1.Value, len(arr))
	out := make([]*pluginv1.Value, len(arr))
	for i, e := range arr {
		if err := encodeNested(&slab[i], es, e); err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
		out[i] = &slab[i]
	}
	p.Kind = &pluginv1.Value_ArrayValue{ArrayValue: &pluginv1.ValueList{Values: out}}
	return nil
}

func encodeStringMap(p *pluginv1.Value, ks, vs *data.Schema, m map[string]any) error {
	slab := make([]pluginv1.Value, 2*len(m))
	entries := make([]pluginv1.MapEntry, len(m))
	out := make([]*pluginv1.MapEntry, len(m))
	i := 0
	for k, e := range m {
		pk, pv := &slab[2*i], &slab[2*i+1]
		if err := encodeNested(pk, ks, k); err != nil {
			return fmt.Errorf("map key %q: %w", k, err)
		}
		if err := encodeNested(pv, vs, e); err != nil {
			return fmt.Errorf("map value for key %q: %w", k, err)
		}
		entries[i].Key, entries[i].Value = pk, pv
		out[i] = &entries[i]
		i++
	}
	p.Kind = &pluginv1.Value_MapValue{MapValue: &pluginv1.ValueMap{Entries: out}}
	return nil
}

func encodeMap(p *pluginv1.Value, ks, vs *data.Schema, m data.Map) error {
	slab := make([]pluginv1.Value, 2*len(m))
	entries := make([]pluginv1.MapEntry, len(m))
	out := make([]*pluginv1.MapEntry, len(m))
	for i, e := range m {
		pk, pv := &slab[2*i], &slab[2*i+1]
		if err := encodeNested(pk, ks, e.Key); err != nil {
			return fmt.Errorf("map entry %d key: %w", i, err)
		}
		if err := encodeNested(pv, vs, e.Value); err != nil {
			return fmt.Errorf("map entry %d value: %w", i, err)
		}
		entries[i].Key, entries[i].Value = pk, pv
		out[i] = &entries[i]
	}
	p.Kind = &pluginv1.Value_MapValue{MapValue: &pluginv1.ValueMap{Entries: out}}
	return nil
}

func encodeStruct(p *pluginv1.Value, s *data.Schema, st *data.Struct) error {
	if ss := st.Schema(); ss != s && !data.StructSchemaMatches(ss, s) {
		return errors.New("struct's schema does not match the schema it is sent with")
	}
	vals := st.Values()
	slab := make([]pluginv1.Value, len(vals))
	out := make([]*pluginv1.Value, len(vals))
	for i, fv := range vals {
		f := &s.Fields[i]
		if err := encodeNested(&slab[i], f.Schema, fv); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		out[i] = &slab[i]
	}
	p.Kind = &pluginv1.Value_StructValue{StructValue: &pluginv1.ValueList{Values: out}}
	return nil
}

func encodeSchemalessInto(p *pluginv1.Value, v any) error {
	switch x := v.(type) {
	case nil:
		return nil
	case int8:
		p.Kind = &pluginv1.Value_IntValue{IntValue: int64(x)}
	case int16:
		p.Kind = &pluginv1.Value_IntValue{IntValue: int64(x)}
	case int32:
		p.Kind = &pluginv1.Value_IntValue{IntValue: int64(x)}
	case int64:
		p.Kind = &pluginv1.Value_IntValue{IntValue: x}
	case int:
		p.Kind = &pluginv1.Value_IntValue{IntValue: int64(x)}
	case float32:
		p.Kind = &pluginv1.Value_FloatValue{FloatValue: float64(x)}
	case float64:
		p.Kind = &pluginv1.Value_FloatValue{FloatValue: x}
	case bool:
		p.Kind = &pluginv1.Value_BooleanValue{BooleanValue: x}
	case string:
		p.Kind = &pluginv1.Value_StringValue{StringValue: x}
	case []byte:
		p.Kind = &pluginv1.Value_BytesValue{BytesValue: x}
	case []any:
		return encodeArray(p, nil, x)
	case map[string]any:
		return encodeStringMap(p, nil, nil, x)
	case data.Map:
		return encodeMap(p, nil, nil, x)
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

// DecodeValue converts a proto value of schema s back to the Go types
// package data documents for s (int8 for INT8, data.Decimal for Decimal,
// time.Time for the time types, *data.Struct for STRUCT, map[string]any for
// maps whose keys are all strings and data.Map otherwise). With a nil schema
// it returns schemaless values: int64, float64, string, bool, []byte, []any,
// map[string]any or data.Map.
func DecodeValue(s *data.Schema, p *pluginv1.Value) (any, error) {
	if p == nil || p.Kind == nil {
		return nil, nil
	}
	if s == nil {
		return decodeSchemaless(p)
	}
	v, err := decodePhysical(s, p)
	if err != nil || v == nil || s.Name == "" || !data.IsLogical(s) {
		return v, err
	}
	return data.FromPhysical(s, v)
}

func kindName(p *pluginv1.Value) string {
	switch p.Kind.(type) {
	case *pluginv1.Value_BooleanValue:
		return "boolean_value"
	case *pluginv1.Value_IntValue:
		return "int_value"
	case *pluginv1.Value_FloatValue:
		return "float_value"
	case *pluginv1.Value_BytesValue:
		return "bytes_value"
	case *pluginv1.Value_StringValue:
		return "string_value"
	case *pluginv1.Value_ArrayValue:
		return "array_value"
	case *pluginv1.Value_MapValue:
		return "map_value"
	case *pluginv1.Value_StructValue:
		return "struct_value"
	}
	return "null"
}

func decodePhysical(s *data.Schema, p *pluginv1.Value) (any, error) {
	switch s.Type {
	case data.Int8, data.Int16, data.Int32, data.Int64:
		k, ok := p.Kind.(*pluginv1.Value_IntValue)
		if !ok {
			break
		}
		n := k.IntValue
		switch s.Type {
		case data.Int8:
			if n < math.MinInt8 || n > math.MaxInt8 {
				return nil, fmt.Errorf("value %d out of range for int8", n)
			}
			return int8(n), nil
		case data.Int16:
			if n < math.MinInt16 || n > math.MaxInt16 {
				return nil, fmt.Errorf("value %d out of range for int16", n)
			}
			return int16(n), nil
		case data.Int32:
			if n < math.MinInt32 || n > math.MaxInt32 {
				return nil, fmt.Errorf("value %d out of range for int32", n)
			}
			return int32(n), nil
		}
		return n, nil
	case data.Float32:
		if k, ok := p.Kind.(*pluginv1.Value_FloatValue); ok {
			return float32(k.FloatValue), nil
		}
	case data.Float64:
		if k, ok := p.Kind.(*pluginv1.Value_FloatValue); ok {
			return k.FloatValue, nil
		}
	case data.Boolean:
		if k, ok := p.Kind.(*pluginv1.Value_BooleanValue); ok {
			return k.BooleanValue, nil
		}
	case data.String:
		if k, ok := p.Kind.(*pluginv1.Value_StringValue); ok {
			return k.StringValue, nil
		}
	case data.Bytes:
		if k, ok := p.Kind.(*pluginv1.Value_BytesValue); ok {
			if k.BytesValue == nil {
				return []byte{}, nil
			}
			return k.BytesValue, nil
		}
	case data.Array:
		if k, ok := p.Kind.(*pluginv1.Value_ArrayValue); ok {
			return decodeArray(s.ValueSchema, k.ArrayValue)
		}
	case data.MapType:
		if k, ok := p.Kind.(*pluginv1.Value_MapValue); ok {
			return decodeMap(s.KeySchema, s.ValueSchema, k.MapValue)
		}
	case data.StructType:
		if k, ok := p.Kind.(*pluginv1.Value_StructValue); ok {
			return decodeStruct(s, k.StructValue)
		}
	default:
		return nil, fmt.Errorf("invalid schema type %s", s.Type)
	}
	return nil, fmt.Errorf("%s does not match schema type %s", kindName(p), s.Type)
}

func decodeNested(s *data.Schema, p *pluginv1.Value) (any, error) {
	if p == nil || p.Kind == nil {
		return nil, checkNull(s)
	}
	return DecodeValue(s, p)
}

func decodeArray(es *data.Schema, l *pluginv1.ValueList) (any, error) {
	vals := l.GetValues()
	out := make([]any, len(vals))
	for i, e := range vals {
		v, err := decodeNested(es, e)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

// decodeMap returns map[string]any when every key is a non-null string, the
// form most connectors expect, and data.Map (which keeps order and any key
// type) otherwise.
func decodeMap(ks, vs *data.Schema, m *pluginv1.ValueMap) (any, error) {
	entries := m.GetEntries()
	out := make(data.Map, len(entries))
	allStrings := true
	for i, e := range entries {
		k, err := decodeNested(ks, e.GetKey())
		if err != nil {
			return nil, fmt.Errorf("map entry %d key: %w", i, err)
		}
		v, err := decodeNested(vs, e.GetValue())
		if err != nil {
			return nil, fmt.Errorf("map entry %d value: %w", i, err)
		}
		if _, ok := k.(string); !ok {
			allStrings = false
		}
		out[i] = data.MapEntry{Key: k, Value: v}
	}
	if !allStrings {
		return out, nil
	}
	sm := make(map[string]any, len(out))
	for _, e := range out {
		sm[e.Key.(string)] = e.Value
	}
	return sm, nil
}

func decodeStruct(s *data.Schema, l *pluginv1.ValueList) (any, error) {
	vals := l.GetValues()
	if len(vals) != len(s.Fields) {
		return nil, fmt.Errorf("struct has %d values for %d schema fields", len(vals), len(s.Fields))
	}
	st := data.NewStruct(s)
	for i, e := range vals {
		f := &s.Fields[i]
		v, err := decodeNested(f.Schema, e)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		st.SetIndex(i, v)
	}
	return st, nil
}

func decodeSchemaless(p *pluginv1.Value) (any, error) {
	switch k := p.Kind.(type) {
	case nil:
		return nil, nil
	case *pluginv1.Value_BooleanValue:
		return k.BooleanValue, nil
	case *pluginv1.Value_IntValue:
		return k.IntValue, nil
	case *pluginv1.Value_FloatValue:
		return k.FloatValue, nil
	case *pluginv1.Value_StringValue:
		return k.StringValue, nil
	case *pluginv1.Value_BytesValue:
		if k.BytesValue == nil {
			return []byte{}, nil
		}
		return k.BytesValue, nil
	case *pluginv1.Value_ArrayValue:
		return decodeArray(nil, k.ArrayValue)
	case *pluginv1.Value_MapValue:
		return decodeMap(nil, nil, k.MapValue)
	case *pluginv1.Value_StructValue:
		return nil, errors.New("struct_value without a schema")
	}
	return nil, fmt.Errorf("unknown value kind %T", p.Kind)
}

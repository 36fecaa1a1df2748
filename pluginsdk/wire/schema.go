package wire

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// The data.Type and pluginv1.SchemaType enumerations are declared in the same
// order, but the mapping is spelled out so that a reordering of either is a
// compile-visible change here rather than silent corruption.
var typeToProto = [...]pluginv1.SchemaType{
	data.Int8:       pluginv1.SchemaType_SCHEMA_TYPE_INT8,
	data.Int16:      pluginv1.SchemaType_SCHEMA_TYPE_INT16,
	data.Int32:      pluginv1.SchemaType_SCHEMA_TYPE_INT32,
	data.Int64:      pluginv1.SchemaType_SCHEMA_TYPE_INT64,
	data.Float32:    pluginv1.SchemaType_SCHEMA_TYPE_FLOAT32,
	data.Float64:    pluginv1.SchemaType_SCHEMA_TYPE_FLOAT64,
	data.Boolean:    pluginv1.SchemaType_SCHEMA_TYPE_BOOLEAN,
	data.String:     pluginv1.SchemaType_SCHEMA_TYPE_STRING,
	data.Bytes:      pluginv1.SchemaType_SCHEMA_TYPE_BYTES,
	data.Array:      pluginv1.SchemaType_SCHEMA_TYPE_ARRAY,
	data.MapType:    pluginv1.SchemaType_SCHEMA_TYPE_MAP,
	data.StructType: pluginv1.SchemaType_SCHEMA_TYPE_STRUCT,
}

func typeFromProto(t pluginv1.SchemaType) (data.Type, bool) {
	for dt, pt := range typeToProto {
		if pt == t && dt != int(data.TypeInvalid) {
			return data.Type(dt), true
		}
	}
	return data.TypeInvalid, false
}

// EncodeSchema converts a schema to its proto form. A nil schema encodes as nil.
func EncodeSchema(s *data.Schema) (*pluginv1.Schema, error) {
	if s == nil {
		return nil, nil
	}
	if s.Type <= data.TypeInvalid || int(s.Type) >= len(typeToProto) {
		return nil, fmt.Errorf("encode schema: invalid type %s", s.Type)
	}
	p := &pluginv1.Schema{
		Type:     typeToProto[s.Type],
		Optional: s.Optional,
	}
	if s.HasName() {
		p.Name = &s.Name
	}
	if s.Version != nil {
		v := *s.Version
		p.Version = &v
	}
	if s.HasDoc() {
		p.Doc = &s.Doc
	}
	if len(s.Parameters) > 0 {
		p.Parameters = make(map[string]string, len(s.Parameters))
		for k, v := range s.Parameters {
			p.Parameters[k] = v
		}
		if len(s.Parameters) > 1 {
			p.ParameterOrder = s.ParameterKeys()
		}
	}
	switch s.Type {
	case data.StructType:
		p.Fields = make([]*pluginv1.Field, len(s.Fields))
		for i, f := range s.Fields {
			fs, err := EncodeSchema(f.Schema)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			if fs == nil {
				return nil, fmt.Errorf("field %s: encode schema: field has no schema", f.Name)
			}
			p.Fields[i] = &pluginv1.Field{Name: f.Name, Schema: fs}
		}
	case data.MapType:
		if s.KeySchema == nil || s.ValueSchema == nil {
			return nil, errors.New("encode schema: map schema needs a key and a value schema")
		}
		var err error
		if p.KeySchema, err = EncodeSchema(s.KeySchema); err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		if p.ValueSchema, err = EncodeSchema(s.ValueSchema); err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
	case data.Array:
		if s.ValueSchema == nil {
			return nil, errors.New("encode schema: array schema needs an element schema")
		}
		var err error
		if p.ValueSchema, err = EncodeSchema(s.ValueSchema); err != nil {
			return nil, fmt.Errorf("array element: %w", err)
		}
	}
	if s.Default != nil {
		dv, err := EncodeValue(s, s.Default)
		if err != nil {
			return nil, fmt.Errorf("default value: %w", err)
		}
		p.DefaultValue = dv
	}
	return p, nil
}

// DecodeSchema converts a proto schema back. A nil schema decodes as nil.
// A present default that is null decodes as "no default": package data, like
// Kafka Connect, does not tell the two apart.
func DecodeSchema(p *pluginv1.Schema) (*data.Schema, error) {
	if p == nil {
		return nil, nil
	}
	t, ok := typeFromProto(p.Type)
	if !ok {
		return nil, fmt.Errorf("decode schema: invalid type %v", p.Type)
	}
	s := &data.Schema{Type: t, Optional: p.Optional, Name: p.GetName(), Doc: p.GetDoc(),
		EmptyName: p.Name != nil && *p.Name == "", EmptyDoc: p.Doc != nil && *p.Doc == ""}
	if p.Version != nil {
		v := *p.Version
		s.Version = &v
	}
	if len(p.Parameters) > 0 {
		s.Parameters = make(map[string]string, len(p.Parameters))
		for k, v := range p.Parameters {
			s.Parameters[k] = v
		}
		if len(p.ParameterOrder) > 0 {
			// An order that does not name each key once is dropped
			// rather than carried along unused (ParameterKeys sorts).
			s.ParameterOrder = slices.Clone(p.ParameterOrder)
			if !slices.Equal(s.ParameterKeys(), s.ParameterOrder) {
				s.ParameterOrder = nil
			}
		}
	}
	switch t {
	case data.StructType:
		s.Fields = make([]data.Field, len(p.Fields))
		seen := make(map[string]struct{}, len(p.Fields))
		for i, f := range p.Fields {
			if _, dup := seen[f.GetName()]; dup {
				return nil, fmt.Errorf("decode schema: duplicate field %s", f.GetName())
			}
			seen[f.GetName()] = struct{}{}
			if f.GetSchema() == nil {
				return nil, fmt.Errorf("field %s: decode schema: field has no schema", f.GetName())
			}
			fs, err := DecodeSchema(f.Schema)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.GetName(), err)
			}
			s.Fields[i] = data.Field{Name: f.GetName(), Index: i, Schema: fs}
		}
	case data.MapType:
		if p.KeySchema == nil || p.ValueSchema == nil {
			return nil, errors.New("decode schema: map schema needs a key and a value schema")
		}
		var err error
		if s.KeySchema, err = DecodeSchema(p.KeySchema); err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		if s.ValueSchema, err = DecodeSchema(p.ValueSchema); err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
	case data.Array:
		if p.ValueSchema == nil {
			return nil, errors.New("decode schema: array schema needs an element schema")
		}
		var err error
		if s.ValueSchema, err = DecodeSchema(p.ValueSchema); err != nil {
			return nil, fmt.Errorf("array element: %w", err)
		}
	default:
		if len(p.Fields) > 0 || p.KeySchema != nil || p.ValueSchema != nil {
			return nil, fmt.Errorf("decode schema: %s schema has nested schemas", t)
		}
	}
	if p.DefaultValue != nil {
		d, err := DecodeValue(s, p.DefaultValue)
		if err != nil {
			return nil, fmt.Errorf("default value: %w", err)
		}
		s.Default = d
	}
	return s, nil
}

package transforms

import (
	"maps"
	"sync"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// side is the part of a record a $Key or $Value transformation works on.
type side bool

const (
	keySide   side = true
	valueSide side = false
)

func (s side) get(r *data.Record) (*data.Schema, any) {
	if s == keySide {
		return r.KeySchema, r.Key
	}
	return r.ValueSchema, r.Value
}

// with returns a copy of r with the side replaced. The headers slice is
// shared: transformations that change headers copy it first.
func (s side) with(r *data.Record, schema *data.Schema, v any) *data.Record {
	out := *r
	if s == keySide {
		out.KeySchema, out.Key = schema, v
	} else {
		out.ValueSchema, out.Value = schema, v
	}
	return &out
}

// suffix is the nested class name of the side.
func (s side) suffix() string {
	if s == keySide {
		return "$Key"
	}
	return "$Value"
}

// copyBasics is SchemaUtil.copySchemaBasics: a schema of type t with
// source's name, version, doc and parameters, but neither its
// optionality nor its default.
func copyBasics(source *data.Schema, t data.Type) *data.Schema {
	out := &data.Schema{Type: t, Name: source.Name, Doc: source.Doc,
		EmptyName: source.EmptyName, EmptyDoc: source.EmptyDoc,
		Parameters: maps.Clone(source.Parameters), ParameterOrder: source.ParameterKeys()}
	if source.Version != nil {
		v := *source.Version
		out.Version = &v
	}
	return out
}

// addField appends a struct field, keeping Field.Index equal to the
// position. It fails on a duplicate name, as SchemaBuilder.field does.
func addField(s *data.Schema, name string, fs *data.Schema) error {
	if s.Field(name) != nil {
		return &Exception{Class: SchemaBuilderException, Message: "Cannot create field because of field name duplication " + name}
	}
	s.Fields = append(s.Fields, data.Field{Name: name, Index: len(s.Fields), Schema: fs})
	return nil
}

// fieldValue is Struct.get (the schema default for a null field) when
// withDefault is set, else Struct.getWithoutDefault.
func fieldValue(s *data.Struct, i int, withDefault bool) any {
	if withDefault {
		return s.GetIndex(i)
	}
	return s.Values()[i]
}

// fieldValueByName is fieldValue by name; nil when the field is unknown.
func fieldValueByName(s *data.Struct, name string, withDefault bool) any {
	f := s.Schema().Field(name)
	if f == nil {
		return nil
	}
	return fieldValue(s, f.Index, withDefault)
}

// putField sets a field of a struct being built, checking the value
// against the field's schema as Struct.put does.
func putField(s *data.Struct, name string, v any) error {
	// A null for a required field is the failure users meet most (a
	// tombstone hoisted into a struct, say); it carries Kafka's message,
	// ConnectSchema.validateValue's, which names the field.
	if f := s.Schema().Field(name); f != nil && v == nil && data.Validate(f.Schema, nil) != nil {
		return dataErr("Invalid value: null used for required field: \"%s\", schema type: %s", name, upperType(f.Schema.Type))
	}
	if _, err := s.Put(name, v); err != nil {
		return &Exception{Class: DataException, Message: err.Error()}
	}
	return nil
}

// millis truncates a time to the millisecond in UTC: the precision of a
// java.util.Date and of Kafka record timestamps.
func millis(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

// schemaCache remembers the schema a transformation derived from an input
// schema, as Kafka's transformations keep an LRU cache of 16. Schemas are
// values in Sluice, so the input schema's pointer is the key; a converter
// that builds a new schema per record only costs a rebuild.
type schemaCache struct {
	mu sync.Mutex
	m  map[*data.Schema]*data.Schema
}

const schemaCacheSize = 16

func (c *schemaCache) get(in *data.Schema, build func() (*data.Schema, error)) (*data.Schema, error) {
	c.mu.Lock()
	out, ok := c.m[in]
	c.mu.Unlock()
	if ok {
		return out, nil
	}
	out, err := build()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= schemaCacheSize {
		c.m = make(map[*data.Schema]*data.Schema, schemaCacheSize)
	}
	c.m[in] = out
	c.mu.Unlock()
	return out, nil
}

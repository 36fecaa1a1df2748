package data

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// SchemaBuilder builds a Schema fluently (Kafka Connect's SchemaBuilder):
//
//	s := data.StructBuilder().Name("com.example.Order").
//		Field("id", data.Int64Schema).
//		Field("note", data.OptionalStringSchema).
//		Optional().MustBuild()
//
// Misuse (a duplicate field, setting the name twice, a default that does not
// match the schema, Field on a non-struct) is recorded and returned by Build;
// later calls after the first error are ignored.
type SchemaBuilder struct {
	s   Schema
	err error
	// names of fields already added, to reject duplicates
	fieldNames map[string]struct{}
	nameSet    bool
	versionSet bool
	docSet     bool
	defaultSet bool
	optSet     bool
}

// NewSchemaBuilder starts a schema of the type. ARRAY and MAP need their
// nested schemas: use ArrayBuilder and MapBuilder.
func NewSchemaBuilder(t Type) *SchemaBuilder {
	b := &SchemaBuilder{s: Schema{Type: t}}
	if t <= TypeInvalid || int(t) >= len(typeNames) {
		b.err = fmt.Errorf("invalid schema type %s", t)
	}
	if t == Array || t == MapType {
		b.err = fmt.Errorf("use ArrayBuilder or MapBuilder for %s schemas", t)
	}
	return b
}

// StructBuilder starts a STRUCT schema.
func StructBuilder() *SchemaBuilder { return NewSchemaBuilder(StructType) }

// ArrayBuilder starts an ARRAY schema of the element schema.
func ArrayBuilder(elem *Schema) *SchemaBuilder {
	b := &SchemaBuilder{s: Schema{Type: Array, ValueSchema: elem}}
	if elem == nil {
		b.err = errors.New("array schema needs an element schema")
	}
	return b
}

// MapBuilder starts a MAP schema of the key and value schemas.
func MapBuilder(key, value *Schema) *SchemaBuilder {
	b := &SchemaBuilder{s: Schema{Type: MapType, KeySchema: key, ValueSchema: value}}
	if key == nil || value == nil {
		b.err = errors.New("map schema needs a key and a value schema")
	}
	return b
}

// ArrayOf returns a required ARRAY schema of the element schema.
func ArrayOf(elem *Schema) *Schema { return ArrayBuilder(elem).MustBuild() }

// MapOf returns a required MAP schema of the key and value schemas.
func MapOf(key, value *Schema) *Schema { return MapBuilder(key, value).MustBuild() }

// BuilderFrom starts a builder holding a copy of s's type, name, version,
// doc, parameters, optionality and nested schemas, but not its default — what
// transforms need to derive a schema (SchemaUtil.copySchemaBasics plus
// fields).
func BuilderFrom(s *Schema) *SchemaBuilder {
	if s == nil {
		return &SchemaBuilder{err: errors.New("BuilderFrom: nil schema")}
	}
	b := &SchemaBuilder{s: Schema{
		Type: s.Type, Optional: s.Optional, Name: s.Name, Doc: s.Doc,
		EmptyName: s.Name == "" && s.EmptyName, EmptyDoc: s.Doc == "" && s.EmptyDoc,
		KeySchema: s.KeySchema, ValueSchema: s.ValueSchema,
	}}
	if s.Version != nil {
		v := *s.Version
		b.s.Version = &v
	}
	b.s.Parameters = maps.Clone(s.Parameters)
	b.s.ParameterOrder = s.ParameterKeys()
	for _, f := range s.Fields {
		b.Field(f.Name, f.Schema)
	}
	return b
}

func (b *SchemaBuilder) fail(format string, args ...any) *SchemaBuilder {
	if b.err == nil {
		b.err = fmt.Errorf(format, args...)
	}
	return b
}

// Optional makes null a valid value.
func (b *SchemaBuilder) Optional() *SchemaBuilder {
	if b.err == nil && b.optSet {
		return b.fail("invalid SchemaBuilder call: optional has already been set")
	}
	b.optSet = true
	b.s.Optional = true
	return b
}

// Required makes null invalid (the default).
func (b *SchemaBuilder) Required() *SchemaBuilder {
	if b.err == nil && b.optSet {
		return b.fail("invalid SchemaBuilder call: optional has already been set")
	}
	b.optSet = true
	b.s.Optional = false
	return b
}

// Name sets the schema's name.
func (b *SchemaBuilder) Name(name string) *SchemaBuilder {
	if b.err == nil && b.nameSet {
		return b.fail("invalid SchemaBuilder call: name has already been set")
	}
	b.nameSet = true
	b.s.Name, b.s.EmptyName = name, name == ""
	return b
}

// Version sets the schema's version.
func (b *SchemaBuilder) Version(v int32) *SchemaBuilder {
	if b.err == nil && b.versionSet {
		return b.fail("invalid SchemaBuilder call: version has already been set")
	}
	b.versionSet = true
	b.s.Version = &v
	return b
}

// Doc sets the schema's documentation.
func (b *SchemaBuilder) Doc(doc string) *SchemaBuilder {
	if b.err == nil && b.docSet {
		return b.fail("invalid SchemaBuilder call: doc has already been set")
	}
	b.docSet = true
	b.s.Doc, b.s.EmptyDoc = doc, doc == ""
	return b
}

// Parameter sets one parameter. A new key goes after those set before
// (ParameterOrder); setting a key again keeps its place, as Kafka's
// SchemaBuilder does.
func (b *SchemaBuilder) Parameter(k, v string) *SchemaBuilder {
	if b.s.Parameters == nil {
		b.s.Parameters = make(map[string]string)
	}
	if _, ok := b.s.Parameters[k]; !ok {
		b.s.ParameterOrder = append(b.s.ParameterOrder, k)
	}
	b.s.Parameters[k] = v
	return b
}

// Parameters sets several parameters; the new keys go after those set
// before in sorted order (a map has none). Call Parameter for each, in
// order, to choose it.
func (b *SchemaBuilder) Parameters(ps map[string]string) *SchemaBuilder {
	for _, k := range slices.Sorted(maps.Keys(ps)) {
		b.Parameter(k, ps[k])
	}
	return b
}

// Default sets the default value; Build checks it against the schema.
func (b *SchemaBuilder) Default(v any) *SchemaBuilder {
	if b.err == nil && b.defaultSet {
		return b.fail("invalid SchemaBuilder call: default has already been set")
	}
	b.defaultSet = true
	b.s.Default = v
	return b
}

// Field appends a STRUCT field.
func (b *SchemaBuilder) Field(name string, s *Schema) *SchemaBuilder {
	if b.err != nil {
		return b
	}
	if b.s.Type != StructType {
		return b.fail("cannot create fields on type %s", typeNameUpper(b.s.Type))
	}
	if name == "" {
		return b.fail("field name cannot be empty")
	}
	if s == nil {
		return b.fail("field schema for field %s cannot be null", name)
	}
	if _, dup := b.fieldNames[name]; dup {
		return b.fail("cannot create field because of field name duplication %s", name)
	}
	if b.fieldNames == nil {
		b.fieldNames = make(map[string]struct{})
	}
	b.fieldNames[name] = struct{}{}
	b.s.Fields = append(b.s.Fields, Field{Name: name, Index: len(b.s.Fields), Schema: s})
	return b
}

// Build returns the schema, or the first misuse recorded. Each call returns
// a new Schema; the builder may be reused.
func (b *SchemaBuilder) Build() (*Schema, error) {
	if b.err != nil {
		return nil, b.err
	}
	s := b.s
	s.Fields = append([]Field(nil), b.s.Fields...)
	s.Parameters = maps.Clone(b.s.Parameters)
	s.ParameterOrder = slices.Clone(b.s.ParameterOrder)
	if s.Default != nil {
		// SchemaBuilder.defaultValue's check; a null default is no default.
		if err := Validate(&s, s.Default); err != nil {
			return nil, fmt.Errorf("invalid default value: %w", err)
		}
	}
	return &s, nil
}

// MustBuild is Build for schemas known to be well-formed; it panics on misuse.
func (b *SchemaBuilder) MustBuild() *Schema {
	s, err := b.Build()
	if err != nil {
		panic("data.SchemaBuilder: " + err.Error())
	}
	return s
}

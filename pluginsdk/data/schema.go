package data

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Type is a schema type (Kafka Connect's Schema.Type).
type Type int8

// Schema types. The zero Type is invalid so that a forgotten type is caught.
const (
	TypeInvalid Type = iota
	Int8
	Int16
	Int32
	Int64
	Float32
	Float64
	Boolean
	String
	Bytes
	Array
	MapType
	StructType
)

var typeNames = [...]string{"invalid", "int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes", "array", "map", "struct"}

// String returns the lower-case name Kafka Connect uses in JSON schemas
// ("float32" is written "float" and "float64" "double" by JsonConverter; see
// package convert for that mapping).
func (t Type) String() string {
	if t < 0 || int(t) >= len(typeNames) {
		return fmt.Sprintf("Type(%d)", int8(t))
	}
	return typeNames[t]
}

// ParseType is the inverse of Type.String, case-insensitive.
func ParseType(s string) (Type, error) {
	for i, n := range typeNames[1:] {
		if strings.EqualFold(n, s) {
			return Type(i + 1), nil
		}
	}
	return TypeInvalid, fmt.Errorf("unknown schema type %q", s)
}

// IsPrimitive reports whether the type holds no nested schema.
func (t Type) IsPrimitive() bool { return t >= Int8 && t <= Bytes }

// Schema is Kafka Connect's Schema. Schemas are values: build them once
// (SchemaBuilder or a literal) and do not modify them after use.
type Schema struct {
	Type     Type
	Optional bool
	// Default is the default value (nil: none).
	Default any
	// Name identifies named and logical types ("org.apache.kafka.connect.data.Decimal").
	Name string
	// Version is nil when unset.
	Version *int32
	Doc     string
	// EmptyName and EmptyDoc tell a name or doc set to "" from one not set
	// at all, as Kafka Connect does (its name() is "" rather than null, and
	// JsonConverter writes "name":""). They matter only while Name or Doc
	// is "": HasName and HasDoc are the tests to use.
	EmptyName, EmptyDoc bool
	// Parameters are free-form; logical types keep settings here ("scale").
	Parameters map[string]string
	// ParameterOrder is the order the parameters were set in, which Kafka
	// Connect keeps (JsonConverter writes them so): each key of Parameters
	// once. SchemaBuilder keeps it; a literal may leave it nil. Nil, or a
	// list that does not name each key exactly once, means no order, and
	// ParameterKeys sorts the keys. SchemaEqual ignores it, as Kafka's
	// schema equality ignores the order of parameters.
	ParameterOrder []string
	// Fields of a STRUCT, in order; Field.Index equals the position.
	Fields []Field
	// KeySchema of a MAP.
	KeySchema *Schema
	// ValueSchema of a MAP or the element schema of an ARRAY.
	ValueSchema *Schema
}

// HasName reports whether the schema has a name, which may be "" (Kafka
// Connect's name() is not null).
func (s *Schema) HasName() bool { return s.Name != "" || s.EmptyName }

// HasDoc reports whether the schema has a doc, which may be "".
func (s *Schema) HasDoc() bool { return s.Doc != "" || s.EmptyDoc }

// Field is one field of a STRUCT schema.
type Field struct {
	Name   string
	Index  int
	Schema *Schema
}

// Field returns the named field, or nil.
func (s *Schema) Field(name string) *Field {
	if s == nil {
		return nil
	}
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// ParameterKeys returns the keys of Parameters in ParameterOrder when that
// names each of them exactly once, and sorted otherwise; nil for none.
func (s *Schema) ParameterKeys() []string {
	if s == nil || len(s.Parameters) == 0 {
		return nil
	}
	if orderNames(s.ParameterOrder, s.Parameters) {
		return slices.Clone(s.ParameterOrder)
	}
	return slices.Sorted(maps.Keys(s.Parameters))
}

// orderNames reports whether order names each key of params exactly once.
// Schemas carry a handful of parameters: a quadratic look for repeats
// costs less than a set.
func orderNames(order []string, params map[string]string) bool {
	if len(order) != len(params) {
		return false
	}
	for i, k := range order {
		if _, ok := params[k]; !ok || slices.Contains(order[:i], k) {
			return false
		}
	}
	return true
}

// IsOptional reports whether null is a valid value; a nil schema accepts anything.
func (s *Schema) IsOptional() bool { return s == nil || s.Optional }

// Predefined primitive schemas (Schema.INT8_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA, ...).
var (
	Int8Schema            = &Schema{Type: Int8}
	Int16Schema           = &Schema{Type: Int16}
	Int32Schema           = &Schema{Type: Int32}
	Int64Schema           = &Schema{Type: Int64}
	Float32Schema         = &Schema{Type: Float32}
	Float64Schema         = &Schema{Type: Float64}
	BooleanSchema         = &Schema{Type: Boolean}
	StringSchema          = &Schema{Type: String}
	BytesSchema           = &Schema{Type: Bytes}
	OptionalInt8Schema    = &Schema{Type: Int8, Optional: true}
	OptionalInt16Schema   = &Schema{Type: Int16, Optional: true}
	OptionalInt32Schema   = &Schema{Type: Int32, Optional: true}
	OptionalInt64Schema   = &Schema{Type: Int64, Optional: true}
	OptionalFloat32Schema = &Schema{Type: Float32, Optional: true}
	OptionalFloat64Schema = &Schema{Type: Float64, Optional: true}
	OptionalBooleanSchema = &Schema{Type: Boolean, Optional: true}
	OptionalStringSchema  = &Schema{Type: String, Optional: true}
	OptionalBytesSchema   = &Schema{Type: Bytes, Optional: true}
)

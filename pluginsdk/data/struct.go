package data

import "fmt"

// Struct is a value of a STRUCT schema: one value per field, in field order.
type Struct struct {
	schema *Schema
	values []any
}

// NewStruct returns an empty struct of the schema, which must be a STRUCT.
func NewStruct(s *Schema) *Struct {
	if s == nil || s.Type != StructType {
		panic("data.NewStruct: schema is not a struct")
	}
	return &Struct{schema: s, values: make([]any, len(s.Fields))}
}

// Schema returns the struct's schema.
func (s *Struct) Schema() *Schema { return s.schema }

// Values returns the field values in field order; callers must not modify it.
func (s *Struct) Values() []any { return s.values }

// Put sets a field, checking the value against the field's schema as
// Struct.put does, and returns s so calls chain. A null is refused for a
// required field even when the field has a default (see Validate); leave
// the field unset instead, and Get returns the default. The error is
// Kafka's message, which names the field.
func (s *Struct) Put(name string, v any) (*Struct, error) {
	f := s.schema.Field(name)
	if f == nil {
		return s, fmt.Errorf("%s is not a valid field name", name)
	}
	if err := validateValue(f.Schema, v, name, true); err != nil {
		return s, err
	}
	s.values[f.Index] = v
	return s, nil
}

// MustPut is Put that panics on error, for values known to be valid.
func (s *Struct) MustPut(name string, v any) *Struct {
	if _, err := s.Put(name, v); err != nil {
		panic(err)
	}
	return s
}

// SetIndex sets the value at a field index without validation (decoders use it).
func (s *Struct) SetIndex(i int, v any) { s.values[i] = v }

// Get returns a field's value, or its schema default when unset. It returns
// nil for an unknown name.
func (s *Struct) Get(name string) any {
	f := s.schema.Field(name)
	if f == nil {
		return nil
	}
	return s.GetIndex(f.Index)
}

// GetIndex is Get by field index.
func (s *Struct) GetIndex(i int) any {
	if v := s.values[i]; v != nil {
		return v
	}
	return s.schema.Fields[i].Schema.Default
}

// Validate checks every field against its schema as Struct.validate does:
// a required field must be set unless it has a default, and every value set
// must match its schema. It returns the first failure, Kafka's message
// naming the field.
func (s *Struct) Validate() error {
	for i, f := range s.schema.Fields {
		v := s.values[i]
		if v == nil && (f.Schema.IsOptional() || f.Schema.Default != nil) {
			continue
		}
		if err := validateValue(f.Schema, v, f.Name, true); err != nil {
			return err
		}
	}
	return nil
}

// MapEntry is one entry of a Map.
type MapEntry struct {
	Key   any
	Value any
}

// Map is a MAP value with keys of any type, in insertion order. Maps whose
// keys are all strings may also be plain map[string]any.
type Map []MapEntry

package data

import (
	"fmt"
	"time"
)

// Validate checks that v is a valid value of schema s (ConnectSchema.validateValue).
// A nil schema accepts any value.
func Validate(s *Schema, v any) error {
	if s == nil {
		return nil
	}
	if v == nil {
		if s.Optional || s.Default != nil {
			return nil
		}
		return fmt.Errorf("invalid value: null used for required field: %q, schema type: %s", s.Name, typeNameUpper(s.Type))
	}
	if _, ok := v.(Raw); ok {
		return nil
	}
	switch s.Name {
	case DecimalName:
		if _, ok := v.(Decimal); !ok {
			return fmt.Errorf("invalid Java object for logical type %s: %T", s.Name, v)
		}
		return nil
	case DateName, TimeName, TimestampName:
		if _, ok := v.(time.Time); !ok {
			return fmt.Errorf("invalid Java object for logical type %s: %T", s.Name, v)
		}
		return nil
	}
	ok := false
	switch s.Type {
	case Int8:
		_, ok = v.(int8)
	case Int16:
		_, ok = v.(int16)
	case Int32:
		_, ok = v.(int32)
	case Int64:
		_, ok = v.(int64)
	case Float32:
		_, ok = v.(float32)
	case Float64:
		_, ok = v.(float64)
	case Boolean:
		_, ok = v.(bool)
	case String:
		_, ok = v.(string)
	case Bytes:
		_, ok = v.([]byte)
	case Array:
		arr, isArr := v.([]any)
		if !isArr {
			break
		}
		for i, e := range arr {
			if err := Validate(s.ValueSchema, e); err != nil {
				return fmt.Errorf("array element %d: %w", i, err)
			}
		}
		return nil
	case MapType:
		switch m := v.(type) {
		case map[string]any:
			for k, e := range m {
				if err := Validate(s.KeySchema, k); err != nil {
					return fmt.Errorf("map key %q: %w", k, err)
				}
				if err := Validate(s.ValueSchema, e); err != nil {
					return fmt.Errorf("map value %q: %w", k, err)
				}
			}
			return nil
		case Map:
			for _, e := range m {
				if err := Validate(s.KeySchema, e.Key); err != nil {
					return fmt.Errorf("map key: %w", err)
				}
				if err := Validate(s.ValueSchema, e.Value); err != nil {
					return fmt.Errorf("map value: %w", err)
				}
			}
			return nil
		}
	case StructType:
		st, isStruct := v.(*Struct)
		if !isStruct {
			break
		}
		if st.schema != s && !StructSchemaMatches(st.schema, s) {
			return fmt.Errorf("struct schemas do not match")
		}
		return st.Validate()
	}
	if !ok {
		return fmt.Errorf("invalid Java object for schema with type %s: %T", typeNameUpper(s.Type), v)
	}
	return nil
}

func typeNameUpper(t Type) string {
	n := t.String()
	b := []byte(n)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

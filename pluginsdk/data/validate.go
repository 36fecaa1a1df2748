package data

import (
	"errors"
	"fmt"
	"time"
)

// Validate checks that v is a valid value of schema s, as Kafka Connect's
// ConnectSchema.validateValue does. A nil schema accepts any value.
//
// A null is valid only for an optional schema. A default does not make a
// null valid: Kafka substitutes defaults where a value is read (Struct.Get,
// JsonConverter with replace.null.with.default), never where one is checked,
// so a null put into a required field is refused even when the field has a
// default. The one place a default excuses a null is Struct.Validate: a
// required field with a default may be left unset.
//
// Messages are Kafka's, with Go type names where Kafka prints Java classes;
// array and map entries are prefixed with their position, which Kafka does
// not say.
func Validate(s *Schema, v any) error {
	return validateValue(s, v, "", false)
}

// validateValue is validateValue(name, schema, value); named is false where
// Kafka passes a null name (a top-level value, an array element, a map
// entry), which its messages print as "null".
func validateValue(s *Schema, v any, name string, named bool) error {
	if s == nil {
		return nil
	}
	if v == nil {
		if s.Optional {
			return nil
		}
		if !named {
			name = "null"
		}
		return errors.New("Invalid value: null used for required field: \"" + name + "\", schema type: " + typeNameUpper(s.Type))
	}
	if _, ok := v.(Raw); ok {
		return nil
	}
	ok := false
	switch s.Name {
	case DecimalName:
		_, ok = v.(Decimal)
		return mismatch(ok, s, v, name, named)
	case DateName, TimeName, TimestampName:
		_, ok = v.(time.Time)
		return mismatch(ok, s, v, name, named)
	}
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
			if err := validateValue(s.ValueSchema, e, "", false); err != nil {
				return fmt.Errorf("array element %d: %w", i, err)
			}
		}
		return nil
	case MapType:
		switch m := v.(type) {
		case map[string]any:
			for k, e := range m {
				if err := validateValue(s.KeySchema, k, "", false); err != nil {
					return fmt.Errorf("map key %q: %w", k, err)
				}
				if err := validateValue(s.ValueSchema, e, "", false); err != nil {
					return fmt.Errorf("map value %q: %w", k, err)
				}
			}
			return nil
		case Map:
			for _, e := range m {
				if err := validateValue(s.KeySchema, e.Key, "", false); err != nil {
					return fmt.Errorf("map key: %w", err)
				}
				if err := validateValue(s.ValueSchema, e.Value, "", false); err != nil {
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
			return errors.New("Struct schemas do not match.")
		}
		return st.Validate()
	}
	return mismatch(ok, s, v, name, named)
}

// mismatch is Kafka's refusal of a value whose type does not fit the
// schema, or nil when it does (ok).
func mismatch(ok bool, s *Schema, v any, name string, named bool) error {
	if ok {
		return nil
	}
	msg := "Invalid Java object for schema"
	if s.HasName() {
		msg += " \"" + s.Name + "\""
	}
	msg += fmt.Sprintf(" with type %s: %T", typeNameUpper(s.Type), v)
	if named {
		msg += " for field: \"" + name + "\""
	}
	return errors.New(msg)
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

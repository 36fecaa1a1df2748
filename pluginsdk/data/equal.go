package data

import (
	"bytes"
	"reflect"
	"time"
)

// SchemaEqual reports whether two schemas are equal in every attribute,
// recursively (ConnectSchema.equals).
func SchemaEqual(a, b *Schema) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	if a.Type != b.Type || a.Optional != b.Optional || a.Name != b.Name || a.Doc != b.Doc {
		return false
	}
	if a.HasName() != b.HasName() || a.HasDoc() != b.HasDoc() {
		// Kafka's equals tells a null name or doc from "".
		return false
	}
	if (a.Version == nil) != (b.Version == nil) || (a.Version != nil && *a.Version != *b.Version) {
		return false
	}
	if len(a.Parameters) != len(b.Parameters) {
		return false
	}
	for k, v := range a.Parameters {
		if bv, ok := b.Parameters[k]; !ok || bv != v {
			return false
		}
	}
	if !ValueEqual(a.Default, b.Default) {
		return false
	}
	if len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		if a.Fields[i].Name != b.Fields[i].Name || !SchemaEqual(a.Fields[i].Schema, b.Fields[i].Schema) {
			return false
		}
	}
	return SchemaEqual(a.KeySchema, b.KeySchema) && SchemaEqual(a.ValueSchema, b.ValueSchema)
}

// StructSchemaMatches reports whether a struct built with schema have may
// be used where schema want is expected: the two are equal apart from their
// own defaults. The exception exists because a STRUCT schema whose default
// is a struct can only build that struct with the schema before the
// default was set.
func StructSchemaMatches(have, want *Schema) bool {
	if have == want {
		return true
	}
	if have == nil || want == nil {
		return false
	}
	if have.Default == nil && want.Default == nil {
		return SchemaEqual(have, want)
	}
	h, w := *have, *want
	h.Default, w.Default = nil, nil
	return SchemaEqual(&h, &w)
}

// ValueEqual reports whether two values are equal as Connect values: decimals
// by unscaled value and scale, times by instant, bytes by content, structs by
// schema and field values, arrays element-wise, maps by content (a Map with
// only string keys equals the map[string]any of the same entries). Other
// values compare with reflect.DeepEqual.
func ValueEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case Decimal:
		y, ok := b.(Decimal)
		if !ok || x.Scale != y.Scale {
			return false
		}
		return bigOrZero(x.Unscaled).Cmp(bigOrZero(y.Unscaled)) == 0
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case Raw:
		y, ok := b.(Raw)
		return ok && bytes.Equal(x, y)
	case *Struct:
		y, ok := b.(*Struct)
		if !ok {
			return false
		}
		if x == nil || y == nil {
			return x == y
		}
		// A struct default's schema is its own schema minus the default
		// (or, decoded, the schema itself): compare without top-level
		// defaults, which also keeps the recursion finite.
		if !StructSchemaMatches(x.schema, y.schema) {
			return false
		}
		for i := range x.values {
			if !ValueEqual(x.values[i], y.values[i]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !ValueEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		switch y := b.(type) {
		case map[string]any:
			if len(x) != len(y) {
				return false
			}
			for k, v := range x {
				w, ok := y[k]
				if !ok || !ValueEqual(v, w) {
					return false
				}
			}
			return true
		case Map:
			return ValueEqual(y, x)
		}
		return false
	case Map:
		switch y := b.(type) {
		case Map:
			if len(x) != len(y) {
				return false
			}
			for i := range x {
				if !ValueEqual(x[i].Key, y[i].Key) || !ValueEqual(x[i].Value, y[i].Value) {
					return false
				}
			}
			return true
		case map[string]any:
			if len(x) != len(y) {
				return false
			}
			for _, e := range x {
				k, ok := e.Key.(string)
				if !ok {
					return false
				}
				w, ok := y[k]
				if !ok || !ValueEqual(e.Value, w) {
					return false
				}
			}
			return true
		}
		return false
	}
	return reflect.DeepEqual(a, b)
}

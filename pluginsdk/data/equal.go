package data

import "reflect"

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
	if !reflect.DeepEqual(a.Default, b.Default) {
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

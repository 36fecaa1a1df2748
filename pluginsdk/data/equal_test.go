package data

import (
	"math/big"
	"testing"
	"time"
)

func TestSchemaEqual(t *testing.T) {
	base := func() *SchemaBuilder {
		return StructBuilder().Name("s").Version(1).Doc("d").Parameter("k", "v").
			Field("a", Int32Schema).Field("b", MapOf(StringSchema, ArrayOf(OptionalInt64Schema)))
	}
	ref := base().MustBuild()
	cases := []struct {
		name  string
		other *Schema
		equal bool
	}{
		{"same content, other pointer", base().MustBuild(), true},
		{"same pointer", ref, true},
		{"nil", nil, false},
		{"optional", base().Optional().MustBuild(), false},
		{"name", BuilderFrom(&Schema{Type: StructType, Name: "t", Version: ref.Version, Doc: "d", Parameters: ref.Parameters, Fields: ref.Fields}).MustBuild(), false},
		{"version", StructBuilder().Name("s").Version(2).Doc("d").Parameter("k", "v").Field("a", Int32Schema).Field("b", MapOf(StringSchema, ArrayOf(OptionalInt64Schema))).MustBuild(), false},
		{"no version", StructBuilder().Name("s").Doc("d").Parameter("k", "v").Field("a", Int32Schema).Field("b", MapOf(StringSchema, ArrayOf(OptionalInt64Schema))).MustBuild(), false},
		{"doc", StructBuilder().Name("s").Version(1).Doc("e").Parameter("k", "v").Field("a", Int32Schema).Field("b", MapOf(StringSchema, ArrayOf(OptionalInt64Schema))).MustBuild(), false},
		{"parameter value", base().Parameter("k", "w").MustBuild(), false},
		{"extra parameter", base().Parameter("k2", "v").MustBuild(), false},
		{"extra field", base().Field("c", Int8Schema).MustBuild(), false},
		{"field name", StructBuilder().Name("s").Version(1).Doc("d").Parameter("k", "v").Field("A", Int32Schema).Field("b", MapOf(StringSchema, ArrayOf(OptionalInt64Schema))).MustBuild(), false},
		{"deep element optionality", StructBuilder().Name("s").Version(1).Doc("d").Parameter("k", "v").Field("a", Int32Schema).Field("b", MapOf(StringSchema, ArrayOf(Int64Schema))).MustBuild(), false},
		{"default", base().Default(NewStruct(ref).MustPut("a", int32(1)).MustPut("b", map[string]any{})).MustBuild(), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SchemaEqual(ref, c.other); got != c.equal {
				t.Fatalf("SchemaEqual = %v, want %v", got, c.equal)
			}
			if got := SchemaEqual(c.other, ref); got != c.equal {
				t.Fatalf("SchemaEqual (reversed) = %v, want %v", got, c.equal)
			}
		})
	}
	if !SchemaEqual(nil, nil) {
		t.Fatal("nil != nil")
	}
}

// Defaults that went through a wire round trip are rebuilt values: equality
// must not depend on big.Int internals or time.Time's location pointer.
func TestSchemaEqualComparesDefaultsAsValues(t *testing.T) {
	mk := func(d any, s *Schema) *Schema { c := *s; c.Default = d; return &c }
	zeroA := Decimal{big.NewInt(0), 2}
	zeroB := Decimal{FromTwosComplement([]byte{0}), 2}
	if !SchemaEqual(mk(zeroA, DecimalSchema(2, false)), mk(zeroB, DecimalSchema(2, false))) {
		t.Fatal("equal decimal defaults differ")
	}
	ts := time.Date(2024, 1, 1, 1, 0, 0, 0, time.FixedZone("x", 3600))
	if !SchemaEqual(mk(ts, TimestampSchema(false)), mk(ts.UTC(), TimestampSchema(false))) {
		t.Fatal("same instant in two zones differs")
	}
	if SchemaEqual(mk([]byte{1}, BytesSchema), mk([]byte{2}, BytesSchema)) {
		t.Fatal("different bytes defaults equal")
	}
}

func TestValueEqual(t *testing.T) {
	s := StructBuilder().Field("a", OptionalInt32Schema).MustBuild()
	cases := []struct {
		name  string
		a, b  any
		equal bool
	}{
		{"nil", nil, nil, true},
		{"nil vs value", nil, int32(0), false},
		{"ints of different width", int32(1), int64(1), false},
		{"decimal scale", Decimal{big.NewInt(1), 1}, Decimal{big.NewInt(1), 2}, false},
		{"decimal nil unscaled is zero", Decimal{nil, 1}, Decimal{big.NewInt(0), 1}, true},
		{"bytes", []byte("ab"), []byte("ab"), true},
		{"bytes vs raw", []byte("ab"), Raw("ab"), false},
		{"nested array", []any{[]byte{1}, int8(2)}, []any{[]byte{1}, int8(2)}, true},
		{"array length", []any{int8(1)}, []any{int8(1), int8(1)}, false},
		{"string map vs Map", map[string]any{"a": int8(1)}, Map{{"a", int8(1)}}, true},
		{"Map vs string map", Map{{"a", int8(1)}}, map[string]any{"a": int8(2)}, false},
		{"Map order matters", Map{{int8(1), "a"}, {int8(2), "b"}}, Map{{int8(2), "b"}, {int8(1), "a"}}, false},
		{"structs", NewStruct(s).MustPut("a", int32(1)), NewStruct(s).MustPut("a", int32(1)), true},
		{"structs differ", NewStruct(s).MustPut("a", int32(1)), NewStruct(s), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ValueEqual(c.a, c.b); got != c.equal {
				t.Fatalf("ValueEqual = %v, want %v", got, c.equal)
			}
		})
	}
}

// A STRUCT schema whose default is a struct: the default was built with the
// schema minus its default (builder) or with the schema itself (decoders).
// Both must compare equal, and comparison must terminate.
func TestStructDefaultSchemas(t *testing.T) {
	bare := StructBuilder().Name("p").Field("x", Int32Schema).MustBuild()
	def := NewStruct(bare).MustPut("x", int32(1))
	built := BuilderFrom(bare).Default(def).MustBuild()

	self := *bare
	selfPtr := &self
	selfPtr.Default = NewStruct(selfPtr).MustPut("x", int32(1))

	if !SchemaEqual(built, selfPtr) || !SchemaEqual(selfPtr, built) {
		t.Fatal("struct-default schemas built two ways differ")
	}
	if err := Validate(built, NewStruct(bare).MustPut("x", int32(2))); err != nil {
		t.Fatalf("struct of the bare schema rejected by the defaulted one: %v", err)
	}
	other := BuilderFrom(bare).Default(NewStruct(bare).MustPut("x", int32(2))).MustBuild()
	if SchemaEqual(built, other) {
		t.Fatal("different struct defaults compare equal")
	}
	if !StructSchemaMatches(built, other) {
		t.Fatal("schemas differing only in their own default should match for struct values")
	}
	if StructSchemaMatches(bare, StructBuilder().Name("q").Field("x", Int32Schema).MustBuild()) {
		t.Fatal("differently named schemas match")
	}
}

package data

import (
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	point := StructBuilder().Name("point").
		Field("x", Int32Schema).
		Field("y", OptionalInt32Schema).
		MustBuild()
	otherPoint := StructBuilder().Name("point").Field("x", Int64Schema).MustBuild()
	withDefault := NewSchemaBuilder(Int32).Default(int32(4)).MustBuild()
	good := NewStruct(point).MustPut("x", int32(1))
	missingX := NewStruct(point)

	cases := []struct {
		name   string
		schema *Schema
		value  any
		err    string // "" = valid
	}{
		{"nil schema accepts anything", nil, struct{}{}, ""},
		{"int8", Int8Schema, int8(1), ""},
		{"int8 given int", Int8Schema, 1, "invalid Java object for schema with type INT8: int"},
		{"int16", Int16Schema, int16(1), ""},
		{"int16 given int32", Int16Schema, int32(1), "INT16: int32"},
		{"int32", Int32Schema, int32(1), ""},
		{"int64", Int64Schema, int64(1), ""},
		{"int64 given int32", Int64Schema, int32(1), "INT64: int32"},
		{"float32", Float32Schema, float32(1), ""},
		{"float32 given float64", Float32Schema, 1.0, "FLOAT32: float64"},
		{"float64", Float64Schema, 1.0, ""},
		{"boolean", BooleanSchema, true, ""},
		{"boolean given string", BooleanSchema, "true", "BOOLEAN: string"},
		{"string", StringSchema, "x", ""},
		{"string given bytes", StringSchema, []byte("x"), "STRING: []uint8"},
		{"bytes", BytesSchema, []byte{1}, ""},
		{"raw always accepted", Int32Schema, Raw("x"), ""},
		{"required null", Int32Schema, nil, `null used for required field: "", schema type: INT32`},
		{"optional null", OptionalInt32Schema, nil, ""},
		{"null with default", withDefault, nil, ""},
		{"array", ArrayOf(Int32Schema), []any{int32(1), int32(2)}, ""},
		{"array bad element", ArrayOf(Int32Schema), []any{int32(1), "x"}, "array element 1"},
		{"array null element of required", ArrayOf(Int32Schema), []any{nil}, "array element 0"},
		{"array null element of optional", ArrayOf(OptionalInt32Schema), []any{nil}, ""},
		{"array given typed slice", ArrayOf(Int32Schema), []int32{1}, "ARRAY: []int32"},
		{"map string keys", MapOf(StringSchema, Int64Schema), map[string]any{"a": int64(1)}, ""},
		{"map bad value", MapOf(StringSchema, Int64Schema), map[string]any{"a": 1}, `map value "a"`},
		{"map string keys against int key schema", MapOf(Int32Schema, Int64Schema), map[string]any{"a": int64(1)}, `map key "a"`},
		{"Map int keys", MapOf(Int32Schema, StringSchema), Map{{int32(1), "a"}}, ""},
		{"Map bad key", MapOf(Int32Schema, StringSchema), Map{{"1", "a"}}, "map key"},
		{"struct", point, good, ""},
		{"struct missing required field", point, missingX, "field x"},
		{"struct of another schema", otherPoint, good, "struct schemas do not match"},
		{"struct given map", point, map[string]any{"x": int32(1)}, "STRUCT: map[string]interface {}"},
		{"decimal", DecimalSchema(2, false), Decimal{big.NewInt(1), 2}, ""},
		{"decimal given bytes", DecimalSchema(2, false), []byte{1}, "logical type org.apache.kafka.connect.data.Decimal"},
		{"date", DateSchema(false), time.Unix(0, 0), ""},
		{"timestamp given int64", TimestampSchema(false), int64(5), "logical type org.apache.kafka.connect.data.Timestamp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Validate(c.schema, c.value)
			if c.err == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Validate = %v, want error containing %q", err, c.err)
			}
		})
	}
}

func TestStructPutAndGet(t *testing.T) {
	s := StructBuilder().
		Field("id", Int64Schema).
		Field("name", NewSchemaBuilder(String).Optional().Default("anon").MustBuild()).
		MustBuild()
	st := NewStruct(s)
	if _, err := st.Put("id", "x"); err == nil || !strings.Contains(err.Error(), "field id") {
		t.Fatalf("Put of a wrong type: %v", err)
	}
	if _, err := st.Put("nope", int64(1)); err == nil || err.Error() != "nope is not a valid field name" {
		t.Fatalf("Put of an unknown field: %v", err)
	}
	if err := st.Validate(); err == nil {
		t.Fatal("struct with an unset required field validated")
	}
	st.MustPut("id", int64(9))
	if err := st.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := st.Get("name"); got != "anon" {
		t.Fatalf("Get of unset field with default = %v", got)
	}
	if got := st.Get("nope"); got != nil {
		t.Fatalf("Get of unknown field = %v", got)
	}
	if got := st.String(); got != "Struct{id=9}" {
		t.Fatalf("String() = %q", got)
	}
}

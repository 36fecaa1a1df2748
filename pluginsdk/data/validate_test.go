package data

import (
	"math/big"
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
	optionalWithDefault := NewSchemaBuilder(Int32).Optional().Default(int32(4)).MustBuild()
	defaulted := StructBuilder().Field("x", Int32Schema).Field("d", withDefault).MustBuild()
	good := NewStruct(point).MustPut("x", int32(1))
	missingX := NewStruct(point)
	outer := StructBuilder().Field("p", point).MustBuild()
	outerMissingX := NewStruct(outer)
	outerMissingX.SetIndex(0, missingX) // Put would refuse it, as Kafka's put does

	cases := []struct {
		name   string
		schema *Schema
		value  any
		err    string // "" = valid
	}{
		{"nil schema accepts anything", nil, struct{}{}, ""},
		{"int8", Int8Schema, int8(1), ""},
		{"int8 given int", Int8Schema, 1, "Invalid Java object for schema with type INT8: int"},
		{"int16", Int16Schema, int16(1), ""},
		{"int16 given int32", Int16Schema, int32(1), "Invalid Java object for schema with type INT16: int32"},
		{"int32", Int32Schema, int32(1), ""},
		{"int64", Int64Schema, int64(1), ""},
		{"int64 given int32", Int64Schema, int32(1), "Invalid Java object for schema with type INT64: int32"},
		// Kafka names a schema named "" too: `schema "" with type INT32`.
		{"named \"\" given string", NewSchemaBuilder(Int32).Name("").MustBuild(), "x", `Invalid Java object for schema "" with type INT32: string`},
		{"float32", Float32Schema, float32(1), ""},
		{"float32 given float64", Float32Schema, 1.0, "Invalid Java object for schema with type FLOAT32: float64"},
		{"float64", Float64Schema, 1.0, ""},
		{"boolean", BooleanSchema, true, ""},
		{"boolean given string", BooleanSchema, "true", "Invalid Java object for schema with type BOOLEAN: string"},
		{"string", StringSchema, "x", ""},
		{"string given bytes", StringSchema, []byte("x"), "Invalid Java object for schema with type STRING: []uint8"},
		{"bytes", BytesSchema, []byte{1}, ""},
		{"raw always accepted", Int32Schema, Raw("x"), ""},
		{"required null", Int32Schema, nil, `Invalid value: null used for required field: "null", schema type: INT32`},
		{"optional null", OptionalInt32Schema, nil, ""},
		// Kafka checks optionality only: a default is substituted where values
		// are read, not where they are checked.
		{"null with default", withDefault, nil, `Invalid value: null used for required field: "null", schema type: INT32`},
		{"null with default, optional", optionalWithDefault, nil, ""},
		{"array null element with default", ArrayOf(withDefault), []any{nil}, `array element 0: Invalid value: null used for required field: "null", schema type: INT32`},
		{"map null value with default", MapOf(StringSchema, withDefault), map[string]any{"a": nil}, `map value "a": Invalid value: null used for required field: "null", schema type: INT32`},
		{"struct with an unset field that has a default", defaulted, NewStruct(defaulted).MustPut("x", int32(1)), ""},
		{"struct with an unset nested field", outer, outerMissingX, `Invalid value: null used for required field: "x", schema type: INT32`},
		{"array", ArrayOf(Int32Schema), []any{int32(1), int32(2)}, ""},
		{"array bad element", ArrayOf(Int32Schema), []any{int32(1), "x"}, "array element 1: Invalid Java object for schema with type INT32: string"},
		{"array null element of required", ArrayOf(Int32Schema), []any{nil}, `array element 0: Invalid value: null used for required field: "null", schema type: INT32`},
		{"array null element of optional", ArrayOf(OptionalInt32Schema), []any{nil}, ""},
		{"array given typed slice", ArrayOf(Int32Schema), []int32{1}, "Invalid Java object for schema with type ARRAY: []int32"},
		{"map string keys", MapOf(StringSchema, Int64Schema), map[string]any{"a": int64(1)}, ""},
		{"map bad value", MapOf(StringSchema, Int64Schema), map[string]any{"a": 1}, `map value "a": Invalid Java object for schema with type INT64: int`},
		{"map string keys against int key schema", MapOf(Int32Schema, Int64Schema), map[string]any{"a": int64(1)}, `map key "a": Invalid Java object for schema with type INT32: string`},
		{"Map int keys", MapOf(Int32Schema, StringSchema), Map{{int32(1), "a"}}, ""},
		{"Map bad key", MapOf(Int32Schema, StringSchema), Map{{"1", "a"}}, "map key: Invalid Java object for schema with type INT32: string"},
		{"struct", point, good, ""},
		{"struct missing required field", point, missingX, `Invalid value: null used for required field: "x", schema type: INT32`},
		{"struct of another schema", otherPoint, good, "Struct schemas do not match."},
		{"struct given map", point, map[string]any{"x": int32(1)}, `Invalid Java object for schema "point" with type STRUCT: map[string]interface {}`},
		{"decimal", DecimalSchema(2, false), Decimal{big.NewInt(1), 2}, ""},
		{"decimal given bytes", DecimalSchema(2, false), []byte{1}, `Invalid Java object for schema "org.apache.kafka.connect.data.Decimal" with type BYTES: []uint8`},
		{"date", DateSchema(false), time.Unix(0, 0), ""},
		{"timestamp given int64", TimestampSchema(false), int64(5), `Invalid Java object for schema "org.apache.kafka.connect.data.Timestamp" with type INT64: int64`},
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
			if err == nil || err.Error() != c.err {
				t.Fatalf("Validate = %v, want %q", err, c.err)
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
	if _, err := st.Put("id", "x"); err == nil || err.Error() != `Invalid Java object for schema with type INT64: string for field: "id"` {
		t.Fatalf("Put of a wrong type: %v", err)
	}
	if _, err := st.Put("nope", int64(1)); err == nil || err.Error() != "nope is not a valid field name" {
		t.Fatalf("Put of an unknown field: %v", err)
	}
	if err := st.Validate(); err == nil || err.Error() != `Invalid value: null used for required field: "id", schema type: INT64` {
		t.Fatalf("Validate of a struct with an unset required field: %v", err)
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

// A default does not make null a valid value of a required field: Kafka's
// Struct.put refuses it, Struct.validate lets the field stay unset, and
// Struct.get answers the default.
func TestStructRequiredFieldWithDefault(t *testing.T) {
	s := StructBuilder().
		Field("id", Int64Schema).
		Field("n", NewSchemaBuilder(Int32).Default(int32(7)).MustBuild()).
		Field("s", NewSchemaBuilder(String).Default("x").MustBuild()).
		MustBuild()
	st := NewStruct(s).MustPut("id", int64(1)).MustPut("n", int32(3))

	_, err := st.Put("n", nil)
	if want := `Invalid value: null used for required field: "n", schema type: INT32`; err == nil || err.Error() != want {
		t.Fatalf("Put(n, nil) = %v, want %q", err, want)
	}
	if got := st.Values()[1]; got != int32(3) {
		t.Fatalf("refused Put changed the field: %v", got)
	}
	if _, err := st.Put("s", nil); err == nil || err.Error() != `Invalid value: null used for required field: "s", schema type: STRING` {
		t.Fatalf("Put(s, nil) = %v", err)
	}

	// Unset (never put, or cleared by a decoder) is valid and reads as the default.
	if err := st.Validate(); err != nil {
		t.Fatalf("Validate with s unset: %v", err)
	}
	if got := st.Get("s"); got != "x" {
		t.Fatalf(`Get("s") = %v, want the default "x"`, got)
	}
	st.SetIndex(1, nil)
	if err := st.Validate(); err != nil {
		t.Fatalf("Validate with n cleared: %v", err)
	}
	if got := st.Get("n"); got != int32(7) {
		t.Fatalf(`Get("n") = %v, want the default 7`, got)
	}
	// A struct holding such a field is itself a valid value.
	if err := Validate(s, st); err != nil {
		t.Fatalf("Validate(schema, struct) = %v", err)
	}

	// The id field has no default: leaving it unset is refused, first failure only.
	empty := NewStruct(s)
	if err := empty.Validate(); err == nil || err.Error() != `Invalid value: null used for required field: "id", schema type: INT64` {
		t.Fatalf("Validate of an empty struct = %v", err)
	}
}

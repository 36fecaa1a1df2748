package transforms

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

func TestCastWholeValue(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.Cast$Value"
	named := data.NewSchemaBuilder(data.Int64).Name("n").Version(3).Optional().MustBuild()
	var cases []golden
	// Schemaless whole-value casts, Kafka's CastTest table.
	for _, c := range []struct {
		name, spec string
		in, want   any
	}{
		{"int8 to int16", "int16", int8(42), int16(42)},
		{"int32 to int8 wraps", "int8", int32(300), int8(44)},
		{"int64 to int32", "int32", int64(42), int32(42)},
		{"float64 to int32 truncates", "int32", float64(42.9), int32(42)},
		{"float64 to int8 saturates through int", "int8", float64(1e10), int8(-1)},
		{"-Infinity to int64 saturates", "int64", math.Inf(-1), int64(math.MinInt64)},
		{"bool to int64", "int64", true, int64(1)},
		{"string to int32", "int32", "42", int32(42)},
		{"string to float32", "float32", "42.5", float32(42.5)},
		{"string to float64 with suffix", "float64", "1e3d", float64(1000)},
		{"int to float64", "float64", int32(42), float64(42)},
		// 2^60 + 2^36 + 1 is just above a tie between two floats; through
		// a double it lands on the tie and rounds down to even.
		{"int64 to float32 rounds once", "float32", int64(1<<60 + 1<<36 + 1), float32(1<<60 + 1<<37)},
		{"zero to boolean", "boolean", int32(0), false},
		{"float to boolean", "boolean", float64(0.5), false},
		{"string TRUE to boolean", "boolean", "TRUE", true},
		{"string yes to boolean", "boolean", "yes", false},
		{"int to string", "string", int32(42), "42"},
		{"float32 to string", "string", float32(42), "42.0"},
		{"big float64 to string", "string", float64(1e10), "1.0E10"},
		{"small float64 to string", "string", float64(0.0001), "1.0E-4"},
		{"bool to string", "string", true, "true"},
		{"bytes to string", "string", []byte("hello"), "aGVsbG8="},
	} {
		in, want := c.in, c.want
		cases = append(cases, golden{name: "schemaless " + c.name, class: cls, props: props("spec", c.spec),
			in: func() *data.Record { return valueRec(nil, in) }, want: valueRec(nil, want)})
	}
	cases = append(cases,
		golden{name: "with schema keeps name and optional", class: cls, props: props("spec", "int32"),
			in:   func() *data.Record { return valueRec(named, int64(42)) },
			want: valueRec(&data.Schema{Type: data.Int32, Name: "n", Version: ver(3), Optional: true}, int32(42))},
		// A null passes untouched, its schema too, as Cast.apply returns
		// such a record as it is.
		golden{name: "with schema null keeps the schema", class: cls, props: props("spec", "string"),
			in:   func() *data.Record { return valueRec(named, nil) },
			want: valueRec(named, nil)},
		golden{name: "timestamp to int64 drops the logical name", class: cls, props: props("spec", "int64"),
			in:   func() *data.Record { return valueRec(data.TimestampSchema(false), time.UnixMilli(1234).UTC()) },
			want: valueRec(data.Int64Schema, int64(1234))},
		golden{name: "date to int32 is days", class: cls, props: props("spec", "int32"),
			in:   func() *data.Record { return valueRec(data.DateSchema(false), time.UnixMilli(3*86400000).UTC()) },
			want: valueRec(data.Int32Schema, int32(3))},
		golden{name: "timestamp to string", class: cls, props: props("spec", "string"),
			in:   func() *data.Record { return valueRec(data.TimestampSchema(false), time.UnixMilli(86400000+1234).UTC()) },
			want: valueRec(data.StringSchema, "1970-01-02T00:00:01.234Z")},
		golden{name: "date to string", class: cls, props: props("spec", "string"),
			in:   func() *data.Record { return valueRec(data.DateSchema(false), time.UnixMilli(86400000).UTC()) },
			want: valueRec(data.StringSchema, "1970-01-02")},
		golden{name: "time to string", class: cls, props: props("spec", "string"),
			in:   func() *data.Record { return valueRec(data.TimeSchema(false), time.UnixMilli(1234).UTC()) },
			want: valueRec(data.StringSchema, "00:00:01.234Z")},
		// Values.dateFormatFor prints every instant before 1970-01-02 as a
		// time of day, so no calendar date before the cutover is printed;
		// a year past 9999 gets all its digits (SimpleDateFormat's yyyy).
		golden{name: "timestamp before the Gregorian cutover to string", class: cls, props: props("spec", "string"),
			in: func() *data.Record {
				return valueRec(data.TimestampSchema(false), time.UnixMilli(-62135596800000+1234).UTC())
			},
			want: valueRec(data.StringSchema, "00:00:01.234Z")},
		golden{name: "date in year 10000 to string", class: cls, props: props("spec", "string"),
			in:   func() *data.Record { return valueRec(data.DateSchema(false), time.UnixMilli(253402300800000).UTC()) },
			want: valueRec(data.StringSchema, "10000-01-01")},
		golden{name: "timestamp in year 10000 to string", class: cls, props: props("spec", "string"),
			in: func() *data.Record {
				return valueRec(data.TimestampSchema(false), time.UnixMilli(253402300800000+1).UTC())
			},
			want: valueRec(data.StringSchema, "10000-01-01T00:00:00.001Z")},
		golden{name: "decimal to int32", class: cls, props: props("spec", "int32"),
			in: func() *data.Record {
				return valueRec(data.DecimalSchema(2, false), data.Decimal{Unscaled: big.NewInt(-4299), Scale: 2})
			},
			want: valueRec(data.Int32Schema, int32(-42))},
		golden{name: "decimal to float32 rounds once", class: cls, props: props("spec", "float32"),
			in: func() *data.Record {
				return valueRec(data.DecimalSchema(2, false), data.Decimal{Unscaled: mustBig("115292157332632371225"), Scale: 2})
			},
			want: valueRec(data.Float32Schema, float32(1<<60+1<<37))},
		golden{name: "decimal to float64", class: cls, props: props("spec", "float64"),
			in: func() *data.Record {
				return valueRec(data.DecimalSchema(2, false), data.Decimal{Unscaled: big.NewInt(4250), Scale: 2})
			},
			want: valueRec(data.Float64Schema, 42.5)},
		golden{name: "decimal to string", class: cls, props: props("spec", "string"),
			in: func() *data.Record {
				return valueRec(data.DecimalSchema(2, false), data.Decimal{Unscaled: big.NewInt(4250), Scale: 2})
			},
			want: valueRec(data.StringSchema, "42.50")},
		golden{name: "string out of range", class: cls, props: props("spec", "int8"),
			in: func() *data.Record { return valueRec(data.StringSchema, "300") }, err: "Value (300) was out of range for requested data type", errClass: DataException},
		golden{name: "string not a number", class: cls, props: props("spec", "int32"),
			in: func() *data.Record { return valueRec(nil, "abc") }, err: "Value (abc) was out of range for requested data type"},
		golden{name: "bytes to int", class: cls, props: props("spec", "int32"),
			in: func() *data.Record { return valueRec(data.BytesSchema, []byte{1}) }, err: "Unexpected type in Cast transformation: class [B"},
		golden{name: "array unsupported", class: cls, props: props("spec", "string"),
			in:  func() *data.Record { return valueRec(data.ArrayOf(data.Int32Schema), []any{}) },
			err: "Cast transformation does not support casting from ARRAY; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]"},
		golden{name: "schemaless date unsupported", class: cls, props: props("spec", "string"),
			in:  func() *data.Record { return valueRec(nil, time.UnixMilli(0)) },
			err: "Cast transformation was passed a value of type class java.util.Date which is not supported by Connect's data API"},
		golden{name: "schemaless null passes", class: cls, props: props("spec", "int8"),
			in: func() *data.Record { return valueRec(nil, nil) }, want: valueRec(nil, nil)},
		golden{name: "key", class: "Cast$Key", props: props("spec", "string"),
			in: func() *data.Record { return keyRec(data.Int64Schema, int64(7)) }, want: keyRec(data.StringSchema, "7")},
	)
	runGolden(t, cases)
}

func TestCastFields(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.Cast$Value"
	in := data.StructBuilder().Name("r").
		Field("int8", data.Int8Schema).
		Field("int16", data.NewSchemaBuilder(data.Int16).Optional().Default(int16(5)).MustBuild()).
		Field("string", data.StringSchema).
		Field("bytes", data.OptionalBytesSchema).
		Field("keep", data.BooleanSchema).
		MustBuild()
	out := &data.Schema{Type: data.StructType, Name: "r", Fields: []data.Field{
		{Name: "int8", Index: 0, Schema: data.Int64Schema},
		{Name: "int16", Index: 1, Schema: &data.Schema{Type: data.String, Optional: true, Default: "5"}},
		{Name: "string", Index: 2, Schema: data.Float64Schema},
		{Name: "bytes", Index: 3, Schema: data.OptionalStringSchema},
		{Name: "keep", Index: 4, Schema: data.BooleanSchema},
	}}
	spec := props("spec", "int8:int64,int16:string,string:float64,bytes:string")
	runGolden(t, []golden{
		{name: "struct fields", class: cls, props: spec,
			in: func() *data.Record {
				return valueRec(in, mustStruct(in, "int8", int8(8), "int16", int16(16), "string", "1.5", "bytes", []byte{0xff}, "keep", true))
			},
			want: valueRec(out, mustStruct(out, "int8", int64(8), "int16", "16", "string", 1.5, "bytes", "/w==", "keep", true))},
		{name: "null field takes the cast default", class: cls, props: spec,
			in: func() *data.Record {
				return valueRec(in, mustStruct(in, "int8", int8(8), "string", "2", "keep", false))
			},
			want: valueRec(out, mustStruct(out, "int8", int64(8), "int16", "5", "string", 2.0, "keep", false))},
		{name: "schemaless fields", class: cls, props: props("spec", "a:int8,b:string,missing:int32"),
			in:   func() *data.Record { return valueRec(nil, map[string]any{"a": int64(300), "b": int64(7), "c": "x"}) },
			want: valueRec(nil, map[string]any{"a": int8(44), "b": "7", "c": "x", "missing": nil})},
		{name: "struct required", class: cls, props: spec,
			in:  func() *data.Record { return valueRec(in, "x") },
			err: "Only Struct objects supported for [cast types], found: java.lang.String"},
		{name: "map required", class: cls, props: spec,
			in:  func() *data.Record { return valueRec(nil, "x") },
			err: "Only Map objects supported in absence of schema for [cast types], found: java.lang.String"},
		{name: "tombstone passes", class: cls, props: spec,
			in: func() *data.Record { return valueRec(in, nil) }, want: valueRec(in, nil)},
	})
}

func TestCastSpecValidation(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"", "Must specify at least one field to cast."},
		{"a:bytes", "Cast transformation does not support casting to BYTES; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"},
		{"a:foo", "Invalid type found in casting spec: foo"},
		{"foo", "Invalid type found in casting spec: foo"},
		{"int8,a:int16", "Cast transformations that specify a type to cast the entire value to may only specify a single cast in their spec"},
		{"a:b:c", "Invalid value [a:b:c] for configuration renames: Invalid rename mapping: a:b:c"},
		// An empty entry (a trailing comma) is an empty type, as Java's
		// "".split(":") is [""]; it is not a bad field:type pair.
		{"a:int32,", "Invalid type found in casting spec: "},
	} {
		_, err := New("Cast$Value", props("spec", c.spec))
		if err == nil || err.Error() != c.want {
			t.Errorf("spec %q: error %v, want %q", c.spec, err, c.want)
		}
	}
}

func TestJavaNumberText(t *testing.T) {
	for _, c := range []struct {
		f    float64
		bits int
		want string
	}{
		{1, 64, "1.0"}, {0.001, 64, "0.001"}, {1234567, 64, "1234567.0"}, {12345678, 64, "1.2345678E7"},
		{-0.0001, 64, "-1.0E-4"}, {0.1, 32, "0.1"}, {float64(float32(1.1)), 32, "1.1"}, {math.Inf(1), 64, "Infinity"},
	} {
		if got := javaFloatString(c.f, c.bits); got != c.want {
			t.Errorf("%v/%d: %s, want %s", c.f, c.bits, got, c.want)
		}
	}
	for _, c := range []struct {
		u     int64
		scale int32
		want  string
	}{
		{12345, 2, "123.45"}, {5, 3, "0.005"}, {-5, 1, "-0.5"}, {5, 8, "5E-8"}, {123, -2, "1.23E+4"}, {0, 0, "0"},
	} {
		if got := javaDecimalString(data.Decimal{Unscaled: big.NewInt(c.u), Scale: c.scale}); got != c.want {
			t.Errorf("%d scale %d: %s, want %s", c.u, c.scale, got, c.want)
		}
	}
	if javaD2L(math.NaN()) != 0 || javaD2I(math.NaN()) != 0 {
		t.Error("NaN does not narrow to 0")
	}
	for _, s := range []string{"inf", "nan", "0x10", "1_0", "--1", ""} {
		if _, err := javaParseFloat(s, 64); err == nil {
			t.Errorf("%q parsed", s)
		}
	}
	for s, want := range map[string]float64{" 1.5 ": 1.5, "2f": 2, "-Infinity": math.Inf(-1), "1e400": math.Inf(1), "0x1p3": 8} {
		if got, err := javaParseFloat(s, 64); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", s, got, err, want)
		}
	}
}

// TestCastUnicodeDigits: Integer.parseInt and friends read any Unicode
// decimal digits (Character.digit), not only ASCII ones.
func TestCastUnicodeDigits(t *testing.T) {
	for _, c := range []struct {
		in   string
		spec string
		want any
	}{
		{"١٢", "int32", int32(12)},     // Arabic-Indic
		{"-１２３", "int16", int16(-123)}, // fullwidth
		{"४२", "int64", int64(42)},     // Devanagari
	} {
		tr, err := New("Cast$Value", props("spec", c.spec))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tr.Apply(valueRec(data.StringSchema, c.in))
		if err != nil || got.Value != c.want {
			t.Errorf("%q to %s: %v, %v; want %v", c.in, c.spec, got, err, c.want)
		}
	}
	// Java reads UTF-16 units: a digit beyond the BMP is two surrogates,
	// neither of them a digit.
	tr, _ := New("Cast$Value", props("spec", "int8"))
	if _, err := tr.Apply(valueRec(data.StringSchema, "𝟗")); err == nil || err.Error() != "Value (𝟗) was out of range for requested data type" {
		t.Errorf("mathematical digit nine: %v", err)
	}
}

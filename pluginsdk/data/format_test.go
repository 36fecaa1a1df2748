package data

import (
	"math/big"
	"testing"
	"time"
)

func TestStringForms(t *testing.T) {
	s := StructBuilder().Field("a", Int32Schema).Field("b", OptionalStringSchema).Field("c", ArrayOf(BytesSchema)).MustBuild()
	cases := []struct {
		got, want string
	}{
		{Int32Schema.String(), "Schema{INT32}"},
		{DateSchema(true).String(), "Schema{org.apache.kafka.connect.data.Date:INT32}"},
		{(*Schema)(nil).String(), "Schema{null}"},
		{NewStruct(s).MustPut("a", int32(1)).MustPut("c", []any{[]byte("hi")}).String(), "Struct{a=1,c=[aGk=]}"},
		{NewStruct(s).String(), "Struct{}"},
		{Map{{int32(1), "x"}, {int32(2), nil}}.String(), "{1=x, 2=null}"},
		{FormatValue(map[string]any{"b": true, "a": 1.5}), "{a=1.5, b=true}"},
		{FormatValue(Decimal{big.NewInt(-5), 1}), "-0.5"},
		{FormatValue(time.UnixMilli(1).In(time.FixedZone("x", 3600))), "Thu Jan 01 00:00:00 UTC 1970"},
		// Java's Double.toString, Float.toString and BigDecimal.toString.
		{FormatValue(1.0), "1.0"},
		{FormatValue(float32(0.1)), "0.1"},
		{FormatValue(1e20), "1.0E20"},
		{FormatValue([]any{2.0, int8(-1), nil}), "[2.0, -1, null]"},
		{FormatValue(Decimal{big.NewInt(5), -2}), "5E+2"},
		{NewStruct(StructBuilder().Field("x", Float64Schema).MustBuild()).MustPut("x", 3.0).String(), "Struct{x=3.0}"},
		{FormatValue((*Struct)(nil)), "null"},
		{FormatValue(nil), "null"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
}

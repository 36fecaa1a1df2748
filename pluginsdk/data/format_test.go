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
		{FormatValue(time.UnixMilli(1).In(time.FixedZone("x", 3600))), "1970-01-01T00:00:00.001Z"},
		{FormatValue(nil), "null"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
}

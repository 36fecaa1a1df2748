package convert

import (
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

func TestParseDecimal(t *testing.T) {
	cases := []struct {
		in       string
		unscaled string
		scale    int32
		ok       bool
	}{
		{"1.50", "150", 2, true}, {"1E+3", "1", -3, true}, {"-0.5", "-5", 1, true}, {".5", "5", 1, true},
		{"5.", "5", 0, true}, {"+7", "7", 0, true}, {"1e-8", "1", 8, true},
		{"", "", 0, false}, {".", "", 0, false}, {"1e", "", 0, false}, {"1x", "", 0, false}, {"--1", "", 0, false},
		{"1e99999999999", "", 0, false},
	}
	for _, tc := range cases {
		d, ok := parseDecimal(tc.in)
		if ok != tc.ok {
			t.Errorf("parseDecimal(%q) ok = %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if ok && (d.Unscaled.String() != tc.unscaled || d.Scale != tc.scale) {
			t.Errorf("parseDecimal(%q) = %s scale %d, want %s scale %d", tc.in, d.Unscaled, d.Scale, tc.unscaled, tc.scale)
		}
	}
}

func TestJavaString(t *testing.T) {
	st := data.NewStruct(lineSchema).MustPut("sku", "S1")
	cases := []struct {
		v    any
		want string
	}{
		{int8(-3), "-3"}, {int64(9), "9"}, {float32(1), "1.0"}, {1e20, "1.0E20"}, {true, "true"},
		{dec(1234, 2), "12.34"},
		{[]any{int32(1), "a", nil, 2.5}, "[1, a, null, 2.5]"},
		{map[string]any{"b": int32(2), "a": "x"}, "{a=x, b=2}"},
		{data.Map{{Key: int32(2), Value: "two"}, {Key: int32(1), Value: "one"}}, "{2=two, 1=one}"},
		{st, "Struct{sku=S1}"},
		{utc(1970, 1, 1, 0, 0, 0, 0), "Thu Jan 01 00:00:00 UTC 1970"},
	}
	for _, tc := range cases {
		if got := javaString(tc.v); got != tc.want {
			t.Errorf("javaString(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

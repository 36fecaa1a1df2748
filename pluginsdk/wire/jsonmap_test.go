package wire

import (
	"math"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

func TestEncodeJSONMap(t *testing.T) {
	cases := []struct {
		name string
		in   map[string]any
		want string
	}{
		{"nil", nil, ""},
		{"empty", map[string]any{}, "{}"},
		{"sorted keys, nested", map[string]any{"b": int64(1), "a": map[string]any{"z": true, "y": nil}}, `{"a":{"y":null,"z":true},"b":1}`},
		{"integral float keeps a fraction", map[string]any{"f": 3.0, "g": 0.25, "h": float32(2)}, `{"f":3.0,"g":0.25,"h":2.0}`},
		{"big float", map[string]any{"f": 1e21}, `{"f":1e+21}`},
		{"ints of every width", map[string]any{"a": 1, "b": int8(-2), "c": int16(3), "d": int32(4), "e": uint64(math.MaxUint64)}, `{"a":1,"b":-2,"c":3,"d":4,"e":18446744073709551615}`},
		{"strings are escaped minimally", map[string]any{"s": "a\"b\\c\n<&>\x01é"}, `{"s":"a\"b\\c\n<&>\u0001é"}`},
		{"invalid utf-8 replaced", map[string]any{"s": "a\xffb"}, `{"s":"a\ufffdb"}`},
		{"arrays and typed slices", map[string]any{"a": []any{int64(1), "x"}, "b": []string{"p", "q"}, "c": map[string]int{"k": 1}}, `{"a":[1,"x"],"b":["p","q"],"c":{"k":1}}`},
		{"bytes as base64", map[string]any{"b": []byte{0, 1, 2}}, `{"b":"AAEC"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := EncodeJSONMap(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want || (c.in == nil) != (got == nil) {
				t.Fatalf("EncodeJSONMap = %q, want %q", got, c.want)
			}
		})
	}
	for _, bad := range []map[string]any{
		{"nan": math.NaN()},
		{"inf": math.Inf(1)},
		{"fn": func() {}},
		{"intkeys": map[int]string{1: "a"}},
	} {
		if _, err := EncodeJSONMap(bad); err == nil {
			t.Errorf("EncodeJSONMap(%v) succeeded", bad)
		}
	}
}

func TestEncodeJSONMapIsDeterministic(t *testing.T) {
	m := map[string]any{}
	for i := 0; i < 50; i++ {
		m[string(rune('a'+i%26))+strings.Repeat("x", i)] = int64(i)
	}
	first, _ := EncodeJSONMap(m)
	for i := 0; i < 20; i++ {
		again, _ := EncodeJSONMap(m)
		if string(again) != string(first) {
			t.Fatal("encoding differs between calls")
		}
	}
}

func TestDecodeJSONMap(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want map[string]any
		err  string
	}{
		{"empty", "", nil, ""},
		{"whitespace", "  ", nil, ""},
		{"null", "null", nil, ""},
		{"numbers", `{"i":10,"neg":-3,"f":1.0,"e":1e3,"big":18446744073709551616}`,
			map[string]any{"i": int64(10), "neg": int64(-3), "f": 1.0, "e": 1000.0, "big": 18446744073709551616.0}, ""},
		{"nested", `{"a":[1,{"b":2.5}],"s":"x","n":null,"t":true}`,
			map[string]any{"a": []any{int64(1), map[string]any{"b": 2.5}}, "s": "x", "n": nil, "t": true}, ""},
		{"not an object", `[1]`, nil, "want an object"},
		{"trailing data", `{} {}`, nil, "trailing data"},
		{"malformed", `{"a":`, nil, "decode JSON map"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeJSONMap([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (c.want == nil) || !data.ValueEqual(got, c.want) {
				t.Fatalf("DecodeJSONMap = %#v, want %#v", got, c.want)
			}
		})
	}
}

func TestJSONMapRoundTrip(t *testing.T) {
	in := map[string]any{"file": "/var/log/x", "position": int64(1 << 40), "ratio": 0.5, "whole": 2.0,
		"list": []any{"a", int64(-1), nil, false}, "nested": map[string]any{"k": map[string]any{}}}
	b, err := EncodeJSONMap(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeJSONMap(b)
	if err != nil {
		t.Fatal(err)
	}
	if !data.ValueEqual(in, out) {
		t.Fatalf("round trip %s gave %v", b, out)
	}
}

package convert

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

func TestSimpleHeaderParse(t *testing.T) {
	arrayOf := func(s *data.Schema) *data.Schema { return &data.Schema{Type: data.Array, ValueSchema: s} }
	mapOf := func(k, v *data.Schema) *data.Schema {
		return &data.Schema{Type: data.MapType, KeySchema: k, ValueSchema: v}
	}
	bigInt := data.DecimalSchema(0, false)
	cases := []struct {
		in     string
		schema *data.Schema
		value  any
	}{
		{"", data.StringSchema, ""},
		{"null", nil, nil},
		{" true ", data.BooleanSchema, true},
		{"false", data.BooleanSchema, false},
		{"True", data.StringSchema, "True"},
		{"42", data.Int8Schema, int8(42)},
		{"-129", data.Int16Schema, int16(-129)},
		{"40000", data.Int32Schema, int32(40000)},
		{"3000000000", data.Int64Schema, int64(3000000000)},
		{"1.0", data.Int8Schema, int8(1)},
		{"1e3", data.Int16Schema, int16(1000)},
		{"+5", data.Int8Schema, int8(5)},
		{"1.5", data.Float32Schema, float32(1.5)},
		{"3.141592653589793", data.Float32Schema, float32(3.1415927)},
		{"1e39", data.Float64Schema, 1e39},
		{"123456789012345678901234567890", bigInt, data.Decimal{Unscaled: mustBig("123456789012345678901234567890"), Scale: 0}},
		{"hello world", data.StringSchema, "hello world"},
		{"  padded ", data.StringSchema, "  padded "},
		{"12,5", data.StringSchema, "12,5"},
		{"42abc", data.StringSchema, "42abc"},
		{"2024-01-15", data.DateSchema(false), utc(2024, 1, 15, 0, 0, 0, 0)},
		{"12:34:56.789Z", data.TimeSchema(false), utc(1970, 1, 1, 12, 34, 56, 789)},
		{"2024-01-15T12:34:56.789Z", data.TimestampSchema(false), utc(2024, 1, 15, 12, 34, 56, 789)},
		// Kafka parses with a lenient SimpleDateFormat: fields may have more
		// or fewer digits, roll over when out of range, and text after the
		// pattern is ignored; a backslash may escape a colon.
		{"2024-13-45", data.DateSchema(false), utc(2025, 2, 14, 0, 0, 0, 0)},
		{"2024-02-30", data.DateSchema(false), utc(2024, 3, 1, 0, 0, 0, 0)},
		{"2024-1-015", data.DateSchema(false), utc(2024, 1, 15, 0, 0, 0, 0)},
		{"2024-01-1x", data.DateSchema(false), utc(2024, 1, 1, 0, 0, 0, 0)},
		{"2024- 1-15", data.DateSchema(false), utc(2024, 1, 15, 0, 0, 0, 0)},
		{"2024--1-15", data.DateSchema(false), utc(2023, 11, 15, 0, 0, 0, 0)},
		{"24:00:00.000Z", data.TimeSchema(false), utc(1970, 1, 2, 0, 0, 0, 0)},
		{"2024-01-15T23:59:60.000Z", data.TimestampSchema(false), utc(2024, 1, 16, 0, 0, 0, 0)},
		{`12\:34\:56.789Z`, data.TimeSchema(false), utc(1970, 1, 1, 12, 34, 56, 789)},
		{"[2024-02-30]", arrayOf(data.DateSchema(false)), []any{utc(2024, 3, 1, 0, 0, 0, 0)}},
		{`["2024-02-30"]`, arrayOf(data.DateSchema(false)), []any{utc(2024, 3, 1, 0, 0, 0, 0)}},
		{"2024-01-15Z", data.StringSchema, "2024-01-15Z"},
		{"12:34:56.789X", data.StringSchema, "12:34:56.789X"},
		{"1234567890", data.Int32Schema, int32(1234567890)},
		{"[1,2,3]", arrayOf(data.Int8Schema), []any{int8(1), int8(2), int8(3)}},
		{"[1, 1000]", arrayOf(data.Int16Schema), []any{int16(1), int16(1000)}},
		{"[1.5,2]", arrayOf(data.Float32Schema), []any{float32(1.5), float32(2)}},
		{`["a","b"]`, arrayOf(data.StringSchema), []any{"a", "b"}},
		{`["a\"q","b\\c"]`, arrayOf(data.StringSchema), []any{`a"q`, `b\c`}},
		{"[1,]", arrayOf(data.Int8Schema), []any{int8(1)}},
		{"[]", &data.Schema{Type: data.Array}, []any{}},
		{"[null]", &data.Schema{Type: data.Array}, []any{nil}},
		{"[1,null]", data.StringSchema, "[1,null]"},
		{`[1,"a"]`, &data.Schema{Type: data.Array}, []any{int8(1), "a"}},
		// Once two elements share no schema, none is inferred for the rest
		// (Kafka's SchemaMerger); the elements keep their own types.
		{`[1,"a",2]`, &data.Schema{Type: data.Array}, []any{int8(1), "a", int8(2)}},
		{`["a",1,"b"]`, &data.Schema{Type: data.Array}, []any{"a", int8(1), "b"}},
		{`[1,true,1.5]`, &data.Schema{Type: data.Array}, []any{int8(1), true, float32(1.5)}},
		{`{"a":1,"b":"x","c":2}`, mapOf(data.StringSchema, nil), map[string]any{"a": int8(1), "b": "x", "c": int8(2)}},
		{`{1:"x","k":"y",2:"z"}`, &data.Schema{Type: data.MapType}, data.Map{{Key: int8(1), Value: "x"}, {Key: "k", Value: "y"}, {Key: int8(2), Value: "z"}}},
		{"[a,b]", data.StringSchema, "[a,b]"},
		{"[1,2", data.StringSchema, "[1,2"},
		{"[1,2] x", data.StringSchema, "[1,2] x"},
		{"[[1],[2,3]]", arrayOf(arrayOf(data.Int8Schema)), []any{[]any{int8(1)}, []any{int8(2), int8(3)}}},
		{"[2024-01-15T12:34:56.789Z]", arrayOf(data.TimestampSchema(false)), []any{utc(2024, 1, 15, 12, 34, 56, 789)}},
		{`{"a":1,"b":2}`, mapOf(data.StringSchema, data.Int8Schema), map[string]any{"a": int8(1), "b": int8(2)}},
		{`{"a":1,"a":300}`, mapOf(data.StringSchema, data.Int16Schema), map[string]any{"a": int16(300)}},
		{`{1:"x",2:"y"}`, mapOf(data.Int8Schema, data.StringSchema), data.Map{{Key: int8(1), Value: "x"}, {Key: int8(2), Value: "y"}}},
		{`{"a":null}`, mapOf(data.StringSchema, nil), map[string]any{"a": nil}},
		{"{}", &data.Schema{Type: data.MapType}, map[string]any{}},
		{`{"a":[true,false]}`, mapOf(data.StringSchema, arrayOf(data.BooleanSchema)), map[string]any{"a": []any{true, false}}},
		{`{null:1}`, data.StringSchema, "{null:1}"},
		{`{a:1}`, data.StringSchema, "{a:1}"},
	}
	for _, tc := range cases {
		s, v, err := (SimpleHeaderConverter{}).ToConnectHeader("t", "h", []byte(tc.in))
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !data.SchemaEqual(s, tc.schema) {
			t.Errorf("%q: schema = %+v, want %+v", tc.in, s, tc.schema)
		}
		if !data.ValueEqual(v, tc.value) {
			t.Errorf("%q: value = %#v, want %#v", tc.in, v, tc.value)
		}
	}
	s, v, err := (SimpleHeaderConverter{}).ToConnectHeader("t", "h", nil)
	if s != nil || v != nil || err != nil {
		t.Errorf("null header: %v %v %v", s, v, err)
	}
	s, v, _ = (SimpleHeaderConverter{}).ToConnectHeader("t", "h", []byte{0xff, 0xfe})
	if s != data.BytesSchema || string(v.([]byte)) != "\xff\xfe" {
		t.Errorf("invalid UTF-8 should fall back to BYTES, got %v %v", s, v)
	}
}

func TestSimpleHeaderWrite(t *testing.T) {
	st := data.NewStruct(lineSchema).MustPut("sku", "S\"1").MustPut("qty", int16(2))
	cases := []struct {
		schema *data.Schema
		value  any
		want   string
	}{
		{data.StringSchema, "plain \"text\"", "plain \"text\""},
		{data.Int32Schema, int32(-7), "-7"},
		{data.Float64Schema, 1e20, "1.0E20"},
		{data.Float32Schema, float32(0.1), "0.1"},
		{data.BooleanSchema, true, "true"},
		{data.BytesSchema, []byte{1, 2, 0xff}, "AQL/"},
		{data.DecimalSchema(2, false), dec(1234, 2), "12.34"},
		{data.DateSchema(false), utc(2024, 1, 15, 0, 0, 0, 0), "2024-01-15"},
		{data.TimeSchema(false), utc(1970, 1, 1, 12, 34, 56, 789), "12:34:56.789Z"},
		// Kafka picks the form from the instant, not the schema: a
		// Timestamp at midnight UTC is written as a date, a Date of the
		// epoch as a time of day (more in TestSimpleHeaderTemporalGolden).
		{data.TimestampSchema(false), utc(2024, 1, 15, 0, 0, 0, 0), "2024-01-15"},
		{data.DateSchema(false), utc(1970, 1, 1, 0, 0, 0, 0), "00:00:00.000Z"},
		{nil, utc(2024, 1, 15, 0, 0, 0, 0), "2024-01-15"},
		{data.ArrayOf(data.StringSchema), []any{"a", `b"\`}, `["a","b\"\\"]`},
		{data.ArrayOf(data.BytesSchema), []any{[]byte{1}}, `["AQ=="]`},
		{nil, []any{int32(1), nil, 2.5}, "[1,null,2.5]"},
		{data.MapOf(data.StringSchema, data.Int8Schema), map[string]any{"b": int8(2), "a": int8(1)}, `{"a":1,"b":2}`},
		{data.MapOf(data.Int8Schema, data.StringSchema), data.Map{{Key: int8(2), Value: "x"}}, `{2:"x"}`},
		{lineSchema, st, `{"sku":"S\"1","qty":2}`},
	}
	for _, tc := range cases {
		b, err := (SimpleHeaderConverter{}).FromConnectHeader("t", "h", tc.schema, tc.value)
		if err != nil || string(b) != tc.want {
			t.Errorf("FromConnectHeader(%#v) = %q, %v; want %q", tc.value, b, err, tc.want)
		}
	}
	if b, err := (SimpleHeaderConverter{}).FromConnectHeader("t", "h", nil, nil); b != nil || err != nil {
		t.Errorf("null: %q %v", b, err)
	}
	_, err := (SimpleHeaderConverter{}).FromConnectHeader("t", "h", nil, struct{}{})
	mustDataError(t, err, "Failed to serialize unexpected value type struct {}: {}", "")
}

// Values written by SimpleHeaderConverter read back as themselves when
// their schema is one the reader infers.
func TestSimpleHeaderRoundTrip(t *testing.T) {
	cases := []struct {
		schema *data.Schema
		value  any
	}{
		{data.BooleanSchema, false},
		{data.Int8Schema, int8(-5)},
		{data.Int16Schema, int16(300)},
		{data.Int32Schema, int32(70000)},
		{data.Int64Schema, int64(1) << 40},
		{data.Float32Schema, float32(2.5)},
		{data.StringSchema, "some text, with: punctuation"},
		{data.DateSchema(false), utc(2020, 2, 29, 0, 0, 0, 0)},
		{data.TimeSchema(false), utc(1970, 1, 1, 23, 59, 59, 999)},
		{data.TimestampSchema(false), utc(2024, 1, 15, 12, 34, 56, 789)},
		{data.ArrayOf(data.Int8Schema), []any{int8(1), int8(2)}},
		{data.ArrayOf(data.StringSchema), []any{`q"uote`, `back\slash`, "x"}},
		{data.MapOf(data.StringSchema, data.ArrayOf(data.Int16Schema)), map[string]any{"k": []any{int16(1000)}}},
	}
	h := SimpleHeaderConverter{}
	for _, tc := range cases {
		b, err := h.FromConnectHeader("t", "h", tc.schema, tc.value)
		if err != nil {
			t.Fatal(err)
		}
		s, v, err := h.ToConnectHeader("t", "h", b)
		if err != nil {
			t.Fatal(err)
		}
		if !data.SchemaEqual(s, tc.schema) || !data.ValueEqual(v, tc.value) {
			t.Errorf("%q read back as %+v %#v, want %+v %#v", b, s, v, tc.schema, tc.value)
		}
	}
	if _, v, _ := h.ToConnectHeader("t", "h", []byte("NaN")); v != "NaN" {
		t.Errorf("NaN is not a number to Kafka's parser; got %#v", v)
	}
	_ = math.NaN
}

func mustBig(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return n
}

// Dates before 1582-10-15 are Julian in Kafka Connect (SimpleDateFormat's
// GregorianCalendar). The text and milliseconds below were printed by
// OpenJDK 17.0.15's SimpleDateFormat with Values' ISO patterns in the UTC
// zone (a throwaway program, not kept). SimpleHeaderConverter never writes
// such a date (Kafka writes any instant before 1970-01-02 as a time of
// day), but it reads them, so the formatter is checked on its own here and
// the text it gives must read back as the same instant.
func TestSimpleHeaderJavaCalendar(t *testing.T) {
	h := SimpleHeaderConverter{}
	for _, c := range []struct {
		schema *data.Schema
		ms     int64
		want   string
	}{
		{data.DateSchema(false), -62135596800000, "0001-01-03"}, // proleptic Gregorian 0001-01-01
		{data.DateSchema(false), -62135856000000, "0001-12-31"}, // 1 BC: the era is not printed
		{data.DateSchema(false), 253402300800000, "10000-01-01"},
		{data.DateSchema(false), -200000000000000, "4369-05-07"},
		{data.DateSchema(false), -12219292800000, "1582-10-15"},
		{data.DateSchema(false), -12219379200000, "1582-10-04"},
		{data.DateSchema(false), -30609792000000, "1000-01-01"},
		{data.TimestampSchema(false), -62135596800000, "0001-01-03T00:00:00.000Z"},
		{data.TimestampSchema(false), -12219292800001, "1582-10-04T23:59:59.999Z"},
		{data.TimestampSchema(false), -199999996276996, "4369-05-07T05:28:43.004Z"},
	} {
		tm := time.UnixMilli(c.ms).UTC()
		b := appendJavaISODate(nil, tm)
		if c.schema.Name == data.TimestampName {
			b = append(append(append(b, 'T'), tm.Format(isoTime)...), 'Z')
		}
		if string(b) != c.want {
			t.Errorf("format %s %d: %q, want %q", c.schema.Name, c.ms, b, c.want)
		}
	}
	for _, c := range []struct {
		in string
		ms int64
	}{
		{"1000-01-01", -30609792000000},
		{"0001-01-01", -62135769600000},
		{"0000-01-01", -62167392000000}, // year 0 of the AD era is 1 BC
		{"1582-10-10", -12218860800000}, // a skipped day reads as Julian
		{"1582-02-29", -12238128000000},
		{"1500-02-29", -14825894400000},
		{"1582-10--1", -12219811200000},
		{"1582-10-04T23:59:59.999Z", -12219292800001},
		{"0001-01-01T00:00:00.000Z", -62135769600000},
		{"1582-10-04T48:00:00.000Z", -12219206400000},
	} {
		_, v, err := h.ToConnectHeader("t", "h", []byte(c.in))
		tm, ok := v.(time.Time)
		if err != nil || !ok || tm.UnixMilli() != c.ms {
			t.Errorf("read %q: %#v %v, want %d", c.in, v, err, c.ms)
		}
	}
	// Every day of years 1 to 9999, formatted as Java does, reads back as
	// itself, as a date and as a timestamp; from 1970-01-02 on the header
	// converter writes them so.
	for days := int64(-719_162 - 2); days < 2_932_897; days += 3 {
		for _, s := range []*data.Schema{data.DateSchema(false), data.TimestampSchema(false)} {
			in := time.UnixMilli(days * 86400000).UTC()
			b := appendJavaISODate(nil, in)
			if s.Name == data.TimestampName {
				in = in.Add(45296789 * time.Millisecond)
				b = append(append(append(b, 'T'), in.Format(isoTime)...), 'Z')
			}
			if days > 0 {
				w, err := h.FromConnectHeader("t", "h", s, in)
				if err != nil || string(w) != string(b) {
					t.Fatalf("%v written as %q, %v; want %q", in, w, err, b)
				}
			}
			gs, v, err := h.ToConnectHeader("t", "h", b)
			if tm, ok := v.(time.Time); err != nil || !ok || !tm.Equal(in) || gs.Name != s.Name {
				t.Fatalf("%v as %q reads back as %v %v (%v)", in, b, gs, v, err)
			}
		}
	}
}

// TestSimpleHeaderParseMapKeysAligned checks that map keys that become
// equal once converted to their common schema (or are equal instants) are
// one entry, keeping the first one's position and the last one's value, as
// Kafka 4.4's SimpleHeaderConverter reads them into a LinkedHashMap.
func TestSimpleHeaderParseMapKeysAligned(t *testing.T) {
	day := func(ms int64) time.Time { return timeUTC(ms) }
	for _, tc := range []struct {
		in   string
		want data.Map
	}{
		{`{2000-02-29:"a",00:"b",1970-01-01:"c",-129:"d"}`,
			data.Map{{Key: day(951782400000), Value: "a"}, {Key: day(0), Value: "c"}, {Key: day(-129 * msPerDay), Value: "d"}}},
		{`{2024-01-15T00:00:00.000Z:"a",1:"b","2024-01-15":"c"}`,
			data.Map{{Key: day(1705276800000), Value: "c"}, {Key: day(1), Value: "b"}}},
	} {
		_, v, err := SimpleHeaderConverter{}.ToConnectHeader("t", "k", []byte(tc.in))
		m, ok := v.(data.Map)
		if err != nil || !ok || len(m) != len(tc.want) {
			t.Errorf("%s read as %#v, %v; want %d entries", tc.in, v, err, len(tc.want))
			continue
		}
		for i := range m {
			if !data.ValueEqual(m[i].Key, tc.want[i].Key) || m[i].Value != tc.want[i].Value {
				t.Errorf("%s entry %d = %v:%v, want %v:%v", tc.in, i, m[i].Key, m[i].Value, tc.want[i].Key, tc.want[i].Value)
			}
		}
	}
}

// TestSimpleHeaderParseTimeRange checks that a number aligned to a Time
// must lie in [0, 86400000], as Kafka's Time.toLogical requires: out of
// range, the conversion fails and the whole text reads as a string.
func TestSimpleHeaderParseTimeRange(t *testing.T) {
	for _, in := range []string{
		`[-128,12:00:00.000Z]`,
		`[86400001,12:00:00.000Z]`,
		`{"k0":-128,"k1":12:00:00.000Z}`,
		`{-128:"v",12:00:00.000Z:"v"}`,
	} {
		s, v, err := SimpleHeaderConverter{}.ToConnectHeader("t", "k", []byte(in))
		if err != nil || !data.SchemaEqual(s, data.StringSchema) || v != in {
			t.Errorf("%s read as %v %#v, %v; want the string", in, s, v, err)
		}
	}
	s, v, err := SimpleHeaderConverter{}.ToConnectHeader("t", "k", []byte(`[0,86400000,12:00:00.000Z]`))
	want := []any{timeUTC(0), timeUTC(msPerDay), timeUTC(12 * 3600 * 1000)}
	if err != nil || s.ValueSchema == nil || s.ValueSchema.Name != data.TimeName || !data.ValueEqual(v, want) {
		t.Errorf("times in range read as %v %#v, %v", s, v, err)
	}
}

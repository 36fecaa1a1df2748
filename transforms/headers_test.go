package transforms

import (
	"math/big"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

func withHeaders(r *data.Record, hs ...data.Header) *data.Record {
	r.Headers = hs
	return r
}

func TestInsertHeader(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.InsertHeader"
	existing := data.Header{Key: "existing", Schema: data.StringSchema, Value: "e"}
	in := func() *data.Record { return withHeaders(valueRec(data.StringSchema, "v"), existing) }
	var cases []golden
	for _, c := range []struct {
		literal string
		schema  *data.Schema
		value   any
	}{
		{"hello", data.StringSchema, "hello"},
		{"", data.StringSchema, ""},
		{"true", data.BooleanSchema, true},
		{"false", data.BooleanSchema, false},
		// The literals are case-sensitive.
		{"FALSE", data.StringSchema, "FALSE"},
		{"True", data.StringSchema, "True"},
		// A whole number is an integer however it is spelled.
		{"1.0", data.Int8Schema, int8(1)},
		{"2.50e1", data.Int8Schema, int8(25)},
		{"-1e2", data.Int8Schema, int8(-100)},
		{"0.000", data.Int8Schema, int8(0)},
		{"5000000000.00", data.Int64Schema, int64(5000000000)},
		{"0.5", data.Float32Schema, float32(0.5)},
		// A number starts with a digit or a sign.
		{".5", data.StringSchema, ".5"},
		{"-.5", data.Float32Schema, float32(-0.5)},
		// Beyond a double: a Decimal of the text's scale.
		{"1e400", data.DecimalSchema(-400, false), data.Decimal{Unscaled: big.NewInt(1), Scale: -400}},
		// An exponent this large is not expanded.
		{"407127e212797209", data.DecimalSchema(-212797209, false), data.Decimal{Unscaled: big.NewInt(407127), Scale: -212797209}},
		{"42", data.Int8Schema, int8(42)},
		{"-300", data.Int16Schema, int16(-300)},
		{"70000", data.Int32Schema, int32(70000)},
		{"5000000000", data.Int64Schema, int64(5000000000)},
		{"99999999999999999999", data.DecimalSchema(0, false), data.Decimal{Unscaled: mustBig("99999999999999999999"), Scale: 0}},
		{"1.5", data.Float32Schema, float32(1.5)},
		{"1e300", data.Float64Schema, 1e300},
		{"2024-01-02", data.DateSchema(false), time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"10:11:12.013Z", data.TimeSchema(false), time.UnixMilli(((10*60+11)*60+12)*1000 + 13).UTC()},
		{"2024-01-02T10:11:12.013Z", data.TimestampSchema(false), time.Date(2024, 1, 2, 10, 11, 12, 13e6, time.UTC)},
		// Before 1582-10-15 dates are Julian, as SimpleDateFormat reads
		// them (milliseconds from OpenJDK 17's SimpleDateFormat in UTC).
		{"1000-01-01", data.DateSchema(false), time.UnixMilli(-30609792000000).UTC()},
		{"0001-01-01T00:00:00.000Z", data.TimestampSchema(false), time.UnixMilli(-62135769600000).UTC()},
		{"null", nil, nil},
		{"[1,2]", data.StringSchema, "[1,2]"},
		{"12:30", data.StringSchema, "12:30"}, // Kafka: INT8 12 (doc.go)
	} {
		cases = append(cases, golden{name: "literal " + c.literal, class: cls, props: props("header", "h", "value.literal", c.literal),
			in: in, want: withHeaders(valueRec(data.StringSchema, "v"), existing, data.Header{Key: "h", Schema: c.schema, Value: c.value})})
	}
	cases = append(cases, golden{name: "by alias, repeated key kept", class: "InsertHeader", props: props("header", "existing", "value.literal", "x"),
		in: in, want: withHeaders(valueRec(data.StringSchema, "v"), existing, data.Header{Key: "existing", Schema: data.StringSchema, Value: "x"})})
	runGolden(t, cases)
	if _, err := New(cls, props("header", "h")); err == nil || err.Error() != `Missing required configuration "value.literal" which has no default value.` {
		t.Errorf("missing literal: %v", err)
	}
}

func mustBig(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return n
}

func TestDropHeaders(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.DropHeaders"
	h := func(k string, v any) data.Header {
		return data.Header{Key: k, Schema: data.OptionalStringSchema, Value: v}
	}
	runGolden(t, []golden{
		{name: "drops every header of the names", class: cls, props: props("headers", "a,c"),
			in: func() *data.Record {
				return withHeaders(valueRec(nil, "v"), h("a", "1"), h("b", "2"), h("a", "3"), h("c", "4"))
			},
			want: withHeaders(valueRec(nil, "v"), h("b", "2"))},
		{name: "nothing to drop", class: "DropHeaders", props: props("headers", "x"),
			in: func() *data.Record { return withHeaders(valueRec(nil, "v"), h("a", "1")) }, want: withHeaders(valueRec(nil, "v"), h("a", "1"))},
	})
	if _, err := New(cls, props("headers", "")); err == nil || err.Error() != "Invalid value [] for configuration headers: Empty list" {
		t.Errorf("empty headers: %v", err)
	}
}

func TestHeaderFrom(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.HeaderFrom$Value"
	existing := data.Header{Key: "existing", Schema: data.StringSchema, Value: "e"}
	s := data.StructBuilder().Name("r").Field("id", data.Int32Schema).Field("name", data.StringSchema).
		Field("d", data.NewSchemaBuilder(data.String).Optional().Default("def").MustBuild()).MustBuild()
	moved := &data.Schema{Type: data.StructType, Name: "r", Fields: []data.Field{{Name: "name", Schema: data.StringSchema}}}
	val := func() *data.Struct { return mustStruct(s, "id", int32(1), "name", "n") }
	runGolden(t, []golden{
		{name: "copy with schema", class: cls, props: props("fields", "id,d", "headers", "h_id,h_d", "operation", "copy"),
			in: func() *data.Record { return withHeaders(valueRec(s, val()), existing) },
			want: withHeaders(valueRec(s, val()), existing,
				data.Header{Key: "h_id", Schema: data.Int32Schema, Value: int32(1)},
				data.Header{Key: "h_d", Schema: s.Fields[2].Schema, Value: "def"})},
		{name: "move with schema", class: cls, props: props("fields", "id,d", "headers", "h_id,h_d", "operation", "move"),
			in: func() *data.Record { return withHeaders(valueRec(s, val()), existing) },
			want: withHeaders(valueRec(moved, mustStruct(moved, "name", "n")), existing,
				data.Header{Key: "h_id", Schema: data.Int32Schema, Value: int32(1)},
				data.Header{Key: "h_d", Schema: s.Fields[2].Schema, Value: "def"})},
		{name: "replace.null.with.default=false", class: cls, props: props("fields", "d", "headers", "h_d", "operation", "copy", "replace.null.with.default", "false"),
			in:   func() *data.Record { return valueRec(s, val()) },
			want: withHeaders(valueRec(s, val()), data.Header{Key: "h_d", Schema: s.Fields[2].Schema, Value: nil})},
		{name: "move schemaless", class: cls, props: props("fields", "a,missing", "headers", "ha,hm", "operation", "move"),
			in: func() *data.Record { return valueRec(nil, map[string]any{"a": int64(1), "b": "x"}) },
			want: withHeaders(valueRec(nil, map[string]any{"b": "x"}),
				data.Header{Key: "ha", Value: int64(1)}, data.Header{Key: "hm", Value: nil})},
		{name: "copy schemaless", class: cls, props: props("fields", "a", "headers", "ha", "operation", "copy"),
			in:   func() *data.Record { return valueRec(nil, map[string]any{"a": int64(1)}) },
			want: withHeaders(valueRec(nil, map[string]any{"a": int64(1)}), data.Header{Key: "ha", Value: int64(1)})},
		{name: "unknown field with schema", class: cls, props: props("fields", "nope", "headers", "h", "operation", "copy"),
			in: func() *data.Record { return valueRec(s, val()) }, err: "nope is not a valid field name"},
		{name: "struct required", class: cls, props: props("fields", "a", "headers", "h", "operation", "move"),
			in: func() *data.Record { return valueRec(s, nil) }, err: "Only Struct objects supported for [header move], found: null"},
		{name: "map required", class: cls, props: props("fields", "a", "headers", "h", "operation", "copy"),
			in: func() *data.Record { return valueRec(nil, "x") }, err: "Only Map objects supported in absence of schema for [header copy], found: java.lang.String"},
		{name: "key", class: "HeaderFrom$Key", props: props("fields", "k", "headers", "hk", "operation", "copy"),
			in:   func() *data.Record { return keyRec(nil, map[string]any{"k": "v"}) },
			want: withHeaders(keyRec(nil, map[string]any{"k": "v"}), data.Header{Key: "hk", Value: "v"})},
	})
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{props("fields", "a,b", "headers", "h", "operation", "copy"), "'fields' config must have the same number of elements as 'headers' config."},
		{props("fields", "a", "headers", "h", "operation", "swap"), "Invalid value swap for configuration operation: String must be one of: move, copy"},
		{props("fields", "a", "headers", "h"), `Missing required configuration "operation" which has no default value.`},
	} {
		if _, err := New(cls, c.props); err == nil || err.Error() != c.want {
			t.Errorf("%v: %v, want %q", c.props, err, c.want)
		}
	}
}

func TestPredicates(t *testing.T) {
	tomb := valueRec(data.OptionalStringSchema, nil)
	withH := withHeaders(valueRec(data.StringSchema, "v"), data.Header{Key: "a"}, data.Header{Key: "b", Value: "x"})
	for _, c := range []struct {
		class string
		props map[string]string
		r     *data.Record
		want  bool
	}{
		{"org.apache.kafka.connect.transforms.predicates.TopicNameMatches", props("pattern", "te.*"), tomb, true},
		{"TopicNameMatches", props("pattern", "te"), tomb, false}, // the whole name must match
		{"TopicNameMatches", props("pattern", "other|test"), tomb, true},
		{"org.apache.kafka.connect.transforms.predicates.HasHeaderKey", props("name", "b"), withH, true},
		{"HasHeaderKey", props("name", "a"), withH, true},
		{"HasHeaderKey", props("name", "c"), withH, false},
		{"org.apache.kafka.connect.transforms.predicates.RecordIsTombstone", nil, tomb, true},
		{"RecordIsTombstone", nil, withH, false},
	} {
		p, err := NewPredicate(c.class, c.props)
		if err != nil {
			t.Fatalf("%s: %v", c.class, err)
		}
		if got, err := p.Test(c.r); err != nil || got != c.want {
			t.Errorf("%s %v: %v %v, want %v", c.class, c.props, got, err, c.want)
		}
	}
	for _, c := range []struct {
		class string
		props map[string]string
		want  string
	}{
		{"TopicNameMatches", props("pattern", ""), "Invalid value  for configuration pattern: String must be non-empty"},
		{"TopicNameMatches", props("pattern", "[a"), "Invalid value [a for configuration pattern: Invalid regex: error parsing regexp: missing closing ]: `[a`"},
		{"TopicNameMatches", nil, `Missing required configuration "pattern" which has no default value.`},
		{"HasHeaderKey", props("name", ""), "Invalid value  for configuration name: String must be non-empty"},
		{"InsertField$Value", nil, "Class class org.apache.kafka.connect.transforms.InsertField$Value does not implement the Predicate interface"},
		{"NoSuchPredicate", nil, "Class NoSuchPredicate could not be found."},
	} {
		if _, err := NewPredicate(c.class, c.props); err == nil || err.Error() != c.want {
			t.Errorf("%s %v: %v, want %q", c.class, c.props, err, c.want)
		}
	}
}

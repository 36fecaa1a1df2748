package transforms

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

func topicRec(topic string) func() *data.Record {
	return func() *data.Record {
		r := valueRec(data.StringSchema, "v")
		r.Topic = topic
		return r
	}
}

func TestRegexRouter(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.RegexRouter"
	var cases []golden
	for _, c := range []struct{ regex, replacement, topic, want string }{
		{"(.*)", "prefix-$1", "orig", "prefix-orig"},
		{"(.*)-(.*)", "$2_$1", "a-b", "b_a"},
		{"(.*)-(.*)", "$0", "a-b", "a-b"},
		{"(?P<name>.*)-x", "${name}!", "a-x", "a!"},
		{"foo", "bar", "foo-baz", "foo-baz"}, // must match the whole topic
		{"(.*)", "$12", "ab", "ab2"},         // one group: $12 is $1 then 2
		{"(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)(l)", "$12", "abcdefghijkl", "l"},
		// Matcher.replaceFirst replaces the first match a search finds,
		// which a lazy quantifier or an alternation can end before the
		// topic does; the rest of the topic is kept.
		{"(.*?)-x", "[$1]", "a-x-x", "[a]-x"},
		{"a|ab", "X", "ab", "Xb"},
		{"(.*?)\\.(.*)", "$2.$1", "db.schema.table", "schema.table.db"},
	} {
		c := c
		r := topicRec(c.want)()
		cases = append(cases, golden{name: c.regex + " " + c.replacement, class: cls,
			props: props("regex", c.regex, "replacement", c.replacement), in: topicRec(c.topic), want: r})
	}
	cases = append(cases,
		golden{name: "escaped dollar", class: cls, props: props("regex", "(.*)", "replacement", `\$1-$1`),
			in: topicRec("t"), want: topicRec("$1-t")()},
		golden{name: "missing group", class: cls, props: props("regex", "(.*)", "replacement", "$2"),
			in: topicRec("t"), err: "No group 2"},
		golden{name: "illegal reference", class: cls, props: props("regex", "(.*)", "replacement", "$x"),
			in: topicRec("t"), err: "Illegal group reference", errClass: IllegalArgumentException},
	)
	runGolden(t, cases)
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{props("replacement", "x"), `Missing required configuration "regex" which has no default value.`},
		{props("regex", "(", "replacement", "x"), "Invalid value ( for configuration regex: Invalid regex: error parsing regexp: missing closing ): `(`"},
		{props("regex", ".*"), `Missing required configuration "replacement" which has no default value.`},
	} {
		if _, err := New("RegexRouter", c.props); err == nil || err.Error() != c.want {
			t.Errorf("%v: %v, want %q", c.props, err, c.want)
		}
	}
}

func TestTimestampRouter(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.TimestampRouter"
	at := time.Date(2017, 1, 2, 3, 4, 5, 0, time.UTC)
	in := func() *data.Record {
		r := valueRec(data.StringSchema, "v")
		r.Timestamp = at
		return r
	}
	with := func(topic string) *data.Record {
		r := in()
		r.Topic = topic
		return r
	}
	runGolden(t, []golden{
		{name: "defaults", class: cls, in: in, want: with("test-20170102")},
		{name: "formats", class: cls, props: props("topic.format", "${timestamp}_${topic}_${topic}", "timestamp.format", "yyyy.MM.dd HH"),
			in: in, want: with("2017.01.02 03_test_test")},
		{name: "no timestamp", class: cls,
			in: func() *data.Record {
				r := valueRec(data.StringSchema, "v")
				r.Timestamp = time.Time{}
				return r
			},
			err: "Timestamp missing on record: ConnectRecord{topic='test', kafkaPartition=0, key=null, keySchema=null, value=v, valueSchema=Schema{STRING}, timestamp=null, headers=ConnectHeaders(headers=)}"},
		// Headers print as Java's list of ConnectHeader, values by their
		// toString (Double 1.0, Date.toString).
		{name: "no timestamp, headers", class: cls,
			in: func() *data.Record {
				r := valueRec(data.Float64Schema, 1.0)
				r.Timestamp = time.Time{}
				r.Headers = data.Headers{
					{Key: "h1", Schema: data.Float64Schema, Value: 2.0},
					{Key: "h2", Schema: data.TimestampSchema(false), Value: time.UnixMilli(0).UTC()},
				}
				return r
			},
			err: "Timestamp missing on record: ConnectRecord{topic='test', kafkaPartition=0, key=null, keySchema=null, value=1.0, valueSchema=Schema{FLOAT64}, timestamp=null, headers=ConnectHeaders(headers=[ConnectHeader(key=h1, value=2.0, schema=Schema{FLOAT64}), ConnectHeader(key=h2, value=Thu Jan 01 00:00:00 UTC 1970, schema=Schema{org.apache.kafka.connect.data.Timestamp:INT64})])}"},
	})
	if _, err := New(cls, props("timestamp.format", "yyyy-bb")); err == nil ||
		err.Error() != "Invalid value yyyy-bb for configuration timestamp.format: Illegal pattern character 'b'" {
		t.Errorf("bad format: %v", err)
	}
}

func TestFilter(t *testing.T) {
	runGolden(t, []golden{
		{name: "drops", class: "org.apache.kafka.connect.transforms.Filter", in: topicRec("t"), drop: true},
		{name: "drops by alias", class: "Filter", in: func() *data.Record { return valueRec(nil, nil) }, drop: true},
	})
}

func TestFlatten(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.Flatten$Value"
	twoLevel := data.StructBuilder().Field("int8", data.Int8Schema).Field("string", data.OptionalStringSchema).MustBuild()
	oneLevel := data.StructBuilder().Field("B", twoLevel).Field("bool", data.BooleanSchema).MustBuild()
	top := data.StructBuilder().Name("top").Field("A", oneLevel).Field("arr", data.ArrayOf(data.Int32Schema)).MustBuild()
	flat := &data.Schema{Type: data.StructType, Name: "top", Fields: []data.Field{
		{Name: "A.B.int8", Index: 0, Schema: data.Int8Schema},
		{Name: "A.B.string", Index: 1, Schema: data.OptionalStringSchema},
		{Name: "A.bool", Index: 2, Schema: data.BooleanSchema},
		{Name: "arr", Index: 3, Schema: data.ArrayOf(data.Int32Schema)},
	}}
	topValue := func() *data.Struct {
		return mustStruct(top, "A", mustStruct(oneLevel, "B", mustStruct(twoLevel, "int8", int8(8), "string", "s"), "bool", true),
			"arr", []any{int32(1)})
	}
	// Optionality and defaults come down from the parents.
	inner := data.StructBuilder().Field("x", data.Int32Schema).Field("y", data.NewSchemaBuilder(data.Int32).Default(int32(2)).MustBuild()).Optional().MustBuild()
	innerDefault := data.StructBuilder().Field("x", data.Int32Schema).Field("y", data.NewSchemaBuilder(data.Int32).Default(int32(2)).MustBuild()).
		Optional().Default(mustStruct(inner, "x", int32(1), "y", int32(5))).MustBuild()
	outer := data.StructBuilder().Field("in", innerDefault).MustBuild()
	outerFlat := &data.Schema{Type: data.StructType, Fields: []data.Field{
		{Name: "in_x", Index: 0, Schema: &data.Schema{Type: data.Int32, Optional: true, Default: int32(1)}},
		{Name: "in_y", Index: 1, Schema: &data.Schema{Type: data.Int32, Optional: true, Default: int32(2)}},
	}}
	optNested := data.StructBuilder().Field("n", data.StructBuilder().Field("v", data.Int32Schema).Optional().MustBuild()).MustBuild()
	optNestedFlat := &data.Schema{Type: data.StructType, Fields: []data.Field{{Name: "n.v", Schema: data.OptionalInt32Schema}}}
	mapSchema := data.StructBuilder().Field("m", data.MapOf(data.StringSchema, data.StringSchema)).MustBuild()
	runGolden(t, []golden{
		{name: "nested struct", class: cls, in: func() *data.Record { return valueRec(top, topValue()) },
			want: valueRec(flat, mustStruct(flat, "A.B.int8", int8(8), "A.B.string", "s", "A.bool", true, "arr", []any{int32(1)}))},
		{name: "parent optional and default", class: cls, props: props("delimiter", "_"),
			in: func() *data.Record { return valueRec(outer, data.NewStruct(outer)) },
			// The null struct reads as its default, field by field.
			want: valueRec(outerFlat, mustStruct(outerFlat, "in_x", int32(1), "in_y", int32(5)))},
		{name: "null nested struct", class: cls,
			in:   func() *data.Record { return valueRec(optNested, data.NewStruct(optNested)) },
			want: valueRec(optNestedFlat, data.NewStruct(optNestedFlat))},
		{name: "schemaless", class: cls, props: props("delimiter", "#"),
			in: func() *data.Record {
				return valueRec(nil, map[string]any{"A": map[string]any{"B": map[string]any{"x": int64(1)}, "n": nil}, "arr": []any{int64(1)}, "s": "v"})
			},
			want: valueRec(nil, map[string]any{"A#B#x": int64(1), "A#n": nil, "arr": []any{int64(1)}, "s": "v"})},
		{name: "schemaless struct inside a map", class: cls,
			in:  func() *data.Record { return valueRec(nil, map[string]any{"a": mustStruct(twoLevel, "int8", int8(1))}) },
			err: "Flatten transformation does not support class org.apache.kafka.connect.data.Struct for record without schemas (for field a)."},
		{name: "schemaless date", class: cls,
			in:  func() *data.Record { return valueRec(nil, map[string]any{"d": time.UnixMilli(0)}) },
			err: "Flatten transformation was passed a value of type class java.util.Date which is not supported by Connect's data API"},
		{name: "map with schema", class: cls,
			in:  func() *data.Record { return valueRec(mapSchema, mustStruct(mapSchema, "m", map[string]any{})) },
			err: "Flatten transformation does not support MAP for record with schemas (for field m)."},
		{name: "tombstone passes", class: cls, in: func() *data.Record { return valueRec(top, nil) }, want: valueRec(top, nil)},
		{name: "struct required", class: cls, in: func() *data.Record { return valueRec(top, "x") },
			err: "Only Struct objects supported for [flattening], found: java.lang.String"},
		{name: "key", class: "Flatten$Key", in: func() *data.Record { return keyRec(nil, map[string]any{"a": map[string]any{"b": "c"}}) },
			want: keyRec(nil, map[string]any{"a.b": "c"})},
	})
}

func TestSetSchemaMetadata(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.SetSchemaMetadata$Value"
	s := data.StructBuilder().Name("old").Version(1).Field("f", data.NewSchemaBuilder(data.String).Optional().Default("d").MustBuild()).MustBuild()
	renamed := &data.Schema{Type: data.StructType, Name: "foo", Version: ver(42), Fields: s.Fields}
	onlyName := &data.Schema{Type: data.StructType, Name: "foo", Version: ver(1), Fields: s.Fields}
	runGolden(t, []golden{
		{name: "name and version", class: cls, props: props("schema.name", "foo", "schema.version", "42"),
			in: func() *data.Record { return valueRec(s, mustStruct(s, "f", "x")) }, want: valueRec(renamed, mustStruct(renamed, "f", "x"))},
		{name: "name only", class: cls, props: props("schema.name", "foo"),
			in: func() *data.Record { return valueRec(s, mustStruct(s, "f", "x")) }, want: valueRec(onlyName, mustStruct(onlyName, "f", "x"))},
		{name: "primitive", class: cls, props: props("schema.name", "foo", "schema.version", "42"),
			in:   func() *data.Record { return valueRec(data.OptionalInt64Schema, int64(1)) },
			want: valueRec(&data.Schema{Type: data.Int64, Optional: true, Name: "foo", Version: ver(42)}, int64(1))},
		{name: "null value", class: cls, props: props("schema.version", "42"),
			in:   func() *data.Record { return valueRec(data.OptionalInt64Schema, nil) },
			want: valueRec(&data.Schema{Type: data.Int64, Optional: true, Version: ver(42)}, nil)},
		{name: "defaults copied", class: cls, props: props("schema.name", "foo", "schema.version", "42"),
			in: func() *data.Record { return valueRec(s, data.NewStruct(s)) }, want: valueRec(renamed, mustStruct(renamed, "f", "d"))},
		{name: "replace.null.with.default=false", class: cls, props: props("schema.name", "foo", "schema.version", "42", "replace.null.with.default", "false"),
			in: func() *data.Record { return valueRec(s, data.NewStruct(s)) }, want: valueRec(renamed, data.NewStruct(renamed))},
		{name: "schema required", class: cls, props: props("schema.name", "foo"),
			in: func() *data.Record { return valueRec(nil, map[string]any{}) }, err: "Schema required for [updating schema metadata]"},
		{name: "empty name", class: cls, props: props("schema.name", ""),
			in:   func() *data.Record { return valueRec(data.OptionalInt64Schema, int64(1)) },
			want: valueRec(&data.Schema{Type: data.Int64, Optional: true, EmptyName: true}, int64(1))},
		{name: "key", class: "SetSchemaMetadata$Key", props: props("schema.name", "k"),
			in: func() *data.Record { return keyRec(data.StringSchema, "x") }, want: keyRec(&data.Schema{Type: data.String, Name: "k"}, "x")},
	})
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{props(), "Neither schema name nor version configured"},
		{props("schema.version", "x"), "Invalid value x for configuration schema.version: Not a number of type INT"},
	} {
		if _, err := New(cls, c.props); err == nil || err.Error() != c.want {
			t.Errorf("%v: %v, want %q", c.props, err, c.want)
		}
	}
}

// TestJavaOnlyRegexRefused checks that syntax java.util.regex and RE2 both
// accept but read differently is refused when configured, naming the key,
// rather than routing or matching other topics than Kafka would.
func TestJavaOnlyRegexRefused(t *testing.T) {
	for _, c := range []struct{ class, key, pattern, why string }{
		{"RegexRouter", "regex", "[a-z&&[^t]]+", "class intersection"},
		{"RegexRouter", "regex", "[a-d[s-t]]+", "class inside a class"},
		{"RegexRouter", "regex", "[[:alpha:]]+", "class inside a class"},
		{"RegexRouter", "regex", "(?U)\\w+", "(?U)"},
		{"TopicNameMatches", "pattern", "[\\w&&[^_]]+", "class intersection"},
		{"TopicNameMatches", "pattern", "(?iU:x)", "(?U)"},
		// RE2 reads \101 as the octal code of A and \0101 as \010 then 1;
		// Java reads a backreference and A.
		{"RegexRouter", "regex", `(A)\101`, "digit"},
		{"TopicNameMatches", "pattern", `\0101`, "digit"},
	} {
		p := props(c.key, c.pattern, "replacement", "x")
		var err error
		if c.class == "RegexRouter" {
			_, err = New(c.class, p)
		} else {
			_, err = NewPredicate(c.class, props(c.key, c.pattern))
		}
		prefix := "Invalid value " + c.pattern + " for configuration " + c.key + ": Invalid regex: "
		if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s %s=%q: error %v, want %q... naming %q", c.class, c.key, c.pattern, err, prefix, c.why)
		}
	}
	// What both read alike still works: escapes and \Q..\E inside and
	// outside classes, a leading ] in a class, other flags.
	for _, pattern := range []string{`[\[\]a&]+`, `\Q[a&&b]\E`, `[]a]`, `(?i)TEST`, `(?<n>t)est`, `a&&b`} {
		if _, err := New("RegexRouter", props("regex", pattern, "replacement", "x")); err != nil {
			t.Errorf("regex %q: %v", pattern, err)
		}
	}
}

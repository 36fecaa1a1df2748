package transforms

import (
	"slices"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

func TestValueToKey(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.ValueToKey"
	v := data.StructBuilder().Field("a", data.Int32Schema).Field("b", data.Int32Schema).Field("c", data.Int32Schema).MustBuild()
	k := &data.Schema{Type: data.StructType, Fields: []data.Field{
		{Name: "a", Index: 0, Schema: data.Int32Schema}, {Name: "b", Index: 1, Schema: data.Int32Schema}}}
	def := data.StructBuilder().Field("a", data.NewSchemaBuilder(data.Int32).Optional().Default(int32(9)).MustBuild()).MustBuild()
	defKey := &data.Schema{Type: data.StructType, Fields: []data.Field{{Name: "a", Schema: def.Fields[0].Schema}}}
	runGolden(t, []golden{
		{name: "schemaless", class: cls, props: props("fields", "a,b"),
			in: func() *data.Record {
				return valueRec(nil, map[string]any{"a": int64(1), "b": int64(2), "c": int64(3)})
			},
			want: rec(nil, map[string]any{"a": int64(1), "b": int64(2)}, nil, map[string]any{"a": int64(1), "b": int64(2), "c": int64(3)})},
		{name: "with schema", class: cls, props: props("fields", "a,b"),
			in:   func() *data.Record { return valueRec(v, mustStruct(v, "a", int32(1), "b", int32(2), "c", int32(3))) },
			want: rec(k, mustStruct(k, "a", int32(1), "b", int32(2)), v, mustStruct(v, "a", int32(1), "b", int32(2), "c", int32(3)))},
		{name: "schemaless tombstone", class: cls, props: props("fields", "a"),
			in:       func() *data.Record { return valueRec(nil, nil) },
			err:      "Only Map objects supported in absence of schema for [copying fields from value to key], found: null",
			errClass: DataException},
		{name: "missing field", class: cls, props: props("fields", "a,d"),
			in:       func() *data.Record { return valueRec(v, mustStruct(v, "a", int32(1), "b", int32(2), "c", int32(3))) },
			err:      "Field does not exist: d",
			errClass: DataException},
		{name: "struct required", class: cls, props: props("fields", "a"),
			in:  func() *data.Record { return valueRec(v, nil) },
			err: "Only Struct objects supported for [copying fields from value to key], found: null"},
		{name: "map required", class: cls, props: props("fields", "a"),
			in:  func() *data.Record { return valueRec(nil, "x") },
			err: "Only Map objects supported in absence of schema for [copying fields from value to key], found: java.lang.String"},
		{name: "replace.null.with.default=false", class: cls, props: props("fields", "a", "replace.null.with.default", "false"),
			in:   func() *data.Record { return valueRec(def, data.NewStruct(def)) },
			want: rec(defKey, data.NewStruct(defKey), def, data.NewStruct(def))},
		{name: "defaults", class: cls, props: props("fields", "a"),
			in:   func() *data.Record { return valueRec(def, data.NewStruct(def)) },
			want: rec(defKey, mustStruct(defKey, "a", int32(9)), def, data.NewStruct(def))},
	})
}

func TestExtractField(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.ExtractField$Key"
	inner := data.StructBuilder().Field("baz", data.Int32Schema).MustBuild()
	s := data.StructBuilder().Field("magic", data.Int32Schema).Field("foo.bar", data.OptionalInt64Schema).Field("nested", inner).MustBuild()
	val := func() *data.Struct {
		return mustStruct(s, "magic", int32(42), "foo.bar", int64(7), "nested", mustStruct(inner, "baz", int32(5)))
	}
	def := data.StructBuilder().Field("d", data.NewSchemaBuilder(data.Int32).Optional().Default(int32(3)).MustBuild()).MustBuild()
	runGolden(t, []golden{
		{name: "schemaless", class: cls, props: props("field", "magic"),
			in: func() *data.Record { return keyRec(nil, map[string]any{"magic": int64(42)}) }, want: keyRec(nil, int64(42))},
		{name: "schemaless missing field is null", class: cls, props: props("field", "nope"),
			in: func() *data.Record { return keyRec(nil, map[string]any{"magic": int64(42)}) }, want: keyRec(nil, nil)},
		{name: "schemaless null", class: cls, props: props("field", "magic"),
			in: func() *data.Record { return keyRec(nil, nil) }, want: keyRec(nil, nil)},
		{name: "with schema", class: cls, props: props("field", "magic"),
			in: func() *data.Record { return keyRec(s, val()) }, want: keyRec(data.Int32Schema, int32(42))},
		{name: "with schema null value", class: cls, props: props("field", "magic"),
			in: func() *data.Record { return keyRec(s, nil) }, want: keyRec(data.Int32Schema, nil)},
		{name: "unknown field", class: cls, props: props("field", "nonexistent"),
			in: func() *data.Record { return keyRec(s, val()) }, err: "Unknown field: nonexistent", errClass: IllegalArgumentException},
		{name: "V1 reads a dotted name as one field", class: cls, props: props("field", "foo.bar"),
			in: func() *data.Record { return keyRec(s, val()) }, want: keyRec(data.OptionalInt64Schema, int64(7))},
		{name: "V2 nested struct", class: cls, props: props("field", "nested.baz", "field.syntax.version", "V2"),
			in: func() *data.Record { return keyRec(s, val()) }, want: keyRec(data.Int32Schema, int32(5))},
		{name: "V2 backticks", class: cls, props: props("field", "`foo.bar`", "field.syntax.version", "v2"),
			in: func() *data.Record { return keyRec(s, val()) }, want: keyRec(data.OptionalInt64Schema, int64(7))},
		{name: "V2 nested map", class: cls, props: props("field", "a.b", "field.syntax.version", "V2"),
			in: func() *data.Record { return keyRec(nil, map[string]any{"a": map[string]any{"b": "x"}}) }, want: keyRec(nil, "x")},
		{name: "V2 path through a non-map", class: cls, props: props("field", "a.b", "field.syntax.version", "V2"),
			in:  func() *data.Record { return keyRec(nil, map[string]any{"a": "x"}) },
			err: "Only Map objects supported in absence of schema for [nested field access], found: java.lang.String"},
		{name: "V2 unknown nested field", class: cls, props: props("field", "nested.nope", "field.syntax.version", "V2"),
			in: func() *data.Record { return keyRec(s, val()) }, err: "Unknown field: nested.nope"},
		{name: "struct required", class: cls, props: props("field", "magic"),
			in: func() *data.Record { return keyRec(s, "x") }, err: "Only Struct objects supported for [field extraction], found: java.lang.String"},
		{name: "map required", class: cls, props: props("field", "magic"),
			in: func() *data.Record { return keyRec(nil, "x") }, err: "Only Map objects supported in absence of schema for [field extraction], found: java.lang.String"},
		{name: "default", class: cls, props: props("field", "d"),
			in: func() *data.Record { return keyRec(def, data.NewStruct(def)) }, want: keyRec(def.Fields[0].Schema, int32(3))},
		{name: "replace.null.with.default=false", class: cls, props: props("field", "d", "replace.null.with.default", "false"),
			in: func() *data.Record { return keyRec(def, data.NewStruct(def)) }, want: keyRec(def.Fields[0].Schema, nil)},
		{name: "value", class: "ExtractField$Value", props: props("field", "a"),
			in: func() *data.Record { return valueRec(nil, map[string]any{"a": "x"}) }, want: valueRec(nil, "x")},
	})
}

func TestFieldPathV2(t *testing.T) {
	for _, c := range []struct {
		path string
		want []string
		err  string
	}{
		{"foo", []string{"foo"}, ""},
		{"foo.bar.baz", []string{"foo", "bar", "baz"}, ""},
		{"`foo.bar`.baz", []string{"foo.bar", "baz"}, ""},
		{"foo.`bar.baz`", []string{"foo", "bar.baz"}, ""},
		{"foo.", []string{"foo", ""}, ""},
		{"`foo`bar`.baz", []string{"foo`bar", "baz"}, ""},
		{"`foo\\`.bar`.baz", []string{"foo`.bar", "baz"}, ""},
		{"`foo.bar", nil, "Incomplete backtick pair in path: [`foo.bar], consider adding a backslash before backtick at position 0 to escape it"},
	} {
		got, err := fieldPathV2(c.path)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: error %v, want %q", c.path, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %q %v, want %q", c.path, got, err, c.want)
		}
	}
	if _, err := New("ExtractField$Value", props("field", "a", "field.syntax.version", "V3")); err == nil ||
		err.Error() != "Invalid value V3 for configuration field.syntax.version: String must be one of (case insensitive): V1, V2" {
		t.Errorf("bad syntax version: %v", err)
	}
}

func TestHoistField(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.HoistField$Value"
	hoisted := &data.Schema{Type: data.StructType, Fields: []data.Field{{Name: "magic", Schema: data.Int32Schema}}}
	runGolden(t, []golden{
		{name: "schemaless", class: cls, props: props("field", "magic"),
			in: func() *data.Record { return valueRec(nil, int64(42)) }, want: valueRec(nil, map[string]any{"magic": int64(42)})},
		{name: "schemaless null", class: cls, props: props("field", "magic"),
			in: func() *data.Record { return valueRec(nil, nil) }, want: valueRec(nil, map[string]any{"magic": nil})},
		{name: "with schema", class: cls, props: props("field", "magic"),
			in: func() *data.Record { return valueRec(data.Int32Schema, int32(42)) }, want: valueRec(hoisted, mustStruct(hoisted, "magic", int32(42)))},
		{name: "null for a required schema", class: cls, props: props("field", "magic"),
			in:  func() *data.Record { return valueRec(data.Int32Schema, nil) },
			err: `Invalid value: null used for required field: "magic", schema type: INT32`, errClass: DataException},
		{name: "key", class: "HoistField$Key", props: props("field", "k"),
			in: func() *data.Record { return keyRec(nil, "x") }, want: keyRec(nil, map[string]any{"k": "x"})},
	})
	if _, err := New(cls, nil); err == nil || err.Error() != `Missing required configuration "field" which has no default value.` {
		t.Errorf("missing field: %v", err)
	}
}

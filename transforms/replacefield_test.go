package transforms

import (
	"math/big"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

func TestReplaceField(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.ReplaceField$Value"
	in := data.StructBuilder().Name("n").Version(2).
		Field("dont", data.StringSchema).Field("abc", data.Int32Schema).Field("foo", data.BooleanSchema).Field("etc", data.StringSchema).
		MustBuild()
	out := &data.Schema{Type: data.StructType, Name: "n", Version: ver(2), Fields: []data.Field{
		{Name: "xyz", Index: 0, Schema: data.Int32Schema},
		{Name: "bar", Index: 1, Schema: data.BooleanSchema},
	}}
	inValue := func() *data.Struct {
		return mustStruct(in, "dont", "whatever", "abc", int32(42), "foo", true, "etc", "etc")
	}
	spec := props("exclude", "dont", "renames", "abc:xyz,foo:bar")
	defSchema := data.StructBuilder().Field("d", data.NewSchemaBuilder(data.String).Optional().Default("def").MustBuild()).MustBuild()
	runGolden(t, []golden{
		{name: "schemaless exclude and rename", class: cls, props: spec,
			in: func() *data.Record {
				return valueRec(nil, map[string]any{"dont": "whatever", "abc": int64(42), "foo": true, "etc": "etc"})
			},
			want: valueRec(nil, map[string]any{"xyz": int64(42), "bar": true, "etc": "etc"})},
		{name: "schemaless include", class: cls, props: props("include", "abc,foo", "renames", "abc:xyz"),
			in: func() *data.Record {
				return valueRec(nil, map[string]any{"dont": "whatever", "abc": int64(42), "foo": true})
			},
			want: valueRec(nil, map[string]any{"xyz": int64(42), "foo": true})},
		{name: "with schema include, rename", class: cls, props: props("include", "abc,foo", "renames", "abc:xyz,foo:bar"),
			in:   func() *data.Record { return valueRec(in, inValue()) },
			want: valueRec(out, mustStruct(out, "xyz", int32(42), "bar", true))},
		{name: "exclude takes precedence over include", class: cls, props: props("include", "abc,foo", "exclude", "foo", "renames", "abc:xyz"),
			in:   func() *data.Record { return valueRec(nil, map[string]any{"abc": int64(1), "foo": true}) },
			want: valueRec(nil, map[string]any{"xyz": int64(1)})},
		{name: "deprecated blacklist and whitelist", class: cls, props: props("blacklist", "dont", "whitelist", "dont,abc"),
			in:   func() *data.Record { return valueRec(nil, map[string]any{"dont": "x", "abc": int64(1), "foo": true}) },
			want: valueRec(nil, map[string]any{"abc": int64(1)})},
		{name: "exclude wins over blacklist", class: cls, props: props("blacklist", "abc", "exclude", "foo"),
			in:   func() *data.Record { return valueRec(nil, map[string]any{"abc": int64(1), "foo": true}) },
			want: valueRec(nil, map[string]any{"abc": int64(1)})},
		{name: "tombstone passes", class: cls, props: spec,
			in: func() *data.Record { return valueRec(in, nil) }, want: valueRec(in, nil)},
		{name: "replace.null.with.default=false", class: cls, props: props("renames", "d:e", "replace.null.with.default", "false"),
			in: func() *data.Record { return valueRec(defSchema, data.NewStruct(defSchema)) },
			want: func() *data.Record {
				s := &data.Schema{Type: data.StructType, Fields: []data.Field{{Name: "e", Schema: defSchema.Fields[0].Schema}}}
				return valueRec(s, data.NewStruct(s))
			}()},
		{name: "defaults by default", class: cls, props: props("renames", "d:e"),
			in: func() *data.Record { return valueRec(defSchema, data.NewStruct(defSchema)) },
			want: func() *data.Record {
				s := &data.Schema{Type: data.StructType, Fields: []data.Field{{Name: "e", Schema: defSchema.Fields[0].Schema}}}
				return valueRec(s, mustStruct(s, "e", "def"))
			}()},
		{name: "struct required", class: cls, props: spec,
			in:  func() *data.Record { return valueRec(data.Int32Schema, int32(1)) },
			err: "Only Struct objects supported for [field replacement], found: java.lang.Integer"},
		{name: "key", class: "ReplaceField$Key", props: props("exclude", "a"),
			in:   func() *data.Record { return keyRec(nil, map[string]any{"a": "1", "b": "2"}) },
			want: keyRec(nil, map[string]any{"b": "2"})},
	})
}

func TestReplaceFieldRenamesValidation(t *testing.T) {
	for _, c := range []struct{ renames, err string }{
		{"a:b:c", "Invalid value [a:b:c] for configuration renames: Invalid rename mapping: a:b:c"},
		{"a", "Invalid value [a] for configuration renames: Invalid rename mapping: a"},
		{"a:b:", ""}, // Java's split drops the trailing empty string
	} {
		_, err := New("ReplaceField$Value", props("renames", c.renames))
		if c.err == "" && err != nil || c.err != "" && (err == nil || err.Error() != c.err) {
			t.Errorf("renames=%s: error %v, want %q", c.renames, err, c.err)
		}
	}
}

func TestMaskField(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.MaskField$Value"
	s := data.StructBuilder().
		Field("magic", data.Int32Schema).
		Field("bool", data.BooleanSchema).
		Field("byte", data.Int8Schema).
		Field("short", data.Int16Schema).
		Field("int", data.Int32Schema).
		Field("long", data.Int64Schema).
		Field("float", data.Float32Schema).
		Field("double", data.Float64Schema).
		Field("string", data.StringSchema).
		Field("date", data.DateSchema(false)).
		Field("time", data.TimeSchema(false)).
		Field("timestamp", data.TimestampSchema(false)).
		Field("decimal", data.DecimalSchema(2, false)).
		Field("array", data.ArrayOf(data.Int32Schema)).
		Field("map", data.MapOf(data.StringSchema, data.StringSchema)).
		Field("withDefault", data.NewSchemaBuilder(data.String).Optional().Default("default").MustBuild()).
		MustBuild()
	now := time.UnixMilli(86400000 * 3).UTC()
	full := func() *data.Struct {
		return mustStruct(s, "magic", int32(42), "bool", true, "byte", int8(42), "short", int16(42), "int", int32(42),
			"long", int64(42), "float", float32(42), "double", float64(42), "string", "hmm", "date", now,
			"time", time.UnixMilli(1000).UTC(), "timestamp", now, "decimal", data.Decimal{Unscaled: big.NewInt(4200), Scale: 2},
			"array", []any{int32(1), int32(2)}, "map", map[string]any{"what": "what"})
	}
	allButMagic := "bool,byte,short,int,long,float,double,string,date,time,timestamp,decimal,array,map,withDefault"
	masked := mustStruct(s, "magic", int32(42), "bool", false, "byte", int8(0), "short", int16(0), "int", int32(0),
		"long", int64(0), "float", float32(0), "double", float64(0), "string", "", "date", time.UnixMilli(0).UTC(),
		"time", time.UnixMilli(0).UTC(), "timestamp", time.UnixMilli(0).UTC(), "decimal", data.Decimal{Unscaled: big.NewInt(0), Scale: 2},
		"array", []any{}, "map", map[string]any{})
	maskedDefault := mustStruct(s, "magic", int32(42), "bool", false, "byte", int8(0), "short", int16(0), "int", int32(0),
		"long", int64(0), "float", float32(0), "double", float64(0), "string", "", "date", time.UnixMilli(0).UTC(),
		"time", time.UnixMilli(0).UTC(), "timestamp", time.UnixMilli(0).UTC(), "decimal", data.Decimal{Unscaled: big.NewInt(0), Scale: 2},
		"array", []any{}, "map", map[string]any{}, "withDefault", "")
	schemaless := func() map[string]any {
		return map[string]any{"magic": int32(42), "bool": true, "byte": int8(42), "short": int16(42), "int": int32(42),
			"long": int64(42), "float": float32(42), "double": float64(42), "string": "55.121.20.20", "date": now,
			"list": []any{int32(42)}, "map": map[string]any{"key": "value"}}
	}
	runGolden(t, []golden{
		{name: "schemaless", class: cls, props: props("fields", "bool,byte,short,int,long,float,double,string,date,list,map"),
			in: func() *data.Record { return valueRec(nil, schemaless()) },
			want: valueRec(nil, map[string]any{"magic": int32(42), "bool": false, "byte": int8(0), "short": int16(0), "int": int32(0),
				"long": int64(0), "float": float32(0), "double": float64(0), "string": "", "date": time.UnixMilli(0).UTC(),
				"list": []any{}, "map": map[string]any{}})},
		{name: "with schema, replace.null.with.default=false", class: cls, props: props("fields", allButMagic, "replace.null.with.default", "false"),
			in: func() *data.Record { return valueRec(s, full()) }, want: valueRec(s, masked)},
		{name: "with schema, defaults masked", class: cls, props: props("fields", allButMagic),
			in: func() *data.Record { return valueRec(s, full()) }, want: valueRec(s, maskedDefault)},
		{name: "schemaless replacement", class: cls, props: props("fields", "short,byte,int,long,float,double,string", "replacement", "123"),
			in: func() *data.Record { return valueRec(nil, schemaless()) },
			want: func() *data.Record {
				m := schemaless()
				m["short"], m["byte"], m["int"], m["long"] = int16(123), int8(123), int32(123), int64(123)
				m["float"], m["double"], m["string"] = float32(123), float64(123), "123"
				return valueRec(nil, m)
			}()},
		{name: "decimal replacement keeps the scale", class: cls, props: props("fields", "decimal", "replacement", "123.5"),
			in: func() *data.Record { return valueRec(s, full()) },
			want: func() *data.Record {
				st := full()
				st.MustPut("decimal", data.Decimal{Unscaled: big.NewInt(12350), Scale: 2})
				// The unmasked null field is copied with Struct.get: its default.
				st.MustPut("withDefault", "default")
				return valueRec(s, st)
			}()},
		{name: "replacement of a date", class: cls, props: props("fields", "date", "replacement", "123"),
			in:  func() *data.Record { return valueRec(nil, schemaless()) },
			err: "Cannot mask value of type class java.util.Date with custom replacement."},
		{name: "replacement of a boolean", class: cls, props: props("fields", "bool", "replacement", "123"),
			in:  func() *data.Record { return valueRec(nil, schemaless()) },
			err: "Cannot mask value of type class java.lang.Boolean with custom replacement."},
		{name: "replacement type mismatch", class: cls, props: props("fields", "int", "replacement", "foo"),
			in:       func() *data.Record { return valueRec(nil, schemaless()) },
			err:      "Unable to convert foo (class java.lang.String) to a number",
			errClass: DataException},
		// Numbers are read as a BigDecimal and narrowed, as Values.convertToByte
		// and friends do.
		{name: "replacement narrowed to the integer type", class: cls, props: props("fields", "byte,short,int,long", "replacement", "300.9"),
			in: func() *data.Record { return valueRec(nil, schemaless()) },
			want: func() *data.Record {
				m := schemaless()
				m["byte"], m["short"], m["int"], m["long"] = int8(44), int16(300), int32(300), int64(300)
				return valueRec(nil, m)
			}()},
		{name: "replacement with an exponent", class: cls, props: props("fields", "long,double", "replacement", "-1.5e3"),
			in: func() *data.Record { return valueRec(nil, schemaless()) },
			want: func() *data.Record {
				m := schemaless()
				m["long"], m["double"] = int64(-1500), float64(-1500)
				return valueRec(nil, m)
			}()},
		{name: "replacement with a float suffix is no number", class: cls, props: props("fields", "float", "replacement", "1.5f"),
			in:  func() *data.Record { return valueRec(nil, schemaless()) },
			err: "Unable to convert 1.5f (class java.lang.String) to a number"},
		{name: "replacement Infinity is no number", class: cls, props: props("fields", "double", "replacement", "Infinity"),
			in:  func() *data.Record { return valueRec(nil, schemaless()) },
			err: "Unable to convert Infinity (class java.lang.String) to a number"},
		{name: "decimal replacement that is no number", class: cls, props: props("fields", "decimal", "replacement", "foo"),
			in:  func() *data.Record { return valueRec(s, full()) },
			err: "Unable to convert foo (class java.lang.String) to number"},
		{name: "bytes cannot be masked", class: cls, props: props("fields", "b"),
			in:       func() *data.Record { return valueRec(nil, map[string]any{"b": []byte{1}}) },
			err:      "Cannot mask value of type: class [B",
			errClass: DataException},
		{name: "struct required", class: cls, props: props("fields", "a"),
			in:  func() *data.Record { return valueRec(data.StringSchema, "x") },
			err: "Only Struct objects supported for [mask fields], found: java.lang.String"},
		{name: "key", class: "MaskField$Key", props: props("fields", "a"),
			in:   func() *data.Record { return keyRec(nil, map[string]any{"a": "secret", "b": "x"}) },
			want: keyRec(nil, map[string]any{"a": "", "b": "x"})},
	})
}

func TestMaskFieldConfig(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{props(), `Missing required configuration "fields" which has no default value.`},
		{props("fields", ""), "Invalid value [] for configuration fields: Empty list"},
		{props("fields", "a", "replacement", ""), "Invalid value  for configuration replacement: String must be non-empty"},
	} {
		_, err := New("MaskField$Value", c.props)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: error %v, want %q", c.props, err, c.want)
		}
	}
}

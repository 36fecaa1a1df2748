package transforms

import (
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

func TestInsertField(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.InsertField$Value"
	all := props("topic.field", "topic_field!", "partition.field", "partition_field",
		"timestamp.field", "timestamp_field?", "static.field", "instance_id", "static.value", "my-instance-id")
	in := data.StructBuilder().Name("name").Version(1).Doc("doc").Field("magic", data.OptionalInt64Schema).MustBuild()
	out := &data.Schema{Type: data.StructType, Name: "name", Version: ver(1), Doc: "doc", Fields: []data.Field{
		{Name: "magic", Index: 0, Schema: data.OptionalInt64Schema},
		{Name: "topic_field", Index: 1, Schema: data.StringSchema},
		{Name: "partition_field", Index: 2, Schema: data.OptionalInt32Schema},
		{Name: "timestamp_field", Index: 3, Schema: data.TimestampSchema(true)},
		{Name: "instance_id", Index: 4, Schema: data.OptionalStringSchema},
	}}
	withOffset := props("offset.field", "offset_field!")
	offSchema := &data.Schema{Type: data.StructType, Name: "name", Version: ver(1), Doc: "doc", Fields: []data.Field{
		{Name: "magic", Index: 0, Schema: data.OptionalInt64Schema},
		{Name: "offset_field", Index: 1, Schema: data.Int64Schema},
	}}
	withDefault := data.StructBuilder().Field("d", data.NewSchemaBuilder(data.Int32).Optional().Default(int32(7)).MustBuild()).MustBuild()
	withDefaultOut := &data.Schema{Type: data.StructType, Fields: []data.Field{
		{Name: "d", Index: 0, Schema: withDefault.Fields[0].Schema},
		{Name: "t", Index: 1, Schema: data.OptionalStringSchema},
	}}
	runGolden(t, []golden{
		{name: "schemaless", class: cls, props: all,
			in:   func() *data.Record { return valueRec(nil, map[string]any{"magic": int64(42)}) },
			want: valueRec(nil, map[string]any{"magic": int64(42), "topic_field": "test", "partition_field": int32(0), "timestamp_field": int64(1000), "instance_id": "my-instance-id"})},
		{name: "with schema", class: cls, props: all,
			in: func() *data.Record { return valueRec(in, mustStruct(in, "magic", int64(42))) },
			want: valueRec(out, mustStruct(out, "magic", int64(42), "topic_field", "test", "partition_field", int32(0),
				"timestamp_field", ts1000, "instance_id", "my-instance-id"))},
		{name: "no partition or timestamp leaves the fields null", class: cls, props: all,
			in: func() *data.Record {
				r := valueRec(in, mustStruct(in, "magic", int64(42)))
				r.Partition, r.Timestamp = data.NoPartition, time.Time{}
				return r
			},
			want: func() *data.Record {
				r := valueRec(out, mustStruct(out, "magic", int64(42), "topic_field", "test", "instance_id", "my-instance-id"))
				r.Partition, r.Timestamp = data.NoPartition, time.Time{}
				return r
			}()},
		{name: "offset on a sink record", class: cls, props: withOffset, offset: off(123),
			in:   func() *data.Record { return valueRec(in, mustStruct(in, "magic", int64(42))) },
			want: valueRec(offSchema, mustStruct(offSchema, "magic", int64(42), "offset_field", int64(123)))},
		{name: "offset schemaless on a sink record", class: cls, props: withOffset, offset: off(123),
			in:   func() *data.Record { return valueRec(nil, map[string]any{}) },
			want: valueRec(nil, map[string]any{"offset_field": int64(123)})},
		{name: "offset on a source record", class: cls, props: withOffset,
			in:       func() *data.Record { return valueRec(nil, map[string]any{}) },
			err:      "Only SinkRecord supported for [field insertion], found: org.apache.kafka.connect.source.SourceRecord",
			errClass: DataException},
		{name: "tombstone passes", class: cls, props: all,
			in: func() *data.Record { return valueRec(in, nil) }, want: valueRec(in, nil)},
		{name: "schemaless tombstone passes", class: cls, props: all,
			in: func() *data.Record { return valueRec(nil, nil) }, want: valueRec(nil, nil)},
		{name: "struct required", class: cls, props: all,
			in:  func() *data.Record { return valueRec(data.StringSchema, "x") },
			err: "Only Struct objects supported for [field insertion], found: java.lang.String"},
		{name: "map required", class: cls, props: all,
			in:  func() *data.Record { return valueRec(nil, int64(5)) },
			err: "Only Map objects supported in absence of schema for [field insertion], found: java.lang.Long"},
		{name: "field name clash", class: cls, props: props("topic.field", "magic"),
			in:  func() *data.Record { return valueRec(in, mustStruct(in, "magic", int64(1))) },
			err: "Cannot create field because of field name duplication magic"},
		{name: "defaults replace nulls", class: cls, props: props("topic.field", "t"),
			in:   func() *data.Record { return valueRec(withDefault, data.NewStruct(withDefault)) },
			want: valueRec(withDefaultOut, mustStruct(withDefaultOut, "d", int32(7), "t", "test"))},
		{name: "replace.null.with.default=false keeps nulls", class: cls, props: props("topic.field", "t", "replace.null.with.default", "false"),
			in: func() *data.Record { return valueRec(withDefault, data.NewStruct(withDefault)) },
			want: func() *data.Record {
				// Struct.get would give the default; the raw value is null.
				st := data.NewStruct(withDefaultOut)
				st.SetIndex(1, "test")
				return valueRec(withDefaultOut, st)
			}()},
		{name: "key", class: "InsertField$Key", props: props("topic.field", "t"),
			in:   func() *data.Record { return keyRec(nil, map[string]any{"k": "v"}) },
			want: keyRec(nil, map[string]any{"k": "v", "t": "test"})},
	})
}

func TestInsertFieldKeepsRawNullWithoutDefault(t *testing.T) {
	// The golden above compares with ValueEqual, which reads raw values:
	// prove the two modes really differ in what they store.
	s := data.StructBuilder().Field("d", data.NewSchemaBuilder(data.Int32).Optional().Default(int32(7)).MustBuild()).MustBuild()
	for _, replace := range []string{"true", "false"} {
		tr, err := New("InsertField$Value", props("topic.field", "t", "replace.null.with.default", replace))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tr.Apply(valueRec(s, data.NewStruct(s)))
		if err != nil {
			t.Fatal(err)
		}
		raw := got.Value.(*data.Struct).Values()[0]
		if replace == "true" && raw != int32(7) || replace == "false" && raw != nil {
			t.Errorf("replace.null.with.default=%s: raw value %v", replace, raw)
		}
	}
}

func TestInsertFieldConfigErrors(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{props(), "No field insertion configured"},
		{props("static.field", "instance_id"), "Invalid value null for configuration static.value: No value specified for static field: instance_id"},
		{props("topic.field", "t", "replace.null.with.default", "maybe"), "Invalid value maybe for configuration replace.null.with.default: Expected value to be either true or false"},
	} {
		_, err := New("org.apache.kafka.connect.transforms.InsertField$Value", c.props)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: error %v, want %q", c.props, err, c.want)
		}
	}
}

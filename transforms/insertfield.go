package transforms

import (
	"maps"
	"strings"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

const insertFieldDoc = "Insert field(s) using attributes from the record metadata or a configured static value."

const optionalityDoc = "Suffix with <code>!</code> to make this a required field, or <code>?</code> to keep it optional (the default)."

func insertFieldDef() *config.Def {
	str := func(name, doc string) config.Key {
		return config.Key{Name: name, Type: config.String, Importance: config.Medium, Doc: doc}
	}
	return config.NewDef().
		Define(str("topic.field", "Field name for Kafka topic. "+optionalityDoc)).
		Define(str("partition.field", "Field name for Kafka partition. "+optionalityDoc)).
		Define(str("offset.field", "Field name for Kafka offset - only applicable to sink connectors.<br/>"+optionalityDoc)).
		Define(str("timestamp.field", "Field name for record timestamp. "+optionalityDoc)).
		Define(str("static.field", "Field name for static data field. "+optionalityDoc)).
		Define(str("static.value", "Static field value, if field name configured.")).
		Define(replaceNullKey())
}

const insertPurpose = "field insertion"

// insertionSpec is a field to insert: "name", "name?" (optional, the
// default) or "name!" (required).
type insertionSpec struct {
	name     string
	optional bool
}

func parseInsertion(v *config.Values, key string) *insertionSpec {
	if v.IsNull(key) {
		return nil
	}
	s := v.String(key)
	switch {
	case strings.HasSuffix(s, "?"):
		return &insertionSpec{name: s[:len(s)-1], optional: true}
	case strings.HasSuffix(s, "!"):
		return &insertionSpec{name: s[:len(s)-1]}
	}
	return &insertionSpec{name: s, optional: true}
}

type insertField struct {
	side                                    side
	topic, partition, offset, stamp, static *insertionSpec
	staticValue                             *string
	replaceNull                             bool
	cache                                   schemaCache
}

func newInsertField(s side, v *config.Values) (Transformation, error) {
	t := &insertField{
		side:        s,
		topic:       parseInsertion(v, "topic.field"),
		partition:   parseInsertion(v, "partition.field"),
		offset:      parseInsertion(v, "offset.field"),
		stamp:       parseInsertion(v, "timestamp.field"),
		static:      parseInsertion(v, "static.field"),
		replaceNull: v.Bool("replace.null.with.default"),
	}
	if !v.IsNull("static.value") {
		sv := v.String("static.value")
		t.staticValue = &sv
	}
	if t.topic == nil && t.partition == nil && t.offset == nil && t.stamp == nil && t.static == nil {
		return nil, configErr("No field insertion configured")
	}
	if t.static != nil && t.staticValue == nil {
		return nil, config.Invalid("static.value", nil, "No value specified for static field: "+t.static.name)
	}
	return t, nil
}

// Apply inserts the fields into a source-side record: offset.field fails,
// as a SourceRecord has no offset.
func (t *insertField) Apply(r *data.Record) (*data.Record, error) { return t.apply(r, nil) }

// ApplySink inserts the fields into a sink record at offset.
func (t *insertField) ApplySink(r *data.Record, offset int64) (*data.Record, error) {
	return t.apply(r, &offset)
}

func (t *insertField) apply(r *data.Record, offset *int64) (*data.Record, error) {
	schema, value := t.side.get(r)
	if value == nil {
		return r, nil
	}
	if t.offset != nil && offset == nil {
		return nil, dataErr("Only SinkRecord supported for [%s], found: org.apache.kafka.connect.source.SourceRecord", insertPurpose)
	}
	if schema == nil {
		m, err := requireMap(value, insertPurpose)
		if err != nil {
			return nil, err
		}
		out := maps.Clone(m)
		if t.topic != nil {
			out[t.topic.name] = r.Topic
		}
		if t.partition != nil && r.Partition != data.NoPartition {
			out[t.partition.name] = r.Partition
		}
		if t.offset != nil {
			out[t.offset.name] = *offset
		}
		if t.stamp != nil && !r.Timestamp.IsZero() {
			out[t.stamp.name] = r.Timestamp.UnixMilli()
		}
		if t.static != nil {
			out[t.static.name] = *t.staticValue
		}
		return t.side.with(r, nil, withOthers(out, value)), nil
	}
	st, err := requireStruct(value, insertPurpose)
	if err != nil {
		return nil, err
	}
	updated, err := t.cache.get(st.Schema(), func() (*data.Schema, error) { return t.updatedSchema(st.Schema()) })
	if err != nil {
		return nil, err
	}
	out := data.NewStruct(updated)
	for i, f := range st.Schema().Fields {
		if err := putField(out, f.Name, fieldValue(st, i, t.replaceNull)); err != nil {
			return nil, err
		}
	}
	put := func(spec *insertionSpec, v any) error {
		if spec == nil {
			return nil
		}
		return putField(out, spec.name, v)
	}
	if err := put(t.topic, r.Topic); err != nil {
		return nil, err
	}
	if r.Partition != data.NoPartition {
		if err := put(t.partition, r.Partition); err != nil {
			return nil, err
		}
	}
	if t.offset != nil {
		if err := put(t.offset, *offset); err != nil {
			return nil, err
		}
	}
	if !r.Timestamp.IsZero() {
		if err := put(t.stamp, millis(r.Timestamp)); err != nil {
			return nil, err
		}
	}
	if t.static != nil {
		if err := put(t.static, *t.staticValue); err != nil {
			return nil, err
		}
	}
	return t.side.with(r, updated, out), nil
}

func (t *insertField) updatedSchema(in *data.Schema) (*data.Schema, error) {
	out := copyBasics(in, data.StructType)
	for _, f := range in.Fields {
		if err := addField(out, f.Name, f.Schema); err != nil {
			return nil, err
		}
	}
	add := func(spec *insertionSpec, optional, required *data.Schema) error {
		if spec == nil {
			return nil
		}
		if spec.optional {
			return addField(out, spec.name, optional)
		}
		return addField(out, spec.name, required)
	}
	for _, e := range []struct {
		spec               *insertionSpec
		optional, required *data.Schema
	}{
		{t.topic, data.OptionalStringSchema, data.StringSchema},
		{t.partition, data.OptionalInt32Schema, data.Int32Schema},
		{t.offset, data.OptionalInt64Schema, data.Int64Schema},
		{t.stamp, data.TimestampSchema(true), data.TimestampSchema(false)},
		{t.static, data.OptionalStringSchema, data.StringSchema},
	} {
		if err := add(e.spec, e.optional, e.required); err != nil {
			return nil, err
		}
	}
	return out, nil
}

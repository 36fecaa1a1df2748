package transforms

import (
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

const setSchemaMetadataDoc = "Set the schema name, version or both on the record's key (<code>org.apache.kafka.connect.transforms.SetSchemaMetadata$Key</code>) or value (<code>org.apache.kafka.connect.transforms.SetSchemaMetadata$Value</code>) schema."

func setSchemaMetadataDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "schema.name", Type: config.String, Importance: config.High, Doc: "Schema name to set."}).
		Define(config.Key{Name: "schema.version", Type: config.Int, Importance: config.High, Doc: "Schema version to set."}).
		Define(replaceNullKey())
}

type setSchemaMetadata struct {
	side        side
	name        *string
	version     *int32
	replaceNull bool
	cache       schemaCache
}

func newSetSchemaMetadata(s side, v *config.Values) (Transformation, error) {
	t := &setSchemaMetadata{side: s, replaceNull: v.Bool("replace.null.with.default")}
	if !v.IsNull("schema.name") {
		n := v.String("schema.name")
		t.name = &n
	}
	if !v.IsNull("schema.version") {
		n := int32(v.Int("schema.version"))
		t.version = &n
	}
	if t.name == nil && t.version == nil {
		return nil, configErr("Neither schema name nor version configured")
	}
	return t, nil
}

func (t *setSchemaMetadata) Apply(r *data.Record) (*data.Record, error) {
	schema, value := t.side.get(r)
	if schema == nil && value == nil {
		// A tombstone without a schema (what JsonConverter reads from a
		// null message) passes untouched, as in Kafka.
		return r, nil
	}
	if err := requireSchema(schema, "updating schema metadata"); err != nil {
		return nil, err
	}
	updated, _ := t.cache.get(schema, func() (*data.Schema, error) {
		out := *schema
		if t.name != nil {
			out.Name, out.EmptyName = *t.name, *t.name == ""
		}
		if t.version != nil {
			v := *t.version
			out.Version = &v
		}
		return &out, nil
	})
	// A struct is rebuilt on the new schema, field by field.
	if st, ok := value.(*data.Struct); ok && st != nil {
		out := data.NewStruct(updated)
		for i, f := range updated.Fields {
			if err := putField(out, f.Name, fieldValue(st, i, t.replaceNull)); err != nil {
				return nil, err
			}
		}
		value = out
	}
	return t.side.with(r, updated, value), nil
}

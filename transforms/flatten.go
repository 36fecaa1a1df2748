package transforms

import (
	"maps"
	"slices"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

const flattenDoc = "Flatten a nested data structure, generating names for each field by concatenating the field names at each level with a configurable delimiter character. Applies to Struct when schema present, or a Map in the case of schemaless data. Array fields and their contents are not modified. The default delimiter is '.'."

func flattenDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "delimiter", Type: config.String, Default: ".", Importance: config.Medium,
			Doc: "Delimiter to insert between field names from the input record when generating field names for the output record"})
}

const flattenPurpose = "flattening"

type flatten struct {
	side      side
	delimiter string
	cache     schemaCache
}

func newFlatten(s side, v *config.Values) (Transformation, error) {
	return &flatten{side: s, delimiter: v.String("delimiter")}, nil
}

func (t *flatten) name(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + t.delimiter + field
}

func (t *flatten) Apply(r *data.Record) (*data.Record, error) {
	schema, value := t.side.get(r)
	if value == nil {
		return r, nil
	}
	if schema == nil {
		m, err := requireMap(value, flattenPurpose)
		if err != nil {
			return nil, err
		}
		if err := requireStringKeys(value); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m))
		if err := t.flattenMap(m, "", out); err != nil {
			return nil, err
		}
		return t.side.with(r, nil, out), nil
	}
	st, err := requireStruct(value, flattenPurpose)
	if err != nil {
		return nil, err
	}
	updated, err := t.cache.get(schema, func() (*data.Schema, error) {
		out := copyBasics(schema, data.StructType)
		var def *data.Struct
		if ds, ok := schema.Default.(*data.Struct); ok {
			def = ds
		}
		if err := t.flattenSchema(schema, "", out, schema.Optional, def); err != nil {
			return nil, err
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	out := data.NewStruct(updated)
	if err := t.flattenStruct(st, "", out); err != nil {
		return nil, err
	}
	return t.side.with(r, updated, out), nil
}

func (t *flatten) flattenMap(m map[string]any, prefix string, out map[string]any) error {
	// Keys in order, so that when two flatten to one name ("a.b" and
	// {"a":{"b":..}}) the same one wins every time: the later in order,
	// as with Java's HashMap order for such short keys.
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		name := t.name(prefix, k)
		if v == nil {
			out[name] = nil
			continue
		}
		switch schemaTypeOf(v) {
		case data.TypeInvalid:
			return dataErr("Flatten transformation was passed a value of type %s which is not supported by Connect's data API", javaClass(v))
		case data.MapType:
			nested, _ := asMap(v)
			if err := requireStringKeys(v); err != nil {
				return err
			}
			if err := t.flattenMap(nested, name, out); err != nil {
				return err
			}
		case data.StructType:
			return dataErr("Flatten transformation does not support %s for record without schemas (for field %s).", javaClass(v), name)
		default:
			out[name] = v
		}
	}
	return nil
}

// flattenSchema adds the flattened fields of s: a field is optional when
// it or any ancestor is, and takes its default from its own schema or,
// failing that, from an ancestor's default struct.
func (t *flatten) flattenSchema(s *data.Schema, prefix string, out *data.Schema, optional bool, parentDefault *data.Struct) error {
	for i, f := range s.Fields {
		name := t.name(prefix, f.Name)
		fieldOptional := optional || f.Schema.Optional
		var def any
		if f.Schema.Default != nil {
			def = f.Schema.Default
		} else if parentDefault != nil {
			def = parentDefault.GetIndex(i)
		}
		switch {
		case f.Schema.Type.IsPrimitive() || f.Schema.Type == data.Array:
			fs := copyBasics(f.Schema, f.Schema.Type)
			fs.ValueSchema = f.Schema.ValueSchema
			fs.Optional = fieldOptional
			fs.Default = def
			if err := addField(out, name, fs); err != nil {
				return err
			}
		case f.Schema.Type == data.StructType:
			ds, _ := def.(*data.Struct)
			if err := t.flattenSchema(f.Schema, name, out, fieldOptional, ds); err != nil {
				return err
			}
		default:
			return dataErr("Flatten transformation does not support %s for record with schemas (for field %s).", upperType(f.Schema.Type), name)
		}
	}
	return nil
}

func (t *flatten) flattenStruct(st *data.Struct, prefix string, out *data.Struct) error {
	if st == nil {
		return nil
	}
	for i, f := range st.Schema().Fields {
		name := t.name(prefix, f.Name)
		switch {
		case f.Schema.Type.IsPrimitive() || f.Schema.Type == data.Array:
			if err := putField(out, name, st.GetIndex(i)); err != nil {
				return err
			}
		case f.Schema.Type == data.StructType:
			nested, _ := st.GetIndex(i).(*data.Struct)
			if err := t.flattenStruct(nested, name, out); err != nil {
				return err
			}
		default:
			return dataErr("Flatten transformation does not support %s for record with schemas (for field %s).", upperType(f.Schema.Type), name)
		}
	}
	return nil
}

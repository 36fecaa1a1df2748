package transforms

import (
	"strconv"
	"strings"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// ValueToKey, ExtractField and HoistField: transformations that move a
// whole key or value in or out of a field.

const valueToKeyDoc = "Replace the record key with a new key formed from a subset of fields in the record value."

func valueToKeyDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "fields", Type: config.List, Required: true, Validator: nonEmptyList,
			Importance: config.High, Doc: "Field names on the record value to extract as the record key."}).
		Define(replaceNullKey()).
		// Kafka 4.1 and later read nested fields here too (KIP-821).
		Define(config.Key{Name: "field.syntax.version", Type: config.String, Default: "V1",
			Validator: config.CaseInsensitiveValidString("V1", "V2"), Importance: config.High, Doc: fieldSyntaxDoc})
}

const valueToKeyPurpose = "copying fields from value to key"

type valueToKey struct {
	fields      []fieldPath
	replaceNull bool
	cache       schemaCache
}

func newValueToKey(v *config.Values) (Transformation, error) {
	t := &valueToKey{replaceNull: v.Bool("replace.null.with.default")}
	for _, f := range v.List("fields") {
		p, err := parseFieldPath(f, v.String("field.syntax.version"))
		if err != nil {
			return nil, keyErr("fields", err.Error())
		}
		t.fields = append(t.fields, p)
	}
	return t, nil
}

// Apply builds the key from the value's fields, each named in the key by
// its path as configured ("a.b", or "`a.b`" with backticks kept).
func (t *valueToKey) Apply(r *data.Record) (*data.Record, error) {
	if r.ValueSchema == nil {
		// A schemaless tombstone fails, as in Kafka: requireMap refuses null.
		m, err := requireMap(r.Value, valueToKeyPurpose)
		if err != nil {
			return nil, err
		}
		key := make(map[string]any, len(t.fields))
		for _, p := range t.fields {
			v, err := p.mapValue(m)
			if err != nil {
				return nil, err
			}
			key[p.text] = v
		}
		return keySide.with(r, nil, key), nil
	}
	st, err := requireStruct(r.Value, valueToKeyPurpose)
	if err != nil {
		return nil, err
	}
	keySchema, err := t.cache.get(st.Schema(), func() (*data.Schema, error) {
		ks := &data.Schema{Type: data.StructType}
		for _, p := range t.fields {
			f, err := p.fieldFrom(st.Schema())
			if err != nil {
				return nil, err
			}
			if f == nil {
				return nil, dataErr("Field does not exist: %s", p.text)
			}
			if err := addField(ks, p.text, f.Schema); err != nil {
				return nil, err
			}
		}
		return ks, nil
	})
	if err != nil {
		return nil, err
	}
	key := data.NewStruct(keySchema)
	for _, p := range t.fields {
		v, err := p.structValue(st, t.replaceNull)
		if err != nil {
			return nil, err
		}
		if err := putField(key, p.text, v); err != nil {
			return nil, err
		}
	}
	return keySide.with(r, keySchema, key), nil
}

const extractFieldDoc = "Extract the specified field from a Struct when schema present, or a Map in the case of schemaless data. Any null values are passed through unmodified."

const fieldSyntaxDoc = "Defines the version of the syntax to access fields. If set to <code>V1</code>, then the field paths are limited to access the elements at the root level of the struct or map. If set to <code>V2</code>, the syntax will support accessing nested elements. To access nested elements, dotted notation is used. If dots are already included in the field name, then backtick pairs can be used to wrap field names containing dots. E.g. to access the subfield <code>baz</code> from a field named \"foo.bar\" in a struct/map the following format can be used to access its elements: \"`foo.bar`.baz\"."

func extractFieldDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "field", Type: config.String, Required: true, Importance: config.Medium,
			Doc: "Field name to extract."}).
		Define(replaceNullKey()).
		Define(config.Key{Name: "field.syntax.version", Type: config.String, Default: "V1",
			Validator: config.CaseInsensitiveValidString("V1", "V2"), Importance: config.High, Doc: fieldSyntaxDoc})
}

const extractPurpose = "field extraction"

// fieldPath is KIP-821's SingleFieldPath: one step with syntax V1, the
// dotted steps of the path with V2 (backticks quote a name holding dots).
type fieldPath struct {
	text  string
	steps []string
}

func parseFieldPath(text, version string) (fieldPath, error) {
	if !strings.EqualFold(version, "V2") {
		return fieldPath{text: text, steps: []string{text}}, nil
	}
	steps, err := fieldPathV2(text)
	return fieldPath{text: text, steps: steps}, err
}

func fieldPathV2(path string) ([]string, error) {
	incomplete := func(at int) error {
		return keyErr("field", "Incomplete backtick pair in path: ["+path+"], consider adding a backslash before backtick at position "+strconv.Itoa(at)+" to escape it")
	}
	var steps []string
	idx := 0
	for idx < len(path) && idx >= 0 {
		if path[idx] != '`' {
			start := idx
			if i := strings.IndexByte(path[idx:], '.'); i >= 0 {
				steps = append(steps, path[start:idx+i])
				idx += i + 1
			} else {
				steps = append(steps, path[start:])
				idx = -1
			}
			continue
		}
		backtickAt := idx
		idx++
		var field strings.Builder
		start := idx
		for {
			i := strings.IndexByte(path[idx:], '`')
			if i < 0 {
				return nil, incomplete(backtickAt)
			}
			idx += i
			escaped := path[idx-1] == '\\'
			if idx >= len(path)-1 {
				if escaped {
					return nil, incomplete(backtickAt)
				}
				field.WriteString(path[start:idx])
				steps = append(steps, field.String())
				idx++
				break
			}
			if path[idx+1] != '.' {
				idx++
				continue
			}
			if escaped {
				field.WriteString(path[start : idx-1])
				field.WriteByte('`')
				idx++
				start = idx
				continue
			}
			field.WriteString(path[start:idx])
			steps = append(steps, field.String())
			idx += 2
			break
		}
	}
	if path != "" && path[len(path)-1] == '.' {
		steps = append(steps, "")
	}
	if len(steps) == 0 {
		steps = []string{""}
	}
	return steps, nil
}

// fieldFrom finds the path's field in a schema, or nil.
func (p fieldPath) fieldFrom(s *data.Schema) (*data.Field, error) {
	cur := s
	for i, step := range p.steps {
		if cur.Type != data.StructType {
			return nil, dataErr("Cannot look up fields on non-struct type")
		}
		f := cur.Field(step)
		if f == nil || i == len(p.steps)-1 {
			return f, nil
		}
		cur = f.Schema
	}
	return nil, nil
}

func (p fieldPath) structValue(s *data.Struct, withDefault bool) (any, error) {
	cur := s
	for i, step := range p.steps {
		if cur == nil || cur.Schema().Field(step) == nil {
			return nil, nil
		}
		v := fieldValueByName(cur, step, withDefault)
		if i == len(p.steps)-1 {
			return v, nil
		}
		next, err := requireStructOrNull(v, "nested field access")
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return nil, nil
}

func (p fieldPath) mapValue(m map[string]any) (any, error) {
	cur := m
	for i, step := range p.steps {
		if cur == nil {
			return nil, nil
		}
		if i == len(p.steps)-1 {
			return cur[step], nil
		}
		next, err := requireMapOrNull(cur[step], "nested field access")
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return nil, nil
}

type extractField struct {
	side        side
	path        fieldPath
	replaceNull bool
}

func newExtractField(s side, v *config.Values) (Transformation, error) {
	p, err := parseFieldPath(v.String("field"), v.String("field.syntax.version"))
	if err != nil {
		return nil, err
	}
	return &extractField{side: s, path: p, replaceNull: v.Bool("replace.null.with.default")}, nil
}

func (t *extractField) Apply(r *data.Record) (*data.Record, error) {
	schema, value := t.side.get(r)
	if schema == nil {
		m, err := requireMapOrNull(value, extractPurpose)
		if err != nil {
			return nil, err
		}
		v, err := t.path.mapValue(m)
		if err != nil {
			return nil, err
		}
		return t.side.with(r, nil, v), nil
	}
	st, err := requireStructOrNull(value, extractPurpose)
	if err != nil {
		return nil, err
	}
	f, err := t.path.fieldFrom(schema)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, &Exception{Class: IllegalArgumentException, Message: "Unknown field: " + t.path.text}
	}
	v, err := t.path.structValue(st, t.replaceNull)
	if err != nil {
		return nil, err
	}
	return t.side.with(r, f.Schema, v), nil
}

const hoistFieldDoc = "Wrap data using the specified field name in a Struct when schema present, or a Map in the case of schemaless data."

func hoistFieldDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "field", Type: config.String, Required: true, Importance: config.Medium,
			Doc: "Field name for the single field that will be created in the resulting Struct or Map."})
}

type hoistField struct {
	side  side
	field string
	cache schemaCache
}

func newHoistField(s side, v *config.Values) (Transformation, error) {
	return &hoistField{side: s, field: v.String("field")}, nil
}

func (t *hoistField) Apply(r *data.Record) (*data.Record, error) {
	schema, value := t.side.get(r)
	if schema == nil {
		return t.side.with(r, nil, map[string]any{t.field: value}), nil
	}
	updated, err := t.cache.get(schema, func() (*data.Schema, error) {
		s := &data.Schema{Type: data.StructType}
		return s, addField(s, t.field, schema)
	})
	if err != nil {
		return nil, err
	}
	out := data.NewStruct(updated)
	if err := putField(out, t.field, value); err != nil {
		return nil, err
	}
	return t.side.with(r, updated, out), nil
}

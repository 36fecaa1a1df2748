package transforms

import (
	"maps"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// InsertHeader, DropHeaders and HeaderFrom: transformations of the
// headers. Each returns a record with a new header slice; the input's is
// never modified.

const insertHeaderDoc = "Add a header to each record."

func insertHeaderDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "header", Type: config.String, Required: true, Validator: config.NonNull(),
			Importance: config.High, Doc: "The name of the header."}).
		Define(config.Key{Name: "value.literal", Type: config.String, Required: true, Validator: config.NonNull(),
			Importance: config.High, Doc: "The literal value that is to be set as the header value on all records."})
}

type insertHeader struct {
	header string
	schema *data.Schema
	value  any
}

func newInsertHeader(v *config.Values) (Transformation, error) {
	s, val := parseLiteral(v.String("value.literal"))
	return &insertHeader{header: v.String("header"), schema: s, value: val}, nil
}

func (t *insertHeader) Apply(r *data.Record) (*data.Record, error) {
	out := *r
	out.Headers = make(data.Headers, len(r.Headers), len(r.Headers)+1)
	copy(out.Headers, r.Headers)
	out.Headers = append(out.Headers, data.Header{Key: t.header, Schema: t.schema, Value: t.value})
	return &out, nil
}

// parseLiteral infers a schema for header text as Values.parseString does
// for the scalars: null and the booleans (in lower case only), whole
// numbers in a long's range as the smallest integer type that holds them
// however they are spelled ("7", "7.0", "7e0"), other numbers as FLOAT32
// (FLOAT64 when that overflows, a Decimal when both do or when an integer
// is beyond a long), ISO dates, times and timestamps, and a STRING for
// anything else, arrays and maps included. Only text that starts with a
// digit or a sign is read as a number.
func parseLiteral(s string) (*data.Schema, any) {
	t := strings.TrimSpace(s)
	switch t {
	case "":
		return data.StringSchema, s
	case "null":
		return nil, nil
	case "true":
		return data.BooleanSchema, true
	case "false":
		return data.BooleanSchema, false
	}
	if c := t[0]; c >= '0' && c <= '9' || c == '+' || c == '-' {
		if d, ok := parseJavaDecimal(t); ok {
			return literalNumber(d)
		}
	}
	for _, p := range []struct {
		layout string
		schema *data.Schema
	}{
		{"2006-01-02T15:04:05.000Z", data.TimestampSchema(false)},
		{"2006-01-02", data.DateSchema(false)},
		{"15:04:05.000Z", data.TimeSchema(false)},
	} {
		if tm, err := time.Parse(p.layout, t); err == nil {
			if p.schema.Name == data.TimeName {
				tm = time.UnixMilli(int64(tm.Hour()*3600000 + tm.Minute()*60000 + tm.Second()*1000 + tm.Nanosecond()/1e6)).UTC()
			} else {
				// The fields are a date in Java's calendar (Julian before
				// 1582-10-15), not Go's proleptic Gregorian one.
				tm = data.JavaCalendarTime(tm.Year(), tm.Month(), tm.Day(), tm.Hour(), tm.Minute(), tm.Second(), tm.Nanosecond()/1e6)
			}
			return p.schema, tm.UTC()
		}
	}
	return data.StringSchema, s
}

// literalNumber is the schema and value Values.parseString gives a number.
func literalNumber(d data.Decimal) (*data.Schema, any) {
	// Only a number of at most 19 integer digits can be a whole one in a
	// long's range; zero is one too.
	if m := decimalMagnitude(d); m == math.MinInt64 || m >= 1 && m <= 19 {
		if r := decimalRat(d); r.IsInt() && r.Num().IsInt64() {
			n := r.Num().Int64()
			switch {
			case n >= math.MinInt8 && n <= math.MaxInt8:
				return data.Int8Schema, int8(n)
			case n >= math.MinInt16 && n <= math.MaxInt16:
				return data.Int16Schema, int16(n)
			case n >= math.MinInt32 && n <= math.MaxInt32:
				return data.Int32Schema, int32(n)
			}
			return data.Int64Schema, n
		}
	}
	if d.Scale != 0 {
		f := decimalFloat(d)
		if f32 := float32(f); !math.IsInf(float64(f32), 0) {
			return data.Float32Schema, f32
		}
		if !math.IsInf(f, 0) {
			return data.Float64Schema, f
		}
	}
	return data.DecimalSchema(d.Scale, false), data.Decimal{Unscaled: new(big.Int).Set(d.Unscaled), Scale: d.Scale}
}

const dropHeadersDoc = "Removes one or more headers from each record."

func dropHeadersDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "headers", Type: config.List, Required: true, Validator: nonEmptyList,
			Importance: config.High, Doc: "The name of the headers to be removed."})
}

type dropHeaders struct{ names map[string]bool }

func newDropHeaders(v *config.Values) (Transformation, error) {
	return &dropHeaders{names: setOf(v.List("headers"))}, nil
}

func (t *dropHeaders) Apply(r *data.Record) (*data.Record, error) {
	out := *r
	out.Headers = make(data.Headers, 0, len(r.Headers))
	for _, h := range r.Headers {
		if !t.names[h.Key] {
			out.Headers = append(out.Headers, h)
		}
	}
	return &out, nil
}

const headerFromDoc = "Moves or copies fields in the key/value of a record into that record's headers. Corresponding elements of <code>fields</code> and <code>headers</code> together identify a field and the header it should be moved or copied to."

func headerFromDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "fields", Type: config.List, Required: true, Validator: nonEmptyList,
			Importance: config.High, Doc: "Field names in the record whose values are to be copied or moved to headers."}).
		Define(config.Key{Name: "headers", Type: config.List, Required: true, Validator: nonEmptyList,
			Importance: config.High, Doc: "Header names, in the same order as the field names listed in the fields configuration property."}).
		Define(config.Key{Name: "operation", Type: config.String, Required: true, Validator: config.ValidString("move", "copy"),
			Importance: config.High, Doc: "Either <code>move</code> if the fields are to be moved to the headers (removed from the key/value), or <code>copy</code> if the fields are to be copied to the headers (retained in the key/value)."}).
		Define(replaceNullKey())
}

type headerFrom struct {
	side        side
	fields      []string
	headers     []string
	move        bool
	operation   string
	replaceNull bool
	cache       schemaCache
}

func newHeaderFrom(s side, v *config.Values) (Transformation, error) {
	t := &headerFrom{side: s, fields: v.List("fields"), headers: v.List("headers"), operation: v.String("operation"),
		replaceNull: v.Bool("replace.null.with.default")}
	if len(t.fields) != len(t.headers) {
		return nil, keyErr("fields", "'fields' config must have the same number of elements as 'headers' config.")
	}
	t.move = t.operation == "move"
	return t, nil
}

func (t *headerFrom) Apply(r *data.Record) (*data.Record, error) {
	schema, value := t.side.get(r)
	purpose := "header " + t.operation
	headers := make(data.Headers, len(r.Headers), len(r.Headers)+len(t.fields))
	copy(headers, r.Headers)
	if schema == nil {
		m, err := requireMap(value, purpose)
		if err != nil {
			return nil, err
		}
		updated := maps.Clone(m)
		for i, f := range t.fields {
			if t.move {
				delete(updated, f)
			}
			headers = append(headers, data.Header{Key: t.headers[i], Value: m[f]})
		}
		out := t.side.with(r, nil, withOthers(updated, value))
		out.Headers = headers
		return out, nil
	}
	st, err := requireStruct(value, purpose)
	if err != nil {
		return nil, err
	}
	updatedSchema, updatedValue := schema, st
	if t.move {
		if updatedSchema, err = t.cache.get(schema, func() (*data.Schema, error) {
			out := copyBasics(schema, data.StructType)
			moved := setOf(t.fields)
			for _, f := range schema.Fields {
				if !moved[f.Name] {
					if err := addField(out, f.Name, f.Schema); err != nil {
						return nil, err
					}
				}
			}
			return out, nil
		}); err != nil {
			return nil, err
		}
		updatedValue = data.NewStruct(updatedSchema)
		for _, f := range updatedSchema.Fields {
			if err := putField(updatedValue, f.Name, fieldValueByName(st, f.Name, t.replaceNull)); err != nil {
				return nil, err
			}
		}
	}
	for i, name := range t.fields {
		f := schema.Field(name)
		if f == nil {
			return nil, dataErr("%s is not a valid field name", name)
		}
		headers = append(headers, data.Header{Key: t.headers[i], Schema: f.Schema, Value: fieldValue(st, f.Index, t.replaceNull)})
	}
	out := t.side.with(r, updatedSchema, updatedValue)
	out.Headers = headers
	return out, nil
}

package transforms

import (
	"maps"
	"math"
	"strings"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

const timestampConverterDoc = "Convert timestamps between different formats such as Unix epoch, strings, and Connect Date/Timestamp types.Applies to individual fields or to the entire value."

// Timestamp representations (target.type).
const (
	tsString    = "string"
	tsUnix      = "unix"
	tsDate      = "Date"
	tsTime      = "Time"
	tsTimestamp = "Timestamp"
)

func timestampConverterDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "field", Type: config.String, Default: "", Importance: config.High,
			Doc: "The field containing the timestamp, or empty if the entire value is a timestamp"}).
		Define(config.Key{Name: "target.type", Type: config.String, Required: true,
			Validator: config.ValidString(tsString, tsUnix, tsDate, tsTime, tsTimestamp), Importance: config.High,
			Doc: "The desired timestamp representation: string, unix, Date, Time, or Timestamp"}).
		Define(config.Key{Name: "format", Type: config.String, Default: "", Importance: config.Medium,
			Doc: "A SimpleDateFormat-compatible format for the timestamp. Used to generate the output when type=string or used to parse the input if the input is a string."}).
		Define(config.Key{Name: "unix.precision", Type: config.String, Default: "milliseconds",
			Validator: config.ValidString("nanoseconds", "microseconds", "milliseconds", "seconds"), Importance: config.Low,
			Doc: "The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or nanoseconds. Used to generate the output when type=unix or used to parse the input if the input is a Long.Note: This SMT will cause precision loss during conversions from, and to, values with sub-millisecond components."}).
		Define(replaceNullKey())
}

const tsPurpose = "converting timestamp formats"

type timestampConverter struct {
	side        side
	field       string
	target      string
	format      *dateFormat
	precision   string
	replaceNull bool
	cache       schemaCache
}

func newTimestampConverter(s side, v *config.Values) (Transformation, error) {
	t := &timestampConverter{side: s, field: v.String("field"), target: v.String("target.type"),
		precision: v.String("unix.precision"), replaceNull: v.Bool("replace.null.with.default")}
	pattern := v.String("format")
	if t.target == tsString && strings.TrimSpace(pattern) == "" {
		return nil, keyErr("format", "TimestampConverter requires format option to be specified when using string timestamps")
	}
	if strings.TrimSpace(pattern) != "" {
		f, err := compileDateFormat(pattern)
		if err != nil {
			return nil, keyErr("format", "TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: "+pattern)
		}
		t.format = f
	}
	return t, nil
}

func (t *timestampConverter) targetSchema(optional bool) *data.Schema {
	switch t.target {
	case tsString:
		if optional {
			return data.OptionalStringSchema
		}
		return data.StringSchema
	case tsUnix:
		if optional {
			return data.OptionalInt64Schema
		}
		return data.Int64Schema
	case tsDate:
		return data.DateSchema(optional)
	case tsTime:
		return data.TimeSchema(optional)
	}
	return data.TimestampSchema(optional)
}

// kindOf is the representation a schema says a timestamp has.
func kindOf(s *data.Schema) (string, error) {
	switch {
	case s.Name == data.TimestampName:
		return tsTimestamp, nil
	case s.Name == data.DateName:
		return tsDate, nil
	case s.Name == data.TimeName:
		return tsTime, nil
	case s.Type == data.String:
		return tsString, nil
	case s.Type == data.Int64:
		return tsUnix, nil
	}
	return "", connectErr("Schema %s does not correspond to a known timestamp type format", s)
}

// inferKind is the representation of a schemaless timestamp.
func inferKind(v any) (string, error) {
	switch v.(type) {
	case time.Time:
		return tsTimestamp, nil
	case int64:
		return tsUnix, nil
	case string:
		return tsString, nil
	}
	return "", dataErr("TimestampConverter does not support %s objects as timestamps", javaClass(v))
}

// convert turns a timestamp of the kind ("" to infer it) into the target
// representation.
func (t *timestampConverter) convert(v any, kind string) (any, error) {
	if v == nil {
		return nil, nil
	}
	if kind == "" {
		var err error
		if kind, err = inferKind(v); err != nil {
			return nil, err
		}
	}
	raw, err := t.toRaw(v, kind)
	if err != nil {
		return nil, err
	}
	switch t.target {
	case tsString:
		return t.format.Format(raw), nil
	case tsUnix:
		ms := raw.UnixMilli()
		switch t.precision {
		case "seconds":
			return ms / 1000, nil
		case "microseconds":
			return saturatingMul(ms, 1000), nil
		case "nanoseconds":
			return saturatingMul(ms, 1000000), nil
		}
		return ms, nil
	case tsDate:
		y, m, d := raw.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), nil
	case tsTime:
		return time.UnixMilli(raw.UnixMilli() - startOfDay(raw).UnixMilli()).UTC(), nil
	}
	return raw, nil
}

func startOfDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func saturatingMul(a, b int64) int64 {
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	if a < math.MinInt64/b {
		return math.MinInt64
	}
	return a * b
}

func (t *timestampConverter) toRaw(v any, kind string) (time.Time, error) {
	switch kind {
	case tsString:
		s, ok := v.(string)
		if !ok {
			return time.Time{}, dataErr("Expected string timestamp to be a String, but found %s", javaClass(v))
		}
		if t.format == nil {
			return time.Time{}, dataErr("Could not parse timestamp: value (%s) does not match pattern (%s)", s, "")
		}
		parsed, err := t.format.Parse(s)
		if err != nil {
			return time.Time{}, dataErr("Could not parse timestamp: value (%s) does not match pattern (%s)", s, t.format.pattern)
		}
		return millis(parsed), nil
	case tsUnix:
		n, ok := v.(int64)
		if !ok {
			return time.Time{}, dataErr("Expected Unix timestamp to be a Long, but found %s", javaClass(v))
		}
		switch t.precision {
		case "seconds":
			n = saturatingMul(n, 1000)
		case "microseconds":
			n /= 1000
		case "nanoseconds":
			n /= 1000000
		}
		return time.UnixMilli(n).UTC(), nil
	}
	tm, ok := v.(time.Time)
	if !ok {
		return time.Time{}, dataErr("Expected %s to be a java.util.Date, but found %s", kind, javaClass(v))
	}
	return millis(tm), nil
}

func (t *timestampConverter) Apply(r *data.Record) (*data.Record, error) {
	schema, value := t.side.get(r)
	if schema == nil {
		if value == nil || t.field == "" {
			v, err := t.convert(value, "")
			if err != nil {
				return nil, err
			}
			return t.side.with(r, nil, v), nil
		}
		m, err := requireMap(value, tsPurpose)
		if err != nil {
			return nil, err
		}
		out := maps.Clone(m)
		v, err := t.convert(m[t.field], "")
		if err != nil {
			return nil, err
		}
		out[t.field] = v
		return t.side.with(r, nil, withOthers(out, value)), nil
	}
	if t.field == "" {
		kind, err := kindOf(schema)
		if err != nil {
			return nil, err
		}
		v, err := t.convert(value, kind)
		if err != nil {
			return nil, err
		}
		return t.side.with(r, t.targetSchema(schema.Optional), v), nil
	}
	st, err := requireStructOrNull(value, tsPurpose)
	if err != nil {
		return nil, err
	}
	updated, err := t.cache.get(schema, func() (*data.Schema, error) { return t.updatedSchema(schema) })
	if err != nil {
		return nil, err
	}
	if st == nil {
		return t.side.with(r, updated, nil), nil
	}
	out, err := t.convertStruct(st, updated, t.replaceNull)
	if err != nil {
		return nil, err
	}
	return t.side.with(r, updated, out), nil
}

func (t *timestampConverter) updatedSchema(in *data.Schema) (*data.Schema, error) {
	if in.Type != data.StructType {
		return nil, dataErr("Cannot list fields on non-struct type")
	}
	out := copyBasics(in, data.StructType)
	for _, f := range in.Fields {
		fs := f.Schema
		if f.Name == t.field {
			fs = t.targetSchema(f.Schema.Optional)
		}
		if err := addField(out, f.Name, fs); err != nil {
			return nil, err
		}
	}
	out.Optional = in.Optional
	if ds, ok := in.Default.(*data.Struct); ok && ds != nil {
		noDefault := *out
		def, err := t.convertStruct(ds, &noDefault, true)
		if err != nil {
			return nil, err
		}
		out.Default = def
	}
	return out, nil
}

func (t *timestampConverter) convertStruct(st *data.Struct, updated *data.Schema, withDefault bool) (*data.Struct, error) {
	out := data.NewStruct(updated)
	for i, f := range st.Schema().Fields {
		v := fieldValue(st, i, withDefault)
		if f.Name == t.field {
			kind, err := kindOf(f.Schema)
			if err != nil {
				return nil, err
			}
			if v, err = t.convert(v, kind); err != nil {
				return nil, err
			}
		}
		if err := putField(out, f.Name, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

package transforms

import (
	"encoding/base64"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

const castDoc = "Cast fields or the entire key or value to a specific type, e.g. to force an integer field to a smaller width. Cast from integers, floats, boolean and string to any other type, and cast binary to string (base64 encoded)."

func castDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "spec", Type: config.List, Required: true, Validator: config.Lambda(func(name string, v any) error {
			l, _ := v.([]string)
			if len(l) == 0 {
				return configErr("Must specify at least one field to cast.")
			}
			_, _, err := parseCastSpec(l)
			return err
		}, "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"),
			Importance: config.High,
			Doc:        "List of fields and the type to cast them to of the form field1:type,field2:type to cast fields of Maps or Structs. A single type to cast the entire value. Valid types are int8, int16, int32, int64, float32, float64, boolean, and string. Note that binary fields can only be cast to string."}).
		Define(replaceNullKey())
}

const castPurpose = "cast types"

var (
	castInputs  = []data.Type{data.Int8, data.Int16, data.Int32, data.Int64, data.Float32, data.Float64, data.Boolean, data.String, data.Bytes}
	castOutputs = castInputs[:len(castInputs)-1]
)

func typeList(ts []data.Type) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = upperType(t)
	}
	return "[" + strings.Join(names, ", ") + "]"
}

func isCastOutput(t data.Type) bool {
	for _, o := range castOutputs {
		if o == t {
			return true
		}
	}
	return false
}

// parseCastSpec reads "field:type,..." or a single "type" for the whole
// value (returned as whole, with no field map).
func parseCastSpec(mappings []string) (fields map[string]data.Type, whole data.Type, err error) {
	fields = map[string]data.Type{}
	target := func(name string) (data.Type, error) {
		t, perr := data.ParseType(strings.TrimSpace(name))
		if perr != nil {
			return data.TypeInvalid, configErr("Invalid type found in casting spec: " + strings.TrimSpace(name))
		}
		if !isCastOutput(t) {
			return data.TypeInvalid, configErr("Cast transformation does not support casting to " + upperType(t) + "; supported types are " + typeList(castOutputs))
		}
		return t, nil
	}
	for _, m := range mappings {
		parts := javaSplit(m, ":")
		switch len(parts) {
		case 1:
			if whole, err = target(parts[0]); err != nil {
				return nil, 0, err
			}
		case 2:
			t, err := target(parts[1])
			if err != nil {
				return nil, 0, err
			}
			fields[strings.TrimSpace(parts[0])] = t
		default:
			// Kafka names the wrong setting here; the message is its.
			return nil, 0, config.Invalid("renames", mappings, "Invalid rename mapping: "+m)
		}
	}
	if whole != data.TypeInvalid && len(mappings) > 1 {
		return nil, 0, configErr("Cast transformations that specify a type to cast the entire value to may only specify a single cast in their spec")
	}
	return fields, whole, nil
}

type cast struct {
	side        side
	fields      map[string]data.Type
	order       []string
	whole       data.Type
	replaceNull bool
	cache       schemaCache
}

func newCast(s side, v *config.Values) (Transformation, error) {
	fields, whole, err := parseCastSpec(v.List("spec"))
	if err != nil {
		return nil, err
	}
	t := &cast{side: s, fields: fields, whole: whole, replaceNull: v.Bool("replace.null.with.default")}
	for _, m := range v.List("spec") {
		if parts := javaSplit(m, ":"); len(parts) == 2 {
			t.order = append(t.order, strings.TrimSpace(parts[0]))
		}
	}
	return t, nil
}

func (t *cast) Apply(r *data.Record) (*data.Record, error) {
	schema, value := t.side.get(r)
	if value == nil {
		// Kafka returns the record as it is, schema included, even for a
		// whole-value cast.
		return r, nil
	}
	if schema == nil {
		if t.whole != data.TypeInvalid {
			v, err := castValue(nil, value, t.whole)
			if err != nil {
				return nil, err
			}
			return t.side.with(r, nil, v), nil
		}
		m, err := requireMap(value, castPurpose)
		if err != nil {
			return nil, err
		}
		out := maps.Clone(m)
		for _, f := range t.order {
			v, err := castValue(nil, m[f], t.fields[f])
			if err != nil {
				return nil, err
			}
			out[f] = v
		}
		return t.side.with(r, nil, withOthers(out, value)), nil
	}
	updated, err := t.cache.get(schema, func() (*data.Schema, error) { return t.updatedSchema(schema) })
	if err != nil {
		return nil, err
	}
	if t.whole != data.TypeInvalid {
		v, err := castValue(schema, value, t.whole)
		if err != nil {
			return nil, err
		}
		return t.side.with(r, updated, v), nil
	}
	st, err := requireStruct(value, castPurpose)
	if err != nil {
		return nil, err
	}
	out := data.NewStruct(updated)
	for i, f := range st.Schema().Fields {
		v := fieldValue(st, i, t.replaceNull)
		if target, ok := t.fields[f.Name]; ok {
			if v, err = castValue(f.Schema, v, target); err != nil {
				return nil, err
			}
		}
		if err := putField(out, f.Name, v); err != nil {
			return nil, err
		}
	}
	return t.side.with(r, updated, out), nil
}

func (t *cast) updatedSchema(in *data.Schema) (*data.Schema, error) {
	var out *data.Schema
	if t.whole != data.TypeInvalid {
		out = copyBasics(in, t.whole)
		if data.IsLogical(in) {
			// Kafka copies the logical name onto the cast schema, which
			// then no longer matches its value; Sluice drops it.
			out = &data.Schema{Type: t.whole, Doc: in.Doc, EmptyDoc: in.EmptyDoc}
		}
	} else {
		if in.Type != data.StructType {
			return nil, dataErr("Cannot list fields on non-struct type")
		}
		out = copyBasics(in, data.StructType)
		for _, f := range in.Fields {
			target, ok := t.fields[f.Name]
			if !ok {
				if err := addField(out, f.Name, f.Schema); err != nil {
					return nil, err
				}
				continue
			}
			fs := &data.Schema{Type: target, Optional: f.Schema.Optional}
			if f.Schema.Default != nil {
				d, err := castValue(f.Schema, f.Schema.Default, target)
				if err != nil {
					return nil, err
				}
				fs.Default = d
			}
			if err := addField(out, f.Name, fs); err != nil {
				return nil, err
			}
		}
	}
	out.Optional = in.Optional
	if in.Default != nil {
		if t.whole != data.TypeInvalid {
			d, err := castValue(in, in.Default, t.whole)
			if err != nil {
				return nil, err
			}
			out.Default = d
		} else if ds, ok := in.Default.(*data.Struct); ok {
			// The default struct is cast field by field, like a value.
			noDefault := *out
			def := data.NewStruct(&noDefault)
			for i, f := range ds.Schema().Fields {
				v := ds.Values()[i]
				if target, ok := t.fields[f.Name]; ok {
					var err error
					if v, err = castValue(f.Schema, v, target); err != nil {
						return nil, err
					}
				}
				if err := putField(def, f.Name, v); err != nil {
					return nil, err
				}
			}
			out.Default = def
		}
	}
	return out, nil
}

// castValue casts one value to the target type, as Cast.castValueToType.
func castValue(s *data.Schema, v any, target data.Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	var from data.Type
	if s == nil {
		from = schemaTypeOf(v)
		if from == data.TypeInvalid {
			return nil, dataErr("Cast transformation was passed a value of type %s which is not supported by Connect's data API", javaClass(v))
		}
	} else {
		from = s.Type
	}
	supported := false
	for _, in := range castInputs {
		supported = supported || in == from
	}
	if !supported {
		return nil, dataErr("Cast transformation does not support casting from %s; supported types are %s", upperType(from), typeList(castInputs))
	}
	// Logical dates and times are cast as their physical value, except to
	// a string.
	if s != nil && target != data.String {
		switch s.Name {
		case data.DateName, data.TimeName, data.TimestampName:
			p, err := data.ToPhysical(s, v)
			if err != nil {
				return nil, &Exception{Class: DataException, Message: err.Error()}
			}
			v = p
		}
	}
	outOfRange := func() error {
		return dataErr("Value (%s) was out of range for requested data type", data.FormatValue(v))
	}
	unexpected := func() error { return dataErr("Unexpected type in Cast transformation: %s", javaClass(v)) }
	switch target {
	case data.String:
		return castToString(v), nil
	case data.Boolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			return strings.EqualFold(x, "true"), nil
		}
		if n, ok := longValue(v); ok {
			return n != 0, nil
		}
		return nil, unexpected()
	case data.Float32, data.Float64:
		bits := 64
		if target == data.Float32 {
			bits = 32
		}
		var f float64
		switch x := v.(type) {
		case bool:
			if x {
				f = 1
			}
		case string:
			p, err := javaParseFloat(x, bits)
			if err != nil {
				return nil, outOfRange()
			}
			f = p
		default:
			if target == data.Float32 {
				// Number.floatValue rounds once, straight to a float: a
				// long or decimal rounded to a double first can land on
				// a tie that then rounds the other way.
				switch x := v.(type) {
				case int64:
					return float32(x), nil
				case data.Decimal:
					return decimalFloat32(x), nil
				}
			}
			var ok bool
			if f, ok = floatValue(v); !ok {
				return nil, unexpected()
			}
		}
		if target == data.Float32 {
			return float32(f), nil
		}
		return f, nil
	}
	// Integer targets.
	bits := map[data.Type]int{data.Int8: 8, data.Int16: 16, data.Int32: 32, data.Int64: 64}[target]
	var n int64
	switch x := v.(type) {
	case bool:
		if x {
			n = 1
		}
	case string:
		p, err := strconv.ParseInt(javaDigits(x), 10, bits)
		if err != nil {
			return nil, outOfRange()
		}
		n = p
	case float32, float64:
		f, _ := floatValue(v)
		// Number.intValue and friends narrow a double through int (for
		// int8/16/32) or long, saturating.
		if bits == 64 {
			n = javaD2L(f)
		} else {
			n = int64(javaD2I(f))
		}
	default:
		var ok bool
		if n, ok = longValue(v); !ok {
			return nil, unexpected()
		}
	}
	switch target {
	case data.Int8:
		return int8(n), nil
	case data.Int16:
		return int16(n), nil
	case data.Int32:
		return int32(n), nil
	}
	return n, nil
}

// longValue is Number.longValue for the integer types and decimals.
func longValue(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case float32:
		return javaD2L(float64(x)), true
	case float64:
		return javaD2L(x), true
	case data.Decimal:
		return decimalLong(x), true
	}
	return 0, false
}

// floatValue is Number.doubleValue.
func floatValue(v any) (float64, bool) {
	switch x := v.(type) {
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case data.Decimal:
		return decimalFloat(x), true
	}
	return math.NaN(), false
}

// castToString prints a value as Cast does: Java's toString, dates in the
// ISO form Values.dateFormatFor picks, bytes in base64.
func castToString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int8, int16, int32, int64:
		n, _ := longValue(x)
		return strconv.FormatInt(n, 10)
	case float32:
		return javaFloatString(float64(x), 32)
	case float64:
		return javaFloatString(x, 64)
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case data.Raw:
		return base64.StdEncoding.EncodeToString(x)
	case data.Decimal:
		return javaDecimalString(x)
	case time.Time:
		// Values.dateFormatFor goes by the instant, not the schema: every
		// instant before 1970-01-02 (so every one before the Gregorian
		// cutover) prints as a time of day, which both calendars share.
		ms := x.UnixMilli()
		switch {
		case ms < 24*60*60*1000:
			return isoTimeFormat.Format(x)
		case ms%(24*60*60*1000) == 0:
			return isoDateFormat.Format(x)
		}
		return isoTimestampFormat.Format(x)
	}
	return data.FormatValue(v)
}

// The ISO 8601 patterns of Kafka Connect's Values, which Cast and
// Values.convertToString print dates with (SimpleDateFormat, UTC).
var (
	isoTimeFormat      = mustDateFormat("HH:mm:ss.SSS'Z'")
	isoDateFormat      = mustDateFormat("yyyy-MM-dd")
	isoTimestampFormat = mustDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")
)

func mustDateFormat(p string) *dateFormat {
	f, err := compileDateFormat(p)
	if err != nil {
		panic("compile " + p + ": " + err.Error())
	}
	return f
}

// javaDigits rewrites the decimal digits of other scripts ("١٢",
// fullwidth "１２") as ASCII ones, since Integer.parseInt and friends read
// any digit Character.digit knows. Java works on UTF-16 units, so only
// digits of the Basic Multilingual Plane count.
func javaDigits(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf || r > 0xFFFF || !unicode.IsDigit(r) {
			b.WriteRune(r)
			continue
		}
		// Unicode puts each script's digits 0-9 in a run starting at its
		// zero; runs of several sets of ten (mathematical digits) are
		// beyond the BMP.
		zero := r
		for unicode.IsDigit(zero-1) && r-zero < 9 {
			zero--
		}
		b.WriteByte(byte('0' + (r-zero)%10))
	}
	return b.String()
}

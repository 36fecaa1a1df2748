package transforms

import (
	"maps"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

const maskFieldDoc = "Mask specified fields with a valid null value for the field type (i.e. 0, false, empty string, and so on).<p/>For numeric and string fields, an optional replacement value can be specified that is converted to the correct type."

func maskFieldDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "fields", Type: config.List, Required: true, Validator: nonEmptyList,
			Importance: config.High, Doc: "Names of fields to mask."}).
		Define(config.Key{Name: "replacement", Type: config.String, Validator: config.NonEmptyString(),
			Importance: config.Low, Doc: "Custom value replacement, that will be applied to all 'fields' values (numeric or non-empty string values only)."}).
		Define(replaceNullKey())
}

const maskPurpose = "mask fields"

type maskField struct {
	side        side
	fields      []string
	masked      map[string]bool
	replacement *maskReplacement // nil: mask with the type's null value
	replaceNull bool
}

func newMaskField(s side, v *config.Values) (Transformation, error) {
	t := &maskField{side: s, fields: v.List("fields"), masked: setOf(v.List("fields")), replaceNull: v.Bool("replace.null.with.default")}
	if !v.IsNull("replacement") {
		t.replacement = newMaskReplacement(v.String("replacement"))
	}
	return t, nil
}

func (t *maskField) Apply(r *data.Record) (*data.Record, error) {
	schema, value := t.side.get(r)
	if schema == nil {
		m, err := requireMap(value, maskPurpose)
		if err != nil {
			return nil, err
		}
		out := maps.Clone(m)
		for _, f := range t.fields {
			mv, err := t.mask(m[f])
			if err != nil {
				return nil, err
			}
			out[f] = mv
		}
		return t.side.with(r, nil, withOthers(out, value)), nil
	}
	st, err := requireStruct(value, maskPurpose)
	if err != nil {
		return nil, err
	}
	out := data.NewStruct(st.Schema())
	for i, f := range st.Schema().Fields {
		fv := fieldValue(st, i, t.replaceNull)
		if t.masked[f.Name] {
			if fv, err = t.mask(fv); err != nil {
				return nil, err
			}
		}
		if err := putField(out, f.Name, fv); err != nil {
			return nil, err
		}
	}
	return t.side.with(r, schema, out), nil
}

func (t *maskField) mask(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if t.replacement != nil {
		return t.replacement.mask(v)
	}
	switch x := v.(type) {
	case bool:
		return false, nil
	case int8:
		return int8(0), nil
	case int16:
		return int16(0), nil
	case int32:
		return int32(0), nil
	case int64:
		return int64(0), nil
	case float32:
		return float32(0), nil
	case float64:
		return float64(0), nil
	case string:
		return "", nil
	case time.Time:
		return time.UnixMilli(0).UTC(), nil
	case data.Decimal:
		// Kafka puts BigDecimal.ZERO; the value's own scale keeps the
		// masked decimal valid for its schema.
		return data.Decimal{Unscaled: new(big.Int), Scale: x.Scale}, nil
	case []any:
		return []any{}, nil
	case map[string]any, data.Map:
		return map[string]any{}, nil
	}
	return nil, dataErr("Cannot mask value of type: %s", javaClass(v))
}

// parseReplacement reads the replacement text as a number; a variable so
// that a test can count the reads.
var parseReplacement = parseJavaDecimal

// maskReplacement is the replacement text read once, when the
// transformation is configured, into the value it gives each type. Kafka
// converts the text for every value it masks, and fails only then: a
// replacement that is no number is refused when it meets a numeric field,
// not at configuration. So the failures are kept too, with Kafka's
// messages, and returned when a value of that type is masked.
type maskReplacement struct {
	text string
	// The numeric types share one reading: Values.convertToByte and friends
	// read the text as a BigDecimal and narrow it as Number.byteValue,
	// longValue or doubleValue do, so "300" masks an INT8 as 44 and "1.9"
	// an INT32 as 1. Text that is no number fails with Values.asLong's
	// message (numErr).
	i8     int8
	i16    int16
	i32    int32
	i64    int64
	f32    float32
	f64    float64
	numErr error
	// dec is the text as new BigDecimal(text) reads it, or nil; decimals
	// caches it rescaled to each scale values come with.
	dec      *data.Decimal
	mu       sync.Mutex
	decimals map[int32]decimalReplacement
}

type decimalReplacement struct {
	d   data.Decimal
	err error
}

// maxDecimalReplacementScales bounds the scales remembered: a schema's
// scale rarely changes, but values of any scale may come.
const maxDecimalReplacementScales = 16

func newMaskReplacement(text string) *maskReplacement {
	r := &maskReplacement{text: text}
	d, ok := parseReplacement(text)
	if !ok {
		r.numErr = dataErr("Unable to convert %s (class java.lang.String) to a number", text)
		return r
	}
	r.dec = &d
	n := decimalLong(d)
	r.i8, r.i16, r.i32, r.i64 = int8(n), int16(n), int32(n), n
	f := decimalFloat(d)
	r.f32, r.f64 = float32(f), f
	return r
}

func (r *maskReplacement) mask(v any) (any, error) {
	switch x := v.(type) {
	case int8, int16, int32, int64, float32, float64:
		if r.numErr != nil {
			return nil, r.numErr
		}
		switch v.(type) {
		case int8:
			return r.i8, nil
		case int16:
			return r.i16, nil
		case int32:
			return r.i32, nil
		case int64:
			return r.i64, nil
		case float32:
			return r.f32, nil
		}
		return r.f64, nil
	case string:
		return r.text, nil
	case data.Decimal:
		return r.decimal(x.Scale)
	}
	return nil, dataErr("Cannot mask value of type %s with custom replacement.", javaClass(v))
}

// decimal is the replacement at a decimal value's scale. Java's BigDecimal
// keeps the replacement's own scale; Sluice rescales it to the value's so
// that it still fits the schema, and refuses it, with the message of
// new BigDecimal's NumberFormatException in MaskField, when that would lose
// digits or make a number of absurd size.
func (r *maskReplacement) decimal(scale int32) (data.Decimal, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.decimals[scale]
	if !ok {
		c.err = dataErr("Unable to convert %s (class java.lang.String) to number", r.text)
		if r.dec != nil {
			if d, fits := rescale(*r.dec, scale); fits {
				c = decimalReplacement{d: d}
			}
		}
		if r.decimals == nil || len(r.decimals) >= maxDecimalReplacementScales {
			r.decimals = make(map[int32]decimalReplacement, maxDecimalReplacementScales)
		}
		r.decimals[scale] = c
	}
	if c.err != nil {
		return data.Decimal{}, c.err
	}
	// Each record gets its own big.Int: values are not shared between records.
	return data.Decimal{Unscaled: new(big.Int).Set(c.d.Unscaled), Scale: c.d.Scale}, nil
}

// parseJavaDecimal is new BigDecimal(String): an optional sign, digits
// with an optional point, and an optional exponent.
func parseJavaDecimal(s string) (data.Decimal, bool) {
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(s[i+1:], 10, 32)
		if err != nil {
			return data.Decimal{}, false
		}
		mant, exp = s[:i], e
	}
	scale := int64(0)
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		scale = int64(len(mant) - i - 1)
		mant = mant[:i] + mant[i+1:]
	}
	digits := strings.TrimLeft(mant, "+-")
	if digits == "" || len(mant)-len(digits) > 1 || strings.Trim(digits, "0123456789") != "" {
		return data.Decimal{}, false
	}
	n, ok := new(big.Int).SetString(mant, 10)
	if !ok {
		return data.Decimal{}, false
	}
	scale -= exp
	if scale < -1<<31 || scale > 1<<31-1 {
		return data.Decimal{}, false
	}
	return data.Decimal{Unscaled: n, Scale: int32(scale)}, true
}

// maxRescaleDigits bounds the digits rescale may add: a replacement such
// as "1e-2000000000" for a decimal of scale 2 would otherwise need a power
// of ten of two billion digits.
const maxRescaleDigits = 1000

// rescale returns d with the scale, if that loses no digits and adds no
// more than maxRescaleDigits.
func rescale(d data.Decimal, scale int32) (data.Decimal, bool) {
	u := d.Unscaled
	if u == nil {
		u = new(big.Int)
	}
	diff := int64(scale) - int64(d.Scale)
	switch {
	case u.Sign() == 0 || diff == 0:
		return data.Decimal{Unscaled: new(big.Int).Set(u), Scale: scale}, true
	case diff > 0:
		if diff > maxRescaleDigits {
			return data.Decimal{}, false
		}
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(diff), nil)
		return data.Decimal{Unscaled: p.Mul(p, u), Scale: scale}, true
	}
	// Dividing by more powers of ten than u has digits leaves a remainder.
	if -diff > int64(len(new(big.Int).Abs(u).String())) {
		return data.Decimal{}, false
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(-diff), nil)
	q, m := new(big.Int).QuoRem(u, p, new(big.Int))
	if m.Sign() != 0 {
		return data.Decimal{}, false
	}
	return data.Decimal{Unscaled: q, Scale: scale}, true
}

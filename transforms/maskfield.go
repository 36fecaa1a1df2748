package transforms

import (
	"maps"
	"math/big"
	"strconv"
	"strings"
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
	replacement *string
	replaceNull bool
}

func newMaskField(s side, v *config.Values) (Transformation, error) {
	t := &maskField{side: s, fields: v.List("fields"), masked: setOf(v.List("fields")), replaceNull: v.Bool("replace.null.with.default")}
	if !v.IsNull("replacement") {
		rep := v.String("replacement")
		t.replacement = &rep
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
		return t.side.with(r, nil, out), nil
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
		return maskWithReplacement(v, *t.replacement)
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

func maskWithReplacement(v any, rep string) (any, error) {
	// The numbers are Values.convertToByte and friends: the text is read as
	// a BigDecimal and narrowed as Number.longValue or doubleValue do, so
	// "300" masks an INT8 as 44 and "1.9" an INT32 as 1. Text that is no
	// number fails with Values.asLong's message.
	number := func() (data.Decimal, error) {
		d, ok := parseJavaDecimal(rep)
		if !ok {
			return data.Decimal{}, dataErr("Unable to convert %s (class java.lang.String) to a number", rep)
		}
		return d, nil
	}
	switch x := v.(type) {
	case int8, int16, int32, int64:
		d, err := number()
		if err != nil {
			return nil, err
		}
		n := decimalLong(d)
		switch v.(type) {
		case int8:
			return int8(n), nil
		case int16:
			return int16(n), nil
		case int32:
			return int32(n), nil
		}
		return n, nil
	case float32:
		d, err := number()
		if err != nil {
			return nil, err
		}
		return float32(decimalFloat(d)), nil
	case float64:
		d, err := number()
		if err != nil {
			return nil, err
		}
		return decimalFloat(d), nil
	case string:
		return rep, nil
	case data.Decimal:
		// new BigDecimal(text): its NumberFormatException has MaskField's
		// own message.
		bad := func() error {
			return dataErr("Unable to convert %s (class java.lang.String) to number", rep)
		}
		d, ok := parseJavaDecimal(rep)
		if !ok {
			return nil, bad()
		}
		// Java's BigDecimal keeps the replacement's own scale; Sluice
		// rescales it to the value's so that it still fits the schema.
		rs, ok := rescale(d, x.Scale)
		if !ok {
			return nil, bad()
		}
		return rs, nil
	}
	return nil, dataErr("Cannot mask value of type %s with custom replacement.", javaClass(v))
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

// rescale returns d with the scale, if that loses no digits.
func rescale(d data.Decimal, scale int32) (data.Decimal, bool) {
	u := d.Unscaled
	if u == nil {
		u = new(big.Int)
	}
	switch {
	case scale == d.Scale:
		return data.Decimal{Unscaled: new(big.Int).Set(u), Scale: scale}, true
	case scale > d.Scale:
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)-int64(d.Scale)), nil)
		return data.Decimal{Unscaled: p.Mul(p, u), Scale: scale}, true
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)-int64(scale)), nil)
	q, m := new(big.Int).QuoRem(u, p, new(big.Int))
	if m.Sign() != 0 {
		return data.Decimal{}, false
	}
	return data.Decimal{Unscaled: q, Scale: scale}, true
}

package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// EncodeJSONMap writes a source partition or offset as compact JSON with
// object keys sorted, so equal maps give equal bytes (the offset store keys
// records by these bytes). A nil map encodes as nil.
//
// Floats that happen to be integral are written with a fraction ("1.0"), as
// Java's JSON writer does, so they decode as floats again; NaN and ±Inf have
// no JSON form and are rejected. []byte is written as base64, as Kafka
// Connect's JsonConverter writes BYTES.
func EncodeJSONMap(m map[string]any) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	b := jsonBuf{b: make([]byte, 0, 64)}
	if err := writeJSON(&b, m); err != nil {
		return nil, err
	}
	return b.b, nil
}

// jsonBuf is the append buffer the JSON writer fills; EncodeSourceRecords
// shares one across a batch.
type jsonBuf struct{ b []byte }

func (j *jsonBuf) WriteString(s string) { j.b = append(j.b, s...) }
func (j *jsonBuf) writeByte(c byte)     { j.b = append(j.b, c) }

func writeJSON(b *jsonBuf, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.b = strconv.AppendBool(b.b, x)
	case string:
		writeJSONString(b, x)
	case int:
		b.b = strconv.AppendInt(b.b, int64(x), 10)
	case int8:
		b.b = strconv.AppendInt(b.b, int64(x), 10)
	case int16:
		b.b = strconv.AppendInt(b.b, int64(x), 10)
	case int32:
		b.b = strconv.AppendInt(b.b, int64(x), 10)
	case int64:
		b.b = strconv.AppendInt(b.b, x, 10)
	case uint:
		b.b = strconv.AppendUint(b.b, uint64(x), 10)
	case uint8:
		b.b = strconv.AppendUint(b.b, uint64(x), 10)
	case uint16:
		b.b = strconv.AppendUint(b.b, uint64(x), 10)
	case uint32:
		b.b = strconv.AppendUint(b.b, uint64(x), 10)
	case uint64:
		b.b = strconv.AppendUint(b.b, x, 10)
	case float32:
		return writeJSONFloat(b, float64(x), 32)
	case float64:
		return writeJSONFloat(b, x, 64)
	case json.Number:
		if !json.Valid([]byte(x)) {
			return fmt.Errorf("invalid json.Number %q", string(x))
		}
		b.WriteString(string(x))
	case []byte:
		writeJSONString(b, base64.StdEncoding.EncodeToString(x))
	case []any:
		b.writeByte('[')
		for i, e := range x {
			if i > 0 {
				b.writeByte(',')
			}
			if err := writeJSON(b, e); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		b.writeByte(']')
	case map[string]any:
		// Source partitions and offsets have a key or two: sort them on
		// the stack.
		var small [8]string
		keys := small[:0]
		for k := range x {
			keys = append(keys, k)
		}
		if len(keys) > 1 {
			slices.Sort(keys)
		}
		b.writeByte('{')
		for i, k := range keys {
			if i > 0 {
				b.writeByte(',')
			}
			writeJSONString(b, k)
			b.writeByte(':')
			if err := writeJSON(b, x[k]); err != nil {
				return fmt.Errorf("key %s: %w", k, err)
			}
		}
		b.writeByte('}')
	default:
		return writeJSONReflect(b, v)
	}
	return nil
}

// writeJSONReflect handles typed slices and string-keyed maps
// ([]string, map[string]int64, ...) by converting them to the generic forms.
func writeJSONReflect(b *jsonBuf, v any) error {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		arr := make([]any, rv.Len())
		for i := range arr {
			arr[i] = rv.Index(i).Interface()
		}
		return writeJSON(b, arr)
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return fmt.Errorf("unsupported map key type %s: JSON object keys are strings", rv.Type().Key())
		}
		m := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			m[it.Key().String()] = it.Value().Interface()
		}
		return writeJSON(b, m)
	case reflect.Pointer:
		if rv.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writeJSON(b, rv.Elem().Interface())
	}
	return fmt.Errorf("unsupported JSON value of type %T", v)
}

func writeJSONFloat(b *jsonBuf, f float64, bits int) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("unsupported float value %v", f)
	}
	start := len(b.b)
	b.b = strconv.AppendFloat(b.b, f, 'g', -1, bits)
	// Exponent form is valid JSON; an integral value without '.' or 'e'
	// gets ".0" so that it reads back as a float.
	if !bytes.ContainsAny(b.b[start:], ".eE") {
		b.b = append(b.b, ".0"...)
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// writeJSONString escapes only what JSON requires (quote, backslash, control
// characters), unlike encoding/json, which also escapes <, > and &; Java's
// writers do not, and the bytes should match what they write.
func writeJSONString(b *jsonBuf, s string) {
	b.writeByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteString(s[start:i])
				b.WriteString(`\ufffd`)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			b.WriteString(`\u00`)
			b.writeByte(hexDigits[c>>4])
			b.writeByte(hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b.WriteString(s[start:])
	b.writeByte('"')
}

// DecodeJSONMap reads a source partition or offset. Numbers written without
// a fraction or exponent that fit in int64 become int64, all others float64
// (what JsonConverter's schemaless reading yields: Long or Double). Empty
// input and JSON null decode as nil.
func DecodeJSONMap(b []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode JSON map: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decode JSON map: trailing data after the object")
	}
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decode JSON map: want an object, got %T", v)
	}
	if err := convertNumbers(m); err != nil {
		return nil, fmt.Errorf("decode JSON map: %w", err)
	}
	return m, nil
}

func convertNumber(n json.Number) (any, error) {
	s := string(n)
	if !bytes.ContainsAny([]byte(s), ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", s, err)
	}
	return f, nil
}

func convertNumbers(v any) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if n, ok := e.(json.Number); ok {
				c, err := convertNumber(n)
				if err != nil {
					return err
				}
				x[k] = c
				continue
			}
			if err := convertNumbers(e); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if n, ok := e.(json.Number); ok {
				c, err := convertNumber(n)
				if err != nil {
					return err
				}
				x[i] = c
				continue
			}
			if err := convertNumbers(e); err != nil {
				return err
			}
		}
	}
	return nil
}

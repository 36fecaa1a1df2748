package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Every byte Sluice writes to an internal topic goes through this file. Kafka
// Connect writes those values with Jackson (through JsonConverter with
// schemas.enable=false), so the writer here follows Jackson's compact output:
// no whitespace, '"' and '\' escaped, the controls \b \t \n \f \r in their
// short form and the other controls below U+0020 as \u00XX with upper-case
// hex, a character beyond U+FFFF as the \uXXXX escapes of its two UTF-16
// surrogates (Jackson writes a Java string's chars one by one and escapes a
// surrogate), and everything else — DEL, other non-ASCII, U+2028/U+2029,
// '<', '>', '&' — as plain UTF-8. encoding/json differs on the last two
// groups, and for an offsets key a single differing byte means a Java worker
// looks up a different key.

const upperHex = "0123456789ABCDEF"

// appendJSONString appends s as a JSON string the way Jackson writes it.
// Invalid UTF-8 (which a Java string cannot hold) becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for len(s) > 0 {
		c := s[0]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s)
			switch {
			case r == utf8.RuneError && n == 1:
				b = utf8.AppendRune(b, utf8.RuneError)
			case r > 0xFFFF:
				hi, lo := utf16.EncodeRune(r)
				b = appendUnicodeEscape(b, hi)
				b = appendUnicodeEscape(b, lo)
			default:
				b = append(b, s[:n]...)
			}
			s = s[n:]
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20:
			b = append(b, c)
		case c == '\b':
			b = append(b, `\b`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\f':
			b = append(b, `\f`...)
		case c == '\r':
			b = append(b, `\r`...)
		default:
			b = append(b, '\\', 'u', '0', '0', upperHex[c>>4], upperHex[c&0x0f])
		}
		s = s[1:]
	}
	return append(b, '"')
}

// appendUnicodeEscape appends \uXXXX for a UTF-16 unit, in upper-case hex.
func appendUnicodeEscape(b []byte, u rune) []byte {
	return append(b, '\\', 'u', upperHex[u>>12&0xf], upperHex[u>>8&0xf], upperHex[u>>4&0xf], upperHex[u&0xf])
}

// appendCanonical appends a value decoded with json.Decoder.UseNumber:
// object keys sorted, numbers exactly as they were written.
func appendCanonical(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendJSONString(b, x), nil
	case json.Number:
		return append(b, x...), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendCanonical(b, x[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	default:
		return nil, fmt.Errorf("unexpected JSON value of type %T", v)
	}
}

// decodeJSON decodes one JSON value with numbers kept as json.Number and
// nothing but whitespace after it.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after value")
	}
	return v, nil
}

// jsonObject writes one compact JSON object field by field, in the order the
// fields are added: Kafka Connect's values are Structs, whose JSON keeps the
// schema's field order.
type jsonObject struct{ b []byte }

func (o *jsonObject) key(k string) {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = appendJSONString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *jsonObject) str(k, v string) *jsonObject {
	o.key(k)
	o.b = appendJSONString(o.b, v)
	return o
}

// strOrNull writes null for an empty string: optional struct fields that are
// unset serialize as null, not as absent.
func (o *jsonObject) strOrNull(k, v string) *jsonObject {
	if v == "" {
		o.key(k)
		o.b = append(o.b, "null"...)
		return o
	}
	return o.str(k, v)
}

func (o *jsonObject) int(k string, v int64) *jsonObject {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
	return o
}

func (o *jsonObject) bool(k string, v bool) *jsonObject {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
	return o
}

// strMap writes a map of strings with its keys sorted: Java writes its map's
// iteration order, which no reader depends on; sorted keys make Sluice's
// bytes deterministic.
func (o *jsonObject) strMap(k string, m map[string]string) *jsonObject {
	o.key(k)
	keys := make([]string, 0, len(m))
	for mk := range m {
		keys = append(keys, mk)
	}
	sort.Strings(keys)
	o.b = append(o.b, '{')
	for i, mk := range keys {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = appendJSONString(o.b, mk)
		o.b = append(o.b, ':')
		o.b = appendJSONString(o.b, m[mk])
	}
	o.b = append(o.b, '}')
	return o
}

func (o *jsonObject) raw(k string, v []byte) *jsonObject {
	o.key(k)
	o.b = append(o.b, v...)
	return o
}

func (o *jsonObject) bytes() []byte {
	if len(o.b) == 0 {
		return []byte("{}")
	}
	return append(o.b, '}')
}

package convert

import (
	"encoding/binary"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// StringConverter is Kafka Connect's StringConverter: it writes the string
// form of any value in the configured character set and reads bytes back as
// an optional STRING. Create it with NewStringConverter or New.
type StringConverter struct {
	enc, dec charset // for writing and for reading
}

// charset is one of the character sets every Java runtime supports
// (java.nio.charset.StandardCharsets).
type charset int

const (
	csUTF8 charset = iota
	csASCII
	csLatin1
	csUTF16 // big-endian, writes a byte order mark, honours one when reading
	csUTF16BE
	csUTF16LE
)

// charsetNames maps Java's canonical charset names and common aliases,
// lower-cased, to the character sets StringConverter implements.
var charsetNames = map[string]charset{
	"utf-8": csUTF8, "utf8": csUTF8, "unicode-1-1-utf-8": csUTF8,
	"us-ascii": csASCII, "ascii": csASCII, "us": csASCII, "iso646-us": csASCII, "ascii7": csASCII,
	"ansi_x3.4-1968": csASCII, "cp367": csASCII, "ibm367": csASCII, "646": csASCII, "csascii": csASCII,
	"iso-8859-1": csLatin1, "iso8859_1": csLatin1, "iso_8859-1": csLatin1, "iso_8859_1": csLatin1,
	"iso8859-1": csLatin1, "8859_1": csLatin1, "latin1": csLatin1, "l1": csLatin1, "cp819": csLatin1,
	"ibm819": csLatin1, "csisolatin1": csLatin1, "iso-ir-100": csLatin1,
	"utf-16": csUTF16, "utf_16": csUTF16, "utf16": csUTF16, "unicode": csUTF16, "unicodebig": csUTF16,
	"utf-16be": csUTF16BE, "utf_16be": csUTF16BE, "x-utf-16be": csUTF16BE, "unicodebigunmarked": csUTF16BE,
	"iso-10646-ucs-2": csUTF16BE,
	"utf-16le":        csUTF16LE, "utf_16le": csUTF16LE, "x-utf-16le": csUTF16LE, "unicodelittleunmarked": csUTF16LE,
}

// NewStringConverter returns a StringConverter for a Java character set
// name: UTF-8, US-ASCII, ISO-8859-1, UTF-16, UTF-16BE or UTF-16LE (and
// Java's aliases of those, case-insensitive).
func NewStringConverter(encoding string) (*StringConverter, error) {
	cs, err := lookupCharset(EncodingConfig, encoding)
	if err != nil {
		return nil, err
	}
	return &StringConverter{enc: cs, dec: cs}, nil
}

func lookupCharset(setting, name string) (charset, error) {
	cs, ok := charsetNames[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return 0, config.Invalid(setting, name,
			"unsupported character set; supported: UTF-8, US-ASCII, ISO-8859-1, UTF-16, UTF-16BE, UTF-16LE")
	}
	return cs, nil
}

// newStringFromProps configures a StringConverter as Kafka's does: it hands
// its settings to a StringSerializer and a StringDeserializer with
// converter.encoding as their default, so a key converter's
// key.serializer.encoding and key.deserializer.encoding (value.* for a value
// or header converter) override it in their direction.
func newStringFromProps(usage string, props map[string]string) (*StringConverter, error) {
	vals, err := parseConfig(stringConfigDef, usage, props)
	if err != nil {
		return nil, err
	}
	c, err := NewStringConverter(vals.String(EncodingConfig))
	if err != nil {
		return nil, err
	}
	prefix := "value."
	if usage == usageKey {
		prefix = "key."
	}
	if name, ok := props[prefix+"serializer.encoding"]; ok {
		if c.enc, err = lookupCharset(prefix+"serializer.encoding", name); err != nil {
			return nil, err
		}
	}
	if name, ok := props[prefix+"deserializer.encoding"]; ok {
		if c.dec, err = lookupCharset(prefix+"deserializer.encoding", name); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// FromConnectData implements Converter. A string is encoded as it is; any
// other value is encoded in its Java toString form (see javaString); bytes
// are written unchanged.
func (c *StringConverter) FromConnectData(_ string, _ data.Headers, _ *data.Schema, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case data.Raw:
		return x, nil
	case []byte:
		return x, nil
	case string:
		return c.encode(x), nil
	}
	return c.encode(javaString(v)), nil
}

// ToConnectData implements Converter. UTF-8 input is returned byte for byte,
// invalid sequences included; the other character sets decode as Java does,
// replacing what they cannot map with U+FFFD.
func (c *StringConverter) ToConnectData(_ string, _ data.Headers, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return data.OptionalStringSchema, nil, nil
	}
	return data.OptionalStringSchema, c.decode(b), nil
}

// FromConnectHeader implements HeaderConverter.
func (c *StringConverter) FromConnectHeader(topic, _ string, s *data.Schema, v any) ([]byte, error) {
	return c.FromConnectData(topic, nil, s, v)
}

// ToConnectHeader implements HeaderConverter.
func (c *StringConverter) ToConnectHeader(topic, _ string, b []byte) (*data.Schema, any, error) {
	return c.ToConnectData(topic, nil, b)
}

func (c *StringConverter) encode(s string) []byte {
	switch c.enc {
	case csUTF8:
		return []byte(s)
	case csASCII, csLatin1:
		limit := rune(0x7f)
		if c.enc == csLatin1 {
			limit = 0xff
		}
		out := make([]byte, 0, len(s))
		for _, r := range s {
			if r > limit || r == utf8.RuneError {
				out = append(out, '?') // Java's replacement for unmappable characters
				continue
			}
			out = append(out, byte(r))
		}
		return out
	}
	units := utf16.Encode([]rune(s))
	out := make([]byte, 0, 2*len(units)+2)
	if c.enc == csUTF16 && len(units) > 0 {
		// Java's UTF-16 encoder writes its byte order mark before the
		// first character, so an empty string stays empty.
		out = append(out, 0xfe, 0xff)
	}
	for _, u := range units {
		if c.enc == csUTF16LE {
			out = binary.LittleEndian.AppendUint16(out, u)
		} else {
			out = binary.BigEndian.AppendUint16(out, u)
		}
	}
	return out
}

func (c *StringConverter) decode(b []byte) string {
	switch c.dec {
	case csUTF8:
		return string(b)
	case csASCII:
		var sb strings.Builder
		for _, x := range b {
			if x > 0x7f {
				sb.WriteRune(utf8.RuneError)
			} else {
				sb.WriteByte(x)
			}
		}
		return sb.String()
	case csLatin1:
		var sb strings.Builder
		for _, x := range b {
			sb.WriteRune(rune(x))
		}
		return sb.String()
	}
	little := c.dec == csUTF16LE
	if c.dec == csUTF16 && len(b) >= 2 {
		switch {
		case b[0] == 0xfe && b[1] == 0xff:
			b = b[2:]
		case b[0] == 0xff && b[1] == 0xfe:
			b, little = b[2:], true
		}
	}
	return decodeUTF16(b, little)
}

// decodeUTF16 decodes UTF-16 as Java's decoder does, replacing what is
// malformed with U+FFFD: a high surrogate not followed by a low one
// together with the unit after it, a lone low surrogate alone, and the
// bytes left at the end (an odd byte, or a high surrogate with fewer than
// two bytes after it) once.
func decodeUTF16(b []byte, little bool) string {
	unit := func(i int) rune {
		if little {
			return rune(binary.LittleEndian.Uint16(b[i:]))
		}
		return rune(binary.BigEndian.Uint16(b[i:]))
	}
	var sb strings.Builder
	sb.Grow(len(b))
	i := 0
	for i+1 < len(b) {
		u := unit(i)
		switch {
		case utf16.IsSurrogate(u) && u < 0xdc00: // high surrogate
			if i+3 >= len(b) {
				sb.WriteRune(utf8.RuneError) // too little left: the rest is one
				return sb.String()
			}
			if lo := unit(i + 2); lo >= 0xdc00 && lo <= 0xdfff {
				sb.WriteRune(utf16.DecodeRune(u, lo))
			} else {
				sb.WriteRune(utf8.RuneError)
			}
			i += 4
		case utf16.IsSurrogate(u): // lone low surrogate
			sb.WriteRune(utf8.RuneError)
			i += 2
		default:
			sb.WriteRune(u)
			i += 2
		}
	}
	if i < len(b) {
		sb.WriteRune(utf8.RuneError)
	}
	return sb.String()
}

package convert

import (
	"bytes"
	"encoding/hex"
	"math"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Kafka's serializers write numbers big-endian, floats as their IEEE 754
// bits; each converter reads them back with its optional schema.
func TestNumberConverters(t *testing.T) {
	cases := []struct {
		name   string
		conv   Converter
		value  any
		bytes  []byte
		schema *data.Schema
	}{
		{"short", ShortConverter{}, int16(-2), []byte{0xff, 0xfe}, data.OptionalInt16Schema},
		{"integer", IntegerConverter{}, int32(0x01020304), []byte{1, 2, 3, 4}, data.OptionalInt32Schema},
		{"long", LongConverter{}, int64(-1), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, data.OptionalInt64Schema},
		{"float", FloatConverter{}, float32(1.5), []byte{0x3f, 0xc0, 0, 0}, data.OptionalFloat32Schema},
		{"double", DoubleConverter{}, -2.0, []byte{0xc0, 0, 0, 0, 0, 0, 0, 0}, data.OptionalFloat64Schema},
		{"boolean true", BooleanConverter{}, true, []byte{1}, data.OptionalBooleanSchema},
		{"boolean false", BooleanConverter{}, false, []byte{0}, data.OptionalBooleanSchema},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.conv.FromConnectData("t", nil, nil, tc.value)
			if err != nil || !bytes.Equal(b, tc.bytes) {
				t.Fatalf("FromConnectData = %x, %v; want %x", b, err, tc.bytes)
			}
			s, v, err := tc.conv.ToConnectData("t", nil, b)
			if err != nil || s != tc.schema || v != tc.value {
				t.Fatalf("ToConnectData = %v %#v %v; want %v %#v", s, v, err, tc.schema, tc.value)
			}
			// null <-> null, keeping the schema on read
			if b, err := tc.conv.FromConnectData("t", nil, nil, nil); b != nil || err != nil {
				t.Fatalf("null value: %x %v", b, err)
			}
			if s, v, err := tc.conv.ToConnectData("t", nil, nil); s != tc.schema || v != nil || err != nil {
				t.Fatalf("null bytes: %v %v %v", s, v, err)
			}
			hc := tc.conv.(HeaderConverter)
			if hb, err := hc.FromConnectHeader("t", "h", nil, tc.value); err != nil || !bytes.Equal(hb, tc.bytes) {
				t.Fatalf("FromConnectHeader = %x, %v", hb, err)
			}
			if _, hv, err := hc.ToConnectHeader("t", "h", tc.bytes); err != nil || hv != tc.value {
				t.Fatalf("ToConnectHeader = %#v, %v", hv, err)
			}
		})
	}
	if _, v, _ := (DoubleConverter{}).ToConnectData("t", nil, []byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 0}); !math.IsNaN(v.(float64)) {
		t.Fatalf("NaN bits read as %v", v)
	}
}

func TestNumberConverterErrors(t *testing.T) {
	cases := []struct {
		name string
		err  error
		msg  string
	}{
		{"short wrong type", fromErr(ShortConverter{}, nil, int32(1)), "Failed to serialize to short (was int32)"},
		{"integer wrong type", fromErr(IntegerConverter{}, nil, "1"), "Failed to serialize to integer (was string)"},
		{"long wrong type", fromErr(LongConverter{}, nil, 1), "Failed to serialize to long (was int)"},
		{"float wrong type", fromErr(FloatConverter{}, nil, 1.0), "Failed to serialize to float (was float64)"},
		{"double wrong type", fromErr(DoubleConverter{}, nil, float32(1)), "Failed to serialize to double (was float32)"},
		{"short size", toErr(ShortConverter{}, []byte{1}), "Failed to deserialize short: Size of data received by ShortDeserializer is not 2"},
		{"integer size", toErr(IntegerConverter{}, []byte{}), "Failed to deserialize integer: Size of data received by IntegerDeserializer is not 4"},
		{"long size", toErr(LongConverter{}, []byte{1, 2, 3, 4}), "Failed to deserialize long: Size of data received by LongDeserializer is not 8"},
		{"float size", toErr(FloatConverter{}, []byte{1, 2}), "Failed to deserialize float: Size of data received by Deserializer is not 4"},
		{"double size", toErr(DoubleConverter{}, []byte{1}), "Failed to deserialize double: Size of data received by Deserializer is not 8"},
		{"boolean schema", fromErr(BooleanConverter{}, data.Int32Schema, true), "Invalid schema type for BooleanConverter: INT32"},
		{"boolean type", fromErr(BooleanConverter{}, nil, "true"), "BooleanConverter is not compatible with objects of type string"},
		{"boolean size", toErr(BooleanConverter{}, []byte{1, 0}), "Failed to deserialize boolean: Size of data received by BooleanDeserializer is not 1"},
		{"boolean byte", toErr(BooleanConverter{}, []byte{0xff}), "Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: -1"},
		{"bytearray schema", fromErr(ByteArrayConverter{}, data.StringSchema, []byte{1}), "Invalid schema type for ByteArrayConverter: STRING"},
		{"bytearray type", fromErr(ByteArrayConverter{}, nil, "abc"), "ByteArrayConverter is not compatible with objects of type string"},
		{"bytearray struct", fromErr(ByteArrayConverter{}, data.BytesSchema, section62Value()), "ByteArrayConverter is not compatible with objects of type *data.Struct"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustDataError(t, tc.err, tc.msg, "")
		})
	}
}

func fromErr(c Converter, s *data.Schema, v any) error {
	_, err := c.FromConnectData("t", nil, s, v)
	return err
}

func toErr(c Converter, b []byte) error {
	_, _, err := c.ToConnectData("t", nil, b)
	return err
}

func TestByteArrayConverter(t *testing.T) {
	c := ByteArrayConverter{}
	in := []byte{0, 1, 2}
	b, err := c.FromConnectData("t", nil, data.BytesSchema, in)
	if err != nil || &b[0] != &in[0] {
		t.Fatalf("bytes should pass through without a copy: %x %v", b, err)
	}
	raw := data.Raw{9, 8}
	if b, err := c.FromConnectData("t", nil, nil, raw); err != nil || !bytes.Equal(b, raw) {
		t.Fatalf("raw: %x %v", b, err)
	}
	s, v, err := c.ToConnectData("t", nil, in)
	if err != nil || s != data.OptionalBytesSchema || !bytes.Equal(v.([]byte), in) {
		t.Fatalf("ToConnectData = %v %v %v", s, v, err)
	}
	if s, v, err := c.ToConnectData("t", nil, nil); s != data.OptionalBytesSchema || v != nil || err != nil {
		t.Fatalf("null: %v %#v %v (want an untyped nil value)", s, v, err)
	}
	if b, err := c.FromConnectData("t", nil, data.OptionalBytesSchema, nil); b != nil || err != nil {
		t.Fatalf("null value: %x %v", b, err)
	}
}

func TestStringConverter(t *testing.T) {
	c, err := NewStringConverter("UTF-8")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		v    any
		want string
	}{
		{"héllo", "héllo"}, {int8(-1), "-1"}, {int64(1) << 40, "1099511627776"}, {float32(1), "1.0"},
		{1e20, "1.0E20"}, {math.NaN(), "NaN"}, {true, "true"}, {dec(-150, 2), "-1.50"},
		{[]any{int32(1), "a"}, "[1, a]"}, {map[string]any{"k": int32(1)}, "{k=1}"},
		{data.NewStruct(lineSchema).MustPut("sku", "S"), "Struct{sku=S}"},
		{[]byte("raw"), "raw"},
	}
	for _, tc := range cases {
		b, err := c.FromConnectData("t", nil, nil, tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("FromConnectData(%#v) = %q, %v; want %q", tc.v, b, err, tc.want)
		}
	}
	if b, err := c.FromConnectData("t", nil, data.StringSchema, nil); b != nil || err != nil {
		t.Fatalf("null: %q %v", b, err)
	}
	s, v, err := c.ToConnectData("t", nil, []byte("foo"))
	if err != nil || s != data.OptionalStringSchema || v != "foo" {
		t.Fatalf("ToConnectData = %v %#v %v", s, v, err)
	}
	if s, v, err := c.ToConnectData("t", nil, nil); s != data.OptionalStringSchema || v != nil || err != nil {
		t.Fatalf("null bytes: %v %#v %v", s, v, err)
	}
}

func TestStringConverterEncodings(t *testing.T) {
	cases := []struct {
		enc     string
		in      string
		bytes   []byte
		decoded string
	}{
		{"utf8", "é€", []byte("é€"), "é€"},
		{"US-ASCII", "aé€", []byte("a??"), "a??"},
		{"latin1", "aé€", []byte{'a', 0xe9, '?'}, "aé?"},
		{"UTF-16", "a€", []byte{0xfe, 0xff, 0, 'a', 0x20, 0xac}, "a€"},
		{"utf-16be", "a😀", []byte{0, 'a', 0xd8, 0x3d, 0xde, 0x00}, "a😀"},
		{"UTF-16LE", "a", []byte{'a', 0}, "a"},
	}
	for _, tc := range cases {
		c, err := NewStringConverter(tc.enc)
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.FromConnectData("t", nil, nil, tc.in)
		if err != nil || !bytes.Equal(b, tc.bytes) {
			t.Errorf("%s: encode %q = %x, want %x", tc.enc, tc.in, b, tc.bytes)
		}
		if _, v, _ := c.ToConnectData("t", nil, tc.bytes); v != tc.decoded {
			t.Errorf("%s: decode %x = %q, want %q", tc.enc, tc.bytes, v, tc.decoded)
		}
	}
	// An empty string is empty bytes, not a tombstone, in every character
	// set; Java's UTF-16 encoder writes no byte order mark for it.
	for _, enc := range []string{"UTF-8", "US-ASCII", "ISO-8859-1", "UTF-16", "UTF-16BE", "UTF-16LE"} {
		c, _ := NewStringConverter(enc)
		if b, err := c.FromConnectData("t", nil, nil, ""); err != nil || b == nil || len(b) != 0 {
			t.Errorf("%s: encode \"\" = %#v, %v; want empty bytes", enc, b, err)
		}
	}
	utf16, _ := NewStringConverter("UTF-16")
	if _, v, _ := utf16.ToConnectData("t", nil, []byte{0xff, 0xfe, 'a', 0}); v != "a" {
		t.Errorf("UTF-16 with a little-endian byte order mark read %q", v)
	}
	ascii, _ := NewStringConverter("ASCII")
	if _, v, _ := ascii.ToConnectData("t", nil, []byte{'a', 0x80}); v != "a\uFFFD" {
		t.Errorf("ASCII decode of 0x80 = %q", v)
	}
	if _, err := NewStringConverter("EBCDIC"); err == nil || err.Error() != "Invalid value EBCDIC for configuration converter.encoding: unsupported character set; supported: UTF-8, US-ASCII, ISO-8859-1, UTF-16, UTF-16BE, UTF-16LE" {
		t.Errorf("unknown encoding error = %v", err)
	}
}

// StringConverter configures Kafka's StringSerializer and StringDeserializer
// with its own settings, so their key./value.-prefixed encodings, when set,
// take precedence over converter.encoding (in its direction only, and only
// for the converter's own usage; a header converter counts as a value one).
func TestStringConverterSerializerEncodings(t *testing.T) {
	props := map[string]string{
		"converter.encoding":          "ISO-8859-1",
		"value.serializer.encoding":   "UTF-16BE",
		"key.deserializer.encoding":   "UTF-16LE",
		"serializer.encoding":         "US-ASCII", // overwritten by converter.encoding, as in Kafka
		"value.deserializer.encoding": "UTF-8",
	}
	value, err := New("StringConverter", false, props)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := value.FromConnectData("t", nil, nil, "é"); !bytes.Equal(b, []byte{0, 0xe9}) {
		t.Errorf("value converter wrote %x; want UTF-16BE 00e9", b)
	}
	if _, v, _ := value.ToConnectData("t", nil, []byte("é")); v != "é" {
		t.Errorf("value converter read %q; want UTF-8 é", v)
	}
	key, err := New("StringConverter", true, props)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := key.FromConnectData("t", nil, nil, "é"); !bytes.Equal(b, []byte{0xe9}) {
		t.Errorf("key converter wrote %x; want ISO-8859-1 e9", b)
	}
	if _, v, _ := key.ToConnectData("t", nil, []byte{0xe9, 0}); v != "é" {
		t.Errorf("key converter read %q; want UTF-16LE é", v)
	}
	header, err := NewHeader("StringConverter", props)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := header.FromConnectHeader("t", "h", nil, "é"); !bytes.Equal(b, []byte{0, 0xe9}) {
		t.Errorf("header converter wrote %x; want UTF-16BE 00e9", b)
	}
	if _, err := New("StringConverter", false, map[string]string{"value.serializer.encoding": "EBCDIC"}); err == nil {
		t.Error("an unknown value.serializer.encoding was accepted")
	}
	if _, err := New("StringConverter", true, map[string]string{"value.serializer.encoding": "EBCDIC"}); err != nil {
		t.Errorf("a key converter reads no value.serializer.encoding, yet failed: %v", err)
	}
}

// A data.Raw value is already serialized: every converter returns it as it
// is, whatever schema comes with it.
func TestConvertersPassRawThrough(t *testing.T) {
	raw := data.Raw{0xca, 0xfe}
	for _, c := range []Converter{ByteArrayConverter{}, BooleanConverter{}, ShortConverter{}, IntegerConverter{},
		LongConverter{}, FloatConverter{}, DoubleConverter{}, NewJSONConverter(DefaultJSONConfig())} {
		b, err := c.FromConnectData("t", nil, data.StringSchema, raw)
		if err != nil || !bytes.Equal(b, raw) {
			t.Errorf("%T: FromConnectData(raw) = %x, %v", c, b, err)
		}
	}
	sc, _ := NewStringConverter("UTF-16")
	if b, err := sc.FromConnectData("t", nil, data.Int32Schema, raw); err != nil || !bytes.Equal(b, raw) {
		t.Errorf("StringConverter: FromConnectData(raw) = %x, %v", b, err)
	}
}

// TestStringConverterMalformedUTF16 checks that malformed UTF-16 decodes as
// Java's decoder has it (expected strings from Kafka 4.4's StringConverter
// on Java 17): a high surrogate not followed by a low one is replaced along
// with the unit after it, a lone low surrogate alone, and bytes left over at
// the end (an odd byte, or a high surrogate with too little after it) by one
// U+FFFD in all.
func TestStringConverterMalformedUTF16(t *testing.T) {
	for _, tc := range []struct {
		enc, in, want string
	}{
		{"UTF-16", "d8fe41", "\uFFFD"},
		{"UTF-16", "d8d841d87f4100de", "\uFFFD\u7f41\u00de"},
		{"UTF-16", "d83dffd8ae", "\uFFFD\uFFFD"},
		{"UTF-16", "dcfe80d8fe7fd8d800", "\uFFFD\u80d8\ufe7f\uFFFD"},
		{"UTF-16", "80d8d8ff3d00d8", "\u80d8\uFFFD\uFFFD"},
		{"UTF-16", "fffeded8417f", "\uFFFD"},
		{"UTF-16BE", "d83dde00", "😀"},
		{"UTF-16LE", "7fd880", "\uFFFD"},
		{"UTF-16LE", "d8d8dcff7f", "\uFFFD\uFFFD"},
		{"UTF-16LE", "7ffe5bdc41d841", "\ufe7f\uFFFD\uFFFD"},
	} {
		c, err := NewStringConverter(tc.enc)
		if err != nil {
			t.Fatal(err)
		}
		in, _ := hex.DecodeString(tc.in)
		if _, v, _ := c.ToConnectData("t", nil, in); v != tc.want {
			t.Errorf("%s: decode %s = %+q, want %+q", tc.enc, tc.in, v, tc.want)
		}
	}
}

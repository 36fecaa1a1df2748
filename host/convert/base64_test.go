package convert

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
)

// Base64 in JSON reads as Jackson reads it for Kafka's JsonConverter:
// trimmed, white space between groups of four, groups after padding.
func TestDecodeBase64AsJackson(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []byte
	}{
		{"", []byte{}},
		{"AQI=", []byte{1, 2}},
		{" AQI= ", []byte{1, 2}},
		{"\tAQI=\n", []byte{1, 2}},
		{"AAAA AAAA", make([]byte, 6)},
		{"AAAA\r\n AAAA", make([]byte, 6)},
		{"AQ==AQ==", []byte{1, 1}},
		{"AQ== AQI=", []byte{1, 1, 2}},
		{"/w==", []byte{0xff}},
		{"+/+/", []byte{0xfb, 0xff, 0xbf}},
	} {
		got, err := decodeBase64(c.in)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%q: got %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"AQ", "expects padding"},
		{"AQI", "expects padding"},
		{"AQ=", "expects padding"},
		{"AQ\n==", "Illegal white space character (code 0xa) as character #3"},
		{"A QI=", "Illegal white space character (code 0x20) as character #2"},
		{"=AAA", "Unexpected padding character ('=') as character #1"},
		{"AQ=A", "Illegal character 'A' (code 0x41) in base64 content: expected padding character '='"},
		{"AQ-_", "Illegal character '-' (code 0x2d) in base64 content"},
		{"AQé=", "Illegal character (code 0xc3) in base64 content"},
	} {
		if got, err := decodeBase64(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, %v; want an error with %q", c.in, got, err, c.want)
		}
	}
	// Whatever Go's encoder writes reads back.
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 200 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		got, err := decodeBase64(base64.StdEncoding.EncodeToString(b))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%d bytes: got %v, %v", n, got, err)
		}
	}
}

// Through the converter: BYTES and a BASE64 Decimal read spaced base64.
func TestJSONReadsSpacedBase64(t *testing.T) {
	c := NewJSONConverter(DefaultJSONConfig())
	_, v, err := c.ToConnectData("t", nil, []byte(`{"schema":{"type":"bytes","optional":false},"payload":" AQI= "}`))
	if err != nil || !bytes.Equal(v.([]byte), []byte{1, 2}) {
		t.Fatalf("bytes: %v, %v", v, err)
	}
	_, _, err = c.ToConnectData("t", nil, []byte(`{"schema":{"type":"bytes","optional":false},"payload":"AQ\n=="}`))
	if err == nil || !strings.Contains(err.Error(), "Invalid bytes field") {
		t.Fatalf("a line feed inside a group: %v", err)
	}
	_, v, err = c.ToConnectData("t", nil, []byte(`{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":"AQ==AQ=="}`))
	if err != nil {
		t.Fatalf("decimal: %v", err)
	}
	if got := v.(interface{ String() string }).String(); got != "2.57" {
		t.Fatalf("decimal: %s", got)
	}
}

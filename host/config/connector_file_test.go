package config

import (
	"strings"
	"testing"
	"unicode/utf16"
)

// A create request whose config.name differs from its name is refused with
// a message about the file's two names; there is no URL in a file.
func TestParseConnectorConfigNameMismatchMessage(t *testing.T) {
	_, err := ParseConnectorConfig([]byte(`{"name":"b","config":{"name":"z","connector.class":"X"}}`))
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	if strings.Contains(msg, "URL") || !strings.Contains(msg, `"z"`) || !strings.Contains(msg, `"b"`) {
		t.Fatalf("got %q", msg)
	}
}

// Several values of the wrong kind: the error names the first in the file,
// the same one every time.
func TestParseConnectorConfigBadValueDeterministic(t *testing.T) {
	in := []byte(`{"name":"a","a1":null,"a2":{},"a3":[],"a4":null,"a5":{},"a6":[]}`)
	for range 20 {
		_, err := ParseConnectorConfig(in)
		if err == nil || !strings.Contains(err.Error(), `"a1"`) {
			t.Fatalf("want an error naming a1, got %v", err)
		}
	}
}

// A JSON file that is not an object is refused as JSON, not read as a
// .properties file whose first key is the whole text.
func TestParseConnectorConfigJSONNotObject(t *testing.T) {
	for _, in := range []string{`[{"name":"a"}]`, "\n  [\n]", `"name"`} {
		_, err := ParseConnectorConfig([]byte(in))
		if err == nil || !strings.Contains(err.Error(), "JSON object") {
			t.Errorf("%q: want an error asking for a JSON object, got %v", in, err)
		}
	}
}

// utf16le encodes s as UTF-16LE after a byte order mark, as Windows
// PowerShell 5 writes files with ">".
func utf16le(s string) []byte {
	b := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}

// Jackson detects UTF-16 JSON; a UTF-16 file with a byte order mark reads
// the same, JSON or .properties.
func TestParseConnectorConfigUTF16(t *testing.T) {
	for _, in := range []string{
		`{"name":"é","config":{"connector.class":"X"}}`,
		"name=é\nconnector.class=X\n",
	} {
		cf, err := ParseConnectorConfig(utf16le(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if cf.Name != "é" || cf.Config["connector.class"] != "X" || len(cf.Config) != 2 {
			t.Errorf("%q: got %+v", in, cf)
		}
	}
	// Big-endian too.
	le := utf16le(`{"name":"a","connector.class":"X"}`)
	be := make([]byte, len(le))
	for i := 0; i+1 < len(le); i += 2 {
		be[i], be[i+1] = le[i+1], le[i]
	}
	if cf, err := ParseConnectorConfig(be); err != nil || cf.Name != "a" {
		t.Fatalf("UTF-16BE: %+v %v", cf, err)
	}
}

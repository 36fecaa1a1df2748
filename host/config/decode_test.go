package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// JSON is UTF-8 (or UTF-16 after a byte order mark). A JSON connector file
// with bytes that are not UTF-8 (saved by a Latin-1 editor) is refused with
// its line and column: Go's decoder would silently turn them into U+FFFD,
// a value nobody wrote. The error does not quote the value, which may be a
// password.
func TestParseConnectorConfigJSONNotUTF8(t *testing.T) {
	in := "{\"name\":\"a\",\n \"connection.password\":\"s3cr\xe9t\"}"
	cf, err := ParseConnectorConfig([]byte(in))
	if err == nil {
		t.Fatalf("want an error, got %q", cf.Config)
	}
	msg := err.Error()
	if !strings.Contains(msg, "UTF-8") || !strings.Contains(msg, "line 2") || strings.Contains(msg, "s3cr") {
		t.Fatalf("got %q", msg)
	}
}

// A connector file without a name is refused with ErrNoName, whatever its
// shape, so callers need not match the text; ParseConnectorSettings reads
// it without one, decoded as ParseConnectorConfig decodes it.
func TestParseConnectorSettingsWithoutName(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		want map[string]string
	}{
		{"properties", []byte("connector.class=X\ntopic=t\n"), map[string]string{"connector.class": "X", "topic": "t"}},
		{"json", []byte(`{"connector.class":"X"}`), map[string]string{"connector.class": "X"}},
		{"request", []byte(`{"config":{"connector.class":"X"}}`), map[string]string{"connector.class": "X"}},
		{"utf-16 properties", utf16le("connector.class=X\nfile=/tmp/café\n"), map[string]string{"connector.class": "X", "file": "/tmp/café"}},
		{"utf-16 json", utf16le(`{"connector.class":"X","file":"/tmp/café"}`), map[string]string{"connector.class": "X", "file": "/tmp/café"}},
		{"latin-1 properties", []byte("connector.class=X\nfile=/tmp/caf\xe9\n"), map[string]string{"connector.class": "X", "file": "/tmp/café"}},
		{"bom properties", []byte("\xef\xbb\xbfconnector.class=X\n"), map[string]string{"connector.class": "X"}},
	} {
		if _, err := ParseConnectorConfig(c.in); !errors.Is(err, ErrNoName) {
			t.Errorf("%s: ParseConnectorConfig: want ErrNoName, got %v", c.name, err)
		}
		cf, err := ParseConnectorSettings(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if cf.Name != "" || !reflect.DeepEqual(cf.Config, c.want) {
			t.Errorf("%s: got %q %q, want %q", c.name, cf.Name, cf.Config, c.want)
		}
	}
	// A create request has the name it has: config.name stays in the
	// config, for the CLI to take (ParseConnectorConfig refuses it).
	cf, err := ParseConnectorSettings([]byte(`{"config":{"name":"n","connector.class":"X"}}`))
	if err != nil || cf.Name != "" || cf.Config["name"] != "n" {
		t.Fatalf("got %+v, %v", cf, err)
	}
	if cf, err := ParseConnectorSettings([]byte(`{"name":"n","config":{"connector.class":"X"}}`)); err != nil || cf.Name != "n" || cf.Config["name"] != "n" {
		t.Fatalf("got %+v, %v", cf, err)
	}
	// Other errors are not ErrNoName.
	if _, err := ParseConnectorConfig([]byte(`{"name":`)); err == nil || errors.Is(err, ErrNoName) {
		t.Fatalf("malformed JSON: got %v", err)
	}
}

// A file that is not valid UTF-8 throughout is read, all of it, as
// ISO-8859-1, byte for byte as Kafka reads every .properties file: a UTF-8
// character elsewhere in it reads as Kafka reads it too, not half one way
// and half the other.
func TestParsePropertiesMixedEncodingIsLatin1(t *testing.T) {
	got, err := ParseProperties(strings.NewReader("a=caf\xc3\xa9\nb=\xe9t\xe9\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "cafÃ©", "b": "été"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
}

// U+FEFF is a byte order mark only at the very start: elsewhere it is
// kept, as Kafka keeps it.
func TestParsePropertiesKeepsInnerFEFF(t *testing.T) {
	got, err := ParseProperties(strings.NewReader("\xef\xbb\xbfa=x\xef\xbb\xbfy\n\xef\xbb\xbfb=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "x\ufeffy", "\ufeffb": "1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
}

// The line of a JSON error counts the blank lines (and a byte order mark)
// before the object: it is the line the user's editor shows.
func TestParseConnectorConfigJSONErrorLineCountsLeadingLines(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"\n\n{\"name\":\"a\",\n\"x\":nul}", "line 4"},
		{"\xef\xbb\xbf\r\n{\"name\":\"a\",\n\"x\":nul}", "line 3"},
		{"\n\n{\"name\":\"a\",\n\"x\":\"caf\xe9\"}", "line 4"},
	} {
		_, err := ParseConnectorConfig([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: want an error at %s, got %v", c.in, c.want, err)
		}
	}
}

// White space that is not JSON's before the object (a no-break space
// pasted from a web page) is skipped, as it was before lines were counted.
func TestParseConnectorConfigJSONAfterUnicodeSpace(t *testing.T) {
	cf, err := ParseConnectorConfig([]byte("\u00a0\n{\"name\":\"a\"}"))
	if err != nil || cf.Name != "a" {
		t.Fatalf("got %+v, %v", cf, err)
	}
}

// DecodeJSONText reads what Jackson reads: UTF-16 and UTF-8 byte order
// marks; bytes that are not UTF-8 are an error naming the line.
func TestDecodeJSONText(t *testing.T) {
	for _, in := range [][]byte{[]byte(`{"a":"é"}`), []byte("\xef\xbb\xbf{\"a\":\"é\"}"), utf16le(`{"a":"é"}`)} {
		got, err := DecodeJSONText(in)
		if err != nil || string(got) != `{"a":"é"}` {
			t.Errorf("%q: got %q, %v", in, got, err)
		}
	}
	if _, err := DecodeJSONText([]byte("{\n\"a\":\"\xe9\"}")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Latin-1: got %v", err)
	}
}

// An empty CONNECT_* variable sets its property to the empty string over
// the file's value, as in Confluent's image, where an empty
// CONNECT_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM is how host name checks are
// turned off; only a variable that is not set leaves the file's value.
func TestEnvOverrideEmptyValueSetsEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.properties")
	if err := os.WriteFile(path, []byte("ssl.endpoint.identification.algorithm=https\nplugin.path=/p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	props, err := ReadWorkerProps(path, []string{"CONNECT_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM=", "CONNECT_PLUGIN_PATHS=/q"})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := props["ssl.endpoint.identification.algorithm"]; !ok || v != "" {
		t.Errorf("ssl.endpoint.identification.algorithm = %q, %v; want set and empty", v, ok)
	}
	if props["plugin.path"] != "/p" {
		t.Errorf("plugin.path = %q, want the file's /p", props["plugin.path"])
	}
}

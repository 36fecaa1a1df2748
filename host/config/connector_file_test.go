package config

import (
	"strings"
	"testing"
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

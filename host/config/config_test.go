package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	in := `# comment
! other comment
bootstrap.servers=localhost:9092
key.converter : org.apache.kafka.connect.json.JsonConverter
plugin.path /a,\
    /b
  spaced.key = value with spaces  
escaped\=key=v\tx\u0041
empty=
`
	got, err := ParseProperties(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"bootstrap.servers": "localhost:9092",
		"key.converter":     "org.apache.kafka.connect.json.JsonConverter",
		"plugin.path":       "/a,/b",
		"spaced.key":        "value with spaces  ",
		"escaped=key":       "v\txA",
		"empty":             "",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

func TestParsePropertiesErrorNamesLine(t *testing.T) {
	_, err := ParseProperties(strings.NewReader("a=1\nb=\\u12\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("want an error naming line 2, got %v", err)
	}
}

func TestEnvOverrides(t *testing.T) {
	got := EnvOverrides([]string{
		"CONNECT_BOOTSTRAP_SERVERS=k:9092",
		"CONNECT_PLUGIN__PATH=x",
		"CONNECT_A___B=y",
		"OTHER=z",
		"CONNECT_=ignored",
	}, EnvPrefix)
	want := map[string]string{"bootstrap.servers": "k:9092", "plugin_path": "x", "a-b": "y"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestParseConnectorConfig(t *testing.T) {
	cases := []struct {
		name, in  string
		wantName  string
		wantState string
		wantErr   string
	}{
		{name: "flat json", in: `{"name":"a","connector.class":"X"}`, wantName: "a"},
		{name: "create request", in: `{"name":"b","config":{"connector.class":"X"},"initial_state":"paused"}`, wantName: "b", wantState: "PAUSED"},
		{name: "properties", in: "name=c\nconnector.class=X\n", wantName: "c"},
		{name: "mismatched name", in: `{"name":"b","config":{"name":"z"}}`, wantErr: "doesn't match"},
		{name: "config name without a name", in: `{"config":{"name":"z","connector.class":"X"}}`, wantErr: `doesn't match the one in "name" (none)`},
		{name: "create request without names", in: `{"config":{"connector.class":"X"}}`, wantErr: `no "name"`},
		{name: "bad state", in: `{"name":"b","config":{},"initial_state":"GONE"}`, wantErr: "initial_state"},
		{name: "malformed json", in: "{\"name\":\n\"a\",,}", wantErr: "line 2"},
		{name: "no name", in: "connector.class=X\n", wantErr: "no \"name\""},
		{name: "object value", in: `{"name":"a","tasks.max":{}}`, wantErr: `"tasks.max" must be a string`},
		{name: "null value", in: `{"name":"a","config":{"tasks.max":null}}`, wantErr: "not null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cf, err := ParseConnectorConfig([]byte(c.in))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("want error containing %q, got %v", c.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cf.Name != c.wantName || cf.InitialState != c.wantState || cf.Config["name"] != c.wantName {
				t.Fatalf("got %+v", cf)
			}
		})
	}
}

// Java's Properties.load decodes \uXXXX into UTF-16 code units, so an
// escaped surrogate pair is one character outside the Basic Multilingual
// Plane.
func TestParsePropertiesSurrogatePair(t *testing.T) {
	got, err := ParseProperties(strings.NewReader(`smile\uD83D\uDE00=x\ud83d\ude01y` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"smile\U0001F600": "x\U0001F601y"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v want %#v", got, want)
	}
}

// java.util.Properties takes an empty key ("=v", ":v") and ends lines at a
// lone carriage return as well as at "\n" and "\r\n".
func TestParsePropertiesEmptyKeyAndCarriageReturns(t *testing.T) {
	got, err := ParseProperties(strings.NewReader("=v\ra=1\r\nb=2\\\r  3\rc : \n:w\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"": "w", "a": "1", "b": "23", "c": ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v want %#v", got, want)
	}
}

// Confluent's image turns only an underscore between two other characters
// into a dot; then each "___" becomes "-" and each "__" "_", left to right,
// so an underscore at either end or left over from a longer run stays.
func TestEnvNameToPropertyEdges(t *testing.T) {
	for in, want := range map[string]string{
		"BOOTSTRAP_SERVERS": "bootstrap.servers",
		"A__B":              "a_b",
		"A___B":             "a-b",
		"A____B":            "a-_b",
		"A_____B":           "a-_b",
		"A______B":          "a--b",
		"_X":                "_x",
		"X_":                "x_",
		"X__":               "x_",
		"A_B___C_D":         "a.b-c.d",
	} {
		if got := EnvNameToProperty(in); got != want {
			t.Errorf("EnvNameToProperty(%q) = %q, want %q", in, got, want)
		}
	}
}

// connect-standalone reads connector JSON with Jackson, which takes a
// number or a boolean where a string is wanted, as its text.
func TestParseConnectorConfigScalarsAsText(t *testing.T) {
	for _, in := range []string{
		`{"name":"a","tasks.max":2,"ratio":-1.50,"errors.log.enable":true,"x":false}`,
		`{"name":"a","config":{"tasks.max":2,"ratio":-1.50,"errors.log.enable":true,"x":false}}`,
	} {
		cf, err := ParseConnectorConfig([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		want := map[string]string{"name": "a", "tasks.max": "2", "ratio": "-1.50", "errors.log.enable": "true", "x": "false"}
		if !reflect.DeepEqual(cf.Config, want) {
			t.Fatalf("%s: got %v want %v", in, cf.Config, want)
		}
	}
}

// connect-standalone's Jackson skips a UTF-8 byte order mark before JSON.
func TestParseConnectorConfigJSONWithBOM(t *testing.T) {
	for _, in := range []string{
		"\xef\xbb\xbf{\"name\":\"a\",\"connector.class\":\"X\"}",
		"\xef\xbb\xbf \n{\"name\":\"a\",\"config\":{\"connector.class\":\"X\"}}",
	} {
		cf, err := ParseConnectorConfig([]byte(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if cf.Name != "a" || cf.Config["connector.class"] != "X" || len(cf.Config) != 2 {
			t.Fatalf("%q: got %+v", in, cf)
		}
	}
}

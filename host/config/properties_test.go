package config

import (
	"reflect"
	"strings"
	"testing"
)

// Kafka reads .properties files as ISO-8859-1; Sluice reads UTF-8 and
// falls back to ISO-8859-1 for a file that is not valid UTF-8, so a file
// written by a Latin-1 editor reads as Kafka reads it.
func TestParsePropertiesEncoding(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"utf-8", "k=caf\xc3\xa9 \xe2\x82\xac\n", "café €"},
		{"iso-8859-1", "k=caf\xe9 \xa3\n", "café £"},
	} {
		got, err := ParseProperties(strings.NewReader(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := map[string]string{"k": c.want}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %q want %q", c.name, got, want)
		}
	}
}

// A UTF-8 byte order mark (Windows editors write one) is not part of the
// first key: with it, bootstrap.servers would be silently unknown.
func TestParsePropertiesSkipsUTF8BOM(t *testing.T) {
	for _, in := range []string{
		"\xef\xbb\xbfname=x\nconnector.class=C\n",
		"\xef\xbb\xbf# comment\nname=x\nconnector.class=C\n",
	} {
		got, err := ParseProperties(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"name": "x", "connector.class": "C"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %q want %q", in, got, want)
		}
		cf, err := ParseConnectorConfig([]byte(in))
		if err != nil || cf.Name != "x" {
			t.Errorf("%q: connector file: got %+v, %v", in, cf, err)
		}
	}
}

// java.util.Properties is still at the start of a logical line after a
// line holding only a continuation backslash: a comment or a blank line
// that follows is skipped, not read as a key.
func TestParsePropertiesLoneContinuation(t *testing.T) {
	got, err := ParseProperties(strings.NewReader("\\\n# not a key\n  \\\n\na=1\n\\\n  ! nor this\nb=\\\n  2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "1", "b": "2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
}

// A malformed \uxxxx escape names the line and the key, and does not
// quote the value, which may be a password.
func TestParsePropertiesMalformedEscapeNamesKeyNotValue(t *testing.T) {
	_, err := ParseProperties(strings.NewReader("a=1\nsasl.password=s3cr\\u12zzet\n"))
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	for _, want := range []string{"line 2", "sasl.password", "Malformed \\uxxxx encoding"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	for _, secret := range []string{"s3cr", "zzet"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error %q quotes the value (%q)", msg, secret)
		}
	}
	_, err = ParseProperties(strings.NewReader("\n\nbad\\u00g1key=v\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "key") {
		t.Fatalf("want an error naming line 3 and the key, got %v", err)
	}
}

// Cases of java.util.Properties.load, one per line of its rules.
func TestParsePropertiesJavaCases(t *testing.T) {
	for _, c := range []struct {
		in   string
		want map[string]string
	}{
		{"key\\\\\n", map[string]string{"key\\": ""}},
		{"a\\ b=c\n", map[string]string{"a b": "c"}},
		{"a\\:b:c\n", map[string]string{"a:b": "c"}},
		{"a\\=b=c\n", map[string]string{"a=b": "c"}},
		{" \t\fkey   =   value\n", map[string]string{"key": "value"}},
		{"key:=v\n", map[string]string{"key": "=v"}},
		{"key =:v\n", map[string]string{"key": ":v"}},
		{"key\tv w\n", map[string]string{"key": "v w"}},
		{"a=\\u0041\\u00e9\\t\\n\\r\\f\\q\n", map[string]string{"a": "Aé\t\n\r\fq"}},
		{"a=x\\\n   y\\\\\n", map[string]string{"a": "xy\\"}},
		{"a=\\\n\nb\n", map[string]string{"a": "", "b": ""}},
		{"\\#not=comment\n", map[string]string{"#not": "comment"}},
		{"a=#v\n", map[string]string{"a": "#v"}},
		{"a=b\\\n# c\n", map[string]string{"a": "b# c"}},
		{"# c \\\na=1\n", map[string]string{"a": "1"}},
		{"\\\n a=1\n", map[string]string{"a": "1"}},
		{"a=1\r\nb=2\\\r\n  3\r\n", map[string]string{"a": "1", "b": "23"}},
		{"a=1  \n", map[string]string{"a": "1  "}},
		{"a\\\\\\\nb=c\n", map[string]string{"a\\b": "c"}},
		{"a=1\na=2\n", map[string]string{"a": "2"}},
		{"a=b\\", map[string]string{"a": "b"}},
		// An escaped character that is not ASCII is itself, whole.
		{"caf\\é=th\\é\\€\\😀\n", map[string]string{"café": "thé€😀"}},
		{"a=caf\xe9\\\xe9\n", map[string]string{"a": "caféé"}}, // ISO-8859-1
	} {
		got, err := ParseProperties(strings.NewReader(c.in))
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %q want %q", c.in, got, c.want)
		}
	}
}

package convert

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzJSONToConnectData feeds arbitrary bytes to JsonConverter with and
// without schemas. It must never panic, and whatever it reads must write
// back stably: writing the value read, reading that and writing again gives
// the same bytes. Seeds: testdata/fuzz/FuzzJSONToConnectData and every
// golden document.
func FuzzJSONToConnectData(f *testing.F) {
	goldens, _ := filepath.Glob("testdata/json/*.json")
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	convs := []*JSONConverter{
		newTestJSON(nil),
		newTestJSON(noSchemas),
		newTestJSON(func(c *JSONConfig) { c.DecimalFormat = DecimalNumeric; c.ReplaceNullWithDefault = false }),
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, c := range convs {
			s, v, err := c.ToConnectData("t", nil, in)
			if err != nil {
				continue
			}
			out, err := c.FromConnectData("t", nil, s, v)
			if err != nil {
				// Some values read cannot be written as they are (a NUMERIC
				// decimal with more digits than its schema's scale, for
				// BASE64); that is Kafka's behaviour too.
				continue
			}
			s2, v2, err := c.ToConnectData("t", nil, out)
			if err != nil {
				t.Fatalf("cannot read back what was written: %v\n in: %q\nout: %q", err, in, out)
			}
			out2, err := c.FromConnectData("t", nil, s2, v2)
			if err != nil {
				t.Fatalf("cannot write again: %v\nout: %q", err, out)
			}
			if !bytes.Equal(out, out2) {
				t.Fatalf("unstable round trip:\n in: %q\nout: %q\nout2: %q", in, out, out2)
			}
		}
	})
}

// FuzzSimpleHeader checks that header parsing never panics and that every
// parsed value can be written.
func FuzzSimpleHeader(f *testing.F) {
	for _, s := range []string{"", "null", "true", "42", "1.5", "1e400", "[1,2]", `{"a":[1,null]}`, "2024-01-15",
		"12:34:56.789Z", "[2024-01-15T12:34:56.789Z,1]", `["a\"",{1:2}]`, "[[[", "{,}", "{1:}"} {
		f.Add([]byte(s))
	}
	h := SimpleHeaderConverter{}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, v, err := h.ToConnectHeader("t", "h", in)
		if err != nil {
			t.Fatalf("parse never fails, got %v", err)
		}
		if _, err := h.FromConnectHeader("t", "h", s, v); err != nil {
			t.Fatalf("cannot write parsed %q (%v %#v): %v", in, s, v, err)
		}
	})
}

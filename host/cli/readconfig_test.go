package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"
)

// A config file without a name (given later with --name or -c) is read
// as ParseConnectorConfig reads one with a name: a byte order mark is not
// part of its first key, and a Latin-1 file reads as ISO-8859-1.
func TestReadConfigNamelessFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, body string
		want       map[string]string
	}{
		{"bom.properties", "\xef\xbb\xbfconnector.class=X\ntopic=t\n", map[string]string{"connector.class": "X", "topic": "t"}},
		{"bom.json", "\xef\xbb\xbf{\"connector.class\":\"X\"}", map[string]string{"connector.class": "X"}},
		{"latin1.properties", "connector.class=X\nfile=/tmp/caf\xe9\n", map[string]string{"connector.class": "X", "file": "/tmp/café"}},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		cf, err := readConfig([]string{p}, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cf.Name != "" || !reflect.DeepEqual(cf.Config, c.want) {
			t.Errorf("%s: got %q %q, want %q", c.name, cf.Name, cf.Config, c.want)
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

// Any file the worker reads, the CLI reads too, with or without a name:
// a UTF-16 file without a name (given with --name) included.
func TestReadConfigNamelessUTF16(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, body string
		want       map[string]string
	}{
		{"u16.properties", "connector.class=X\nfile=/tmp/café\n", map[string]string{"connector.class": "X", "file": "/tmp/café"}},
		{"u16.json", `{"connector.class":"X","file":"/tmp/café"}`, map[string]string{"connector.class": "X", "file": "/tmp/café"}},
		{"u16-request.json", `{"config":{"connector.class":"X"},"initial_state":"paused"}`, map[string]string{"connector.class": "X"}},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, utf16le(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		cf, err := readConfig([]string{p}, settings{"tasks.max=2"})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		c.want["tasks.max"] = "2"
		if cf.Name != "" || !reflect.DeepEqual(cf.Config, c.want) {
			t.Errorf("%s: got %q %q, want %q", c.name, cf.Name, cf.Config, c.want)
		}
	}
}

// A file whose error merely mentions a missing name in its text (a value
// that is not a string, in a file without a name) is reported as it is,
// not read again with a placeholder name.
func TestReadConfigReportsOtherErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(p, []byte(`{"connector.class":"X","a":null}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := readConfig([]string{p}, nil)
	if err == nil || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), p) {
		t.Fatalf("got %v", err)
	}
}

// --name and a different name in FILE or -c: the worker would answer that
// the name "doesn't match connector name in the URL", which there is none
// of on this command line. Refused before sending, naming both.
func TestCreateNameConflict(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.properties")
	if err := os.WriteFile(p, []byte("name=a\nconnector.class=X\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"connectors", "create", p, "--name", "b"},
		{"connectors", "create", "-c", "name=a", "-c", "connector.class=X", "--name", "b"},
	} {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), append(args, "--url", "http://127.0.0.1:1"), &out, &errOut)
		if code != ExitUsage || !strings.Contains(errOut.String(), `"a"`) || !strings.Contains(errOut.String(), `"b"`) || strings.Contains(errOut.String(), "URL") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut.String())
		}
	}
}

// An offsets file for "offsets alter" is JSON as a connector file is: a
// byte order mark (UTF-8, or UTF-16 as PowerShell 5 writes) is read, not
// refused as "not JSON".
func TestOffsetsAlterFileWithBOM(t *testing.T) {
	const body = `{"offsets":[{"partition":{"filename":"/in"},"offset":{"position":7}}]}`
	for name, raw := range map[string][]byte{
		"utf8bom.json": append([]byte("\xef\xbb\xbf"), body...),
		"utf16.json":   utf16le(body),
	} {
		w := newWorker(t)
		w.run(t, "connectors", "create", "-c", "name=src", "-c", "connector.class=FileStreamSource", "-c", "topic=t").ok(t)
		w.run(t, "connectors", "stop", "src").ok(t)
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		w.run(t, "connectors", "offsets", "src", "alter", p).ok(t)
		if got := w.run(t, "connectors", "offsets", "src").ok(t).stdout; !strings.Contains(got, `{"position":7}`) {
			t.Errorf("%s: offsets after alter:\n%s", name, got)
		}
	}
}

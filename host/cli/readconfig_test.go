package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
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

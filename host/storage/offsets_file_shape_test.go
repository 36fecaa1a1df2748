package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file that is JSON but not an offsets file (another tool's file, a
// hand-written map) is refused with an error that names the file and says
// what is expected; no offsets are silently dropped or reset.
func TestFileOffsetStoreUnknownShape(t *testing.T) {
	for _, tt := range []struct{ content, want string }{
		{`{}`, `no "version"`},
		{`null`, `no "version"`},
		{`{"offsets":[]}`, `no "version"`},
		{`[]`, `the file holds a JSON array, want an object`},
		{`{"version":2,"offsets":[]}`, `unsupported version 2`},
		{`{"version":1.5,"offsets":[]}`, `"version" holds a JSON number 1.5, want an integer`},
		{`{"version":"1","offsets":[]}`, `"version" holds a JSON string, want an integer`},
		{`{"version":1,"offsets":{}}`, `"offsets" holds a JSON object, want an array`},
		{`{"version":1,"offsets":[{"key":"[\"c\",{}]","value":{"position":1}}]}`, `"offsets.value" holds a JSON object, want a string`},
	} {
		path := filepath.Join(t.TempDir(), "offsets.json")
		if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenFileOffsetStore(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("open of %s: %v; want an error naming the file and %s", tt.content, err, tt.want)
		}
	}
}

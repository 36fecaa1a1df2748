package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Kafka Connect's own offsets file is a Java-serialized map. Pointing Sluice
// at one must say so, naming the file, rather than call it corrupt.
func TestFileOffsetStoreJavaSerializedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "connect.offsets")
	if err := os.WriteFile(path, []byte("\xac\xed\x00\x05sr\x00\x11java.util.HashMap"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := OpenFileOffsetStore(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "Java serialization") {
		t.Fatalf("open of a Kafka Connect offsets file: %v; want an error naming %s and Java serialization", err, path)
	}
}

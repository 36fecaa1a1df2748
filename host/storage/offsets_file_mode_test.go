package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Rewriting the offsets file keeps its permission bits: the temporary file
// that replaces it is created private (0600), and an operator who made the
// file readable to others (a backup or monitoring user) must not lose that
// on the first flush.
func TestFileOffsetStoreKeepsTheFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offsets.json")
	if err := os.WriteFile(path, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFileOffsetStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set(context.Background(), "c", []OffsetEntry{{Partition: []byte(`{"f":"x"}`), Offset: []byte(`{"position":1}`)}}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Fatalf("offsets file mode %v after a flush, want -rw-r-----", st.Mode().Perm())
	}
}

package storage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An offsets file reached through a symbolic link (say, to a persistent
// volume) is rewritten where the link points; the link stays a link.
func TestFileOffsetStoreWritesThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "volume", "offsets.json")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "offsets.json")
	// A relative link whose target does not exist yet: the first flush
	// creates it.
	if err := os.Symlink(filepath.Join("volume", "offsets.json"), link); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFileOffsetStore(link)
	if err != nil {
		t.Fatal(err)
	}
	for _, pos := range []string{"7", "8"} {
		if err := s.Set(context.Background(), "c", []OffsetEntry{{Partition: []byte(`{"f":"x"}`), Offset: []byte(`{"position":` + pos + `}`)}}); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("link after a flush: %v, %v; want it still a symbolic link", st, err)
		}
		raw, err := os.ReadFile(target)
		if err != nil || !strings.Contains(string(raw), `{\"position\":`+pos+`}`) {
			t.Fatalf("link target after a flush: %v\n%s", err, raw)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(target))
	if len(entries) != 1 {
		t.Fatalf("volume holds %d entries, want only the offsets file", len(entries))
	}
}

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

// A relative link that climbs out of a directory reached through another
// link ("../volume/offsets.json" in a linked directory) leads where the
// kernel takes it, from the linked directory's real parent; the flush must
// write there, where the next start reads.
func TestFileOffsetStoreRelativeLinkInALinkedDirectory(t *testing.T) {
	dir := t.TempDir()
	confDir := filepath.Join(dir, "deep", "conf")
	if err := os.MkdirAll(filepath.Join(dir, "deep", "volume"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(confDir, filepath.Join(dir, "conf")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "conf", "offsets.json")
	if err := os.Symlink(filepath.Join("..", "volume", "offsets.json"), link); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFileOffsetStore(link)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Set(ctx, "c", []OffsetEntry{{Partition: []byte(`{"f":"x"}`), Offset: []byte(`{"position":7}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "deep", "volume", "offsets.json")); err != nil {
		t.Fatalf("the link's target was not written: %v", err)
	}
	reopened, err := OpenFileOffsetStore(link)
	if err != nil {
		t.Fatal(err)
	}
	if all, _ := reopened.All(ctx, "c"); len(all) != 1 || string(all[0].Offset) != `{"position":7}` {
		t.Fatalf("offsets read again through the link: %q; want the one stored", all)
	}
}

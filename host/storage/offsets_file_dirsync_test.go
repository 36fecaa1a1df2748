package storage

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// The rename is durable only once the directory is synced. A sync that
// fails must fail the Set, naming the file, so the worker keeps the offsets
// and flushes them again rather than count them stored; the store's view
// stays what it was.
func TestFileOffsetStoreDirectorySyncFailureFailsSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offsets.json")
	s, err := OpenFileOffsetStore(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	entry := []OffsetEntry{{Partition: []byte(`{"f":"x"}`), Offset: []byte(`{"position":1}`)}}
	old := syncDir
	t.Cleanup(func() { syncDir = old })
	var synced []string
	syncDir = func(dir string) error {
		synced = append(synced, dir)
		return errors.New("input/output error")
	}
	err = s.Set(ctx, "c", entry)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "input/output error") {
		t.Fatalf("Set with a failing directory sync: %v; want an error naming %s", err, path)
	}
	if len(synced) != 1 || synced[0] != filepath.Dir(path) {
		t.Fatalf("directories synced: %v; want [%s]", synced, filepath.Dir(path))
	}
	if all, _ := s.All(ctx, "c"); len(all) != 0 {
		t.Fatalf("offsets after a failed Set: %q", all)
	}
	syncDir = old
	if err := s.Set(ctx, "c", entry); err != nil {
		t.Fatal(err)
	}
}

package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// Tasks of several connectors flush at once: every Set lands, none
// overwrites another's offsets with a stale copy of the file.
func TestFileOffsetStoreConcurrentSets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offsets.json")
	s, err := OpenFileOffsetStore(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const conns, rounds = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, conns*rounds)
	for c := range conns {
		wg.Go(func() {
			for r := range rounds {
				p := fmt.Appendf(nil, `{"filename":"f%d"}`, r%3)
				o := fmt.Appendf(nil, `{"position":%d}`, r)
				if err := s.Set(ctx, fmt.Sprintf("c%d", c), []OffsetEntry{{Partition: p, Offset: o}}); err != nil {
					errs <- err
				}
				if _, err := s.All(ctx, fmt.Sprintf("c%d", c)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	reloaded, err := OpenFileOffsetStore(path)
	if err != nil {
		t.Fatal(err)
	}
	for c := range conns {
		all, _ := reloaded.All(ctx, fmt.Sprintf("c%d", c))
		if len(all) != 3 {
			t.Fatalf("connector c%d: %d partitions after reload, want 3", c, len(all))
		}
		for i, e := range all {
			// The last round that wrote partition f<i>.
			last := rounds - 1 - (rounds-1-i+3)%3
			if want := fmt.Sprintf(`{"position":%d}`, last); string(e.Offset) != want {
				t.Errorf("c%d %s: %s, want %s", c, e.Partition, e.Offset, want)
			}
		}
	}
}

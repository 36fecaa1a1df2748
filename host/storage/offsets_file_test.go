package storage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCanonicalJSON(t *testing.T) {
	got, err := CanonicalJSON([]byte(` {"b": 1, "a": {"z": 12345678901234567890, "y": 1.50}} `))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{"y":1.50,"z":12345678901234567890},"b":1}`; string(got) != want {
		t.Fatalf("got %s want %s", got, want)
	}
	if _, err := CanonicalJSON([]byte(`{"a":1} x`)); err == nil {
		t.Fatal("trailing data accepted")
	}
}

func TestOffsetKeyRoundTrip(t *testing.T) {
	k := OffsetKey("my-conn", []byte(`{"filename":"/tmp/in.txt"}`))
	if want := `["my-conn",{"filename":"/tmp/in.txt"}]`; string(k) != want {
		t.Fatalf("key %s want %s", k, want)
	}
	c, p, err := ParseOffsetKey([]byte(`["my-conn", {"z":1,"filename":"/tmp/in.txt"}]`))
	if err != nil || c != "my-conn" || string(p) != `{"filename":"/tmp/in.txt","z":1}` {
		t.Fatalf("parse: %q %s %v", c, p, err)
	}
}

func TestFileOffsetStorePersistsAndReloads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "offsets.json")
	s, err := OpenFileOffsetStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "a", []OffsetEntry{
		{Partition: []byte(`{"f":"x"}`), Offset: []byte(`{"position":10}`)},
		{Partition: []byte(`{"f":"y"}`), Offset: []byte(`{"position":20}`)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "b", []OffsetEntry{{Partition: []byte(`{"f":"x"}`), Offset: []byte(`{"position":1}`)}}); err != nil {
		t.Fatal(err)
	}
	// Overwrite one and delete another.
	if err := s.Set(ctx, "a", []OffsetEntry{
		{Partition: []byte(`{ "f" : "x" }`), Offset: []byte(`{"position":11}`)},
		{Partition: []byte(`{"f":"y"}`), Offset: nil},
	}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), `"key": "[\"a\",{\"f\":\"x\"}]"`) {
		t.Fatalf("file does not hold Kafka Connect keys:\n%s", raw)
	}
	s2, err := OpenFileOffsetStore(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s2.Get(ctx, "a", [][]byte{[]byte(`{"f":"x"}`), []byte(`{"f":"y"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[`{"f":"x"}`]) != `{"position":11}` {
		t.Fatalf("reloaded a: %q", got)
	}
	all, _ := s2.All(ctx, "b")
	if len(all) != 1 || string(all[0].Offset) != `{"position":1}` {
		t.Fatalf("reloaded b: %q", all)
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the offsets file", len(entries))
	}
}

func TestFileOffsetStoreCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offsets.json")
	os.WriteFile(path, []byte("{not json"), 0o644)
	if _, err := OpenFileOffsetStore(path); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("want corrupt-file error, got %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.json")
	os.WriteFile(empty, nil, 0o644)
	if _, err := OpenFileOffsetStore(empty); err != nil {
		t.Fatalf("empty file: %v", err)
	}
}

// A Set that fails changes nothing: neither a bad entry after good ones nor a
// file that cannot be written may leave offsets in memory that the file does
// not hold (a GET would show them, a restart would lose them).
func TestFileOffsetStoreFailedSetChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "offsets.json")
	s, err := OpenFileOffsetStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "a", []OffsetEntry{{Partition: []byte(`{"f":"x"}`), Offset: []byte(`{"position":1}`)}}); err != nil {
		t.Fatal(err)
	}
	err = s.Set(ctx, "a", []OffsetEntry{
		{Partition: []byte(`{"f":"x"}`), Offset: []byte(`{"position":2}`)},
		{Partition: []byte(`{"f":"y"}`), Offset: []byte(`{"position":`)},
	})
	if err == nil {
		t.Fatal("bad offset accepted")
	}
	all, _ := s.All(ctx, "a")
	if len(all) != 1 || string(all[0].Offset) != `{"position":1}` {
		t.Fatalf("after a rejected Set: %q", all)
	}

	// The file's place becomes a non-empty directory: the rename fails.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(path, "blocker"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "a", []OffsetEntry{{Partition: []byte(`{"f":"x"}`), Offset: nil}}); err == nil {
		t.Fatal("Set succeeded although the file cannot be replaced")
	}
	if err := s.Set(ctx, "b", []OffsetEntry{{Partition: []byte(`{"f":"z"}`), Offset: []byte(`{"position":9}`)}}); err == nil {
		t.Fatal("Set succeeded although the file cannot be replaced")
	}
	all, _ = s.All(ctx, "a")
	if len(all) != 1 || string(all[0].Offset) != `{"position":1}` {
		t.Fatalf("a after failed writes: %q", all)
	}
	if all, _ := s.All(ctx, "b"); len(all) != 0 {
		t.Fatalf("b after a failed write: %q", all)
	}
}

// An offset value in the file that is not a JSON object is found at startup,
// with the file named, not later as a failing GET or a task that cannot start.
func TestFileOffsetStoreCorruptValueNamesFile(t *testing.T) {
	for _, v := range []string{`{\"position\":`, `42`, `[1]`} {
		path := filepath.Join(t.TempDir(), "offsets.json")
		body := `{"version":1,"offsets":[{"key":"[\"a\",{\"f\":\"x\"}]","value":"` + v + `"}]}`
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenFileOffsetStore(path)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("value %s: want an error naming %s, got %v", v, path, err)
		}
	}
	// A null value, which earlier versions stored for a task's null offset,
	// loads as the tombstone it stands for rather than stopping the worker.
	nullPath := filepath.Join(t.TempDir(), "offsets.json")
	nullBody := `{"version":1,"offsets":[{"key":"[\"a\",{\"f\":\"x\"}]","value":"null"},{"key":"[\"a\",{\"f\":\"y\"}]","value":"{\"p\":1}"}]}`
	if err := os.WriteFile(nullPath, []byte(nullBody), 0o644); err != nil {
		t.Fatal(err)
	}
	ns, err := OpenFileOffsetStore(nullPath)
	if err != nil {
		t.Fatalf("a null offset in the file: %v", err)
	}
	if all, _ := ns.All(context.Background(), "a"); len(all) != 1 || string(all[0].Partition) != `{"f":"y"}` {
		t.Fatalf("loaded %q, want only the partition with an offset", all)
	}
	// Values written by hand with other spacing or key order load canonical.
	path := filepath.Join(t.TempDir(), "offsets.json")
	body := `{"version":1,"offsets":[{"key":"[\"a\",{\"f\":\"x\"}]","value":"{ \"b\": 2, \"a\": 1 }"}]}`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFileOffsetStore(path)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := s.All(context.Background(), "a")
	if len(all) != 1 || string(all[0].Offset) != `{"a":1,"b":2}` {
		t.Fatalf("loaded %q", all)
	}
}

// A JSON null offset (what a task commits for a partition it resets) is a
// tombstone like a nil one: the partition's offset goes, nothing "null" is
// kept for GET to fail on or for the next start to reject.
func TestFileOffsetStoreJSONNullOffsetIsTombstone(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "offsets.json")
	s, err := OpenFileOffsetStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "a", []OffsetEntry{
		{Partition: []byte(`{"f":"x"}`), Offset: []byte(`{"position":1}`)},
		{Partition: []byte(`{"f":"y"}`), Offset: []byte(`{"position":2}`)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "a", []OffsetEntry{{Partition: []byte(`{"f":"x"}`), Offset: []byte(` null `)}}); err != nil {
		t.Fatal(err)
	}
	all, _ := s.All(ctx, "a")
	if len(all) != 1 || string(all[0].Partition) != `{"f":"y"}` {
		t.Fatalf("after a null offset: %q", all)
	}
	s2, err := OpenFileOffsetStore(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if all, _ := s2.All(ctx, "a"); len(all) != 1 || string(all[0].Offset) != `{"position":2}` {
		t.Fatalf("reloaded: %q", all)
	}
}

// A crash between creating the temporary file and the rename leaves the
// temporary file behind; the next start removes it (and only it) and loads
// the offsets file as it was.
func TestFileOffsetStoreRemovesTempFilesOfACrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "offsets.json")
	good := `{"version":1,"offsets":[{"key":"[\"a\",{\"f\":\"x\"}]","value":"{\"position\":1}"}]}`
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, ".offsets.json.tmp-12345")
	if err := os.WriteFile(stray, []byte(`{"version":1,"off`), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, ".other.json.tmp-1")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFileOffsetStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if all, _ := s.All(context.Background(), "a"); len(all) != 1 || string(all[0].Offset) != `{"position":1}` {
		t.Fatalf("loaded %q", all)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("temporary file of the crashed write still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another file's temporary file removed: %v", err)
	}
}

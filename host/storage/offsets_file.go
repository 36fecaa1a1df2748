package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// FileOffsetStore keeps source offsets in one local file
// (offset.storage.file.filename). Every Set rewrites the whole file
// atomically: a temporary file in the same directory, fsync, rename, fsync of
// the directory, so a crash leaves either the old or the new file.
//
// The file is JSON, {"version":1,"offsets":[{"key":K,"value":V},...]}, where
// K and V are the exact offsets-topic key and value strings of Kafka Connect.
// (Kafka Connect's own file is a Java-serialized HashMap of the same bytes;
// Sluice does not read or write Java serialization.)
type FileOffsetStore struct {
	path string

	mu   sync.Mutex
	data map[string]map[string][]byte // connector → canonical partition → offset
}

type offsetFile struct {
	Version *int              `json:"version"` // nil: not an offsets file
	Offsets []offsetFileEntry `json:"offsets"`
}

type offsetFileEntry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// offsetFileShape describes the file for errors about its content.
const offsetFileShape = `{"version":1,"offsets":[{"key":"<offsets topic key>","value":"<offset>"},...]}`

// jsonKindOf names the JSON value a Go type is read from.
func jsonKindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	}
	return t.String()
}

// javaStreamMagic opens every Java object stream, such as the offsets file
// of Kafka Connect's FileOffsetBackingStore.
var javaStreamMagic = []byte{0xac, 0xed}

// OpenFileOffsetStore loads the file; a missing or empty file means no offsets.
func OpenFileOffsetStore(path string) (*FileOffsetStore, error) {
	s := &FileOffsetStore{path: path, data: map[string]map[string][]byte{}}
	if target, err := resolveLinks(path); err == nil {
		removeStaleTemps(target)
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(raw) == 0) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read offsets file: %w", err)
	}
	if bytes.HasPrefix(raw, javaStreamMagic) {
		return nil, fmt.Errorf("offsets file %s is Kafka Connect's Java serialization, which Sluice does not read; give Sluice a new offset.storage.file.filename (its connectors then start without offsets) or move the offsets with PATCH /connectors/{name}/offsets", path)
	}
	var f offsetFile
	if err := json.Unmarshal(raw, &f); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			where := "the file"
			if te.Field != "" {
				where = strconv.Quote(te.Field)
			}
			return nil, fmt.Errorf("offsets file %s: %s holds a JSON %s, want %s (the file is %s)", path, where, te.Value, jsonKindOf(te.Type), offsetFileShape)
		}
		return nil, fmt.Errorf("offsets file %s is corrupt: %w", path, err)
	}
	if f.Version == nil {
		return nil, fmt.Errorf("offsets file %s: no \"version\"; it is not an offsets file written by Sluice (%s)", path, offsetFileShape)
	}
	if *f.Version != 1 {
		return nil, fmt.Errorf("offsets file %s: unsupported version %d", path, *f.Version)
	}
	for _, e := range f.Offsets {
		conn, part, err := ParseOffsetKey([]byte(e.Key))
		if err != nil {
			return nil, fmt.Errorf("offsets file %s: %w", path, err)
		}
		// Checked here so a bad value is reported once, naming the file,
		// rather than by every GET and task start that reads it.
		val, err := CanonicalJSON([]byte(e.Value))
		if err == nil && string(val) == "null" {
			// A tombstone, as Set treats it; earlier versions stored
			// a task's null offset as the value null.
			continue
		}
		if err != nil || len(val) == 0 || val[0] != '{' {
			return nil, fmt.Errorf("offsets file %s: offset of key %s is not a JSON object: %q", path, e.Key, e.Value)
		}
		if s.data[conn] == nil {
			s.data[conn] = map[string][]byte{}
		}
		s.data[conn][string(part)] = val
	}
	return s, nil
}

// removeStaleTemps deletes the temporary files of writes that a crash cut
// short before their rename: they hold nothing the offsets file lacks, and
// each crash would leave one more. Failing to list or remove them costs only
// disk space, so errors are ignored.
func removeStaleTemps(path string) {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// tempPrefix is the name prefix of path's temporary files.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// Get implements OffsetStore.
func (s *FileOffsetStore) Get(_ context.Context, connector string, partitions [][]byte) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for _, p := range partitions {
		cp, err := CanonicalJSON(p)
		if err != nil {
			return nil, fmt.Errorf("source partition: %w", err)
		}
		if v, ok := s.data[connector][string(cp)]; ok {
			out[string(cp)] = v
		}
	}
	return out, nil
}

// All implements OffsetStore.
func (s *FileOffsetStore) All(_ context.Context, connector string) ([]OffsetEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]OffsetEntry, 0, len(s.data[connector]))
	for p, v := range s.data[connector] {
		out = append(out, OffsetEntry{Partition: []byte(p), Offset: v})
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i].Partition) < string(out[j].Partition) })
	return out, nil
}

// Set implements OffsetStore: the entries are merged in and the file is
// rewritten before Set returns. The merge happens on a copy that replaces the
// connector's offsets only once the file holds it, so a failed Set leaves
// nothing behind that a read could see and a restart would lose.
func (s *FileOffsetStore) Set(_ context.Context, connector string, entries []OffsetEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := maps.Clone(s.data[connector])
	if m == nil {
		m = map[string][]byte{}
	}
	for _, e := range entries {
		cp, err := CanonicalJSON(e.Partition)
		if err != nil {
			return fmt.Errorf("store offset: source partition: %w", err)
		}
		if e.Offset == nil {
			delete(m, string(cp))
			continue
		}
		co, err := CanonicalJSON(e.Offset)
		if err != nil {
			return fmt.Errorf("store offset: source offset: %w", err)
		}
		// JSON null is a tombstone too (a task's committed null offset);
		// anything else but an object could not be loaded again.
		if string(co) == "null" {
			delete(m, string(cp))
			continue
		}
		if co[0] != '{' {
			return fmt.Errorf("store offset: source offset %.40s of partition %s: not a JSON object", co, cp)
		}
		m[string(cp)] = co
	}
	next := maps.Clone(s.data)
	next[connector] = m
	if err := writeOffsetFile(s.path, next); err != nil {
		return err
	}
	s.data = next
	return nil
}

// writeOffsetFile writes data, every connector's offsets, to path.
func writeOffsetFile(path string, data map[string]map[string][]byte) error {
	version := 1
	f := offsetFile{Version: &version, Offsets: []offsetFileEntry{}}
	for _, c := range slices.Sorted(maps.Keys(data)) {
		for _, p := range slices.Sorted(maps.Keys(data[c])) {
			f.Offsets = append(f.Offsets, offsetFileEntry{Key: string(OffsetKey(c, []byte(p))), Value: string(data[c][p])})
		}
	}
	raw, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return fmt.Errorf("encode offsets file: %w", err)
	}
	return writeFileAtomic(path, raw)
}

// writeFileAtomic replaces path with raw: temp file, fsync, rename, dir fsync.
// A path that is a symbolic link is written where the link points.
func writeFileAtomic(path string, raw []byte) error {
	target, err := resolveLinks(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, tempPrefix(target)+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	// The temporary file is created private; the file it replaces keeps
	// the permissions an operator gave it.
	if st, err := os.Stat(target); err == nil {
		if err := tmp.Chmod(st.Mode().Perm()); err != nil {
			tmp.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	// Without the directory synced the rename may not survive a crash,
	// so the offsets are not known to be stored. A file system that does
	// not support syncing a directory (EINVAL, ENOTSUP) is taken as it is:
	// nothing more can be done there.
	if err := syncDir(dir); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("sync directory of %s: %w", path, err)
	}
	return nil
}

// syncDir makes the entries of dir durable. A variable, so tests can make it
// fail.
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// resolveLinks follows symbolic links from path to the file they lead to,
// which need not exist yet, so that renaming a new file over it replaces
// that file and leaves the links (to a mounted volume, say) in place.
func resolveLinks(path string) (string, error) {
	for range 40 {
		st, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			// Relative to the directory the kernel finds the link
			// in: joining to a directory path that runs through
			// another link would take a ".." lexically, elsewhere.
			dir := filepath.Dir(path)
			if phys, err := filepath.EvalSymlinks(dir); err == nil {
				dir = phys
			}
			dest = filepath.Join(dir, dest)
		}
		path = dest
	}
	return "", fmt.Errorf("resolve %s: too many levels of symbolic links", path)
}

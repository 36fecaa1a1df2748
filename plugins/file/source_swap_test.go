package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A file truncated while the task follows it (copytruncate log rotation) is
// read again from its start: the lines written after the truncation arrive,
// with positions in the new content.
func TestSourceRereadsATruncatedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "first\nsecond\n")
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "t"})
	pollN(t, task, 2)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, "c\nd\n")
	expectLast(t, task, "after truncation", []string{"c", "d"}, []int64{2, 4})
}

// A file renamed away and replaced by a new one (log rotation) is read to
// its end, and then the new file is read from its start.
func TestSourceFollowsAReplacedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.txt")
	appendFile(t, path, "a\n")
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "t"})
	pollN(t, task, 1)
	appendFile(t, path, "b\n")
	if err := os.Rename(path, filepath.Join(dir, "in.txt.1")); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, "new\n")
	expectLast(t, task, "across the replacement", []string{"b", "new"}, []int64{4, 4})
}

// A file deleted while the task follows it is waited for, without an error,
// and read from its start once it is created again.
func TestSourceWaitsForADeletedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "old\n")
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "t"})
	pollN(t, task, 1)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if recs := poll(t, task, 150*time.Millisecond); len(recs) != 0 {
		t.Fatalf("records from a deleted file: %q", values(recs))
	}
	appendFile(t, path, "again\n")
	recs := pollN(t, task, 1)
	if recs[0].Value != "again" || recs[0].SourceOffset[positionField] != int64(6) {
		t.Fatalf("record %q at %v, want \"again\" at 6", recs[0].Value, recs[0].SourceOffset)
	}
}

// A stored position past the end of the file (truncated or replaced while
// the worker was down) is kept, as Kafka keeps it: the task reads nothing
// until the file grows past it.
func TestSourceStoredPositionPastTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "ab\n")
	tc := &fakeSourceContext{offsets: map[string]map[string]any{path: {positionField: int64(6)}}}
	task := startSource(t, tc, map[string]string{"file": path, "topic": "t"})
	if recs := poll(t, task, 150*time.Millisecond); len(recs) != 0 {
		t.Fatalf("records before the stored position: %q", values(recs))
	}
	appendFile(t, path, "cd\nef\n")
	recs := pollN(t, task, 1)
	if recs[0].Value != "ef" || recs[0].SourceOffset[positionField] != int64(9) {
		t.Fatalf("record %q at %v, want \"ef\" at 9", recs[0].Value, recs[0].SourceOffset)
	}
}

// Restarting from the offset of any record emitted, even one that ended a
// batch with more lines already read behind it, gives every later line
// exactly once: the stored position counts the bytes of emitted lines only.
func TestSourceRestartFromEveryBatchEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	var want []string
	for i := range 25 {
		line := strings.Repeat("é", i%4) + string(rune('a'+i))
		want = append(want, line)
		term := "\n"
		switch i % 3 {
		case 1:
			term = "\r\n"
		case 2:
			term = "\r"
		}
		appendFile(t, path, line+term)
	}
	appendFile(t, path, "partial")
	props := map[string]string{"file": path, "topic": "t", "batch.size": "4"}
	var got []string
	var stored map[string]any
	for len(got) < len(want) {
		tc := &fakeSourceContext{offsets: map[string]map[string]any{path: stored}}
		task := startSource(t, tc, props)
		recs := poll(t, task, 2*time.Second)
		if len(recs) == 0 || len(recs) > 4 {
			t.Fatalf("after %d lines: a batch of %d records, want 1 to 4", len(got), len(recs))
		}
		got = append(got, values(recs)...)
		stored = recs[len(recs)-1].SourceOffset
		if err := task.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if !equal(got, want) {
		t.Fatalf("lines across restarts:\n got %q\nwant %q", got, want)
	}
	tc := &fakeSourceContext{offsets: map[string]map[string]any{path: stored}}
	task := startSource(t, tc, props)
	if recs := poll(t, task, 150*time.Millisecond); len(recs) != 0 {
		t.Fatalf("records past the last line: %q", values(recs))
	}
	appendFile(t, path, " done\n")
	if recs := pollN(t, task, 1); recs[0].Value != "partial done" {
		t.Fatalf("completed last line %q", recs[0].Value)
	}
}

// Lines written to a file just before it is replaced, after the task found
// its end but before it saw the new file, are read before the new file.
func TestSourceReadsTheOldFileToItsEndAfterAReplacement(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.txt")
	appendFile(t, path, "a\n")
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "t"})
	pollN(t, task, 1)
	in := task.in.(*fileInput)
	in.beforeStat = func() {
		in.beforeStat = nil
		appendFile(t, path, "b\n")
		if err := os.Rename(path, filepath.Join(dir, "in.txt.1")); err != nil {
			t.Error(err)
		}
		appendFile(t, path, "new\n")
	}
	expectLast(t, task, "across the replacement", []string{"b", "new"}, []int64{4, 4})
}

// expectLast polls the records the test wants next (their values and the
// positions stored with them) and then finds nothing more.
func expectLast(t *testing.T, task *SourceTask, when string, want []string, at []int64) {
	t.Helper()
	recs := pollN(t, task, len(want))
	if got := values(recs); !equal(got, want) {
		t.Fatalf("%s: %q, want %q", when, got, want)
	}
	if got := positions(recs); !equal(got, at) {
		t.Fatalf("positions %v, want %v", got, at)
	}
	if recs := poll(t, task, 150*time.Millisecond); len(recs) != 0 {
		t.Fatalf("extra records %q", values(recs))
	}
}

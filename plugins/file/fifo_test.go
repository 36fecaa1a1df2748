//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// A named pipe as the source file (the way to feed a source live input, the
// plugin's standard input being /dev/null) is read as writers come and go:
// Poll keeps to its deadline while no writer has opened the pipe, a stored
// position (which a pipe cannot seek to) does not fail the task, and a
// writer that closes is followed by the next one.
func TestSourceReadsANamedPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	tc := &fakeSourceContext{offsets: map[string]map[string]any{path: {positionField: int64(10)}}}
	task := startSource(t, tc, map[string]string{"file": path, "topic": "t"})

	type result struct {
		recs []*data.SourceRecord
		err  error
	}
	pollAsync := func(wait time.Duration) chan result {
		ch := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			recs, err := task.Poll(ctx)
			ch <- result{recs, err}
		}()
		return ch
	}
	// Opening a pipe for reading blocks until a writer opens it; a Poll
	// stuck there could not be stopped.
	select {
	case r := <-pollAsync(150 * time.Millisecond):
		if r.err != nil || len(r.recs) != 0 {
			t.Fatalf("Poll of a pipe without a writer = %v, %v", r.recs, r.err)
		}
	case <-time.After(3 * time.Second):
		// Let the stuck Poll go before failing.
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			_ = w.Close()
		}
		t.Fatal("Poll of a pipe without a writer did not return at its deadline")
	}
	for _, lines := range []string{"a\nb\n", "c\n"} {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteString(lines); err != nil {
			t.Fatal(err)
		}
		want := len(lines) / 2
		recs := pollN(t, task, want)
		if got := values(recs); len(got) != want || got[0] != lines[:1] {
			t.Fatalf("from the pipe: %q, want the lines of %q", got, lines)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if recs := poll(t, task, 100*time.Millisecond); len(recs) != 0 {
			t.Fatalf("extra records %q", values(recs))
		}
	}
}

// A named pipe cannot go back to a stored position, so the connector cannot
// promise exactly-once delivery from it, as it cannot from standard input.
func TestSourceExactlyOnceUnsupportedForANamedPipe(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	c := &SourceConnector{}
	for _, tt := range []struct {
		file string
		want pluginsdk.ExactlyOnce
	}{
		{fifo, pluginsdk.ExactlyOnceUnsupported},
		{" " + fifo + " ", pluginsdk.ExactlyOnceUnsupported},
		{link, pluginsdk.ExactlyOnceUnsupported},
		// A file that does not exist yet is waited for and will be a
		// regular file most likely: Kafka's answer stands.
		{filepath.Join(dir, "later.txt"), pluginsdk.ExactlyOnceSupported},
		{dir, pluginsdk.ExactlyOnceSupported},
	} {
		got, err := c.ExactlyOnceSupport(context.Background(), map[string]string{"file": tt.file, "topic": "t"})
		if err != nil || got != tt.want {
			t.Errorf("ExactlyOnceSupport(file=%q) = %v, %v; want %v", tt.file, got, err, tt.want)
		}
	}
}

package plugin

import (
	"bytes"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// maxTailLine caps one remembered line; a crash report wants many short
// lines more than one huge one.
const maxTailLine = 1024

// tail remembers a plugin's last output lines for crash reports. Two
// goroutines feed it: go-plugin's stderr reader (raw fd 2: panics, fatal
// errors, anything written before go-plugin's Serve) and its stdio stream
// (os.Stdout/os.Stderr of a Go plugin after Serve).
type tail struct {
	mu    sync.Mutex
	lines []string // ring of len cap
	next  int
	full  bool
}

func newTail(n int) *tail { return &tail{lines: make([]string, n)} }

func (t *tail) add(line string) {
	if len(line) > maxTailLine {
		line = line[:maxTailLine] + "…"
	}
	t.mu.Lock()
	t.lines[t.next] = line
	t.next++
	if t.next == len(t.lines) {
		t.next = 0
		t.full = true
	}
	t.mu.Unlock()
}

// String returns the remembered lines, oldest first, one per line.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	if t.full {
		out = append(out, t.lines[t.next:]...)
	}
	out = append(out, t.lines[:t.next]...)
	return strings.Join(out, "\n")
}

// lineWriter splits a byte stream into lines. go-plugin writes raw stderr
// one line and then its "\n" in two calls, and the stdio stream in arbitrary
// chunks, so lines are assembled here. Each writer has one feeding goroutine;
// the mutex only makes that assumption unnecessary.
type lineWriter struct {
	mu      sync.Mutex
	partial []byte
	emit    func(line string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(w.partial) < 64<<10 {
				w.partial = append(w.partial, p...)
			}
			break
		}
		line := p[:i]
		if len(w.partial) > 0 {
			line = append(w.partial, line...)
			w.partial = w.partial[:0]
		}
		w.emit(strings.TrimSuffix(string(line), "\r"))
		p = p[i+1:]
	}
	return n, nil
}

// rawStderr receives go-plugin's copy of the plugin's raw stderr. go-plugin
// logs those lines itself (parsing hclog JSON and [LEVEL] prefixes), so they
// only go to the tail here.
func rawStderr(t *tail) *lineWriter {
	return &lineWriter{emit: t.add}
}

// syncedOutput receives a Go plugin's os.Stdout or os.Stderr after go-plugin's
// Serve, which go-plugin streams over gRPC and would otherwise discard. Lines
// go to the tail and to the plugin's logger: a [LEVEL] prefix picks the
// level, as go-plugin does for raw stderr; anything else is logged at info,
// since a plugin that prints meant to be seen.
func syncedOutput(t *tail, log hclog.Logger, stream string) *lineWriter {
	return &lineWriter{emit: func(line string) {
		t.add(line)
		level := hclog.Info
		for _, p := range []struct {
			prefix string
			level  hclog.Level
		}{
			{"[TRACE]", hclog.Trace}, {"[DEBUG]", hclog.Debug}, {"[INFO]", hclog.Info},
			{"[WARN]", hclog.Warn}, {"[ERROR]", hclog.Error},
		} {
			if strings.HasPrefix(line, p.prefix) {
				level = p.level
				line = strings.TrimSpace(line[len(p.prefix):])
				break
			}
		}
		log.Log(level, line, "stream", stream)
	}}
}

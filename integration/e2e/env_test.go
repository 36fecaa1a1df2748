//go:build integration

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/integration/itest"
	"github.com/sluice-io/sluice/integration/kafkatest"
)

// Class aliases of the bundled connectors and converters, as users write
// them.
const (
	fileSource      = "FileStreamSource"
	fileSink        = "FileStreamSink"
	jsonConverter   = "org.apache.kafka.connect.json.JsonConverter"
	stringConverter = "org.apache.kafka.connect.storage.StringConverter"
)

// Timeouts. Generous: two shared cores, a JVM broker and several plugin
// processes; a healthy run finishes each wait in a fraction of these.
const (
	startTimeout = 60 * time.Second // a worker process until /health is 200
	stateTimeout = 30 * time.Second // a connector or task reaching a state
	dataTimeout  = 2 * time.Minute  // lines reaching a sink file
	stopTimeout  = 60 * time.Second // a SIGTERMed worker exiting
)

// env is one test's world: the shared Kafka cluster, a client, a directory
// for files and a suffix that makes topic and connector names unique.
type env struct {
	t       *testing.T
	cluster *kafkatest.Cluster
	cl      *kgo.Client
	dir     string
	suffix  string
	// offsets is the worker's offsets file; restarts of a worker in the
	// same env reuse it, as a restarted connect-standalone would.
	offsets string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := kafkatest.Shared(t)
	dir := t.TempDir()
	return &env{
		t:       t,
		cluster: c,
		cl:      itest.NewClient(t, c.Bootstrap()),
		dir:     dir,
		suffix:  strconv.FormatInt(time.Now().UnixNano()%1e9, 36),
		offsets: filepath.Join(dir, "connect.offsets"),
	}
}

// name makes a topic or connector name unique to the test run.
func (e *env) name(base string) string { return base + "-" + e.suffix }

// path is a file in the test's directory.
func (e *env) path(name string) string { return filepath.Join(e.dir, name) }

// topic creates a 1-partition topic (so that order is defined) and returns
// its name.
func (e *env) topic(base string) string {
	e.t.Helper()
	name := e.name(base)
	itest.CreateTopic(e.t, e.cl, name, 1, nil)
	return name
}

// workerProps writes a standalone worker's properties: the shared Kafka,
// a REST listener on a port the kernel picks, the env's offsets file,
// flushes every second and StringConverter defaults; extra overrides.
func (e *env) workerProps(extra map[string]string) string {
	e.t.Helper()
	return e.workerPropsFile("worker.properties", extra)
}

// workerPropsFile is workerProps written to another file.
func (e *env) workerPropsFile(file string, extra map[string]string) string {
	e.t.Helper()
	props := map[string]string{
		"bootstrap.servers":                 e.cluster.BootstrapString(),
		"listeners":                         "http://127.0.0.1:0",
		"offset.storage.file.filename":      e.offsets,
		"offset.flush.interval.ms":          "1000",
		"task.shutdown.graceful.timeout.ms": "10000",
		"key.converter":                     stringConverter,
		"value.converter":                   stringConverter,
	}
	maps.Copy(props, extra)
	return e.writeProps(file, props)
}

// connector writes a connector's .properties file; cfg must hold "name".
func (e *env) connector(cfg map[string]string) string {
	e.t.Helper()
	name := cfg["name"]
	if name == "" {
		e.t.Fatal("connector config without a name")
	}
	return e.writeProps(name+".properties", cfg)
}

func (e *env) writeProps(file string, props map[string]string) string {
	e.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# written by %s\n", e.t.Name())
	for _, k := range slices.Sorted(maps.Keys(props)) {
		// Backslashes are escapes in .properties files; nothing else
		// written here needs escaping.
		fmt.Fprintf(&b, "%s=%s\n", k, strings.ReplaceAll(props[k], `\`, `\\`))
	}
	p := e.path(file)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// sourceConfig is a FileStreamSource reading in into topic.
func sourceConfig(name, in, topic string) map[string]string {
	return map[string]string{"name": name, "connector.class": fileSource, "tasks.max": "1", "file": in, "topic": topic}
}

// sinkConfig is a FileStreamSink writing topic into out.
func sinkConfig(name, out, topic string) map[string]string {
	return map[string]string{"name": name, "connector.class": fileSink, "tasks.max": "1", "file": out, "topics": topic}
}

// worker is a running `sluice standalone` process and its REST API.
type worker struct {
	*itest.Worker
	t   *testing.T
	url string
}

var restURL = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`)

// startWorker runs `sluice standalone props files...` and waits until its
// REST API reports the worker ready (every connector file created).
func (e *env) startWorker(props string, files ...string) *worker {
	e.t.Helper()
	w := &worker{Worker: itest.StartWorker(e.t, append([]string{"standalone", props}, files...)...), t: e.t}
	ctx, cancel := context.WithTimeout(e.t.Context(), startTimeout)
	defer cancel()
	if err := w.WaitForLog(ctx, "worker started"); err != nil {
		e.t.Fatal(err)
	}
	for _, line := range strings.Split(w.LogTail(1<<20), "\n") {
		if strings.Contains(line, "worker started") {
			w.url = restURL.FindString(line)
		}
	}
	if w.url == "" {
		e.t.Fatalf("no REST URL in the worker's start line:\n%s", w.LogTail(20))
	}
	for {
		code, body, err := w.call(ctx, http.MethodGet, "/health", nil)
		if err == nil && code == http.StatusOK {
			return w
		}
		if w.Exited() {
			e.t.Fatalf("worker exited during start-up:\n%s", w.LogTail(30))
		}
		if ctx.Err() != nil {
			e.t.Fatalf("worker not ready within %s: GET /health = %d %s (%v)", startTimeout, code, body, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// call makes one REST request; body, when not nil, is sent as JSON.
func (w *worker) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	return itest.REST(ctx, w.url, method, path, body)
}

// do makes a REST request and fails the test unless it answers want.
func (w *worker) do(method, path string, body any, want int) []byte {
	w.t.Helper()
	code, b, err := w.call(w.t.Context(), method, path, body)
	if err != nil {
		w.t.Fatal(err)
	}
	if code != want {
		w.t.Fatalf("%s %s = %d %s, want %d", method, path, code, b, want)
	}
	return b
}

// status is GET /connectors/{name}/status, as Kafka Connect shapes it.
type status struct {
	Name      string `json:"name"`
	Connector struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
		Trace    string `json:"trace"`
	} `json:"connector"`
	Tasks []taskStatus `json:"tasks"`
	Type  string       `json:"type"`
}

type taskStatus struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace"`
}

func (s status) task(id int) taskStatus {
	for _, t := range s.Tasks {
		if t.ID == id {
			return t
		}
	}
	return taskStatus{ID: id, State: "(absent)"}
}

func (s status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", s.Connector.State, s.Type)
	for _, t := range s.Tasks {
		fmt.Fprintf(&b, ", task %d %s", t.ID, t.State)
		if t.Trace != "" {
			fmt.Fprintf(&b, " (trace %q)", firstLine(t.Trace))
		}
	}
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func (w *worker) status(name string) status {
	w.t.Helper()
	var s status
	if err := json.Unmarshal(w.do(http.MethodGet, "/connectors/"+name+"/status", nil, http.StatusOK), &s); err != nil {
		w.t.Fatalf("status of %s: %v", name, err)
	}
	return s
}

// waitStatus polls the status of connector name until ok accepts it.
func (w *worker) waitStatus(name, what string, ok func(status) bool) status {
	w.t.Helper()
	deadline := time.Now().Add(stateTimeout)
	for {
		s := w.status(name)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("connector %s not %s within %s: %s", name, what, stateTimeout, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitState waits until the connector and its task 0..tasks-1 are all in
// state.
func (w *worker) waitState(name, state string, tasks int) status {
	w.t.Helper()
	return w.waitStatus(name, state, func(s status) bool {
		if s.Connector.State != state || len(s.Tasks) != tasks {
			return false
		}
		for _, t := range s.Tasks {
			if t.State != state {
				return false
			}
		}
		return true
	})
}

// stop SIGTERMs the worker and requires a clean exit (status 0).
func (w *worker) stop() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), stopTimeout)
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		w.t.Fatal(err)
	}
	if err := w.Wait(ctx); err != nil {
		w.t.Fatalf("worker exited with %v after SIGTERM:\n%s", err, w.LogTail(30))
	}
}

// plugin is a live plugin process started by a worker.
type plugin struct {
	pid       int
	connector string
	task      string // "" for a connector instance
}

// plugins lists the live children of pid that are plugin processes, known
// by the SLUICE_CONNECTOR and SLUICE_TASK variables the worker gives them.
func plugins(pid int) []plugin {
	var out []plugin
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil || parentOf(child) != pid {
			continue
		}
		envb, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		p := plugin{pid: child}
		found := false
		for _, kv := range bytes.Split(envb, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("SLUICE_CONNECTOR=")); ok {
				p.connector, found = string(v), true
			}
			if v, ok := bytes.CutPrefix(kv, []byte("SLUICE_TASK=")); ok {
				p.task = string(v)
			}
		}
		if found {
			out = append(out, p)
		}
	}
	return out
}

// parentOf returns the parent pid of a live (not zombie) process, or -1.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 || f[0] == "Z" {
		return -1
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return ppid
}

// taskPID waits for the plugin process of a task and returns its pid.
func (w *worker) taskPID(connector string, task int) int {
	w.t.Helper()
	deadline := time.Now().Add(stateTimeout)
	for {
		for _, p := range plugins(w.Pid()) {
			if p.connector == connector && p.task == strconv.Itoa(task) {
				return p.pid
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no plugin process for task %s-%d among the worker's children: %v", connector, task, plugins(w.Pid()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// requireGone fails the test if any of pids is still alive after a few
// seconds: plugins must not outlive their worker.
func requireGone(t *testing.T, ps []plugin) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range ps {
		for alive(p.pid) {
			if time.Now().After(deadline) {
				t.Fatalf("plugin process %d (%s task %q) outlived its worker", p.pid, p.connector, p.task)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// makeLines returns n distinct lines "<prefix>-<number> <words>" of varied
// length, numbered from first.
func makeLines(prefix string, first, n int) []string {
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo", "lima"}
	r := rand.New(rand.NewPCG(uint64(first), uint64(len(prefix))))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		fmt.Fprintf(&b, "%s-%07d", prefix, first+i)
		for range r.IntN(12) {
			b.WriteByte(' ')
			b.WriteString(words[r.IntN(len(words))])
		}
		out[i] = b.String()
	}
	return out
}

// appendLines appends lines to a file, creating it if needed.
func appendLines(t testing.TB, path string, lines []string) {
	t.Helper()
	if err := appendLinesErr(path, lines); err != nil {
		t.Fatal(err)
	}
}

func appendLinesErr(path string, lines []string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return f.Close()
}

// readLines returns the complete lines of a file (a missing file has none;
// a trailing line without its newline is still being written).
func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	} else {
		return nil
	}
	return strings.Split(string(b), "\n")
}

// waitLines waits until path holds at least n complete lines and returns
// them.
func waitLines(t testing.TB, path string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(dataTimeout)
	for {
		got := readLines(t, path)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d lines after %s, want %d", filepath.Base(path), len(got), dataTimeout, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitCovered waits until every wanted line is in path at least once
// (duplicates allowed) and returns the file's lines. A line torn by a
// SIGKILL (a prefix written, the rest lost) and followed by a redelivered
// line joins it; such a joined line counts for the line it ends with, and
// at most torn of them are accepted.
func waitCovered(t testing.TB, path string, want []string, torn int) []string {
	t.Helper()
	deadline := time.Now().Add(dataTimeout)
	for {
		got := readLines(t, path)
		missing, joined := uncovered(want, got)
		if len(missing) == 0 && joined <= torn {
			if joined > 0 {
				t.Logf("%s: %d line(s) torn by a kill and joined with the next", filepath.Base(path), joined)
			}
			return got
		}
		if time.Now().After(deadline) {
			first := ""
			if len(missing) > 0 {
				first = missing[0]
			}
			t.Fatalf("%s: %d of %d lines never arrived (first %q), %d torn lines (at most %d expected); file has %d lines",
				filepath.Base(path), len(missing), len(want), first, joined, torn, len(got))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// uncovered returns the wanted lines absent from got, and how many lines of
// got are a torn line joined with a wanted one.
func uncovered(want, got []string) (missing []string, joined int) {
	have := make(map[string]bool, len(got))
	for _, g := range got {
		have[g] = true
	}
	var rest []string
	for _, w := range want {
		if !have[w] {
			rest = append(rest, w)
		}
	}
	if len(rest) == 0 {
		return nil, 0
	}
	wanted := make(map[string]bool, len(want))
	for _, w := range want {
		wanted[w] = true
	}
	var odd []string
	for _, g := range got {
		if !wanted[g] {
			odd = append(odd, g)
		}
	}
	for _, w := range rest {
		found := false
		for _, o := range odd {
			if len(o) > len(w) && strings.HasSuffix(o, w) {
				found = true
				break
			}
		}
		if found {
			joined++
		} else {
			missing = append(missing, w)
		}
	}
	return missing, joined
}

// requireLines fails unless got equals want, line for line.
func requireLines(t testing.TB, what string, want, got []string) {
	t.Helper()
	if d := itest.Compare(want, got); !d.Equal() || !d.InOrder() {
		t.Fatalf("%s: %s", what, d)
	}
}

// endOffset is the end offset of partition 0 of topic.
func (e *env) endOffset(topic string) int64 {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 30*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(e.cl).ListEndOffsets(ctx, topic)
	if err != nil {
		e.t.Fatalf("end offsets of %s: %v", topic, err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil {
		e.t.Fatalf("end offset of %s: %v", topic, o.Err)
	}
	return o.Offset
}

// readTopic reads exactly n records of topic (and fails if fewer arrive).
func (e *env) readTopic(topic string, n int) []*kgo.Record {
	e.t.Helper()
	recs, err := itest.ReadTopic(e.t.Context(), e.cl, topic, n, dataTimeout)
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

// writer appends lines to files in the background, batch lines per file
// every tick, until stopped; it records what it wrote.
type writer struct {
	t       *testing.T
	files   []string
	prefix  []string
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	written map[string][]string // by file
	err     error
}

// startWriter begins appending to each of files (lines prefixed with the
// matching prefix). Stop it with stop; a cleanup stops it too.
func startWriter(t *testing.T, files, prefixes []string, batch int, tick time.Duration) *writer {
	ctx, cancel := context.WithCancel(context.Background())
	wr := &writer{t: t, files: files, prefix: prefixes, cancel: cancel, done: make(chan struct{}), written: map[string][]string{}}
	go func() {
		defer close(wr.done)
		tk := time.NewTicker(tick)
		defer tk.Stop()
		for n := 0; ; n += batch {
			for i, f := range files {
				lines := makeLines(prefixes[i], n, batch)
				if err := appendLinesErr(f, lines); err != nil {
					wr.mu.Lock()
					wr.err = err
					wr.mu.Unlock()
					return
				}
				wr.mu.Lock()
				wr.written[f] = append(wr.written[f], lines...)
				wr.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-wr.done })
	return wr
}

// stop ends the writer and returns what it wrote to each file.
func (wr *writer) stop() map[string][]string {
	wr.t.Helper()
	wr.cancel()
	<-wr.done
	if wr.err != nil {
		wr.t.Fatal(wr.err)
	}
	return wr.written
}

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/worker"
)

// Plugin directories, built once for the package: base holds the bundled
// file and datagen plugins and the counter-source example; extra the test
// plugin; hang a copy of the test plugin of its own, so that the process
// of a hung validation can be told apart from every other one.
var baseDir, extraDir, hangDir string

const (
	clusterID   = "sluice-e2e-cluster"
	testVersion = "9.9.9-e2e"
	testCommit  = "0123456789abcdef"
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	root, err := os.MkdirTemp("", "sluice-rest-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	baseDir, extraDir, hangDir = filepath.Join(root, "base"), filepath.Join(root, "extra"), filepath.Join(root, "hang")
	for _, d := range []string{baseDir, extraDir, hangDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	builds := []struct{ dir, out, pkg string }{
		{baseDir, "sluice-file", "../../../plugins/file"},
		{baseDir, "sluice-datagen", "../../../plugins/datagen"},
		{baseDir, "counter-source", "../../../examples/go/counter-source"},
		{extraDir, "testplugin", "./testplugin"},
		{hangDir, "hangplugin", "./testplugin"},
	}
	for _, b := range builds {
		cmd := exec.Command("go", "build", "-o", filepath.Join(b.dir, b.out), b.pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", b.pkg, err)
			return 1
		}
	}
	return m.Run()
}

// env is one worker with its own kfake cluster and directory.
type env struct {
	t       *testing.T
	cluster *kfake.Cluster
	seeds   []string
	w       *worker.Worker
	url     string // http://127.0.0.1:port
	dir     string
	logs    *syncBuffer
}

type workerOpts struct {
	props       map[string]string
	restTimeout time.Duration
	// notReady leaves the worker starting (GET /health 503).
	notReady bool
}

func startWorker(t *testing.T, o workerOpts) *env {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID(clusterID), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	dir := t.TempDir()
	props := map[string]string{
		"bootstrap.servers":                 strings.Join(cluster.ListenAddrs(), ","),
		"key.converter":                     "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                   "org.apache.kafka.connect.storage.StringConverter",
		"offset.storage.file.filename":      filepath.Join(dir, "offsets"),
		"offset.flush.interval.ms":          "200",
		"task.shutdown.graceful.timeout.ms": "3000",
		"listeners":                         "http://127.0.0.1:0",
		"plugin.path":                       baseDir + "," + extraDir,
		"consumer.fetch.max.wait.ms":        "100",
	}
	for k, v := range o.props {
		props[k] = v
	}
	cfg, err := config.ParseWorker(props, true)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	w, err := worker.NewStandalone(cfg, worker.Options{
		Version: testVersion, Commit: testCommit, LogOutput: logs, BundledPlugins: "-",
		PluginWatchInterval: -1, RESTTimeout: o.restTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if t.Failed() {
			t.Logf("worker log:\n%s", logs.String())
		}
	})
	if !o.notReady {
		w.MarkReady()
	}
	return &env{t: t, cluster: cluster, seeds: cluster.ListenAddrs(), w: w, url: w.RESTAddrs()[0], dir: dir, logs: logs}
}

// syncBuffer collects the worker's log from its goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// resp is one HTTP answer.
type resp struct {
	code   int
	header http.Header
	body   []byte
}

func (r resp) String() string { return fmt.Sprintf("%d %s", r.code, r.body) }

// errBody is Kafka Connect's error answer.
type errBody struct {
	ErrorCode *int    `json:"error_code"`
	Message   *string `json:"message"`
}

// request sends body as it is when it is a string or []byte, as JSON
// otherwise (nil: no body).
func (e *env) request(method, path string, body any) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer r.Body.Close()
	out, err := io.ReadAll(r.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read answer: %v", method, path, err)
	}
	// Every answer with a body is JSON, as Jersey's are.
	if ct := r.Header.Get("Content-Type"); len(out) > 0 && method != "HEAD" && !strings.HasPrefix(ct, "application/json") {
		e.t.Fatalf("%s %s: Content-Type %q for %s", method, path, ct, out)
	}
	return resp{code: r.StatusCode, header: r.Header, body: out}
}

// must sends a request that must answer want; it returns the body.
func (e *env) must(method, path string, body any, want int) []byte {
	e.t.Helper()
	r := e.request(method, path, body)
	if r.code != want {
		e.t.Fatalf("%s %s: %s, want %d", method, path, r, want)
	}
	return r.body
}

// mustJSON is must with the answer decoded into v.
func (e *env) mustJSON(method, path string, body any, want int, v any) {
	e.t.Helper()
	b := e.must(method, path, body, want)
	reflect.ValueOf(v).Elem().SetZero()
	if err := json.Unmarshal(b, v); err != nil {
		e.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
	}
}

// mustFail sends a request that must fail with status want and Kafka's error
// body; the message must contain every string of msgs. It returns the
// message.
func (e *env) mustFail(method, path string, body any, want int, msgs ...string) string {
	e.t.Helper()
	r := e.request(method, path, body)
	return checkError(e.t, method+" "+path, r, want, msgs...)
}

func checkError(t *testing.T, what string, r resp, want int, msgs ...string) string {
	t.Helper()
	if r.code != want {
		t.Fatalf("%s: %s, want %d", what, r, want)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: Content-Type %q", what, ct)
	}
	var eb errBody
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&eb); err != nil || eb.ErrorCode == nil || eb.Message == nil {
		t.Fatalf("%s: error body %s is not {error_code, message}: %v", what, r.body, err)
	}
	if *eb.ErrorCode != want {
		t.Fatalf("%s: error_code %d, want %d", what, *eb.ErrorCode, want)
	}
	for _, m := range msgs {
		if !strings.Contains(*eb.Message, m) {
			t.Fatalf("%s: message %q lacks %q", what, *eb.Message, m)
		}
	}
	return *eb.Message
}

// Status entities, strictly: an unknown field is a failure.
type connectorState struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

type taskState struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

type status struct {
	Name      string         `json:"name"`
	Connector connectorState `json:"connector"`
	Tasks     []taskState    `json:"tasks"`
	Type      string         `json:"type"`
}

// summary is "CONNECTOR:TASK,TASK".
func (s status) summary() string {
	parts := make([]string, len(s.Tasks))
	for i, t := range s.Tasks {
		parts[i] = t.State
	}
	return s.Connector.State + ":" + strings.Join(parts, ",")
}

type taskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

type connectorInfo struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []taskID          `json:"tasks"`
	Type   string            `json:"type"`
}

type taskInfo struct {
	ID     taskID            `json:"id"`
	Config map[string]string `json:"config"`
}

// strict decodes b into v, refusing unknown fields. v is zeroed first, so
// that a map reused from an earlier answer holds only this one's keys.
func strict(t *testing.T, b []byte, v any) {
	t.Helper()
	reflect.ValueOf(v).Elem().SetZero()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

func (e *env) status(name string) status {
	e.t.Helper()
	var st status
	strict(e.t, e.must("GET", "/connectors/"+name+"/status", nil, 200), &st)
	return st
}

// waitStatus waits until the connector's status summary is want.
func (e *env) waitStatus(name, want string) status {
	e.t.Helper()
	return e.waitStatusWithin(name, want, 30*time.Second)
}

func (e *env) waitStatusWithin(name, want string, d time.Duration) status {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := e.status(name)
		if st.summary() == want {
			return st
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("status of %s after %v: %s (%+v), want %s", name, d, st.summary(), st, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// workerID is the worker_id statuses must show: the REST listener's
// host:port.
func (e *env) workerID() string { return strings.TrimPrefix(e.url, "http://") }

// create POSTs a connector that must be created.
func (e *env) create(name string, cfg map[string]string) connectorInfo {
	e.t.Helper()
	var info connectorInfo
	strict(e.t, e.must("POST", "/connectors", map[string]any{"name": name, "config": cfg}, 201), &info)
	return info
}

// Data helpers.

// writeLines appends "<prefix>-<i>" for i in [from, to) to path.
func writeLines(t *testing.T, path, prefix string, from, to int) []string {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	var b strings.Builder
	for i := from; i < to; i++ {
		l := prefix + "-" + strconv.Itoa(i)
		lines = append(lines, l)
		b.WriteString(l + "\n")
	}
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
	return lines
}

// fileLines reads the complete lines of a file; a missing file has none.
func fileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	} else {
		return nil
	}
	return strings.Split(s, "\n")
}

func (e *env) kafka() *kgo.Client {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...))
	if err != nil {
		e.t.Fatal(err)
	}
	return cl
}

// endOffset sums the end offsets of a topic's partitions (0 when the topic
// does not exist).
func (e *env) endOffset(topic string) int64 {
	e.t.Helper()
	cl := e.kafka()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		e.t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			sum += o.Offset
		}
	})
	return sum
}

// topicValues reads every record value of a topic, in offset order per
// partition.
func (e *env) topicValues(topic string) []string {
	e.t.Helper()
	want := e.endOffset(topic)
	if want == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []string
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			e.t.Fatalf("read %d of %d records of %s", len(out), want, topic)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// waitTopic waits until the topic holds exactly want, in order.
func (e *env) waitTopic(topic string, want []string) {
	e.t.Helper()
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		if e.endOffset(topic) >= int64(len(want)) {
			got = e.topicValues(topic)
			if slices.Equal(got, want) {
				return
			}
			if len(got) > len(want) {
				break
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("topic %s holds %d records %s, want %d %s", topic, len(got), abbrev(got), len(want), abbrev(want))
}

// waitFile waits until the file holds exactly want.
func waitFile(t *testing.T, path string, want []string) {
	t.Helper()
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = fileLines(t, path)
		if slices.Equal(got, want) {
			return
		}
		if len(got) > len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("file %s holds %d lines %s, want %d %s", path, len(got), abbrev(got), len(want), abbrev(want))
}

func abbrev(s []string) string {
	if len(s) <= 6 {
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("[%s %s %s ... %s %s %s]", s[0], s[1], s[2], s[len(s)-3], s[len(s)-2], s[len(s)-1])
}

// Process helpers: plugin processes are this process's children, and the
// worker names the connector and task of each in its environment.

type proc struct {
	pid       int
	connector string
	task      string // "" for a connector (or validation) process
	worker    string // SLUICE_WORKER_ID: tests run workers side by side
	exe       string
}

func plugins() []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !childOfUs(pid) {
			continue
		}
		envb, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		p := proc{pid: pid}
		isPlugin := false
		for _, kv := range bytes.Split(envb, []byte{0}) {
			k, v, _ := strings.Cut(string(kv), "=")
			switch k {
			case "SLUICE_CONNECTOR":
				p.connector, isPlugin = v, true
			case "SLUICE_TASK":
				p.task = v
			case "SLUICE_WORKER_ID":
				p.worker = v
			}
		}
		if !isPlugin {
			continue
		}
		p.exe, _ = os.Readlink("/proc/" + e.Name() + "/exe")
		out = append(out, p)
	}
	return out
}

func childOfUs(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return false
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid == os.Getpid() && f[0] != "Z"
}

// pids maps "connector" and "task N" of a connector to their process ids.
func (e *env) pids(connector string) map[string]int {
	out := map[string]int{}
	for _, p := range plugins() {
		if p.connector != connector || p.worker != e.workerID() {
			continue
		}
		if p.task == "" {
			out["connector"] = p.pid
		} else {
			out["task "+p.task] = p.pid
		}
	}
	return out
}

// waitPids waits until the connector has exactly the named processes.
func (e *env) waitPids(connector string, names ...string) map[string]int {
	t := e.t
	t.Helper()
	var got map[string]int
	waitUntil(t, fmt.Sprintf("the processes of %s to be %v", connector, names), 15*time.Second, func() bool {
		got = e.pids(connector)
		if len(got) != len(names) {
			return false
		}
		for _, n := range names {
			if got[n] == 0 {
				return false
			}
		}
		return true
	})
	return got
}

func readEnviron(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return string(b), err
}

// killTask SIGKILLs the plugin process of a task.
func (e *env) killTask(connector string, task int) int {
	t := e.t
	t.Helper()
	pid := e.pids(connector)["task "+strconv.Itoa(task)]
	if pid == 0 {
		t.Fatalf("no process for task %s-%d", connector, task)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return pid
}

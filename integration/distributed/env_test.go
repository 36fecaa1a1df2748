//go:build integration

package distributed

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/integration/itest"
	"github.com/sluice-io/sluice/integration/kafkatest"
)

const (
	fileSink        = "FileStreamSink"
	fileSource      = "FileStreamSource"
	stringConverter = "org.apache.kafka.connect.storage.StringConverter"

	startTimeout = 60 * time.Second
	stateTimeout = 60 * time.Second
	dataTimeout  = 2 * time.Minute
	stopTimeout  = 60 * time.Second
)

// env is one test's Connect cluster: its group, internal topics and workers.
type env struct {
	t       *testing.T
	kafka   *kafkatest.Cluster
	cl      *kgo.Client
	dir     string
	suffix  string
	props   map[string]string
	workers []*worker
}

func newEnv(t *testing.T, extra map[string]string) *env {
	t.Helper()
	return newEnvOn(t, kafkatest.Shared(t), extra)
}

// newEnvOn is an env on the broker k, with the workers' default settings
// and extra over them.
func newEnvOn(t *testing.T, k *kafkatest.Cluster, extra map[string]string) *env {
	t.Helper()
	e := &env{
		t:      t,
		kafka:  k,
		cl:     itest.NewClient(t, k.Bootstrap()),
		dir:    t.TempDir(),
		suffix: strconv.FormatInt(time.Now().UnixNano()%1e9, 36),
	}
	root, err := itest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	e.props = map[string]string{
		"bootstrap.servers":                 k.BootstrapString(),
		"group.id":                          e.name("connect"),
		"config.storage.topic":              e.name("connect-configs"),
		"offset.storage.topic":              e.name("connect-offsets"),
		"status.storage.topic":              e.name("connect-status"),
		"config.storage.replication.factor": "1",
		"offset.storage.replication.factor": "1",
		"status.storage.replication.factor": "1",
		"offset.storage.partitions":         "5",
		"status.storage.partitions":         "3",
		"key.converter":                     stringConverter,
		"value.converter":                   stringConverter,
		"plugin.path":                       filepath.Join(root, "bin", "plugins"),
		"offset.flush.interval.ms":          "1000",
		"task.shutdown.graceful.timeout.ms": "5000",
		"session.timeout.ms":                "6000",
		"heartbeat.interval.ms":             "1000",
		"scheduled.rebalance.max.delay.ms":  "3000",
	}
	maps.Copy(e.props, extra)
	return e
}

func (e *env) name(base string) string { return base + "-" + e.suffix }

func (e *env) path(name string) string { return filepath.Join(e.dir, name) }

func (e *env) topic(base string, partitions int32) string {
	e.t.Helper()
	name := e.name(base)
	itest.CreateTopic(e.t, e.cl, name, partitions, nil)
	return name
}

// worker is one `sluice distributed` process.
type worker struct {
	*itest.Worker
	t     *testing.T
	port  int
	url   string
	props string
}

func freePort(t *testing.T) int {
	t.Helper()
	ports, err := kafkatest.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// addWorker starts a new worker on a fresh port and waits until it is
// healthy (it completed its first rebalance).
func (e *env) addWorker() *worker {
	e.t.Helper()
	port := freePort(e.t)
	props := maps.Clone(e.props)
	props["listeners"] = fmt.Sprintf("http://127.0.0.1:%d", port)
	file := e.path(fmt.Sprintf("worker-%d.properties", port))
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		e.t.Fatal(err)
	}
	w := &worker{t: e.t, port: port, url: fmt.Sprintf("http://127.0.0.1:%d", port), props: file}
	e.workers = append(e.workers, w)
	w.start()
	return w
}

func (w *worker) id() string { return strings.TrimPrefix(w.url, "http://") }

// start runs the worker's process (again) and waits until it is healthy.
func (w *worker) start() {
	w.t.Helper()
	w.Worker = itest.StartWorker(w.t, "distributed", w.props)
	w.waitHealthy()
}

func (w *worker) waitHealthy() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), startTimeout)
	defer cancel()
	for {
		code, body, err := w.call(ctx, http.MethodGet, "/health", nil)
		if err == nil && code == http.StatusOK {
			return
		}
		if w.Exited() {
			w.t.Fatalf("worker %s exited during start-up:\n%s", w.url, w.LogTail(40))
		}
		if ctx.Err() != nil {
			w.t.Fatalf("worker %s not ready within %s: GET /health = %d %s (%v)", w.url, startTimeout, code, body, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the worker with SIGTERM and waits for its exit.
func (w *worker) stop() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), stopTimeout)
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		w.t.Fatal(err)
	}
	if err := w.Wait(ctx); err != nil {
		w.t.Fatalf("worker %s exited with %v:\n%s", w.url, err, w.LogTail(30))
	}
}

func (w *worker) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	return itest.REST(ctx, w.url, method, path, body)
}

// do makes a request and requires the status; a 409 (rebalance under way)
// is retried for a while, as Kafka Connect's clients must.
func (w *worker) do(method, path string, body any, want int) []byte {
	w.t.Helper()
	deadline := time.Now().Add(stateTimeout)
	for {
		code, b, err := w.call(w.t.Context(), method, path, body)
		if err != nil {
			w.t.Fatal(err)
		}
		if code == http.StatusConflict && want != http.StatusConflict && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if code != want {
			w.t.Fatalf("%s %s%s = %d %s, want %d", method, w.url, path, code, b, want)
		}
		return b
	}
}

func (w *worker) create(cfg map[string]string) {
	w.t.Helper()
	w.do(http.MethodPost, "/connectors", map[string]any{"name": cfg["name"], "config": cfg}, http.StatusCreated)
}

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

func (s status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s@%s", s.Connector.State, s.Connector.WorkerID)
	for _, t := range s.Tasks {
		fmt.Fprintf(&b, ", task %d %s@%s", t.ID, t.State, t.WorkerID)
		if t.Trace != "" {
			fmt.Fprintf(&b, " (%q)", strings.SplitN(t.Trace, "\n", 2)[0])
		}
	}
	return b.String()
}

// status reads a connector's status; ok is false on 404.
func (w *worker) status(name string) (status, bool) {
	w.t.Helper()
	code, b, err := w.call(w.t.Context(), http.MethodGet, "/connectors/"+name+"/status", nil)
	if err != nil {
		w.t.Fatal(err)
	}
	if code == http.StatusNotFound {
		return status{}, false
	}
	if code != http.StatusOK {
		w.t.Fatalf("GET %s/connectors/%s/status = %d %s", w.url, name, code, b)
	}
	var s status
	if err := json.Unmarshal(b, &s); err != nil {
		w.t.Fatal(err)
	}
	return s, true
}

// waitStatus polls until ok holds for the status as this worker sees it.
func (w *worker) waitStatus(name, what string, timeout time.Duration, ok func(status) bool) status {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s, found := w.status(name)
		if found && ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("connector %s not %s on %s within %s: %s", name, what, w.url, timeout, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// allIn is a status check: the connector and its tasks tasks are all in
// state.
func allIn(state string, tasks int) func(status) bool {
	return func(s status) bool {
		if s.Connector.State != state || len(s.Tasks) != tasks {
			return false
		}
		for _, t := range s.Tasks {
			if t.State != state {
				return false
			}
		}
		return true
	}
}

func sinkConfig(name, out, topic string, tasks int) map[string]string {
	return map[string]string{
		"name": name, "connector.class": fileSink, "tasks.max": strconv.Itoa(tasks), "file": out, "topics": topic,
		// A SIGKILLed task's consumer leaves its group after this, not
		// after the 45 s default.
		"consumer.override.session.timeout.ms":    "6000",
		"consumer.override.heartbeat.interval.ms": "1000",
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// waitAll waits until the file holds every line of want (in any order,
// duplicates allowed) and returns its lines.
func waitAll(t *testing.T, path string, want []string, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := readLines(t, path)
		missing := missingLines(want, got)
		if len(missing) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d lines missing after %s (first %q); %d lines read", path, len(missing), len(want), timeout, missing[0], len(got))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func missingLines(want, got []string) []string {
	have := make(map[string]bool, len(got))
	for _, g := range got {
		have[g] = true
	}
	var out []string
	for _, w := range want {
		if !have[w] {
			out = append(out, w)
		}
	}
	return out
}

// endOffsets are the topic's end offsets by partition.
func endOffsets(ctx context.Context, e *env, topic string) (map[int32]int64, error) {
	offs, err := kadm.NewClient(e.cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	offs.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

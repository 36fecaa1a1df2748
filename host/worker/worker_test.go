package worker_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// pluginDir holds the example plugins, built once for the package.
var pluginDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-worker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginDir = dir
	for _, ex := range []string{"../../examples/go/counter-source", "../../examples/go/log-sink", "./testdata/flaky"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, filepath.Base(ex)), ex)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", ex, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type env struct {
	t       *testing.T
	cluster *kfake.Cluster
	w       *worker.Worker
	url     string
	dir     string
}

func startWorker(t *testing.T, extra map[string]string) *env {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "counts"), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	dir := t.TempDir()
	props := map[string]string{
		"bootstrap.servers":                 strings.Join(cluster.ListenAddrs(), ","),
		"key.converter":                     "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                   "org.apache.kafka.connect.json.JsonConverter",
		"offset.storage.file.filename":      filepath.Join(dir, "offsets.json"),
		"offset.flush.interval.ms":          "200",
		"task.shutdown.graceful.timeout.ms": "3000",
		"listeners":                         "http://127.0.0.1:0",
		"plugin.path":                       pluginDir,
		"consumer.fetch.max.wait.ms":        "100",
	}
	for k, v := range extra {
		props[k] = v
	}
	cfg, err := config.ParseWorker(props, true)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	lw := &syncWriter{w: &logs}
	w, err := worker.NewStandalone(cfg, worker.Options{LogOutput: lw, BundledPlugins: "-", PluginWatchInterval: -1})
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
			lw.mu.Lock()
			t.Logf("worker log:\n%s", logs.String())
			lw.mu.Unlock()
		}
	})
	return &env{t: t, cluster: cluster, w: w, url: w.RESTAddrs()[0], dir: dir}
}

// syncWriter serializes writes from the worker's goroutines; the test reads
// the buffer only after shutdown.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (e *env) do(method, path string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (e *env) mustDo(method, path string, body any, want int) []byte {
	e.t.Helper()
	code, out := e.do(method, path, body)
	if code != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, want, out)
	}
	return out
}

type status struct {
	Connector struct {
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"connector"`
	Tasks []struct {
		ID    int    `json:"id"`
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"tasks"`
}

func (e *env) status(name string) status {
	e.t.Helper()
	var st status
	if err := json.Unmarshal(e.mustDo("GET", "/connectors/"+name+"/status", nil, 200), &st); err != nil {
		e.t.Fatal(err)
	}
	return st
}

func (s status) String() string {
	parts := make([]string, len(s.Tasks))
	for i, t := range s.Tasks {
		parts[i] = t.State
	}
	return s.Connector.State + ":" + strings.Join(parts, ",")
}

func (e *env) waitStatus(name, want string) status {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := e.status(name)
		if st.String() == want {
			return st
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("status of %s: %s (%+v), want %s", name, st, st, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type counterRec struct {
	Task int   `json:"task"`
	Seq  int64 `json:"seq"`
}

// readLines parses the sink's output file.
func readLines(t *testing.T, path string) []counterRec {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []counterRec
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r counterRec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			// A line being written; the next read sees it whole.
			continue
		}
		out = append(out, r)
	}
	return out
}

// admin is an admin client of the brokers at seeds and a context for one
// call of it; done closes both (callers poll with it, so it must not wait
// for the test's end).
func admin(t *testing.T, seeds []string) (adm *kadm.Client, ctx context.Context, done func()) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	return kadm.NewClient(cl), ctx, func() { cancel(); cl.Close() }
}

func endOffsets(t *testing.T, seeds []string, topic string) int64 {
	t.Helper()
	adm, ctx, done := admin(t, seeds)
	defer done()
	offs, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	return sum
}

// topicRecords reads every record of the topic.
func topicRecords(t *testing.T, seeds []string, topic string, want int64) []counterRec {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []counterRec
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(out), want, topic)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var env struct {
				Payload counterRec `json:"payload"`
			}
			if err := json.Unmarshal(r.Value, &env); err != nil {
				t.Fatalf("record %s: %v", r.Value, err)
			}
			out = append(out, env.Payload)
		})
	}
	return out
}

// pluginPID finds the live plugin process of a task among this process's
// children, by the variables the worker gives it.
func pluginPID(t *testing.T, connector string, task int) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	want := [][]byte{[]byte("SLUICE_CONNECTOR=" + connector + "\x00"), []byte("SLUICE_TASK=" + strconv.Itoa(task) + "\x00")}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !childOfUs(pid) {
			continue
		}
		envb, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if bytes.Contains(envb, want[0]) && bytes.Contains(envb, want[1]) {
			return pid
		}
	}
	return 0
}

func childOfUs(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ppid ...: comm may hold spaces, so cut after ')'.
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

// pluginChildren counts this process's live children that are plugins.
func pluginChildren() int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !childOfUs(pid) {
			continue
		}
		envb, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(envb, []byte("SLUICE_CONNECTOR=")) {
			n++
		}
	}
	return n
}

// TestStandaloneEndToEnd runs real plugin processes on an in-process Kafka:
// data end to end, pause and resume, a SIGKILLed task plugin restarted
// without losing records, offsets, and validation answers.
func TestStandaloneEndToEnd(t *testing.T) {
	e := startWorker(t, nil)
	seeds := e.cluster.ListenAddrs()
	out := filepath.Join(e.dir, "out.txt")

	code, body := e.do("GET", "/health", nil)
	if code != 503 || !strings.Contains(string(body), "starting") {
		t.Fatalf("health before ready: %d %s", code, body)
	}
	e.w.MarkReady()
	e.mustDo("GET", "/health", nil, 200)

	// Plugins: the example connectors (and the test plugin's), sinks
	// first, and with connectorsOnly=false the converters, whose settings
	// are listed too.
	var plugins []struct{ Class, Type string }
	_ = json.Unmarshal(e.mustDo("GET", "/connector-plugins?connectorsOnly=false", nil, 200), &plugins)
	if len(plugins) < 6 || plugins[0].Class != "io.sluice.examples.LogSink" || plugins[0].Type != "sink" || plugins[1].Type != "sink" ||
		plugins[2].Class != "io.sluice.examples.CounterSource" || plugins[2].Type != "source" {
		t.Fatalf("plugins %+v", plugins)
	}
	if !strings.Contains(string(e.mustDo("GET", "/connector-plugins/JsonConverter/config", nil, 200)), `"schemas.enable"`) {
		t.Fatal("JsonConverter config lacks schemas.enable")
	}

	// Validation answers.
	var vi struct {
		ErrorCount int `json:"error_count"`
		Configs    []struct {
			Value *struct {
				Name   string   `json:"name"`
				Errors []string `json:"errors"`
			} `json:"value"`
		} `json:"configs"`
	}
	raw := e.mustDo("PUT", "/connector-plugins/CounterSource/config/validate", map[string]string{"connector.class": "CounterSource", "tasks.max": "0"}, 200)
	if err := json.Unmarshal(raw, &vi); err != nil {
		t.Fatal(err)
	}
	errsByName := map[string][]string{}
	for _, c := range vi.Configs {
		if c.Value != nil && len(c.Value.Errors) > 0 {
			errsByName[c.Value.Name] = c.Value.Errors
		}
	}
	if vi.ErrorCount != 3 || len(errsByName["topic"]) != 1 || len(errsByName["name"]) != 1 || len(errsByName["tasks.max"]) != 1 {
		t.Fatalf("validate: error_count %d, errors %v", vi.ErrorCount, errsByName)
	}
	code, body = e.do("PUT", "/connector-plugins/NoSuchConnector/config/validate", map[string]string{"connector.class": "NoSuchConnector"})
	if code != 500 || !strings.Contains(string(body), "Failed to find any class that implements Connector and which name matches NoSuchConnector") ||
		!strings.Contains(string(body), "io.sluice.examples.CounterSource") {
		t.Fatalf("unknown class: %d %s", code, body)
	}
	code, body = e.do("POST", "/connectors", map[string]any{"name": "bad", "config": map[string]string{"connector.class": "LogSink", "topics": "x"}})
	if code != 400 || !strings.Contains(string(body), `Missing required configuration \"file\" which has no default value.`) {
		t.Fatalf("create with a missing setting: %d %s", code, body)
	}

	// Data end to end.
	e.mustDo("POST", "/connectors", map[string]any{"name": "counter", "config": map[string]string{
		"connector.class": "CounterSource", "topic": "counts", "tasks.max": "2", "interval.ms": "2",
	}}, 201)
	e.mustDo("POST", "/connectors", map[string]any{"name": "out", "config": map[string]string{
		"connector.class": "io.sluice.examples.LogSink", "topics": "counts", "file": out,
	}}, 201)
	e.waitStatus("counter", "RUNNING:RUNNING,RUNNING")
	e.waitStatus("out", "RUNNING:RUNNING")
	waitUntil(t, "records in the sink's file", 30*time.Second, func() bool { return len(readLines(t, out)) >= 200 })

	// Pause: nothing moves; resume: it moves again.
	e.mustDo("PUT", "/connectors/counter/pause", nil, 202)
	e.waitStatus("counter", "PAUSED:PAUSED,PAUSED")
	time.Sleep(300 * time.Millisecond) // records already produced settle
	before := endOffsets(t, seeds, "counts")
	time.Sleep(700 * time.Millisecond)
	if after := endOffsets(t, seeds, "counts"); after != before {
		t.Fatalf("records moved while paused: %d -> %d", before, after)
	}
	e.mustDo("PUT", "/connectors/counter/resume", nil, 202)
	e.waitStatus("counter", "RUNNING:RUNNING,RUNNING")
	waitUntil(t, "records after resume", 20*time.Second, func() bool { return endOffsets(t, seeds, "counts") > before+50 })

	// SIGKILL one task's plugin: that task FAILED with a trace, the other
	// keeps moving data; a restart brings it back.
	pid := pluginPID(t, "counter", 1)
	if pid == 0 {
		t.Fatal("no plugin process for counter-1")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st := e.waitStatus("counter", "RUNNING:RUNNING,FAILED")
	if !strings.Contains(st.Tasks[1].Trace, "killed") {
		t.Fatalf("trace of the killed task: %q", st.Tasks[1].Trace)
	}
	mark := endOffsets(t, seeds, "counts")
	waitUntil(t, "task 0 moving on", 20*time.Second, func() bool { return endOffsets(t, seeds, "counts") > mark+50 })
	e.mustDo("POST", "/connectors/counter/tasks/1/restart", nil, 204)
	e.waitStatus("counter", "RUNNING:RUNNING,RUNNING")
	if pid2 := pluginPID(t, "counter", 1); pid2 == 0 || pid2 == pid {
		t.Fatalf("restarted task runs in pid %d (was %d)", pid2, pid)
	}
	time.Sleep(500 * time.Millisecond)

	// Stop the source; once the sink has caught up, every record of the
	// topic is in the file and no sequence number is missing.
	e.mustDo("PUT", "/connectors/counter/stop", nil, 204)
	e.waitStatus("counter", "STOPPED:")
	total := endOffsets(t, seeds, "counts")
	waitUntil(t, "the sink to catch up", 30*time.Second, func() bool {
		var offs struct {
			Offsets []struct {
				Offset struct {
					KafkaOffset int64 `json:"kafka_offset"`
				} `json:"offset"`
			} `json:"offsets"`
		}
		_ = json.Unmarshal(e.mustDo("GET", "/connectors/out/offsets", nil, 200), &offs)
		var sum int64
		for _, o := range offs.Offsets {
			sum += o.Offset.KafkaOffset
		}
		return sum == total
	})
	inTopic := topicRecords(t, seeds, "counts", total)
	inFile := readLines(t, out)
	if int64(len(inFile)) < total {
		t.Fatalf("file has %d lines, topic %d records", len(inFile), total)
	}
	count := func(rs []counterRec) map[counterRec]int {
		m := map[counterRec]int{}
		for _, r := range rs {
			m[r]++
		}
		return m
	}
	topicSet, fileSet := count(inTopic), count(inFile)
	for r := range topicSet {
		if fileSet[r] == 0 {
			t.Fatalf("record %+v is in the topic but not in the file", r)
		}
	}
	maxSeq := map[int]int64{}
	for r := range topicSet {
		maxSeq[r.Task] = max(maxSeq[r.Task], r.Seq)
	}
	for task, m := range maxSeq {
		for s := int64(0); s <= m; s++ {
			if topicSet[counterRec{task, s}] == 0 {
				t.Fatalf("task %d: seq %d lost (max %d)", task, s, m)
			}
		}
	}
	if len(maxSeq) != 2 || maxSeq[1] < 100 {
		t.Fatalf("max seqs %v", maxSeq)
	}
	t.Logf("%d records in the topic, %d distinct, %d lines in the file; max seq by task %v", total, len(topicSet), len(inFile), maxSeq)
	// The Go SDK accepts the worker's shared memory: batches went through
	// it both ways (TestSharedMemoryOff covers the gRPC path).
	if polls, puts := e.w.SharedBatches(); polls == 0 || puts == 0 {
		t.Fatalf("batches through shared memory: %d polls, %d puts; want both above 0", polls, puts)
	}

	// The stopped source's offsets are readable, alterable and resettable.
	var so struct {
		Offsets []struct {
			Partition map[string]any `json:"partition"`
			Offset    map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	if err := json.Unmarshal(e.mustDo("GET", "/connectors/counter/offsets", nil, 200), &so); err != nil {
		t.Fatal(err)
	}
	if len(so.Offsets) != 2 {
		t.Fatalf("source offsets %+v", so)
	}
	e.mustDo("PATCH", "/connectors/counter/offsets", map[string]any{"offsets": []any{
		map[string]any{"partition": map[string]any{"task": 0}, "offset": map[string]any{"seq": 1000000}},
	}}, 200)
	e.mustDo("PUT", "/connectors/counter/resume", nil, 202)
	e.waitStatus("counter", "RUNNING:RUNNING,RUNNING")
	waitUntil(t, "task 0 to go on after the altered offset", 20*time.Second, func() bool {
		for _, r := range readLines(t, out) {
			if r.Task == 0 && r.Seq == 1000001 {
				return true
			}
		}
		return false
	})

	// The sink's offsets are its consumer group's: altered and reset with
	// kadm once it is stopped.
	e.mustDo("PUT", "/connectors/out/stop", nil, 204)
	e.waitStatus("out", "STOPPED:")
	type sinkOffsets struct {
		Offsets []struct {
			Partition struct {
				Topic     string `json:"kafka_topic"`
				Partition int32  `json:"kafka_partition"`
			} `json:"partition"`
			Offset struct {
				Offset int64 `json:"kafka_offset"`
			} `json:"offset"`
		} `json:"offsets"`
	}
	var sk sinkOffsets
	// The group may take a moment to notice its last member left.
	waitUntil(t, "the sink offsets to be alterable", 20*time.Second, func() bool {
		code, _ := e.do("PATCH", "/connectors/out/offsets", map[string]any{"offsets": []any{
			map[string]any{"partition": map[string]any{"kafka_topic": "counts", "kafka_partition": 0}, "offset": map[string]any{"kafka_offset": 5}},
			map[string]any{"partition": map[string]any{"kafka_topic": "counts", "kafka_partition": 1}, "offset": nil},
		}})
		return code == 200
	})
	_ = json.Unmarshal(e.mustDo("GET", "/connectors/out/offsets", nil, 200), &sk)
	if len(sk.Offsets) != 1 || sk.Offsets[0].Partition.Partition != 0 || sk.Offsets[0].Offset.Offset != 5 {
		t.Fatalf("sink offsets after PATCH: %+v", sk)
	}
	e.mustDo("DELETE", "/connectors/out/offsets", nil, 200)
	sk = sinkOffsets{}
	_ = json.Unmarshal(e.mustDo("GET", "/connectors/out/offsets", nil, 200), &sk)
	if len(sk.Offsets) != 0 {
		t.Fatalf("sink offsets after reset: %+v", sk)
	}

	e.mustDo("DELETE", "/connectors/counter", nil, 204)
	e.mustDo("DELETE", "/connectors/out", nil, 204)
	waitUntil(t, "plugins of deleted connectors to end", 10*time.Second, func() bool { return pluginChildren() == 0 })
}

// TestSharedMemoryOff moves data with sluice.task.shared.memory.bytes=0:
// every batch goes through gRPC, and every record arrives.
func TestSharedMemoryOff(t *testing.T) {
	e := startWorker(t, map[string]string{"sluice.task.shared.memory.bytes": "0"})
	seeds := e.cluster.ListenAddrs()
	out := filepath.Join(e.dir, "out.txt")
	const perTask = 3000
	e.mustDo("POST", "/connectors", map[string]any{"name": "counter", "config": map[string]string{
		"connector.class": "CounterSource", "topic": "counts", "tasks.max": "2", "max.records": strconv.Itoa(perTask),
	}}, 201)
	e.mustDo("POST", "/connectors", map[string]any{"name": "out", "config": map[string]string{
		"connector.class": "io.sluice.examples.LogSink", "topics": "counts", "file": out,
	}}, 201)
	waitUntil(t, "every record in the sink's file", 60*time.Second, func() bool { return len(readLines(t, out)) >= 2*perTask })
	seen := map[counterRec]bool{}
	for _, r := range readLines(t, out) {
		seen[r] = true
	}
	for task := range 2 {
		for s := range int64(perTask) {
			if !seen[counterRec{task, s}] {
				t.Fatalf("task %d seq %d missing from the file (%d distinct lines)", task, s, len(seen))
			}
		}
	}
	if n := endOffsets(t, seeds, "counts"); n != 2*perTask {
		t.Fatalf("topic holds %d records, want %d", n, 2*perTask)
	}
	if polls, puts := e.w.SharedBatches(); polls != 0 || puts != 0 {
		t.Fatalf("shared memory off, yet %d polls and %d puts went through it", polls, puts)
	}
}

// TestSharedMemoryTooSmall moves data with a region the plugins accept
// but that batches of this size do not fit: they go inline (the worker's
// Puts and the SDK's Poll answers alike), and every record arrives.
func TestSharedMemoryTooSmall(t *testing.T) {
	e := startWorker(t, map[string]string{"sluice.task.shared.memory.bytes": "4096"})
	seeds := e.cluster.ListenAddrs()
	out := filepath.Join(e.dir, "out.txt")
	const perTask = 3000
	e.mustDo("POST", "/connectors", map[string]any{"name": "counter", "config": map[string]string{
		"connector.class": "CounterSource", "topic": "counts", "tasks.max": "2", "max.records": strconv.Itoa(perTask),
	}}, 201)
	e.mustDo("POST", "/connectors", map[string]any{"name": "out", "config": map[string]string{
		"connector.class": "io.sluice.examples.LogSink", "topics": "counts", "file": out,
	}}, 201)
	waitUntil(t, "every record in the sink's file", 60*time.Second, func() bool { return len(readLines(t, out)) >= 2*perTask })
	seen := map[counterRec]bool{}
	for _, r := range readLines(t, out) {
		seen[r] = true
	}
	for task := range 2 {
		for s := range int64(perTask) {
			if !seen[counterRec{task, s}] {
				t.Fatalf("task %d seq %d missing from the file (%d distinct lines)", task, s, len(seen))
			}
		}
	}
	if n := endOffsets(t, seeds, "counts"); n != 2*perTask {
		t.Fatalf("topic holds %d records, want %d", n, 2*perTask)
	}
	// Batches here are tens of KiB (a region of 64 KiB takes them all).
	if polls, puts := e.w.SharedBatches(); polls != 0 || puts != 0 {
		t.Fatalf("%d polls and %d puts went through a 4 KiB region", polls, puts)
	}
}

// TestShutdownStopsPlugins checks that a worker's shutdown ends every
// plugin, and that junk in plugin.path does not keep it from working.
func TestShutdownStopsPlugins(t *testing.T) {
	junk := t.TempDir()
	if err := os.WriteFile(filepath.Join(junk, "not-a-plugin"), []byte("#!/bin/sh\necho hello\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(junk, "garbage"), []byte{0x7f, 'E', 'L', 'F', 1, 2, 3}, 0o755); err != nil {
		t.Fatal(err)
	}
	e := startWorker(t, map[string]string{"plugin.path": junk + "," + pluginDir})
	e.mustDo("POST", "/connectors", map[string]any{"name": "c", "config": map[string]string{
		"connector.class": "CounterSource", "topic": "counts", "tasks.max": "2", "interval.ms": "5",
	}}, 201)
	e.waitStatus("c", "RUNNING:RUNNING,RUNNING")
	if n := pluginChildren(); n != 3 {
		t.Fatalf("%d plugin processes, want 3 (connector and two tasks)", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("shutdown took %v", time.Since(start))
	if n := pluginChildren(); n != 0 {
		t.Fatalf("%d plugin processes left after shutdown", n)
	}
}

// A connector created PAUSED has no tasks, as in Kafka Connect: no record
// moves until it is resumed.
func TestInitialStatePaused(t *testing.T) {
	e := startWorker(t, nil)
	seeds := e.cluster.ListenAddrs()
	e.mustDo("POST", "/connectors", map[string]any{"name": "p", "initial_state": "PAUSED", "config": map[string]string{
		"connector.class": "CounterSource", "topic": "paused", "tasks.max": "1", "interval.ms": "5",
	}}, 201)
	e.waitStatus("p", "PAUSED:")
	time.Sleep(time.Second)
	if n := endOffsets(t, seeds, "paused"); n != 0 {
		t.Fatalf("%d records written by a paused connector", n)
	}
	e.mustDo("PUT", "/connectors/p/resume", nil, 202)
	e.waitStatus("p", "RUNNING:RUNNING")
	waitUntil(t, "records after resume", 20*time.Second, func() bool { return endOffsets(t, seeds, "paused") > 10 })
}

package cli

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/logging"
	"github.com/sluice-io/sluice/host/rest"
	"github.com/sluice-io/sluice/host/rest/resttest"
)

// worker is the real REST API over the fake herder, on an httptest server.
type worker struct {
	h       *resttest.Herder
	loggers *logging.Registry
	url     string
}

func newWorker(t *testing.T) *worker {
	t.Helper()
	h := resttest.New()
	reg, err := logging.New(logging.Options{Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := rest.New(h, reg, rest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &worker{h: h, loggers: reg, url: ts.URL}
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs a command line against the worker.
func (w *worker) run(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), append(args, "--url", w.url), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return r
}

func (r result) fails(t *testing.T, code int, stderr string) {
	t.Helper()
	if r.code != code || !strings.Contains(r.stderr, stderr) {
		t.Fatalf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", r.code, code, stderr, r.stdout, r.stderr)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConnectorsLifecycle(t *testing.T) {
	w := newWorker(t)
	if got := w.run(t, "connectors", "list").ok(t).stdout; got != "NAME  TYPE  STATE  TASKS  CLASS\n" {
		t.Fatalf("empty list:\n%q", got)
	}
	src := writeFile(t, "src.json", `{"name":"src","connector.class":"FileStreamSource","topic":"lines","file":"${file:/s.properties:in}"}`)
	got := w.run(t, "connectors", "create", src).ok(t).stdout
	want := "Created connector src\n\n" +
		"Name:  src\nType:  source\nTasks: 1\n\n" +
		"KEY              VALUE\n" +
		"connector.class  FileStreamSource\n" +
		"file             ${file:/s.properties:in}\n" +
		"name             src\n" +
		"topic            lines\n"
	if got != want {
		t.Fatalf("create:\n%s\nwant:\n%s", got, want)
	}
	sink := writeFile(t, "sink.properties", "# a sink\nconnector.class=FileStreamSink\ntopics=lines\ntasks.max=2\n")
	w.run(t, "connectors", "create", sink, "--name", "sink", "-c", "file=/tmp/out").ok(t)
	req := writeFile(t, "req.json", `{"name":"paused","config":{"connector.class":"FileStreamSource","topic":"t"},"initial_state":"PAUSED"}`)
	w.run(t, "connectors", "create", req).ok(t)
	w.run(t, "connectors", "create", "-c", "name=flags", "-c", "connector.class=FileStreamSource", "-c", "topic=t").ok(t)

	got = w.run(t, "connectors", "list").ok(t).stdout
	want = "" +
		"NAME    TYPE    STATE    TASKS      CLASS\n" +
		"flags   source  RUNNING  1 RUNNING  FileStreamSource\n" +
		"paused  source  PAUSED   1 PAUSED   FileStreamSource\n" +
		"sink    sink    RUNNING  2 RUNNING  FileStreamSink\n" +
		"src     source  RUNNING  1 RUNNING  FileStreamSource\n"
	if got != want {
		t.Fatalf("list:\n%s\nwant:\n%s", got, want)
	}
	if got := w.run(t, "connectors", "list", "-o", "json").ok(t).stdout; got != "[\n  \"flags\",\n  \"paused\",\n  \"sink\",\n  \"src\"\n]\n" {
		t.Fatalf("list -o json:\n%s", got)
	}
	cfg, _ := w.h.ConnectorConfig(context.Background(), "sink")
	if cfg["file"] != "/tmp/out" || cfg["tasks.max"] != "2" || cfg["name"] != "sink" {
		t.Fatalf("sink config %v", cfg)
	}

	w.run(t, "connectors", "create", src).fails(t, 1, "sluice: Connector src already exists (HTTP 409)\n")
	r := w.run(t, "connectors", "create", src, "-o", "json")
	r.fails(t, 1, `{"error_code":409,"message":"Connector src already exists"}`)

	// update with a FILE replaces the config; -c/--unset alone patch it.
	upd := writeFile(t, "upd.properties", "connector.class=FileStreamSource\ntopic=other\n")
	if got := w.run(t, "connectors", "update", "src", upd).ok(t).stdout; !strings.HasPrefix(got, "Updated connector src\n") {
		t.Fatalf("update: %s", got)
	}
	w.run(t, "connectors", "update", "src", "-c", "tasks.max=3", "-c", "batch.size=5").ok(t)
	w.run(t, "connectors", "update", "src", "--unset", "batch.size").ok(t)
	cfg, _ = w.h.ConnectorConfig(context.Background(), "src")
	if len(cfg) != 4 || cfg["topic"] != "other" || cfg["tasks.max"] != "3" || cfg["file"] != "" {
		t.Fatalf("after updates: %v", cfg)
	}
	if got := w.run(t, "connectors", "update", "new", upd).ok(t).stdout; !strings.HasPrefix(got, "Created connector new\n") {
		t.Fatalf("update of a new connector: %s", got)
	}
	w.run(t, "connectors", "update", "nope", "-c", "a=b").fails(t, 1, "Connector nope not found (HTTP 404)")

	w.run(t, "connectors", "delete", "src").ok(t)
	w.run(t, "connectors", "get", "src").fails(t, 1, "sluice: Connector src not found (HTTP 404)")
}

func TestConnectorGetAndStatus(t *testing.T) {
	w := newWorker(t)
	w.run(t, "connectors", "create", "-c", "name=sink", "-c", "connector.class=FileStreamSink", "-c", "topics=t", "-c", "tasks.max=2").ok(t)
	w.h.SetTaskState("sink", 1, herder.StateFailed, "org.apache.kafka.connect.errors.ConnectException: boom\n\tat Foo.bar(Foo.java:1)")
	got := w.run(t, "connectors", "status", "sink").ok(t).stdout
	want := "" +
		"INSTANCE     STATE    WORKER          TRACE\n" +
		"sink (sink)  RUNNING  127.0.0.1:8083  -\n" +
		"  task 0     RUNNING  127.0.0.1:8083  -\n" +
		"  task 1     FAILED   127.0.0.1:8083  org.apache.kafka.connect.errors.ConnectException: boom\n"
	if got != want {
		t.Fatalf("status:\n%s\nwant:\n%s", got, want)
	}
	if got := w.run(t, "connectors", "list").ok(t).stdout; !strings.Contains(got, "1 RUNNING, 1 FAILED") {
		t.Fatalf("list: %s", got)
	}
	r := w.run(t, "connectors", "get", "sink", "-o", "json").ok(t)
	if !strings.Contains(r.stdout, `"type": "sink"`) || !strings.Contains(r.stdout, `"connector": "sink"`) {
		t.Fatalf("get -o json: %s", r.stdout)
	}
	w.run(t, "connectors", "status", "nope").fails(t, 1, "No status found for connector nope (HTTP 404)")
}

func TestPauseResumeStopRestart(t *testing.T) {
	w := newWorker(t)
	w.run(t, "connectors", "create", "-c", "name=s", "-c", "connector.class=FileStreamSink", "-c", "topics=t", "-c", "tasks.max=2").ok(t)
	state := func() string {
		st, err := w.h.ConnectorStatus(context.Background(), "s")
		if err != nil {
			t.Fatal(err)
		}
		return st.Connector.State
	}
	w.run(t, "connectors", "pause", "s").ok(t)
	if state() != herder.StatePaused {
		t.Fatalf("after pause: %s", state())
	}
	w.run(t, "connectors", "resume", "s").ok(t)
	w.run(t, "connectors", "stop", "s").ok(t)
	if state() != herder.StateStopped {
		t.Fatalf("after stop: %s", state())
	}
	w.run(t, "connectors", "resume", "s").ok(t)
	w.run(t, "connectors", "pause", "nope").fails(t, 1, "Unknown connector nope (HTTP 404)")

	if got := w.run(t, "connectors", "restart", "s").ok(t).stdout; got != "Restarted connector s\n" || w.h.Restarts("s") != 1 {
		t.Fatalf("restart: %q, %d restarts", got, w.h.Restarts("s"))
	}
	got := w.run(t, "connectors", "restart", "s", "--include-tasks").ok(t).stdout
	if !strings.Contains(got, "accepted") || strings.Count(got, "  RESTARTING  ") != 3 {
		t.Fatalf("restart --include-tasks:\n%s", got)
	}
	w.h.SetTaskState("s", 1, herder.StateFailed, "x")
	got = w.run(t, "connectors", "restart", "--include-tasks", "s", "--only-failed", "-o", "json").ok(t).stdout
	if strings.Count(got, "RESTARTING") != 1 {
		t.Fatalf("restart --include-tasks --only-failed -o json:\n%s", got)
	}
	w.run(t, "connectors", "restart", "s", "--task", "0").ok(t)
	if w.h.Restarts("s-0") != 2 || w.h.Restarts("s-1") != 2 {
		t.Fatalf("task restarts: %d, %d", w.h.Restarts("s-0"), w.h.Restarts("s-1"))
	}
	w.run(t, "connectors", "restart", "s", "--task", "9").fails(t, 1, "Unknown task: s-9 (HTTP 404)")
	w.run(t, "connectors", "restart", "s", "--task", "0", "--only-failed").fails(t, 2, "--task restarts one task")
}

func TestOffsets(t *testing.T) {
	w := newWorker(t)
	w.run(t, "connectors", "create", "-c", "name=my src", "-c", "connector.class=FileStreamSource", "-c", "topic=t").ok(t)
	offs := writeFile(t, "offs.json", `{"offsets":[{"partition":{"filename":"/in"},"offset":{"position":9007199254740993}}]}`)
	w.run(t, "connectors", "offsets", "my src", "alter", offs).fails(t, 1, "must be in the STOPPED state")
	w.run(t, "connectors", "stop", "my src").ok(t)
	if got := w.run(t, "connectors", "offsets", "my src", "alter", offs).ok(t).stdout; !strings.HasPrefix(got, "The Connect framework-managed offsets for this connector have been altered successfully.") {
		t.Fatalf("alter: %s", got)
	}
	got := w.run(t, "connectors", "offsets", "my src").ok(t).stdout
	if got != "PARTITION           OFFSET\n{\"filename\":\"/in\"}  {\"position\":9007199254740993}\n" {
		t.Fatalf("offsets:\n%s", got)
	}
	w.run(t, "connectors", "offsets", "my src", "reset").ok(t)
	if got := w.run(t, "connectors", "offsets", "my src", "get", "-o", "json").ok(t).stdout; got != "{\n  \"offsets\": []\n}\n" {
		t.Fatalf("after reset: %q", got)
	}
	w.run(t, "connectors", "offsets", "my src", "rewind").fails(t, 2, "offsets NAME [get | alter FILE | reset]")
}

func TestPluginsAndValidate(t *testing.T) {
	w := newWorker(t)
	got := w.run(t, "plugins").ok(t).stdout
	want := "" +
		"CLASS                                                    TYPE    VERSION\n" +
		"org.apache.kafka.connect.file.FileStreamSinkConnector    sink    4.0.0\n" +
		"org.apache.kafka.connect.file.FileStreamSourceConnector  source  4.0.0\n"
	if got != want {
		t.Fatalf("plugins:\n%s\nwant:\n%s", got, want)
	}
	if got := w.run(t, "plugins", "--all").ok(t).stdout; strings.Count(got, "\n") != 8 || !strings.Contains(got, "transformation") {
		t.Fatalf("plugins --all:\n%s", got)
	}
	good := writeFile(t, "good.properties", "name=v\nconnector.class=FileStreamSource\ntopic=t\n")
	if got := w.run(t, "validate", good).ok(t).stdout; got != "FileStreamSource: the configuration is valid\n" {
		t.Fatalf("validate: %q", got)
	}
	bad := writeFile(t, "bad.json", `{"connector.class":"FileStreamSink","tasks.max":"zero"}`)
	r := w.run(t, "validate", bad, "-c", "name=v")
	want = "" +
		"FileStreamSink: 2 error(s)\n\n" +
		"KEY        ERROR\n" +
		"tasks.max  Invalid value zero for configuration tasks.max: Not a number of type INT\n" +
		"topics     Must configure one of topics or topics.regex\n"
	if r.code != 1 || r.stdout != want {
		t.Fatalf("validate bad: exit %d\n%s\nwant:\n%s\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
	if r := w.run(t, "validate", bad, "-o", "json"); r.code != 1 || !strings.Contains(r.stdout, `"error_count": 3`) {
		t.Fatalf("validate -o json: %d %s", r.code, r.stdout)
	}
	w.run(t, "validate", writeFile(t, "x.properties", "topic=t\n")).fails(t, 2, "no connector.class")
	// A JSON file an editor saved with a byte order mark reads as JSON.
	bom := writeFile(t, "bom.json", "\ufeff"+`{"connector.class":"FileStreamSource","topic":"t"}`)
	if got := w.run(t, "validate", bom, "-c", "name=v").ok(t).stdout; got != "FileStreamSource: the configuration is valid\n" {
		t.Fatalf("validate a JSON file with a byte order mark: %q", got)
	}
}

func TestLoggers(t *testing.T) {
	w := newWorker(t)
	w.loggers.Logger("sluice.task.a-0")
	got := w.run(t, "loggers").ok(t).stdout
	want := "" +
		"LOGGER           LEVEL  LAST MODIFIED\n" +
		"root             INFO   -\n" +
		"sluice.task.a-0  INFO   -\n"
	if got != want {
		t.Fatalf("loggers:\n%s\nwant:\n%s", got, want)
	}
	got = w.run(t, "loggers", "set", "sluice.task", "debug").ok(t).stdout
	if got != "Set sluice.task to debug on 2 logger(s):\n  sluice.task\n  sluice.task.a-0\n" {
		t.Fatalf("set:\n%s", got)
	}
	got = w.run(t, "loggers", "get", "sluice.task.a-0").ok(t).stdout
	if !strings.Contains(got, "sluice.task.a-0  DEBUG  20") {
		t.Fatalf("get:\n%s", got)
	}
	if got := w.run(t, "loggers", "set", "sluice", "WARN", "--scope", "cluster").ok(t).stdout; got != "Set sluice to WARN across the cluster\n" {
		t.Fatalf("cluster: %q", got)
	}
	w.run(t, "loggers", "set", "sluice", "LOUD").fails(t, 1, "invalid log level 'LOUD'. (HTTP 404)")
	w.run(t, "loggers", "get", "nope").fails(t, 1, "Logger nope not found. (HTTP 404)")
}

func TestUsageAndConnectionErrors(t *testing.T) {
	w := newWorker(t)
	for _, args := range [][]string{
		{"nonsense"},
		{"connectors"},
		{"connectors", "frobnicate"},
		{"connectors", "get"},
		{"connectors", "get", "a", "b"},
		{"connectors", "list", "-o", "yaml"},
		{"connectors", "create", "-c", "novalue"},
		{"connectors", "create", "-c", "connector.class=X"},
		{"loggers", "set", "x"},
	} {
		if r := w.run(t, args...); r.code != ExitUsage || r.stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	var out, errOut bytes.Buffer
	if code := Run(context.Background(), nil, &out, &errOut); code != ExitUsage || !strings.Contains(errOut.String(), "Usage: sluice") {
		t.Fatalf("no args: %d %s", code, errOut.String())
	}
	if code := Run(context.Background(), []string{"connectors", "get", "--help"}, &out, &errOut); code != ExitOK {
		t.Fatalf("--help: %d", code)
	}
	for _, help := range []string{"--help", "-h", "help"} {
		out.Reset()
		if code := Run(context.Background(), []string{"connectors", help}, &out, &errOut); code != ExitOK || !strings.Contains(out.String(), "connectors list") {
			t.Fatalf("connectors %s: exit %d, stdout %q", help, code, out.String())
		}
	}

	// $SLUICE_URL is the default --url.
	t.Setenv("SLUICE_URL", w.url)
	out.Reset()
	if code := Run(context.Background(), []string{"plugins", "-o", "json"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "FileStreamSink") {
		t.Fatalf("with SLUICE_URL: %d %s %s", code, out.String(), errOut.String())
	}
	errOut.Reset()
	code := Run(context.Background(), []string{"connectors", "list", "--url", "http://127.0.0.1:1"}, &out, &errOut)
	if code != ExitError || !strings.Contains(errOut.String(), "cannot reach the worker") {
		t.Fatalf("unreachable: %d %s", code, errOut.String())
	}
}

//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/integration/itest"
)

// connect-standalone's statuses for a worker that cannot start (its file,
// its settings) and for a connector that cannot be created.
const (
	exitWorker    = 2
	exitConnector = 3
)

// TestStandaloneRefusesBadInput: each bad worker or connector file ends
// `sluice standalone` with connect-standalone's status (2 for the worker, 3
// for a connector) and a message naming the file, line, setting or class
// at fault; plugins of connectors created before the bad one do not
// outlive the worker.
func TestStandaloneRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	worker := e.workerProps(nil)
	topic := e.name("bad")
	in := e.path("in.txt")
	appendLines(t, in, []string{"x"})
	good := e.connector(sourceConfig(e.name("good"), in, topic))
	write := func(name, text string) string {
		p := e.path(name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	for _, c := range []struct {
		name string
		args []string
		// want: every string must be in the output.
		want []string
		// worker: the worker's input is bad (else a connector's).
		worker bool
	}{
		{
			name: "unknown connector class",
			args: []string{worker, good, e.connector(map[string]string{"name": e.name("nosuch"), "connector.class": "com.example.NoSuchConnector", "tasks.max": "1"})},
			want: []string{"com.example.NoSuchConnector", e.name("nosuch")},
		},
		{
			name: "missing required setting",
			args: []string{worker, e.connector(map[string]string{"name": e.name("notopic"), "connector.class": fileSource, "file": in})},
			want: []string{`Missing required configuration "topic"`},
		},
		{
			name: "unknown converter class",
			args: []string{worker, e.connector(map[string]string{"name": e.name("badconv"), "connector.class": fileSource, "file": in, "topic": topic, "value.converter": "com.example.NoSuchConverter"})},
			want: []string{"com.example.NoSuchConverter", "value.converter"},
		},
		{
			name: "malformed properties file",
			args: []string{worker, write("broken.properties", "name=broken\nconnector.class=FileStreamSource\nfile=\\uZZZZ\ntopic=t\n")},
			want: []string{"broken.properties", "line 3"},
		},
		{
			name: "malformed JSON file",
			args: []string{worker, write("broken.json", "{\n  \"name\": \"broken\",\n  \"connector.class\": \"FileStreamSource\"\n  \"topic\": \"t\"\n}\n")},
			want: []string{"broken.json", "line 4"},
		},
		{
			name: "JSON create request with a mismatched name",
			args: []string{worker, write("mismatch.json", `{"name":"one","config":{"name":"two","connector.class":"FileStreamSource","topic":"t"}}`)},
			want: []string{"mismatch.json", "one", "two"},
		},
		{
			name: "connector file that does not exist",
			args: []string{worker, e.path("missing.properties")},
			want: []string{"missing.properties"},
		},
		{
			name:   "worker properties without value.converter",
			args:   []string{write("noconv.properties", "bootstrap.servers="+e.cluster.BootstrapString()+"\nkey.converter="+stringConverter+"\noffset.storage.file.filename="+e.offsets+"\nlisteners=http://127.0.0.1:0\n")},
			want:   []string{"noconv.properties", `"value.converter"`},
			worker: true,
		},
		{
			name:   "worker properties with a bad number",
			args:   []string{e.workerPropsFile("badnum.properties", map[string]string{"offset.flush.interval.ms": "soon"})},
			want:   []string{"offset.flush.interval.ms", "soon"},
			worker: true,
		},
		{
			name:   "worker properties with an unknown converter",
			args:   []string{e.workerPropsFile("badconv.properties", map[string]string{"value.converter": "com.example.NoSuchConverter"})},
			want:   []string{"Invalid value com.example.NoSuchConverter for configuration value.converter: Class com.example.NoSuchConverter could not be found."},
			worker: true,
		},
	} {
		// Not subtests: e's helpers belong to the parent test.
		t.Logf("case: %s", c.name)
		p := itest.StartWorker(t, append([]string{"standalone"}, c.args...)...)
		ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
		err := p.Wait(ctx)
		cancel()
		want := exitConnector
		if c.worker {
			want = exitWorker
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != want {
			t.Fatalf("%s: exit %v, want status %d:\n%s", c.name, err, want, p.LogTail(20))
		}
		out := p.LogTail(200)
		for _, s := range c.want {
			if !strings.Contains(out, s) {
				t.Fatalf("%s: output does not name %q:\n%s", c.name, s, p.LogTail(20))
			}
		}
		t.Logf("%s: %s", c.name, errorLine(out))
		if ps := pluginsOf(e.name("good")); len(ps) > 0 {
			requireGone(t, ps)
		}
	}
}

// errorLine is the error message in out: its last line that starts with
// "sluice" and the lines continuing it, up to the next log line or the exit
// marker.
func errorLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "sluice") {
			msg := lines[i : i+1]
			for _, l := range lines[i+1:] {
				if strings.HasPrefix(l, "===") || strings.HasPrefix(l, "20") {
					break
				}
				msg = append(msg, l)
			}
			return strings.Join(msg, " | ")
		}
	}
	return lines[len(lines)-1]
}

// pluginsOf lists the live plugin processes of a connector, whoever their
// parent is now (a worker that exited leaves orphans to init).
func pluginsOf(connector string) []plugin {
	var out []plugin
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || !alive(pid) {
			continue
		}
		envb, err := os.ReadFile("/proc/" + ent.Name() + "/environ")
		if err != nil {
			continue
		}
		if strings.Contains(string(envb), "\x00SLUICE_CONNECTOR="+connector+"\x00") || strings.HasPrefix(string(envb), "SLUICE_CONNECTOR="+connector+"\x00") {
			out = append(out, plugin{pid: pid, connector: connector})
		}
	}
	return out
}

// restError is Kafka Connect's error body.
type restError struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

// TestRESTRefusesBadConnector: a running worker answers bad create
// requests as Kafka Connect does (400 for an invalid configuration, 500 for
// an unknown class) with a message naming the class or key, lists no trace
// of them, and keeps running: a valid connector created afterwards moves
// data.
func TestRESTRefusesBadConnector(t *testing.T) {
	e := newEnv(t)
	w := e.startWorker(e.workerProps(nil))
	topic := e.topic("rest")
	in := e.path("in.txt")

	for _, c := range []struct {
		name   string
		config map[string]string
		code   int
		want   []string
	}{
		// Kafka Connect answers an unknown class with 500: the lookup's
		// ConnectException is not a BadRequestException.
		{e.name("nosuch"), map[string]string{"connector.class": "com.example.NoSuchConnector", "tasks.max": "1"}, http.StatusInternalServerError, []string{"com.example.NoSuchConnector"}},
		{e.name("notopic"), map[string]string{"connector.class": fileSource, "file": in}, http.StatusBadRequest, []string{`Missing required configuration "topic"`}},
		{e.name("badtasks"), map[string]string{"connector.class": fileSource, "file": in, "topic": topic, "tasks.max": "many"}, http.StatusBadRequest, []string{"tasks.max", "many"}},
	} {
		code, body, err := w.call(t.Context(), http.MethodPost, "/connectors", map[string]any{"name": c.name, "config": c.config})
		if err != nil {
			t.Fatal(err)
		}
		var re restError
		if code != c.code || json.Unmarshal(body, &re) != nil || re.ErrorCode != c.code {
			t.Fatalf("POST %s: %d %s, want %d with Kafka Connect's error body", c.name, code, body, c.code)
		}
		for _, s := range c.want {
			if !strings.Contains(re.Message, s) {
				t.Fatalf("POST %s: message %q does not name %q", c.name, re.Message, s)
			}
		}
		t.Logf("POST %s: %d %s", c.name, code, firstLine(re.Message))
		w.do(http.MethodGet, "/connectors/"+c.name+"/status", nil, http.StatusNotFound)
	}
	var names []string
	if err := json.Unmarshal(w.do(http.MethodGet, "/connectors", nil, http.StatusOK), &names); err != nil || len(names) != 0 {
		t.Fatalf("GET /connectors = %v (%v), want none", names, err)
	}
	if w.Exited() {
		t.Fatal("the worker exited after bad requests")
	}

	lines := makeLines("rest", 0, 500)
	appendLines(t, in, lines)
	src := sourceConfig(e.name("src"), in, topic)
	delete(src, "name")
	w.do(http.MethodPost, "/connectors", map[string]any{"name": e.name("src"), "config": src}, http.StatusCreated)
	w.waitState(e.name("src"), "RUNNING", 1)
	requireLines(t, "topic", lines, itest.Values(e.readTopic(topic, len(lines))))
	time.Sleep(quiet)
	if end := e.endOffset(topic); end != int64(len(lines)) {
		t.Fatalf("topic end offset %d, want %d", end, len(lines))
	}
	w.stop()
}

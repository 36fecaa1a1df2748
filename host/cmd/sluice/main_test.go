package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// pluginDir holds the bundled plugins, built once for the package.
var pluginDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginDir = dir
	for _, p := range []string{"file", "datagen"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "sluice-"+p), "../../../plugins/"+p)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build plugins/%s: %v\n", p, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// lockedBuffer collects output written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freeAddr returns a local address nobody listens on (a small race with
// other processes is acceptable in tests).
// freeAddr is a free loopback address for a server a test starts. Its
// port comes from below Linux's default ephemeral range (32768 and up),
// where the outgoing connections of the test packages running beside this
// one never land: a port picked by listening on :0, which draws from that
// range, was once taken by one of them before the worker could bind it.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 200 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(20000+rand.IntN(12000)))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no free port below 32000 on 127.0.0.1")
	return ""
}

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runBg runs a command line in the background; stop cancels it and
// returns its exit status.
func runBg(t *testing.T, args ...string) (stdout, stderr *lockedBuffer, stop func() int, done <-chan int) {
	t.Helper()
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	// done hands the exit status to whoever waits for it first (waitFor
	// may); ended tells stop that the command ended all the same.
	ch := make(chan int, 1)
	ended := make(chan struct{})
	exit := -1
	go func() {
		exit = run(ctx, args, stdout, stderr)
		close(ended)
		ch <- exit
	}()
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case <-ended:
				code = exit
			case <-time.After(60 * time.Second):
				t.Errorf("command did not end after cancel; output:\n%s", stderr)
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return stdout, stderr, stop, ch
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, b)
		}
	}
	return resp.StatusCode
}

func waitFor(t *testing.T, what string, done <-chan int, stderr *lockedBuffer, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		select {
		case code := <-done:
			t.Fatalf("command ended with %d while waiting for %s:\n%s", code, what, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; output:\n%s", what, stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestUsageAndVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), nil, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "standalone WORKER.properties") {
		t.Fatalf("no args: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := run(context.Background(), []string{"frobnicate"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: %d %q", code, errb.String())
	}
	if code := run(context.Background(), []string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "sluice "+Version) {
		t.Fatalf("version: %d %q", code, out.String())
	}
	errb.Reset()
	// As connect-standalone and connect-distributed: usage, exit 1.
	if code := run(context.Background(), []string{"standalone"}, &out, &errb); code != exitWorkerUsage || !strings.Contains(errb.String(), "Usage: sluice standalone") {
		t.Fatalf("standalone without args: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := run(context.Background(), []string{"distributed"}, &out, &errb); code != exitWorkerUsage || !strings.Contains(errb.String(), "Usage: sluice distributed") {
		t.Fatalf("distributed without args: %d %q", code, errb.String())
	}
}

// The REST client commands are handed to host/cli.
func TestClientCommandsDispatch(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"connectors", "list", "--url", "http://" + freeAddr(t), "--timeout", "2s"}, &out, &errb)
	if code != 1 || errb.Len() == 0 {
		t.Fatalf("connectors list against nothing: %d %q %q", code, out.String(), errb.String())
	}
}

func workerProps(t *testing.T, dir, seeds, rest string) string {
	return write(t, dir, "worker.properties", fmt.Sprintf(`bootstrap.servers=%s
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
offset.storage.file.filename=%s
offset.flush.interval.ms=500
listeners=http://%s
plugin.path=%s
`, seeds, filepath.Join(dir, "offsets"), rest, pluginDir))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Bad input ends connect-standalone with 2 when it is the worker's (its
// file, its settings) and 3 when it is a connector's; so does sluice.
func TestStandaloneBadInputExitStatus(t *testing.T) {
	dir := t.TempDir()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	seeds := strings.Join(cluster.ListenAddrs(), ",")
	good := workerProps(t, dir, seeds, freeAddr(t))
	cases := []struct {
		name  string
		args  func() []string
		code  int
		wants []string
	}{
		{"malformed worker properties", func() []string {
			return []string{write(t, dir, "w1.properties", "a=1\nb=\\u12zz\n")}
		}, exitWorker, []string{"w1.properties", "line 2"}},
		{"missing worker settings", func() []string {
			return []string{write(t, dir, "w2.properties", "bootstrap.servers=x:1\n")}
		}, exitWorker, []string{`"key.converter"`, `"value.converter"`, `"offset.storage.file.filename"`}},
		{"unknown worker converter", func() []string {
			return []string{write(t, dir, "w3.properties", strings.Replace(readFile(t, good), "org.apache.kafka.connect.json.JsonConverter", "com.nope.Conv", 1))}
		}, exitWorker, []string{"Invalid value com.nope.Conv for configuration value.converter: Class com.nope.Conv could not be found."}},
		{"malformed connector JSON", func() []string {
			return []string{good, write(t, dir, "c1.json", "{\"name\": \"a\",\n \"connector.class\": }\n")}
		}, exitConnector, []string{"c1.json", "line 2"}},
		{"connector file without a name", func() []string {
			return []string{good, write(t, dir, "c2.properties", "connector.class=FileStreamSource\n")}
		}, exitConnector, []string{"c2.properties", `no "name"`}},
		{"unknown connector class", func() []string {
			return []string{good, write(t, dir, "c3.properties", "name=c3\nconnector.class=FileStreamSorce\n")}
		}, exitConnector, []string{"c3.properties", "Failed to find any class that implements Connector and which name matches FileStreamSorce", "FileStreamSource"}},
		{"missing connector setting", func() []string {
			return []string{good, write(t, dir, "c4.json", `{"name":"c4","config":{"connector.class":"FileStreamSink"}}`)}
		}, exitConnector, []string{"c4.json", "Must configure one of topics or topics.regex"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"standalone"}, c.args()...), &out, &errb)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.code, errb.String())
			}
			for _, w := range c.wants {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
		})
	}
}

// TestStandaloneRuns runs connect-standalone's file-to-file pipeline:
// FileStreamSource -> topic -> FileStreamSink, connectors from files.
func TestStandaloneRuns(t *testing.T) {
	dir := t.TempDir()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "lines"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	rest := freeAddr(t)
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	var lines []string
	for i := range 500 {
		lines = append(lines, "line "+strconv.Itoa(i))
	}
	write(t, dir, "in.txt", strings.Join(lines, "\n")+"\n")
	src := write(t, dir, "source.properties", "name=src\nconnector.class=FileStreamSource\ntopic=lines\nfile="+in+"\n")
	sink := write(t, dir, "sink.json", fmt.Sprintf(`{"name":"sink","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","topics":"lines","file":%q}}`, out))

	_, stderr, stop, done := runBg(t, "standalone", workerProps(t, dir, strings.Join(cluster.ListenAddrs(), ","), rest), src, sink)
	waitFor(t, "health", done, stderr, func() bool { return getJSON(t, "http://"+rest+"/health", nil) == 200 })
	var names []string
	getJSON(t, "http://"+rest+"/connectors", &names)
	if strings.Join(names, ",") != "sink,src" {
		t.Fatalf("connectors %v", names)
	}
	checkRESTCompat(t, "http://"+rest, in)
	waitFor(t, "the output file", done, stderr, func() bool {
		b, _ := os.ReadFile(out)
		return string(b) == strings.Join(lines, "\n")+"\n"
	})
	if code := stop(); code != 0 {
		t.Fatalf("exit %d after SIGINT; output:\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "worker stopped") {
		t.Fatalf("no clean stop in the log:\n%s", stderr)
	}
}

func TestDevRunsDemo(t *testing.T) {
	dir := t.TempDir()
	rest := freeAddr(t)
	stdout, stderr, stop, done := runBg(t, "dev", "--rest", rest, "--plugin-path", pluginDir, "--dir", dir, "--log-level", "WARN")
	waitFor(t, "the banner", done, stderr, func() bool { return strings.Contains(stdout.String(), "Output file:") })
	for _, want := range []string{"http://" + rest, filepath.Join(dir, demoOutputFile), "curl -s 'http://" + rest + "/connectors?expand=status'"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, stdout)
		}
	}
	waitFor(t, "demo records in the output file", done, stderr, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, demoOutputFile))
		return bytes.Count(b, []byte("\n")) >= 3
	})
	b, _ := os.ReadFile(filepath.Join(dir, demoOutputFile))
	first, _, _ := bytes.Cut(b, []byte("\n"))
	var order map[string]any
	if err := json.Unmarshal(first, &order); err != nil || order["orderid"] == nil {
		t.Fatalf("first output line %q: %v", first, err)
	}
	var st map[string]struct {
		Status struct {
			Connector struct{ State string } `json:"connector"`
		} `json:"status"`
	}
	getJSON(t, "http://"+rest+"/connectors?expand=status", &st)
	if st[demoSourceName].Status.Connector.State != "RUNNING" || st[demoSinkName].Status.Connector.State != "RUNNING" {
		t.Fatalf("statuses %+v", st)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d; output:\n%s", code, stderr)
	}
}

func TestDevWithoutPluginsSaysWhatIsMissing(t *testing.T) {
	empty := t.TempDir()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"dev", "--rest", freeAddr(t), "--plugin-path", empty}, &out, &errb)
	if code != exitConnector || !strings.Contains(errb.String(), "make build") || !strings.Contains(errb.String(), demoSourceClass) {
		t.Fatalf("exit %d; stderr:\n%s", code, errb.String())
	}
	// Without the demo, the same worker starts fine.
	stdout, stderr, stop, done := runBg(t, "dev", "--demo=false", "--rest", freeAddr(t), "--plugin-path", empty)
	waitFor(t, "the banner", done, stderr, func() bool { return strings.Contains(stdout.String(), "Sluice dev is running") })
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// checkRESTCompat replays what Kafka's connect_rest_test.py expects of the
// file connectors: validate answers exactly the framework's keys plus the
// connector's own, with no error; the config comes back as submitted; task
// configs carry task.class.
func checkRESTCompat(t *testing.T, base, in string) {
	t.Helper()
	common := []string{"name", "connector.class", "tasks.max", "key.converter", "value.converter", "header.converter",
		"transforms", "config.action.reload", "errors.retry.timeout", "errors.retry.delay.max.ms", "errors.tolerance",
		"errors.log.enable", "errors.log.include.messages", "predicates", "tasks.max.enforce"}
	cases := []struct {
		plugin string
		config map[string]string
		extra  []string
	}{
		{"FileStreamSource", map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "name": "v", "topic": "t", "file": in},
			[]string{"batch.size", "topic", "file", "topic.creation.groups", "exactly.once.support", "transaction.boundary", "transaction.boundary.interval.ms", "offsets.storage.topic"}},
		{"FileStreamSink", map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "name": "v", "topics": "t", "file": in},
			[]string{"topics", "topics.regex", "file", "errors.deadletterqueue.topic.name", "errors.deadletterqueue.topic.replication.factor", "errors.deadletterqueue.context.headers.enable"}},
	}
	for _, c := range cases {
		body, _ := json.Marshal(c.config)
		req, _ := http.NewRequest("PUT", base+"/connector-plugins/"+c.plugin+"/config/validate", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var infos struct {
			ErrorCount int `json:"error_count"`
			Configs    []struct {
				Definition *struct {
					Name string `json:"name"`
				} `json:"definition"`
			} `json:"configs"`
		}
		if err := json.Unmarshal(raw, &infos); err != nil || resp.StatusCode != 200 {
			t.Fatalf("validate %s: %d %v %s", c.plugin, resp.StatusCode, err, raw)
		}
		var got []string
		for _, ci := range infos.Configs {
			if ci.Definition != nil {
				got = append(got, ci.Definition.Name)
			}
		}
		want := append(append([]string{}, common...), c.extra...)
		slices.Sort(got)
		slices.Sort(want)
		if infos.ErrorCount != 0 || !slices.Equal(got, want) {
			t.Fatalf("validate %s: error_count %d\n got %v\nwant %v", c.plugin, infos.ErrorCount, got, want)
		}
	}
	var cfg map[string]string
	getJSON(t, base+"/connectors/src/config", &cfg)
	if len(cfg) != 4 || cfg["name"] != "src" || cfg["connector.class"] != "FileStreamSource" || cfg["file"] != in {
		t.Fatalf("config as stored: %v", cfg)
	}
	var tasks []struct {
		ID struct {
			Connector string
			Task      int
		} `json:"id"`
		Config map[string]string `json:"config"`
	}
	getJSON(t, base+"/connectors/src/tasks", &tasks)
	if len(tasks) != 1 || tasks[0].ID.Connector != "src" || tasks[0].Config["task.class"] != "org.apache.kafka.connect.file.FileStreamSourceTask" {
		t.Fatalf("tasks %+v", tasks)
	}
}

func TestSelfCommand(t *testing.T) {
	for arg0, want := range map[string]string{
		"sluice":                 "sluice",
		"":                       "sluice",
		"bin/sluice":             "bin/sluice",
		"/opt/sluice/bin/sluice": "/opt/sluice/bin/sluice",
	} {
		if got := selfCommand(arg0); got != want {
			t.Errorf("selfCommand(%q) = %q, want %q", arg0, got, want)
		}
	}
}

// The revision `make build` links in wins over Go's build info (off where
// GOFLAGS has -buildvcs=false), and shows in the version line.
func TestCommitFromLinker(t *testing.T) {
	old := Commit
	t.Cleanup(func() { Commit = old })
	Commit = "0123abc"
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "(0123abc)") || commit() != "0123abc" {
		t.Fatalf("version: %d %q, commit %q", code, out.String(), commit())
	}
}

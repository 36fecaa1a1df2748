package e2e

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// withName is cfg plus "name", what the API must echo.
func withName(cfg map[string]string, name string) map[string]string {
	out := maps.Clone(cfg)
	out["name"] = name
	return out
}

// POST /connectors: 201 with Location and {name, config, tasks, type};
// classes resolve by full name, simple name and alias and are stored as
// written; data moves for each.
func TestCreateResolvesClasses(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})

	classes := []string{"FileStreamSource", "FileStreamSourceConnector", "org.apache.kafka.connect.file.FileStreamSourceConnector"}
	for i, class := range classes {
		name := "src" + string(rune('a'+i))
		in := e.dir + "/" + name + ".txt"
		lines := writeLines(t, in, name, 0, 20)
		cfg := map[string]string{"connector.class": class, "file": in, "topic": "t-" + name}
		r := e.request("POST", "/connectors", map[string]any{"name": name, "config": cfg})
		if r.code != 201 {
			t.Fatalf("create with %s: %s", class, r)
		}
		if loc := r.header.Get("Location"); loc != e.url+"/connectors/"+name {
			t.Fatalf("Location %q", loc)
		}
		var info connectorInfo
		strict(t, r.body, &info)
		want := connectorInfo{Name: name, Config: withName(cfg, name), Tasks: []taskID{{name, 0}}, Type: "source"}
		if !equalInfo(info, want) {
			t.Fatalf("create with %s answered %+v, want %+v", class, info, want)
		}
		var got map[string]string
		strict(t, e.must("GET", "/connectors/"+name+"/config", nil, 200), &got)
		if got["connector.class"] != class || !maps.Equal(got, withName(cfg, name)) {
			t.Fatalf("stored config %v", got)
		}
		strict(t, e.must("GET", "/connectors/"+name, nil, 200), &info)
		if !equalInfo(info, want) {
			t.Fatalf("GET connector %+v", info)
		}
		e.waitTopic("t-"+name, lines)
	}

	// A sink by its alias, and its data in its file.
	out := e.dir + "/out.txt"
	info := e.create("snk", map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "t-srca"})
	if info.Type != "sink" || info.Config["connector.class"] != "FileStreamSink" {
		t.Fatalf("sink info %+v", info)
	}
	waitFile(t, out, fileLines(t, e.dir+"/srca.txt"))
	st := e.waitStatus("snk", "RUNNING:RUNNING")
	if st.Type != "sink" || st.Name != "snk" || st.Connector.WorkerID != e.workerID() || st.Tasks[0].WorkerID != e.workerID() {
		t.Fatalf("sink status %+v (worker %s)", st, e.workerID())
	}

	// GET /connectors and its expansions.
	var names []string
	e.mustJSON("GET", "/connectors", nil, 200, &names)
	if !slices.Equal(names, []string{"snk", "srca", "srcb", "srcc"}) {
		t.Fatalf("connectors %v", names)
	}
	type expanded struct {
		Status *status        `json:"status,omitempty"`
		Info   *connectorInfo `json:"info,omitempty"`
	}
	for _, q := range []string{"?expand=status", "?expand=info", "?expand=status&expand=info", "?expand=info&expand=bogus", "?expand=bogus"} {
		var m map[string]expanded
		strict(t, e.must("GET", "/connectors"+q, nil, 200), &m)
		if !slices.Equal(slices.Sorted(maps.Keys(m)), names) {
			t.Fatalf("%s: keys %v", q, slices.Sorted(maps.Keys(m)))
		}
		for n, x := range m {
			wantStatus, wantInfo := strings.Contains(q, "=status"), strings.Contains(q, "=info")
			if (x.Status != nil) != wantStatus || (x.Info != nil) != wantInfo {
				t.Fatalf("%s: %s has status %v info %v", q, n, x.Status != nil, x.Info != nil)
			}
			if x.Status != nil && (x.Status.Name != n || x.Status.Connector.State != "RUNNING" || len(x.Status.Tasks) != 1) {
				t.Fatalf("%s: status of %s %+v", q, n, x.Status)
			}
			if x.Info != nil && (x.Info.Name != n || x.Info.Config["name"] != n || len(x.Info.Tasks) != 1) {
				t.Fatalf("%s: info of %s %+v", q, n, x.Info)
			}
		}
	}
}

func equalInfo(a, b connectorInfo) bool {
	return a.Name == b.Name && a.Type == b.Type && maps.Equal(a.Config, b.Config) && slices.Equal(a.Tasks, b.Tasks)
}

// POST /connectors errors: 409 for a duplicate, 400 listing the validation
// errors (nothing is created), 400 for a name mismatch or no class, 500
// for a class no plugin serves.
func TestCreateErrors(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	in := e.dir + "/in.txt"
	writeLines(t, in, "x", 0, 1)
	cfg := map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "dup"}
	e.create("dup", cfg)
	e.mustFail("POST", "/connectors", map[string]any{"name": "dup", "config": cfg}, 409, "Connector dup already exists")
	// Validation comes first, as in Kafka: an invalid config is a 400 even
	// for a name that exists.
	e.mustFail("POST", "/connectors", map[string]any{"name": "dup", "config": map[string]string{"connector.class": "FileStreamSource"}}, 400,
		`Missing required configuration "topic" which has no default value.`)
	// Even with another config: the first one stays.
	e.mustFail("POST", "/connectors", map[string]any{"name": "dup", "config": map[string]string{"connector.class": "FileStreamSource", "topic": "other"}}, 409)
	var got map[string]string
	strict(t, e.must("GET", "/connectors/dup/config", nil, 200), &got)
	if !maps.Equal(got, withName(cfg, "dup")) {
		t.Fatalf("config after 409s: %v", got)
	}

	msg := e.mustFail("POST", "/connectors", map[string]any{"name": "bad", "config": map[string]string{
		"connector.class": "FileStreamSink", "file": in, "tasks.max": "0"}}, 400)
	want := "Connector configuration is invalid and contains the following 3 error(s):\n" +
		"Invalid value 0 for configuration tasks.max: Value must be at least 1\n" +
		"Must configure one of topics or topics.regex\n" +
		"Must configure one of topics or topics.regex\n" +
		"You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"
	if msg != want {
		t.Fatalf("invalid config message\n%q\nwant\n%q", msg, want)
	}
	e.mustFail("PUT", "/connectors/bad/config", map[string]string{"connector.class": "FileStreamSource", "batch.size": "-1"}, 400,
		"contains the following 2 error(s):", `Missing required configuration "topic" which has no default value.`,
		"Invalid value -1 for configuration batch.size: Value must be at least 1")
	e.mustFail("GET", "/connectors/bad", nil, 404, "Connector bad not found")

	e.mustFail("POST", "/connectors", map[string]any{"name": "a", "config": withName(cfg, "b")}, 400,
		"Connector name configuration (b) doesn't match connector name in the URL (a)")
	e.mustFail("PUT", "/connectors/a/config", withName(cfg, "b"), 400,
		"Connector name configuration (b) doesn't match connector name in the URL (a)")
	e.mustFail("POST", "/connectors", map[string]any{"name": "a", "config": map[string]string{"topic": "t"}}, 400,
		"Connector config {name=a, topic=t} contains no connector type")
	e.mustFail("POST", "/connectors", map[string]any{"name": "a", "config": map[string]string{"connector.class": "FileStreamSorce"}}, 500,
		"Failed to find any class that implements Connector and which name matches FileStreamSorce", "FileStreamSource")

	var names []string
	e.mustJSON("GET", "/connectors", nil, 200, &names)
	if !slices.Equal(names, []string{"dup"}) {
		t.Fatalf("connectors %v", names)
	}
}

// initial_state (KIP-980): RUNNING, PAUSED and STOPPED show in the status,
// and a connector created paused or stopped moves no data until resumed;
// as in Kafka Connect, neither has tasks before that.
func TestInitialState(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	for _, c := range []struct{ name, state, status string }{
		{"run", "RUNNING", "RUNNING:RUNNING"},
		{"paused", "PAUSED", "PAUSED:"},
		{"stopped", "STOPPED", "STOPPED:"},
		{"lower", "paused", "PAUSED:"},
	} {
		in := e.dir + "/" + c.name + ".txt"
		lines := writeLines(t, in, c.name, 0, 10)
		cfg := map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "is-" + c.name}
		var info connectorInfo
		strict(t, e.must("POST", "/connectors", map[string]any{"name": c.name, "config": cfg, "initial_state": c.state}, 201), &info)
		if !maps.Equal(info.Config, withName(cfg, c.name)) {
			t.Fatalf("%s: config %v", c.name, info.Config)
		}
		e.waitStatus(c.name, c.status)
		if c.status == "RUNNING:RUNNING" {
			e.waitTopic("is-"+c.name, lines)
			continue
		}
		if c.status != "RUNNING:RUNNING" {
			var tasks []taskInfo
			strict(t, e.must("GET", "/connectors/"+c.name+"/tasks", nil, 200), &tasks)
			// A paused connector's own process runs; a stopped one's not.
			pids := e.pids(c.name)
			_, connProc := pids["connector"]
			if len(tasks) != 0 || len(pids) > 1 || connProc != (c.status == "PAUSED:") {
				t.Fatalf("%s: tasks %v, processes %v", c.name, tasks, pids)
			}
		}
		time.Sleep(time.Second)
		if n := e.endOffset("is-" + c.name); n != 0 {
			t.Fatalf("%s: %d records written while %s", c.name, n, c.state)
		}
		e.must("PUT", "/connectors/"+c.name+"/resume", nil, 202)
		e.waitStatus(c.name, "RUNNING:RUNNING")
		e.waitTopic("is-"+c.name, lines)
	}
}

// GET /connectors/{c}/config echoes the config exactly as submitted plus
// name: PASSWORD values and ${provider:path:key} placeholders as written,
// odd keys and blanks kept; task configs keep the placeholder too.
func TestConfigEchoedAsSubmitted(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	cfg := map[string]string{
		"connector.class": "io.sluice.test.SecretSource",
		"topic":           "${file:/etc/kafka/topics.properties:topic}",
		"secret":          "${file:/x:y}",
		"other.secret":    "hunter2",
		"not.a.setting":   "  padded value  ",
		"empty":           "",
		"unicode.ключ":    "grüße & <tags>",
	}
	raw := e.must("POST", "/connectors", map[string]any{"name": "sec", "config": cfg}, 201)
	if !strings.Contains(string(raw), `"grüße & <tags>"`) {
		t.Fatalf("answer escapes the value: %s", raw)
	}
	var info connectorInfo
	strict(t, raw, &info)
	if !maps.Equal(info.Config, withName(cfg, "sec")) {
		t.Fatalf("create answered config %v", info.Config)
	}
	var got map[string]string
	strict(t, e.must("GET", "/connectors/sec/config", nil, 200), &got)
	if !maps.Equal(got, withName(cfg, "sec")) {
		t.Fatalf("GET config %v\nwant %v", got, withName(cfg, "sec"))
	}
	e.waitStatus("sec", "RUNNING:RUNNING")
	var tasks []taskInfo
	strict(t, e.must("GET", "/connectors/sec/tasks", nil, 200), &tasks)
	if len(tasks) != 1 || tasks[0].Config["secret"] != "${file:/x:y}" || tasks[0].Config["other.secret"] != "hunter2" ||
		// SecretSource declares no task class: task.class falls back to it.
		tasks[0].Config["task.class"] != "io.sluice.test.SecretSource" {
		t.Fatalf("tasks %+v", tasks)
	}

	// With name given in the config too, nothing changes.
	e.mustJSON("PUT", "/connectors/sec/config", withName(cfg, "sec"), 200, &info)
	strict(t, e.must("GET", "/connectors/sec/config", nil, 200), &got)
	if !maps.Equal(got, withName(cfg, "sec")) {
		t.Fatalf("GET config after PUT %v", got)
	}
}

// PUT /connectors/{c}/config creates (201, Location) or updates (200), and
// the tasks restart with the new config; PATCH merges, null removes a key.
func TestPutAndPatchConfig(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	inA, inB := e.dir+"/a.txt", e.dir+"/b.txt"
	out1, out2 := e.dir+"/out1.txt", e.dir+"/out2.txt"
	linesA := writeLines(t, inA, "a", 0, 30)

	srcCfg := map[string]string{"connector.class": "FileStreamSource", "file": inA, "topic": "pp", "batch.size": "7"}
	r := e.request("PUT", "/connectors/src/config", srcCfg)
	if r.code != 201 || r.header.Get("Location") != e.url+"/connectors/src" {
		t.Fatalf("PUT create: %s Location %q", r, r.header.Get("Location"))
	}
	var info connectorInfo
	strict(t, r.body, &info)
	if !equalInfo(info, connectorInfo{Name: "src", Config: withName(srcCfg, "src"), Tasks: []taskID{{"src", 0}}, Type: "source"}) {
		t.Fatalf("PUT create answered %+v", info)
	}
	sinkCfg := map[string]string{"connector.class": "FileStreamSink", "file": out1, "topics": "pp"}
	e.must("PUT", "/connectors/snk/config", sinkCfg, 201)
	waitFile(t, out1, linesA)
	sinkPid := e.waitPids("snk", "connector", "task 0")["task 0"]

	// PUT an update: the sink task restarts (a new process) writing to the
	// new file; the old file gets nothing more.
	sinkCfg["file"] = out2
	r = e.request("PUT", "/connectors/snk/config", sinkCfg)
	if r.code != 200 || r.header.Get("Location") != "" {
		t.Fatalf("PUT update: %s Location %q", r, r.header.Get("Location"))
	}
	strict(t, r.body, &info)
	if !maps.Equal(info.Config, withName(sinkCfg, "snk")) {
		t.Fatalf("PUT update answered %+v", info)
	}
	e.waitStatus("snk", "RUNNING:RUNNING")
	if p := e.waitPids("snk", "connector", "task 0")["task 0"]; p == sinkPid {
		t.Fatalf("the sink task still runs in process %d after the update", p)
	}
	more := writeLines(t, inA, "a", 30, 40)
	waitUntil(t, "the new lines in the new file", 20*time.Second, func() bool {
		got := fileLines(t, out2)
		return len(got) > 0 && slices.Equal(got[len(got)-len(more):], more)
	})
	if got := fileLines(t, out1); !slices.Equal(got, linesA) {
		t.Fatalf("old file changed after the update: %s", abbrev(got))
	}

	// PATCH: file changes, batch.size goes (null), the rest stays.
	linesB := writeLines(t, inB, "b", 0, 25)
	var patched connectorInfo
	strict(t, e.must("PATCH", "/connectors/src/config", map[string]any{"file": inB, "batch.size": nil}, 200), &patched)
	wantCfg := map[string]string{"connector.class": "FileStreamSource", "file": inB, "topic": "pp", "name": "src"}
	if !maps.Equal(patched.Config, wantCfg) {
		t.Fatalf("PATCH answered %v, want %v", patched.Config, wantCfg)
	}
	var got map[string]string
	strict(t, e.must("GET", "/connectors/src/config", nil, 200), &got)
	if !maps.Equal(got, wantCfg) {
		t.Fatalf("config after PATCH %v", got)
	}
	var tasks []taskInfo
	strict(t, e.must("GET", "/connectors/src/tasks", nil, 200), &tasks)
	if len(tasks) != 1 || tasks[0].Config["file"] != inB || tasks[0].Config["batch.size"] != "" {
		t.Fatalf("task config after PATCH %+v", tasks)
	}
	e.waitTopic("pp", append(append(slices.Clone(linesA), more...), linesB...))

	e.mustFail("PATCH", "/connectors/nope/config", map[string]any{"file": "x"}, 404, "Connector nope not found")
	e.mustFail("PATCH", "/connectors/src/config", map[string]any{"name": "other"}, 400,
		"Connector name configuration (other) doesn't match connector name in the URL (src)")
	// An invalid update is refused and changes nothing.
	e.mustFail("PATCH", "/connectors/src/config", map[string]any{"topic": nil}, 400, `Missing required configuration "topic"`)
	strict(t, e.must("GET", "/connectors/src/config", nil, 200), &got)
	if !maps.Equal(got, wantCfg) {
		t.Fatalf("config after a refused PATCH %v", got)
	}
	e.waitStatus("src", "RUNNING:RUNNING")
}

// DELETE /connectors/{c}: 204, then 404 everywhere, and its plugin
// processes are gone.
func TestDelete(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	in, out := e.dir+"/in.txt", e.dir+"/out.txt"
	writeLines(t, in, "d", 0, 5)
	e.create("del-src", map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "del"})
	e.create("del-snk", map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "del"})
	e.create("del-paused", map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "del2"})
	e.must("PUT", "/connectors/del-paused/pause", nil, 202)
	waitFile(t, out, fileLines(t, in))
	e.waitPids("del-src", "connector", "task 0")
	e.waitPids("del-snk", "connector", "task 0")

	for _, n := range []string{"del-src", "del-snk", "del-paused"} {
		r := e.request("DELETE", "/connectors/"+n, nil)
		if r.code != 204 || len(r.body) != 0 {
			t.Fatalf("DELETE %s: %s", n, r)
		}
		e.waitPids(n)
		e.mustFail("GET", "/connectors/"+n, nil, 404, "Connector "+n+" not found")
		e.mustFail("GET", "/connectors/"+n+"/config", nil, 404, "Connector "+n+" not found")
		e.mustFail("GET", "/connectors/"+n+"/status", nil, 404, "No status found for connector "+n)
		e.mustFail("GET", "/connectors/"+n+"/tasks", nil, 404, "Connector "+n+" not found")
		e.mustFail("DELETE", "/connectors/"+n, nil, 404, "Connector "+n+" not found")
	}
	var names []string
	e.mustJSON("GET", "/connectors", nil, 200, &names)
	if len(names) != 0 {
		t.Fatalf("connectors after delete: %v", names)
	}
	// Nothing reads the file any more.
	before := e.endOffset("del")
	writeLines(t, in, "d", 5, 10)
	time.Sleep(500 * time.Millisecond)
	if after := e.endOffset("del"); after != before {
		t.Fatalf("a deleted source still produces: %d -> %d", before, after)
	}
}

// Status and task status: state, worker_id, type; a killed task is FAILED
// with a trace; GET tasks lists the task configs with task.class.
func TestStatusAndTasks(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	cfg := map[string]string{"connector.class": "CounterSource", "topic": "counts", "tasks.max": "2", "interval.ms": "5"}
	e.create("cnt", cfg)
	st := e.waitStatus("cnt", "RUNNING:RUNNING,RUNNING")
	if st.Name != "cnt" || st.Type != "source" || st.Connector.WorkerID != e.workerID() || st.Connector.Trace != "" {
		t.Fatalf("status %+v", st)
	}
	for i, ts := range st.Tasks {
		if ts.ID != i || ts.WorkerID != e.workerID() || ts.Trace != "" {
			t.Fatalf("task %d status %+v", i, ts)
		}
	}
	var ts taskState
	strict(t, e.must("GET", "/connectors/cnt/tasks/1/status", nil, 200), &ts)
	if ts != (taskState{ID: 1, State: "RUNNING", WorkerID: e.workerID()}) {
		t.Fatalf("task status %+v", ts)
	}
	e.mustFail("GET", "/connectors/cnt/tasks/7/status", nil, 404, "No status found for task cnt-7")
	e.mustFail("GET", "/connectors/nope/tasks/0/status", nil, 404, "No status found for task nope-0")
	e.mustFail("GET", "/connectors/nope/status", nil, 404, "No status found for connector nope")

	var tasks []taskInfo
	strict(t, e.must("GET", "/connectors/cnt/tasks", nil, 200), &tasks)
	if len(tasks) != 2 {
		t.Fatalf("tasks %+v", tasks)
	}
	for i, ti := range tasks {
		want := withName(cfg, "cnt")
		want["task.class"] = "io.sluice.examples.CounterSourceTask"
		want["task.index"] = string(rune('0' + i))
		if ti.ID != (taskID{"cnt", i}) || !maps.Equal(ti.Config, want) {
			t.Fatalf("task %d: %+v\nwant config %v", i, ti, want)
		}
	}
	e.mustFail("GET", "/connectors/nope/tasks", nil, 404, "Connector nope not found")

	// A task whose process dies is FAILED with a trace; the other runs on.
	e.killTask("cnt", 1)
	st = e.waitStatus("cnt", "RUNNING:RUNNING,FAILED")
	if st.Tasks[1].Trace == "" || st.Tasks[1].WorkerID != e.workerID() || st.Tasks[0].Trace != "" {
		t.Fatalf("status after the kill %+v", st)
	}
	strict(t, e.must("GET", "/connectors/cnt/tasks/1/status", nil, 200), &ts)
	if ts.State != "FAILED" || ts.Trace != st.Tasks[1].Trace {
		t.Fatalf("failed task status %+v", ts)
	}
	t.Logf("trace of the killed task: %q", firstLine(ts.Trace))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// GET / and GET /health: the worker answers 503 "starting" until it is
// marked ready, then 200; GET / names the version, the commit and the
// Kafka cluster the worker is attached to.
func TestServerInfoAndHealth(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{notReady: true})

	var h struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	strict(t, e.must("GET", "/health", nil, 503), &h)
	if h.Status != "starting" || !strings.HasPrefix(h.Message, "Worker is still starting up.") {
		t.Fatalf("health while starting: %+v", h)
	}
	e.w.MarkReady()
	strict(t, e.must("GET", "/health", nil, 200), &h)
	if h.Status != "healthy" || h.Message != "Worker has completed startup and is ready to handle requests." {
		t.Fatalf("health when ready: %+v", h)
	}

	var info struct {
		Version        string `json:"version"`
		Commit         string `json:"commit"`
		KafkaClusterID string `json:"kafka_cluster_id"`
	}
	strict(t, e.must("GET", "/", nil, 200), &info)
	cl := e.kafka()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != testVersion || info.Commit != testCommit || info.KafkaClusterID == "" ||
		info.KafkaClusterID != clusterID || info.KafkaClusterID != md.Cluster {
		t.Fatalf("GET / = %+v; kfake's cluster id is %q", info, md.Cluster)
	}
	// GET routes answer HEAD, without a body.
	if r := e.request("HEAD", "/", nil); r.code != 200 || len(r.body) != 0 {
		t.Fatalf("HEAD /: %s", r)
	}
}

// Unknown routes, wrong methods and bad bodies are answered with Kafka's
// error body, never a 5xx.
func TestRoutesAndBodies(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})

	e.mustFail("GET", "/no/such/route", nil, 404, "HTTP 404 Not Found")
	e.mustFail("GET", "/connectors/x/tasks-config", nil, 404, "Connector x not found") // deprecated, still served
	e.mustFail("GET", "/connectors/x/tasks/notanumber/status", nil, 404)
	r := e.request("DELETE", "/connector-plugins", nil)
	checkError(t, "DELETE /connector-plugins", r, 405, "HTTP 405 Method Not Allowed")
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Fatalf("405 Allow header %q", allow)
	}
	e.mustFail("POST", "/connectors/x/pause", nil, 405, "HTTP 405 Method Not Allowed")
	e.mustFail("PATCH", "/", nil, 405)

	cfg := map[string]string{"connector.class": "FileStreamSource", "topic": "t"}
	bad := []struct {
		method, path string
		body         any
		msg          string
	}{
		{"POST", "/connectors", `{"name": "a", "config": {`, "Malformed JSON"},
		{"POST", "/connectors", `{"name": "a", "config": {}} trailing`, "Malformed JSON"},
		{"POST", "/connectors", ``, "Request body is empty"},
		{"POST", "/connectors", `[1, 2]`, "must be a JSON object"},
		{"POST", "/connectors", map[string]any{"name": 5, "config": cfg}, "name"},
		{"POST", "/connectors", map[string]any{"name": "a", "config": "x"}, "config"},
		{"POST", "/connectors", map[string]any{"name": "a", "config": map[string]any{"connector.class": "FileStreamSource", "tasks.max": []int{1}}}, "tasks.max"},
		{"POST", "/connectors", map[string]any{"name": "a", "config": cfg, "initial_state": "SLEEPING"}, "SLEEPING"},
		{"POST", "/connectors", map[string]any{"name": "a", "config": cfg, "surprise": true}, "surprise"},
		{"POST", "/connectors", map[string]any{"config": cfg}, "name"},
		{"PUT", "/connectors/a/config", `{"topic": [true]}`, "topic"},
		{"PUT", "/connectors/a/config", `"just a string"`, "must be a JSON object"},
		{"PATCH", "/connectors/a/config", `{"topic": {"n": 1}}`, "topic"},
		{"PATCH", "/connectors/a/offsets", `{"offsets": 3}`, "offsets"},
		{"PUT", "/connector-plugins/FileStreamSource/config/validate", `{"connector.class": ["x"]}`, "connector.class"},
		{"PUT", "/admin/loggers/root", `{"level": [3]}`, "level"},
		{"PUT", "/admin/loggers/root", `{`, "Malformed JSON"},
	}
	for _, b := range bad {
		e.mustFail(b.method, b.path, b.body, 400, b.msg)
	}
	// Larger than the 32 MiB limit.
	big := `{"name":"big","config":{"connector.class":"FileStreamSource","pad":"` + strings.Repeat("x", 33<<20) + `"}}`
	e.mustFail("POST", "/connectors", big, 400, "larger than the limit")

	// None of it created anything, and the worker still answers.
	var names []string
	e.mustJSON("GET", "/connectors", nil, 200, &names)
	if len(names) != 0 {
		t.Fatalf("connectors after bad requests: %v", names)
	}
}

// GET /connector-plugins lists connectors (sinks, then sources) by default;
// with connectorsOnly=false the converters and header converters too. Each
// plugin's settings are listed, the connector's own first.
func TestConnectorPlugins(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})

	type pluginInfo struct {
		Class   string `json:"class"`
		Type    string `json:"type"`
		Version string `json:"version,omitempty"`
	}
	var ps []pluginInfo
	strict(t, e.must("GET", "/connector-plugins", nil, 200), &ps)
	var classes []string
	for _, p := range ps {
		classes = append(classes, p.Class+" "+p.Type)
	}
	want := []string{
		"io.sluice.connect.datagen.NoopSinkConnector sink",
		"org.apache.kafka.connect.file.FileStreamSinkConnector sink",
		"io.sluice.connect.datagen.DatagenConnector source",
		"io.sluice.examples.CounterSource source",
		"io.sluice.test.HangingStartSource source",
		"io.sluice.test.HangingValidateSource source",
		"io.sluice.test.SecretSource source",
		"org.apache.kafka.connect.file.FileStreamSourceConnector source",
	}
	if !slices.Equal(classes, want) {
		t.Fatalf("connector plugins\n got %v\nwant %v", classes, want)
	}
	for _, p := range ps {
		if p.Version == "" {
			t.Fatalf("plugin without a version: %+v", p)
		}
	}
	var same []pluginInfo
	strict(t, e.must("GET", "/connector-plugins?connectorsOnly=true", nil, 200), &same)
	if !slices.Equal(same, ps) {
		t.Fatalf("connectorsOnly=true differs from the default: %v", same)
	}

	var all []pluginInfo
	strict(t, e.must("GET", "/connector-plugins?connectorsOnly=false", nil, 200), &all)
	if !slices.Equal(all[:len(ps)], ps) {
		t.Fatalf("connectorsOnly=false does not start with the connectors: %v", all)
	}
	byType := map[string][]string{}
	for _, p := range all[len(ps):] {
		byType[p.Type] = append(byType[p.Type], p.Class)
	}
	for _, c := range []struct{ class, typ string }{
		{"org.apache.kafka.connect.json.JsonConverter", "converter"},
		{"org.apache.kafka.connect.storage.StringConverter", "converter"},
		{"org.apache.kafka.connect.converters.ByteArrayConverter", "converter"},
		{"org.apache.kafka.connect.storage.StringConverter", "header_converter"},
		{"org.apache.kafka.connect.storage.SimpleHeaderConverter", "header_converter"},
	} {
		if !slices.Contains(byType[c.typ], c.class) {
			t.Errorf("connectorsOnly=false lacks %s %s; has %v", c.typ, c.class, byType)
		}
	}
	for _, c := range []struct{ class, typ string }{
		{"org.apache.kafka.connect.transforms.InsertField$Value", "transformation"},
		{"org.apache.kafka.connect.transforms.RegexRouter", "transformation"},
		{"org.apache.kafka.connect.transforms.predicates.TopicNameMatches", "predicate"},
	} {
		if !slices.Contains(byType[c.typ], c.class) {
			t.Errorf("connectorsOnly=false lacks %s %s; has %v", c.typ, c.class, byType[c.typ])
		}
	}
	for typ := range byType {
		switch typ {
		case "converter", "header_converter", "transformation", "predicate":
		default:
			t.Errorf("unexpected plugin type %q: %v", typ, byType[typ])
		}
	}

	// Plugin config: the connector's own keys first, then the framework's.
	type keyInfo struct {
		Name          string   `json:"name"`
		Type          string   `json:"type"`
		Required      bool     `json:"required"`
		DefaultValue  *string  `json:"default_value"`
		Importance    string   `json:"importance"`
		Documentation string   `json:"documentation"`
		Group         *string  `json:"group"`
		Order         int      `json:"order"`
		Width         string   `json:"width"`
		DisplayName   string   `json:"display_name"`
		Dependents    []string `json:"dependents"`
	}
	for _, name := range []string{"FileStreamSource", "FileStreamSourceConnector", "org.apache.kafka.connect.file.FileStreamSourceConnector"} {
		var keys []keyInfo
		strict(t, e.must("GET", "/connector-plugins/"+name+"/config", nil, 200), &keys)
		var names []string
		for _, k := range keys {
			names = append(names, k.Name)
		}
		if len(names) < 6 || !slices.Equal(names[:3], []string{"file", "topic", "batch.size"}) ||
			!slices.Contains(names, "connector.class") || !slices.Contains(names, "transforms") {
			t.Fatalf("%s config keys %v", name, names)
		}
		bs := keys[2]
		if bs.Type != "INT" || bs.Required || bs.DefaultValue == nil || *bs.DefaultValue != "2000" || bs.Importance != "LOW" {
			t.Fatalf("%s batch.size %+v", name, bs)
		}
		if topic := keys[1]; topic.Type != "STRING" || !topic.Required || topic.DefaultValue != nil {
			t.Fatalf("%s topic %+v", name, topic)
		}
	}
	var secret []keyInfo
	strict(t, e.must("GET", "/connector-plugins/SecretSource/config", nil, 200), &secret)
	if secret[1].Name != "secret" || secret[1].Type != "PASSWORD" {
		t.Fatalf("SecretSource keys %+v", secret[:3])
	}
	var jsonConv []keyInfo
	strict(t, e.must("GET", "/connector-plugins/JsonConverter/config", nil, 200), &jsonConv)
	if !slices.ContainsFunc(jsonConv, func(k keyInfo) bool { return k.Name == "schemas.enable" && k.Type == "BOOLEAN" }) {
		t.Fatalf("JsonConverter config %+v", jsonConv)
	}
	e.mustFail("GET", "/connector-plugins/NoSuchPlugin/config", nil, 404, "Unknown plugin NoSuchPlugin.")
}

// validateKeys is what connect_rest_test.py expects validation of the file
// connectors to list: the framework's keys of the type plus the
// connector's own.
var (
	validateCommon = []string{"name", "connector.class", "tasks.max", "key.converter", "value.converter", "header.converter",
		"transforms", "config.action.reload", "errors.retry.timeout", "errors.retry.delay.max.ms", "errors.tolerance",
		"errors.log.enable", "errors.log.include.messages", "predicates", "tasks.max.enforce"}
	validateSource = append(slices.Clone(validateCommon), "batch.size", "topic", "file", "topic.creation.groups",
		"exactly.once.support", "transaction.boundary", "transaction.boundary.interval.ms", "offsets.storage.topic")
	validateSink = append(slices.Clone(validateCommon), "topics", "topics.regex", "file",
		"errors.deadletterqueue.topic.name", "errors.deadletterqueue.topic.replication.factor", "errors.deadletterqueue.context.headers.enable")
)

type configInfos struct {
	Name       string   `json:"name"`
	ErrorCount int      `json:"error_count"`
	Groups     []string `json:"groups"`
	Configs    []struct {
		Definition *struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"definition"`
		Value *struct {
			Name              string   `json:"name"`
			Value             *string  `json:"value"`
			RecommendedValues []string `json:"recommended_values"`
			Errors            []string `json:"errors"`
			Visible           bool     `json:"visible"`
		} `json:"value"`
	} `json:"configs"`
}

// defined lists the names of the defined keys, sorted.
func (c configInfos) defined() []string {
	var out []string
	for _, ci := range c.Configs {
		if ci.Definition != nil {
			out = append(out, ci.Definition.Name)
		}
	}
	slices.Sort(out)
	return out
}

// errorsOf maps each key with errors to them.
func (c configInfos) errorsOf() map[string][]string {
	out := map[string][]string{}
	for _, ci := range c.Configs {
		if ci.Value != nil && len(ci.Value.Errors) > 0 {
			out[ci.Value.Name] = ci.Value.Errors
		}
	}
	return out
}

func (c configInfos) value(name string) *string {
	for _, ci := range c.Configs {
		if ci.Value != nil && ci.Value.Name == name {
			return ci.Value.Value
		}
	}
	return nil
}

func validate(e *env, plugin string, cfg map[string]string) configInfos {
	e.t.Helper()
	var ci configInfos
	e.mustJSON("PUT", "/connector-plugins/"+plugin+"/config/validate", cfg, 200, &ci)
	return ci
}

// PUT /connector-plugins/{p}/config/validate: Kafka's key sets for the file
// connectors, errors on the keys they belong to, hidden passwords, and the
// 400s for a class that does not match the path or is missing.
func TestValidate(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	in := e.dir + "/in.txt"

	for _, c := range []struct {
		plugin string
		cfg    map[string]string
		want   []string
	}{
		{"FileStreamSource", map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "name": "v", "topic": "t", "file": in}, validateSource},
		{"FileStreamSourceConnector", map[string]string{"connector.class": "FileStreamSource", "name": "v", "topic": "t", "file": in}, validateSource},
		{"FileStreamSink", map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "name": "v", "topics": "t", "file": in}, validateSink},
	} {
		ci := validate(e, c.plugin, c.cfg)
		want := slices.Sorted(slices.Values(c.want))
		if ci.ErrorCount != 0 || !slices.Equal(ci.defined(), want) {
			t.Fatalf("validate %s: error_count %d %v\n got %v\nwant %v", c.plugin, ci.ErrorCount, ci.errorsOf(), ci.defined(), want)
		}
		if ci.Name != "org.apache.kafka.connect.file."+strings.TrimSuffix(c.plugin, "Connector")+"Connector" {
			t.Fatalf("validate %s: name %q", c.plugin, ci.Name)
		}
		if !slices.Contains(ci.Groups, "Common") || !slices.Contains(ci.Groups, "Error Handling") {
			t.Fatalf("validate %s: groups %v", c.plugin, ci.Groups)
		}
	}

	// Errors sit on their keys and are counted. An unparsable value then
	// fails its validator as null, two errors as in Kafka's ConfigDef.
	ci := validate(e, "FileStreamSource", map[string]string{"connector.class": "FileStreamSource", "batch.size": "0", "tasks.max": "x"})
	errs := ci.errorsOf()
	if ci.ErrorCount != 5 || len(errs["topic"]) != 1 || len(errs["batch.size"]) != 1 || len(errs["name"]) != 1 ||
		!slices.Equal(errs["tasks.max"], []string{"Invalid value x for configuration tasks.max: Not a number of type INT",
			"Invalid value null for configuration tasks.max: Value must be non-null"}) {
		t.Fatalf("validate with errors: error_count %d %v", ci.ErrorCount, errs)
	}
	ci = validate(e, "FileStreamSink", map[string]string{"connector.class": "FileStreamSink", "name": "s"})
	if ci.ErrorCount != 2 || ci.errorsOf()["topics"][0] != "Must configure one of topics or topics.regex" {
		t.Fatalf("sink without topics: %d %v", ci.ErrorCount, ci.errorsOf())
	}

	// A PASSWORD value never comes back, resolved or not.
	ci = validate(e, "SecretSource", map[string]string{"connector.class": "SecretSource", "name": "s", "topic": "t",
		"secret": "${file:/etc/secrets.properties:pw}", "other.secret": "hunter2"})
	if ci.ErrorCount != 0 || ci.value("secret") == nil || *ci.value("secret") != "[hidden]" || *ci.value("other.secret") != "[hidden]" {
		t.Fatalf("passwords in validate: %d %v secret=%v", ci.ErrorCount, ci.errorsOf(), ci.value("secret"))
	}
	if raw := string(e.must("PUT", "/connector-plugins/SecretSource/config/validate", map[string]string{"connector.class": "SecretSource", "secret": "hunter2"}, 200)); strings.Contains(raw, "hunter2") {
		t.Fatalf("validate answer shows the secret: %s", raw)
	}

	e.mustFail("PUT", "/connector-plugins/FileStreamSource/config/validate",
		map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "topics": "t"}, 400,
		"Included connector type org.apache.kafka.connect.file.FileStreamSinkConnector does not match request type FileStreamSource")
	e.mustFail("PUT", "/connector-plugins/FileStreamSink/config/validate", map[string]string{"topics": "t"}, 400,
		"Connector config {topics=t} contains no connector type")
	e.mustFail("PUT", "/connector-plugins/NoSuchConnector/config/validate", map[string]string{"connector.class": "NoSuchConnector"}, 500,
		"Failed to find any class that implements Connector and which name matches NoSuchConnector")
}

type loggerLevel struct {
	Level        string `json:"level"`
	LastModified *int64 `json:"last_modified"`
}

// /admin/loggers: the connector and task namespaces exist, levels change
// at run time, reach the task's logger in the worker and the level of the
// task's next plugin process.
func TestLoggers(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	in, out := e.dir+"/in.txt", e.dir+"/out.txt"
	writeLines(t, in, "l", 0, 10)
	e.create("src", map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "logs"})
	e.create("snk", map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "logs"})
	e.waitStatus("snk", "RUNNING:RUNNING")
	waitFile(t, out, fileLinesOrDie(t, in))

	var all map[string]loggerLevel
	strict(t, e.must("GET", "/admin/loggers", nil, 200), &all)
	for _, n := range []string{"root", "sluice", "sluice.herder", "sluice.connector.snk", "sluice.task.snk-0", "sluice.task.src-0"} {
		l, ok := all[n]
		if !ok || l.Level != "INFO" || l.LastModified != nil {
			t.Fatalf("logger %s: %+v (present %v) in %v", n, l, ok, all)
		}
	}
	var one loggerLevel
	strict(t, e.must("GET", "/admin/loggers/sluice.task.snk-0", nil, 200), &one)
	if one.Level != "INFO" || one.LastModified != nil {
		t.Fatalf("task logger before: %+v", one)
	}
	if strings.Contains(e.logs.String(), "partitions assigned") {
		t.Fatal("debug lines logged at INFO")
	}

	before := time.Now().UnixMilli()
	var affected []string
	strict(t, e.must("PUT", "/admin/loggers/sluice.task.snk-0", map[string]string{"level": "DEBUG"}, 200), &affected)
	if !slices.Equal(affected, []string{"sluice.task.snk-0"}) {
		t.Fatalf("PUT task logger affected %v", affected)
	}
	strict(t, e.must("GET", "/admin/loggers/sluice.task.snk-0", nil, 200), &one)
	if one.Level != "DEBUG" || one.LastModified == nil || *one.LastModified < before {
		t.Fatalf("task logger after PUT: %+v", one)
	}
	strict(t, e.must("GET", "/admin/loggers/sluice.task.src-0", nil, 200), &one)
	if one.Level != "INFO" {
		t.Fatalf("another task's logger changed: %+v", one)
	}
	// The next run of the task logs at DEBUG in the worker, and its plugin
	// process is started at debug.
	e.must("POST", "/connectors/snk/tasks/0/restart", nil, 204)
	e.waitStatus("snk", "RUNNING:RUNNING")
	waitUntil(t, "a DEBUG line of the task", 10*time.Second, func() bool {
		for _, l := range strings.Split(e.logs.String(), "\n") {
			if strings.Contains(l, "[DEBUG]") && strings.Contains(l, "sluice.task.snk-0") && strings.Contains(l, "partitions assigned") {
				return true
			}
		}
		return false
	})
	pid := e.waitPids("snk", "connector", "task 0")["task 0"]
	if lvl := procEnv(t, pid, "SLUICE_LOG_LEVEL"); lvl != "debug" {
		t.Fatalf("task plugin started at log level %q", lvl)
	}
	if lvl := procEnv(t, e.pids("src")["task 0"], "SLUICE_LOG_LEVEL"); lvl != "info" {
		t.Fatalf("other task plugin at log level %q", lvl)
	}

	// A namespace reaches every logger below it.
	strict(t, e.must("PUT", "/admin/loggers/sluice.task", map[string]string{"level": "warn"}, 200), &affected)
	if !slices.Equal(affected, []string{"sluice.task", "sluice.task.snk-0", "sluice.task.src-0"}) {
		t.Fatalf("PUT sluice.task affected %v", affected)
	}
	strict(t, e.must("GET", "/admin/loggers/sluice.task.src-0", nil, 200), &one)
	if one.Level != "WARN" {
		t.Fatalf("src-0 after namespace PUT: %+v", one)
	}
	e.must("PUT", "/admin/loggers/sluice.herder?scope=cluster", map[string]string{"level": "ERROR"}, 204)
	strict(t, e.must("GET", "/admin/loggers/sluice.herder", nil, 200), &one)
	if one.Level != "ERROR" {
		t.Fatalf("herder after cluster-scope PUT: %+v", one)
	}

	e.mustFail("GET", "/admin/loggers/no.such.logger", nil, 404, "Logger no.such.logger not found.")
	e.mustFail("PUT", "/admin/loggers/root", map[string]string{"level": "LOUD"}, 404, "invalid log level 'LOUD'.")
	e.mustFail("PUT", "/admin/loggers/root", map[string]string{}, 400, "Desired 'level' parameter was not specified in request.")
}

func fileLinesOrDie(t *testing.T, path string) []string {
	t.Helper()
	l := fileLines(t, path)
	if len(l) == 0 {
		t.Fatalf("%s is empty", path)
	}
	return l
}

// procEnv reads one variable of a process's environment.
func procEnv(t *testing.T, pid int, name string) string {
	t.Helper()
	if pid == 0 {
		t.Fatal("no process")
	}
	for _, p := range plugins() {
		if p.pid != pid {
			continue
		}
		b, err := readEnviron(pid)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range strings.Split(b, "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v
			}
		}
		return ""
	}
	t.Fatalf("process %d is not a plugin of ours", pid)
	return ""
}

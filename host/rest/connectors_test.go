package rest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/host/herder"
)

func TestServerInfo(t *testing.T) {
	e := newEnv(t, Options{})
	e.do("GET", "/", "").expect(t, 200, `{"version":"4.0.0","commit":"0123456789abcdef","kafka_cluster_id":"fake-cluster"}`)
	r := e.do("HEAD", "/", "")
	if r.status != 200 || len(r.body) != 0 {
		t.Fatalf("HEAD / = %d %q", r.status, r.body)
	}
}

func TestListConnectors(t *testing.T) {
	e := newEnv(t, Options{})
	e.do("GET", "/connectors", "").expect(t, 200, `[]`)
	e.do("GET", "/connectors/", "").expect(t, 200, `[]`) // Jersey's trailing slash
	e.create("src", sourceConfig)
	e.create("sink", sinkConfig)
	e.do("GET", "/connectors", "").expect(t, 200, `["sink","src"]`)

	e.do("GET", "/connectors?expand=status", "").expect(t, 200, `{
		"sink":{"status":{"name":"sink","connector":{"state":"RUNNING","worker_id":"127.0.0.1:8083"},
			"tasks":[{"id":0,"state":"RUNNING","worker_id":"127.0.0.1:8083"},{"id":1,"state":"RUNNING","worker_id":"127.0.0.1:8083"}],"type":"sink"}},
		"src":{"status":{"name":"src","connector":{"state":"RUNNING","worker_id":"127.0.0.1:8083"},
			"tasks":[{"id":0,"state":"RUNNING","worker_id":"127.0.0.1:8083"}],"type":"source"}}}`)

	var both map[string]map[string]map[string]any
	r := e.do("GET", "/connectors?expand=info&expand=status", "")
	r.expect(t, 200, "")
	r.decode(t, &both)
	if len(both) != 2 || both["src"]["info"]["type"] != "source" || both["src"]["status"]["name"] != "src" ||
		both["sink"]["info"]["config"].(map[string]any)["topics"] != "lines" {
		t.Fatalf("expand=info&expand=status = %s", r.body)
	}
	e.do("GET", "/connectors?expand=nonsense", "").expect(t, 200, `{"sink":{},"src":{}}`)
}

func TestCreateConnector(t *testing.T) {
	e := newEnv(t, Options{})
	r := e.do("POST", "/connectors", `{"name":"  src ","config":`+sourceConfig+`}`)
	r.expect(t, http.StatusCreated, `{"name":"src","config":{"connector.class":"FileStreamSource","tasks.max":"1","file":"/tmp/in.txt","topic":"lines","name":"src"},
		"tasks":[{"connector":"src","task":0}],"type":"source"}`)
	if loc := r.header.Get("Location"); loc != e.url+"/connectors/src" {
		t.Fatalf("Location %q, want %q", loc, e.url+"/connectors/src")
	}

	t.Run("initial state is case-insensitive", func(t *testing.T) {
		e.do("POST", "/connectors", `{"name":"paused","config":`+sourceConfig+`,"initial_state":"paused"}`).expect(t, 201, "")
		e.do("GET", "/connectors/paused/status", "").expect(t, 200,
			`{"name":"paused","connector":{"state":"PAUSED","worker_id":"127.0.0.1:8083"},"tasks":[{"id":0,"state":"PAUSED","worker_id":"127.0.0.1:8083"}],"type":"source"}`)
		e.do("POST", "/connectors", `{"name":"stopped","config":`+sourceConfig+`,"initial_state":"Stopped"}`).expect(t, 201, "")
		e.do("GET", "/connectors/stopped/status", "").expect(t, 200,
			`{"name":"stopped","connector":{"state":"STOPPED","worker_id":"127.0.0.1:8083"},"tasks":[],"type":"source"}`)
	})
	t.Run("duplicate", func(t *testing.T) {
		e.do("POST", "/connectors", `{"name":"src","config":`+sourceConfig+`}`).expectError(t, 409, "Connector src already exists")
	})
	t.Run("name mismatch", func(t *testing.T) {
		e.do("POST", "/connectors", `{"name":"a","config":{"name":"b","connector.class":"FileStreamSource","topic":"t"}}`).
			expectError(t, 400, "Connector name configuration (b) doesn't match connector name in the URL (a)")
	})
	t.Run("invalid config", func(t *testing.T) {
		e.do("POST", "/connectors", `{"name":"bad","config":{"connector.class":"FileStreamSource","tasks.max":"0","topic":"t"}}`).
			expectError(t, 400, "Connector configuration is invalid and contains the following 1 error(s):\n"+
				"Invalid value 0 for configuration tasks.max: Value must be at least 1\n"+
				"You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`")
		e.do("POST", "/connectors", `{"name":"bad","config":{"topic":"t"}}`).
			expectError(t, 400, "Connector config {name=bad, topic=t} contains no connector type")
	})
	for name, tc := range map[string]struct{ body, msg string }{
		"malformed":       {`{"name":"x","config":{`, "Malformed JSON in the create request: unexpected end of input"},
		"syntax":          {`{"name":"x",,}`, "Malformed JSON in the create request at byte 13: invalid character ',' looking for beginning of object key string"},
		"not an object":   {`["x"]`, "The create request must be a JSON object, not array"},
		"null":            {`null`, "The create request must be a JSON object, not null"},
		"empty":           {``, "Request body is empty; the create request must be a JSON object"},
		"trailing data":   {`{"name":"x","config":{}} {}`, "Malformed JSON in the create request: unexpected data after the JSON object"},
		"unknown field":   {`{"name":"x","config":{},"tasks":[]}`, `Unrecognized field "tasks" in the create request: the fields are "name", "config" and "initial_state"`},
		"no name":         {`{"config":{}}`, `Field "name" of the create request is required`},
		"numeric name":    {`{"name":7,"config":{}}`, `Field "name" of the create request must be a string, not a number`},
		"no config":       {`{"name":"x"}`, `Field "config" of the create request is required`},
		"config array":    {`{"name":"x","config":[]}`, `Field "config" of the create request must be an object of strings, not an array`},
		"object value":    {`{"name":"x","config":{"tasks.max":{}}}`, `Value of "tasks.max" in "config" must be a string, not an object`},
		"null value":      {`{"name":"x","config":{"file":null}}`, `Connector config {name=x} contains no connector type`},
		"bad state":       {`{"name":"x","config":{},"initial_state":"RESUMED"}`, `Invalid initial_state "RESUMED": must be RUNNING, PAUSED or STOPPED`},
		"numeric state":   {`{"name":"x","config":{},"initial_state":1}`, `Field "initial_state" of the create request must be a string, not a number`},
		"object for name": {`{"name":{},"config":{}}`, `Field "name" of the create request must be a string, not an object`},
	} {
		t.Run(name, func(t *testing.T) {
			e.do("POST", "/connectors", tc.body).expectError(t, 400, tc.msg)
		})
	}
	e.do("GET", "/connectors", "").expect(t, 200, `["paused","src","stopped"]`)
}

func TestBodyLimit(t *testing.T) {
	e := newEnv(t, Options{MaxBodyBytes: 64})
	body := `{"name":"x","config":{"k":"` + strings.Repeat("v", 100) + `"}}`
	e.do("POST", "/connectors", body).expectError(t, 400, "Request body is larger than the limit of 64 bytes")
	e.do("GET", "/connectors", "").expect(t, 200, `[]`)
}

func TestGetConnectorAndConfig(t *testing.T) {
	e := newEnv(t, Options{})
	e.create("src", sourceConfig)
	e.do("GET", "/connectors/src", "").expect(t, 200, `{"name":"src","config":{"connector.class":"FileStreamSource","tasks.max":"1","file":"/tmp/in.txt","topic":"lines","name":"src"},
		"tasks":[{"connector":"src","task":0}],"type":"source"}`)
	e.do("GET", "/connectors/src/config", "").expect(t, 200, `{"connector.class":"FileStreamSource","tasks.max":"1","file":"/tmp/in.txt","topic":"lines","name":"src"}`)
	e.do("GET", "/connectors/nope", "").expectError(t, 404, "Connector nope not found")
	e.do("GET", "/connectors/nope/config", "").expectError(t, 404, "Connector nope not found")
}

// Connector names may hold spaces and (escaped) slashes.
func TestConnectorNamesAreUnescaped(t *testing.T) {
	e := newEnv(t, Options{})
	e.do("PUT", "/connectors/my%20conn/config", sourceConfig).expect(t, 201, "")
	e.do("PUT", "/connectors/a%2Fb/config", sourceConfig).expect(t, 201, "")
	e.do("GET", "/connectors", "").expect(t, 200, `["a/b","my conn"]`)
	r := e.do("GET", "/connectors/a%2Fb/config", "")
	r.expect(t, 200, "")
	if !strings.Contains(string(r.body), `"name":"a/b"`) {
		t.Fatalf("config of a/b: %s", r.body)
	}
	e.do("DELETE", "/connectors/my%20conn", "").expect(t, 204, "")
}

func TestPutConfig(t *testing.T) {
	e := newEnv(t, Options{})
	r := e.do("PUT", "/connectors/src/config", sourceConfig)
	r.expect(t, http.StatusCreated, "")
	if loc := r.header.Get("Location"); loc != e.url+"/connectors/src" {
		t.Fatalf("Location %q", loc)
	}
	r = e.do("PUT", "/connectors/src/config", `{"connector.class":"FileStreamSource","tasks.max":"3","topic":"other"}`)
	r.expect(t, http.StatusOK, `{"name":"src","config":{"connector.class":"FileStreamSource","tasks.max":"3","topic":"other","name":"src"},
		"tasks":[{"connector":"src","task":0},{"connector":"src","task":1},{"connector":"src","task":2}],"type":"source"}`)
	if r.header.Get("Location") != "" {
		t.Fatalf("an update answered a Location")
	}
	e.do("PUT", "/connectors/src/config", `{"name":"other","connector.class":"FileStreamSource","topic":"t"}`).
		expectError(t, 400, "Connector name configuration (other) doesn't match connector name in the URL (src)")
	e.do("PUT", "/connectors/src/config", `{"connector.class":"Nope","topic":"t"}`).expect(t, 400, "")
	e.do("PUT", "/connectors/src/config", `{"connector.class":"FileStreamSource","tasks.max":[3]}`).
		expectError(t, 400, `Value of "tasks.max" in the connector configuration must be a string, not an array`)
	e.do("PUT", "/connectors/src/config", `"text"`).expectError(t, 400, "The connector configuration must be a JSON object, not string")
	e.do("GET", "/connectors/src/config", "").expect(t, 200, `{"connector.class":"FileStreamSource","tasks.max":"3","topic":"other","name":"src"}`)
	// A number or a boolean is its text, as Jackson reads it into Kafka's
	// Map<String, String>: stored and echoed as a string.
	e.do("PUT", "/connectors/src/config", `{"connector.class":"FileStreamSource","tasks.max":2,"topic":"other","batch.size":1.5e3,"x":true}`).expect(t, http.StatusOK,
		`{"name":"src","config":{"connector.class":"FileStreamSource","tasks.max":"2","topic":"other","batch.size":"1.5e3","x":"true","name":"src"},
		"tasks":[{"connector":"src","task":0},{"connector":"src","task":1}],"type":"source"}`)
}

func TestPatchConfig(t *testing.T) {
	e := newEnv(t, Options{})
	e.create("src", sourceConfig)
	e.do("PATCH", "/connectors/src/config", `{"file":null,"batch.size":"10","tasks.max":"2"}`).expect(t, 200,
		`{"name":"src","config":{"connector.class":"FileStreamSource","tasks.max":"2","topic":"lines","batch.size":"10","name":"src"},
		"tasks":[{"connector":"src","task":0},{"connector":"src","task":1}],"type":"source"}`)
	e.do("PATCH", "/connectors/nope/config", `{"a":"b"}`).expectError(t, 404, "Connector nope not found")
	e.do("PATCH", "/connectors/src/config", `{"connector.class":null}`).
		expectError(t, 400, "Connector config {batch.size=10, name=src, tasks.max=2, topic=lines} contains no connector type")
	e.do("PATCH", "/connectors/src/config", `{"name":"x"}`).
		expectError(t, 400, "Connector name configuration (x) doesn't match connector name in the URL (src)")
	e.do("PATCH", "/connectors/src/config", `{"tasks.max":[true]}`).
		expectError(t, 400, `Value of "tasks.max" in the configuration patch must be a string or null, not an array`)
	e.do("GET", "/connectors/src/config", "").expect(t, 200, `{"connector.class":"FileStreamSource","tasks.max":"2","topic":"lines","batch.size":"10","name":"src"}`)
	e.do("PATCH", "/connectors/src/config", `{"tasks.max":1}`).expect(t, 200,
		`{"name":"src","config":{"connector.class":"FileStreamSource","tasks.max":"1","topic":"lines","batch.size":"10","name":"src"},
		"tasks":[{"connector":"src","task":0}],"type":"source"}`)
}

func TestDeleteConnector(t *testing.T) {
	e := newEnv(t, Options{})
	e.create("src", sourceConfig)
	r := e.do("DELETE", "/connectors/src", "")
	r.expect(t, http.StatusNoContent, "")
	if len(r.body) != 0 {
		t.Fatalf("204 with a body: %q", r.body)
	}
	e.do("DELETE", "/connectors/src", "").expectError(t, 404, "Connector src not found")
	e.do("GET", "/connectors", "").expect(t, 200, `[]`)
}

func TestStatusAndTasks(t *testing.T) {
	e := newEnv(t, Options{})
	e.create("sink", sinkConfig)
	e.h.SetTaskState("sink", 1, herder.StateFailed, "java.lang.RuntimeException: boom")
	e.do("GET", "/connectors/sink/status", "").expect(t, 200, `{"name":"sink","connector":{"state":"RUNNING","worker_id":"127.0.0.1:8083"},
		"tasks":[{"id":0,"state":"RUNNING","worker_id":"127.0.0.1:8083"},{"id":1,"state":"FAILED","worker_id":"127.0.0.1:8083","trace":"java.lang.RuntimeException: boom"}],"type":"sink"}`)
	e.do("GET", "/connectors/sink/tasks/1/status", "").expect(t, 200, `{"id":1,"state":"FAILED","worker_id":"127.0.0.1:8083","trace":"java.lang.RuntimeException: boom"}`)
	e.do("GET", "/connectors/sink/tasks/0/status", "").expect(t, 200, `{"id":0,"state":"RUNNING","worker_id":"127.0.0.1:8083"}`)
	e.do("GET", "/connectors/sink/tasks/5/status", "").expectError(t, 404, "No status found for task sink-5")
	e.do("GET", "/connectors/sink/tasks/x/status", "").expectError(t, 404, "HTTP 404 Not Found")
	e.do("GET", "/connectors/nope/status", "").expectError(t, 404, "No status found for connector nope")

	e.do("GET", "/connectors/sink/tasks", "").expect(t, 200, `[
		{"id":{"connector":"sink","task":0},"config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","tasks.max":"2","file":"/tmp/out.txt","topics":"lines","name":"sink","task.class":"org.apache.kafka.connect.file.FileStreamSinkTask"}},
		{"id":{"connector":"sink","task":1},"config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","tasks.max":"2","file":"/tmp/out.txt","topics":"lines","name":"sink","task.class":"org.apache.kafka.connect.file.FileStreamSinkTask"}}]`)
	e.do("GET", "/connectors/nope/tasks", "").expectError(t, 404, "Connector nope not found")
	// Deprecated in Kafka 3.7, removed in 4.0; still served.
	e.do("GET", "/connectors/sink/tasks-config", "").expect(t, 200, `{
		"sink-0":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","tasks.max":"2","file":"/tmp/out.txt","topics":"lines","name":"sink","task.class":"org.apache.kafka.connect.file.FileStreamSinkTask"},
		"sink-1":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","tasks.max":"2","file":"/tmp/out.txt","topics":"lines","name":"sink","task.class":"org.apache.kafka.connect.file.FileStreamSinkTask"}}`)
	e.do("GET", "/connectors/nope/tasks-config", "").expectError(t, 404, "Connector nope not found")
}

func TestRestart(t *testing.T) {
	e := newEnv(t, Options{})
	e.create("sink", sinkConfig)

	r := e.do("POST", "/connectors/sink/restart", "")
	r.expect(t, http.StatusNoContent, "")
	if e.h.Restarts("sink") != 1 || e.h.Restarts("sink-0") != 0 {
		t.Fatalf("legacy restart: connector %d, task %d restarts", e.h.Restarts("sink"), e.h.Restarts("sink-0"))
	}
	// Jersey reads anything but "true" as false: still the legacy restart.
	e.do("POST", "/connectors/sink/restart?includeTasks=yes&onlyFailed=0", "").expect(t, http.StatusNoContent, "")

	e.do("POST", "/connectors/sink/restart?includeTasks=true", "").expect(t, http.StatusAccepted, `{"name":"sink",
		"connector":{"state":"RESTARTING","worker_id":"127.0.0.1:8083"},
		"tasks":[{"id":0,"state":"RESTARTING","worker_id":"127.0.0.1:8083"},{"id":1,"state":"RESTARTING","worker_id":"127.0.0.1:8083"}],"type":"sink"}`)

	// Nothing failed: a no-op plan.
	e.do("POST", "/connectors/sink/restart?includeTasks=true&onlyFailed=true", "").expect(t, http.StatusAccepted, `{"name":"sink",
		"connector":{"state":"RUNNING","worker_id":"127.0.0.1:8083"},
		"tasks":[{"id":0,"state":"RUNNING","worker_id":"127.0.0.1:8083"},{"id":1,"state":"RUNNING","worker_id":"127.0.0.1:8083"}],"type":"sink"}`)

	e.h.SetTaskState("sink", 1, herder.StateFailed, "boom")
	e.do("POST", "/connectors/sink/restart?includeTasks=TRUE&onlyFailed=true", "").expect(t, http.StatusAccepted, `{"name":"sink",
		"connector":{"state":"RUNNING","worker_id":"127.0.0.1:8083"},
		"tasks":[{"id":0,"state":"RUNNING","worker_id":"127.0.0.1:8083"},{"id":1,"state":"RESTARTING","worker_id":"127.0.0.1:8083","trace":"boom"}],"type":"sink"}`)
	if got := e.h.Restarts("sink-1"); got != 2 {
		t.Fatalf("task 1 restarted %d times, want 2", got)
	}
	e.do("GET", "/connectors/sink/tasks/1/status", "").expect(t, 200, `{"id":1,"state":"RUNNING","worker_id":"127.0.0.1:8083"}`)

	e.do("POST", "/connectors/nope/restart", "").expectError(t, 404, "Unknown connector: nope")
	e.do("POST", "/connectors/nope/restart?onlyFailed=true", "").expectError(t, 404, "Unknown connector: nope")

	e.do("POST", "/connectors/sink/tasks/0/restart", "").expect(t, http.StatusNoContent, "")
	if got := e.h.Restarts("sink-0"); got != 2 {
		t.Fatalf("task 0 restarted %d times, want 2", got)
	}
	e.do("POST", "/connectors/sink/tasks/7/restart", "").expectError(t, 404, "Unknown task: sink-7")
	e.do("POST", "/connectors/nope/tasks/0/restart", "").expectError(t, 404, "Unknown connector: nope")
}

func TestPauseResumeStop(t *testing.T) {
	e := newEnv(t, Options{})
	e.create("src", sourceConfig)
	state := func() string {
		var st herder.ConnectorStateInfo
		r := e.do("GET", "/connectors/src/status", "")
		r.expect(t, 200, "")
		r.decode(t, &st)
		var b strings.Builder
		b.WriteString(st.Connector.State)
		for _, task := range st.Tasks {
			b.WriteString("/" + task.State)
		}
		return b.String()
	}
	e.do("PUT", "/connectors/src/pause", "").expect(t, http.StatusAccepted, "")
	if s := state(); s != "PAUSED/PAUSED" {
		t.Fatalf("after pause: %s", s)
	}
	e.do("PUT", "/connectors/src/pause", "").expect(t, http.StatusAccepted, "") // idempotent
	e.do("PUT", "/connectors/src/resume", "").expect(t, http.StatusAccepted, "")
	if s := state(); s != "RUNNING/RUNNING" {
		t.Fatalf("after resume: %s", s)
	}
	e.do("PUT", "/connectors/src/stop", "").expect(t, http.StatusNoContent, "")
	if s := state(); s != "STOPPED" {
		t.Fatalf("after stop: %s", s)
	}
	e.do("PUT", "/connectors/src/resume", "").expect(t, http.StatusAccepted, "")
	if s := state(); s != "RUNNING/RUNNING" {
		t.Fatalf("resume after stop: %s", s)
	}
	for _, op := range []string{"pause", "resume", "stop"} {
		e.do("PUT", "/connectors/nope/"+op, "").expectError(t, 404, "Unknown connector nope")
	}
}

func TestActiveTopics(t *testing.T) {
	e := newEnv(t, Options{})
	e.create("src", sourceConfig)
	e.do("GET", "/connectors/src/topics", "").expect(t, 200, `{"src":{"topics":[]}}`)
	e.h.SetActiveTopics("src", "lines", "more")
	e.do("GET", "/connectors/src/topics", "").expect(t, 200, `{"src":{"topics":["lines","more"]}}`)
	e.do("PUT", "/connectors/src/topics/reset", "").expect(t, http.StatusAccepted, "")
	e.do("GET", "/connectors/src/topics", "").expect(t, 200, `{"src":{"topics":[]}}`)
	// Kafka reads the topics from the status store without asking whether
	// the connector exists: an unknown one has none, and resetting them is
	// accepted.
	e.do("GET", "/connectors/nope/topics", "").expect(t, 200, `{"nope":{"topics":[]}}`)
	e.do("PUT", "/connectors/nope/topics/reset", "").expect(t, http.StatusAccepted, "")
	e.do("GET", "/connectors", "").expect(t, 200, `["src"]`)

	e.h.SetTopicTracking(true, false)
	e.do("PUT", "/connectors/src/topics/reset", "").expectError(t, 403, "Topic tracking reset is disabled.")
	e.h.SetTopicTracking(false, false)
	e.do("GET", "/connectors/src/topics", "").expectError(t, 403, "Topic tracking is disabled.")
	e.do("PUT", "/connectors/src/topics/reset", "").expectError(t, 403, "Topic tracking is disabled.")
}

// The internal endpoints of distributed mode are not served.
func TestInternalEndpointsAreNotServed(t *testing.T) {
	e := newEnv(t, Options{})
	e.create("src", sourceConfig)
	e.do("POST", "/connectors/src/tasks", `[]`).expectError(t, 404, "HTTP 404 Not Found")
	e.do("PUT", "/connectors/src/fence", "").expectError(t, 404, "HTTP 404 Not Found")
}

func TestUnknownRouteAndMethod(t *testing.T) {
	e := newEnv(t, Options{})
	e.do("GET", "/nope", "").expectError(t, 404, "HTTP 404 Not Found")
	e.do("GET", "/connectors/a/b/c/d", "").expectError(t, 404, "HTTP 404 Not Found")
	r := e.do("DELETE", "/connector-plugins", "")
	r.expectError(t, 405, "HTTP 405 Method Not Allowed")
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Fatalf("405 without an Allow listing GET: %q", allow)
	}
	e.do("POST", "/connectors/x/config", "{}").expectError(t, 405, "HTTP 405 Method Not Allowed")
}

// Nothing in the REST layer resolves placeholders or hides values: the
// herder stores configs as given, and they come back byte for byte.
func TestConfigValuesPassThroughUntouched(t *testing.T) {
	e := newEnv(t, Options{})
	cfg := `{"connector.class":"FileStreamSource","topic":"t","file":"${file:/etc/secrets.properties:path}",
		"connection.password":"s3cr3t<&>","connection.url":"jdbc:x://h/db?a=1&b=<2>","unicode":"é\u2028"}`
	e.do("POST", "/connectors", `{"name":"p","config":`+cfg+`}`).expect(t, 201, "")
	r := e.do("GET", "/connectors/p/config", "")
	r.expect(t, 200, "")
	for _, s := range []string{`"${file:/etc/secrets.properties:path}"`, `"s3cr3t<&>"`, `"jdbc:x://h/db?a=1&b=<2>"`} {
		if !strings.Contains(string(r.body), s) {
			t.Errorf("config answer lacks %s verbatim: %s", s, r.body)
		}
	}
	if !jsonEqual(r.body, []byte(strings.Replace(cfg, "{", `{"name":"p",`, 1))) {
		t.Fatalf("config changed: %s", r.body)
	}
}

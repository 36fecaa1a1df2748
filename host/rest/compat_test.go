package rest

import (
	"net/http"
	"testing"
	"time"
)

// TestConnectRestCompat replays the request/answer pairs of Kafka's
// tests/kafkatest/tests/connect/connect_rest_test.py that need no real
// plugin: the empty list, the plugin list, validation, create, duplicate
// create, config read back exactly (placeholders intact), tasks, update,
// delete. The exact key sets that validate returns for FileStreamSource and
// FileStreamSink need the real plugins; the end-to-end suite checks those.
func TestConnectRestCompat(t *testing.T) {
	e := newEnv(t, Options{})

	e.do("GET", "/connectors", "").expect(t, 200, `[]`)

	var plugins []map[string]string
	r := e.do("GET", "/connector-plugins", "")
	r.expect(t, 200, "")
	r.decode(t, &plugins)
	classes := map[string]bool{}
	for _, p := range plugins {
		classes[p["class"]] = true
	}
	for _, want := range []string{"org.apache.kafka.connect.file.FileStreamSourceConnector", "org.apache.kafka.connect.file.FileStreamSinkConnector"} {
		if !classes[want] {
			t.Fatalf("plugin list lacks %s: %s", want, r.body)
		}
	}

	source := `{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","tasks.max":"1",
		"topic":"test","file":"${file:/mnt/connect/connect-external-configs.properties:input.file}","name":"local-file-source"}`
	sink := `{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","tasks.max":"1",
		"topics":"test","file":"/mnt/connect/connect-file-output.txt","name":"local-file-sink"}`
	for plugin, cfg := range map[string]string{"FileStreamSourceConnector": source, "FileStreamSinkConnector": sink} {
		var v struct {
			ErrorCount int `json:"error_count"`
		}
		r := e.do("PUT", "/connector-plugins/"+plugin+"/config/validate", cfg)
		r.expect(t, 200, "")
		r.decode(t, &v)
		if v.ErrorCount != 0 {
			t.Fatalf("validate %s: %s", plugin, r.body)
		}
	}

	e.do("POST", "/connectors", `{"name":"local-file-source","config":`+source+`}`).expect(t, http.StatusCreated, "")
	e.do("POST", "/connectors", `{"name":"local-file-sink","config":`+sink+`}`).expect(t, http.StatusCreated, "")
	e.do("POST", "/connectors", `{"name":"local-file-sink","config":`+sink+`}`).expectError(t, http.StatusConflict, "Connector local-file-sink already exists")

	e.do("GET", "/connectors", "").expect(t, 200, `["local-file-sink","local-file-source"]`)
	e.do("GET", "/connectors/local-file-source/config", "").expect(t, 200, source)
	e.do("GET", "/connectors/local-file-sink/config", "").expect(t, 200, sink)
	e.do("GET", "/connectors/local-file-source", "").expect(t, 200,
		`{"name":"local-file-source","config":`+source+`,"tasks":[{"connector":"local-file-source","task":0}],"type":"source"}`)

	var tasks []struct {
		ID     map[string]any    `json:"id"`
		Config map[string]string `json:"config"`
	}
	r = e.do("GET", "/connectors/local-file-source/tasks", "")
	r.expect(t, 200, "")
	r.decode(t, &tasks)
	if len(tasks) != 1 || tasks[0].ID["connector"] != "local-file-source" || tasks[0].ID["task"] == nil ||
		tasks[0].Config["task.class"] == "" || tasks[0].Config["file"] != "${file:/mnt/connect/connect-external-configs.properties:input.file}" {
		t.Fatalf("tasks: %s", r.body)
	}

	updated := `{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","tasks.max":"1",
		"topics":"test","file":"/mnt/connect/connect-file-output-2.txt","name":"local-file-sink"}`
	e.do("PUT", "/connectors/local-file-sink/config", updated).expect(t, http.StatusOK, "")
	e.do("GET", "/connectors/local-file-sink/config", "").expect(t, 200, updated)

	e.do("DELETE", "/connectors/local-file-source", "").expect(t, http.StatusNoContent, "")
	e.do("DELETE", "/connectors/local-file-sink", "").expect(t, http.StatusNoContent, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := e.do("GET", "/connectors", "")
		if r.status == 200 && jsonEqual(r.body, []byte(`[]`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("connectors not gone after delete: %s", r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.do("GET", "/connectors/local-file-source", "").expectError(t, 404, "Connector local-file-source not found")
}

package e2e

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConnectRestCompat replays what Kafka's system test
// tests/kafkatest/tests/connect/connect_rest_test.py expects of the file
// connectors, with JsonConverter (schemas on) as its worker template has:
// an empty list; the file connectors among the plugins; validation with no
// error and exactly Kafka's key sets; both created; a duplicate refused
// with 409; info and config as submitted (a ${file:...} placeholder
// intact); the task list; data moving to the output file, and moving from
// the new input file after a PUT; both deleted and the list empty within
// 10 s.
func TestConnectRestCompat(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{props: map[string]string{
		"key.converter":   "org.apache.kafka.connect.json.JsonConverter",
		"value.converter": "org.apache.kafka.connect.json.JsonConverter",
	}})
	input, input2, output := e.dir+"/connect.input", e.dir+"/connect.input2", e.dir+"/connect.output"
	const (
		sourceClass = "org.apache.kafka.connect.file.FileStreamSourceConnector"
		sinkClass   = "org.apache.kafka.connect.file.FileStreamSinkConnector"
		placeholder = "${file:/mnt/connect/connect-file-external.properties:topic.external}"
	)

	var names []string
	e.mustJSON("GET", "/connectors", nil, 200, &names)
	if names == nil || len(names) != 0 {
		t.Fatalf("connectors at start: %v", names)
	}
	var plugins []struct {
		Class string `json:"class"`
	}
	e.mustJSON("GET", "/connector-plugins", nil, 200, &plugins)
	var classes []string
	for _, p := range plugins {
		classes = append(classes, p.Class)
	}
	if !slices.Contains(classes, sourceClass) || !slices.Contains(classes, sinkClass) {
		t.Fatalf("plugins %v lack the file connectors", classes)
	}

	// The connector files of the test, as _config_dict_from_props reads
	// them, plus a setting holding a config provider placeholder.
	source := map[string]string{"name": "local-file-source", "connector.class": sourceClass, "tasks.max": "1",
		"file": input, "topic": "test", "external.note": placeholder}
	sink := map[string]string{"name": "local-file-sink", "connector.class": sinkClass, "tasks.max": "1",
		"file": output, "topics": "test"}
	for _, c := range []struct {
		class string
		cfg   map[string]string
		keys  []string
	}{{sourceClass, source, validateSource}, {sinkClass, sink, validateSink}} {
		ci := validate(e, c.class, c.cfg)
		if ci.Name != c.class || ci.ErrorCount != 0 {
			t.Fatalf("validate %s: name %s, %d errors %v", c.class, ci.Name, ci.ErrorCount, ci.errorsOf())
		}
		if got, want := ci.defined(), slices.Sorted(slices.Values(c.keys)); !slices.Equal(got, want) {
			t.Fatalf("validate %s keys\n got %v\nwant %v", c.class, got, want)
		}
	}

	for _, c := range []map[string]string{source, sink} {
		e.must("POST", "/connectors", map[string]any{"name": c["name"], "config": c}, 201)
	}
	waitUntil(t, "both connectors listed", 10*time.Second, func() bool {
		e.mustJSON("GET", "/connectors", nil, 200, &names)
		return slices.Equal(names, []string{"local-file-sink", "local-file-source"})
	})
	inputs := []string{"foo", "bar", "baz"}
	appendFile(t, input, strings.Join(inputs, "\n")+"\n")
	waitFile(t, output, inputs)
	// What travelled through Kafka is JsonConverter's envelope.
	for i, v := range e.topicValues("test") {
		if want := `{"schema":{"type":"string","optional":false},"payload":"` + inputs[i] + `"}`; v != want {
			t.Fatalf("record %d is %s, want %s", i, v, want)
		}
	}

	e.mustFail("POST", "/connectors", map[string]any{"name": source["name"], "config": source}, 409,
		"Connector local-file-source already exists")

	for _, c := range []struct {
		cfg map[string]string
		typ string
	}{{source, "source"}, {sink, "sink"}} {
		name := c.cfg["name"]
		var info connectorInfo
		strict(t, e.must("GET", "/connectors/"+name, nil, 200), &info)
		if !equalInfo(info, connectorInfo{Name: name, Config: c.cfg, Tasks: []taskID{{name, 0}}, Type: c.typ}) {
			t.Fatalf("info of %s: %+v", name, info)
		}
		var cfg map[string]string
		strict(t, e.must("GET", "/connectors/"+name+"/config", nil, 200), &cfg)
		if !maps.Equal(cfg, c.cfg) {
			t.Fatalf("config of %s: %v", name, cfg)
		}
	}

	// Task configs: the file connectors hand their tasks their own config;
	// the worker adds task.class, Kafka's task class names (and the sink's
	// topics).
	for _, c := range []struct {
		cfg       map[string]string
		taskClass string
	}{{source, "org.apache.kafka.connect.file.FileStreamSourceTask"}, {sink, "org.apache.kafka.connect.file.FileStreamSinkTask"}} {
		var tasks []taskInfo
		strict(t, e.must("GET", "/connectors/"+c.cfg["name"]+"/tasks", nil, 200), &tasks)
		want := maps.Clone(c.cfg)
		want["task.class"] = c.taskClass
		if len(tasks) != 1 || tasks[0].ID != (taskID{c.cfg["name"], 0}) || !maps.Equal(tasks[0].Config, want) {
			t.Fatalf("tasks of %s: %+v\nwant config %v", c.cfg["name"], tasks, want)
		}
		if tasks[0].Config["external.note"] != placeholder && c.cfg["name"] == source["name"] {
			t.Fatalf("task config resolved the placeholder: %v", tasks[0].Config)
		}
	}

	// PUT the source onto the second file: its lines reach the output.
	source2 := maps.Clone(source)
	source2["file"] = input2
	e.must("PUT", "/connectors/local-file-source/config", source2, 200)
	longer := []string{"foo", "bar", "baz", "razz", "ma", "tazz"}
	appendFile(t, input2, strings.Join(longer, "\n")+"\n")
	waitFile(t, output, append(slices.Clone(inputs), longer...))

	e.must("DELETE", "/connectors/local-file-source", nil, 204)
	e.must("DELETE", "/connectors/local-file-sink", nil, 204)
	waitUntil(t, "the connectors to disappear", 10*time.Second, func() bool {
		e.mustJSON("GET", "/connectors", nil, 200, &names)
		return len(names) == 0
	})
	e.waitPids("local-file-source")
	e.waitPids("local-file-sink")
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

package storage

import (
	"testing"

	"github.com/sluice-io/sluice/host/convert"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// TestRecordGoldens pins every key and value shape of the three internal
// topics to the strings of kafka-connect-anchor.md §2.2–2.4 (placeholders
// there filled with concrete values).
func TestRecordGoldens(t *testing.T) {
	for _, g := range []struct{ name, got, want string }{
		{"connector key", string(connectorKey("my-conn")), "connector-my-conn"},
		{"connector value", string(encodeProperties(map[string]string{"k": "v", "connector.class": "C"})), `{"properties":{"connector.class":"C","k":"v"}}`},
		{"empty properties", string(encodeProperties(nil)), `{"properties":{}}`},
		{"task key", string(taskKey(TaskID{"my-conn", 7})), "task-my-conn-7"},
		{"task value", string(encodeProperties(map[string]string{"task.class": "T"})), `{"properties":{"task.class":"T"}}`},
		{"commit key", string(commitKey("my-conn")), "commit-my-conn"},
		{"commit value", string(encodeCommit(3)), `{"tasks":3}`},
		{"target-state key", string(targetStateKey("my-conn")), "target-state-my-conn"},
		{"target STARTED", string(encodeTargetState(TargetStarted)), `{"state":"STARTED","state.v2":"STARTED"}`},
		{"target PAUSED", string(encodeTargetState(TargetPaused)), `{"state":"PAUSED","state.v2":"PAUSED"}`},
		{"target STOPPED", string(encodeTargetState(TargetStopped)), `{"state":"PAUSED","state.v2":"STOPPED"}`},
		{"tasks-fencing key", string(taskCountKey("my-conn")), "tasks-fencing-my-conn"},
		{"tasks-fencing value", string(encodeTaskCount(4)), `{"task-count":4}`},
		{"session key", string(encodeSessionKey(SessionKey{Key: []byte("secret-key-bytes"), Algorithm: "HmacSHA256", CreationTimestamp: 1700000000000})),
			`{"key":"c2VjcmV0LWtleS1ieXRlcw==","algorithm":"HmacSHA256","creation-timestamp":1700000000000}`},
		{"restart key", string(restartKey("my-conn")), "restart-connector-my-conn"},
		{"restart value", string(encodeRestart(RestartRequest{Connector: "x", IncludeTasks: true, OnlyFailed: true})), `{"include-tasks":true,"only-failed":true}`},
		{"logger key", string(loggerKey("org.apache.kafka.connect.runtime")), "logger-cluster-org.apache.kafka.connect.runtime"},
		{"logger value", string(encodeLoggerLevel("DEBUG")), `{"level":"DEBUG"}`},
		{"offset key", string(OffsetKey("local-file-source", []byte(`{"filename":"/data/in.txt"}`))), `["local-file-source",{"filename":"/data/in.txt"}]`},
		{"connector status key", string(connectorStatusKey("my-conn")), "status-connector-my-conn"},
		{"task status key", string(taskStatusKey(TaskID{"my-conn", 0})), "status-task-my-conn-0"},
		{"status value", string(encodeStatus(Status{State: "RUNNING", WorkerID: "host:8083", Generation: 5})),
			`{"state":"RUNNING","trace":null,"worker_id":"host:8083","generation":5}`},
		{"status value with trace", string(encodeStatus(Status{State: "FAILED", Trace: "e\n\tat x", WorkerID: "host:8083", Generation: 5})),
			`{"state":"FAILED","trace":"e\n\tat x","worker_id":"host:8083","generation":5}`},
		{"topic status key", string(topicStatusKey("my-conn", "orders")), "status-topic-orders:connector-my-conn"},
		{"client id", InternalClientID("connect-cluster", "", "configs"), "connect-cluster-configs"},
		{"client id with client.id", InternalClientID("g", "w1", "statuses"), "g-w1-statuses"},
		{"client id without group", InternalClientID("", "", "offsets"), "connect-offsets"},
		{"topic status value", string(encodeTopicStatus(TopicStatus{Topic: "orders", Connector: "my-conn", Task: 2, DiscoverTimestamp: 1700000000000})),
			`{"topic":{"name":"orders","connector":"my-conn","task":2,"discoverTimestamp":1700000000000}}`},
	} {
		if g.got != g.want {
			t.Errorf("%s: got %s, want %s", g.name, g.got, g.want)
		}
	}
}

// TestStringsAsJsonConverterWritesThem checks the hand-written writer
// against host/convert's JsonConverter (itself checked against Kafka's
// output) for strings that encoding/json would write differently.
func TestStringsAsJsonConverterWritesThem(t *testing.T) {
	jc := convert.NewJSONConverter(convert.JSONConfig{SchemasEnable: false})
	for _, s := range []string{
		"plain", `q"b\s/`, "\n\t\r\b\f", "\x00\x01\x1f\x7f", "<tag>&amp;", "é€😀", "\u2028\u2029", "bad\xffutf8", "",
	} {
		want, err := jc.FromConnectData("t", nil, data.StringSchema, s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: got %s, JsonConverter writes %s", s, got, want)
		}
	}
	// A status value as a Struct through the converter gives the same bytes.
	schema := data.StructBuilder().
		Field("state", data.StringSchema).
		Field("trace", data.OptionalStringSchema).
		Field("worker_id", data.StringSchema).
		Field("generation", data.Int32Schema).MustBuild()
	for _, st := range []Status{
		{State: "RUNNING", WorkerID: "h:1", Generation: 1},
		{State: "FAILED", Trace: "x\u2028<y>\x01", WorkerID: "h:1", Generation: -1},
	} {
		v := data.NewStruct(schema).MustPut("state", st.State).MustPut("worker_id", st.WorkerID).MustPut("generation", st.Generation)
		if st.Trace != "" {
			v.MustPut("trace", st.Trace)
		}
		want, err := jc.FromConnectData("t", nil, schema, v)
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeStatus(st); string(got) != string(want) {
			t.Errorf("status %+v: got %s, JsonConverter writes %s", st, got, want)
		}
	}
}

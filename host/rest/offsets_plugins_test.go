package rest

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestOffsets(t *testing.T) {
	e := newEnv(t, Options{})
	e.create("src", sourceConfig)
	e.create("sink", sinkConfig)
	e.do("GET", "/connectors/src/offsets", "").expect(t, 200, `{"offsets":[]}`)
	e.do("GET", "/connectors/nope/offsets", "").expectError(t, 404, "Connector nope not found")

	alter := `{"offsets":[{"partition":{"filename":"/tmp/in.txt"},"offset":{"position":9007199254740993}}]}`
	e.do("PATCH", "/connectors/src/offsets", alter).expectError(t, 400,
		"Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/src/stop' endpoint")
	e.do("DELETE", "/connectors/src/offsets", "").expectError(t, 400,
		"Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/src/stop' endpoint")
	e.do("PATCH", "/connectors/nope/offsets", alter).expectError(t, 404, "Connector nope not found")

	e.do("PUT", "/connectors/src/stop", "").expect(t, 204, "")
	e.do("PATCH", "/connectors/src/offsets", alter).expect(t, 200, `{"message":"The Connect framework-managed offsets for this connector have been altered successfully. However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses."}`)
	// An offset beyond 2^53 survives the round trip.
	r := e.do("GET", "/connectors/src/offsets", "")
	r.expect(t, 200, alter)
	if !strings.Contains(string(r.body), "9007199254740993") {
		t.Fatalf("offset lost precision: %s", r.body)
	}
	e.do("DELETE", "/connectors/src/offsets", "").expect(t, 200, `{"message":"The Connect framework-managed offsets for this connector have been reset successfully. However, if this connector manages offsets externally, they will need to be manually reset in the system that the connector uses."}`)
	e.do("GET", "/connectors/src/offsets", "").expect(t, 200, `{"offsets":[]}`)

	e.do("PUT", "/connectors/sink/stop", "").expect(t, 204, "")
	for body, msg := range map[string]string{
		`{}`:                              "Partitions / offsets need to be provided for an alter offsets request",
		`{"offsets":null}`:                "Partitions / offsets need to be provided for an alter offsets request",
		`{"offsets":[]}`:                  "Partitions / offsets need to be provided for an alter offsets request",
		`{"offsets":{}}`:                  `Field "offsets" of the offsets request must be an array, not an object`,
		`{"offsets":[1]}`:                 `Entry 0 of "offsets" must be an object, not a number`,
		`{"offsets":[],"extra":1}`:        `Unrecognized field "extra" in the offsets request: the only field is "offsets"`,
		`{"offsets":[{"partitions":{}}]}`: `Unrecognized field "partitions" in entry 0 of "offsets": the fields are "partition" and "offset"`,
		`{"offsets":[{"partition":"p"}]}`: `Field "partition" of entry 0 of "offsets" must be an object or null, not a string`,
		// The sink shape, checked by the herder (herder.ParseSinkOffsets).
		`{"offsets":[{"offset":{"kafka_offset":1}}]}`:                                          "The partition for a sink connector offset cannot be null or missing",
		`{"offsets":[{"partition":{"kafka_topic":"t"},"offset":null}]}`:                        "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'",
		`{"offsets":[{"partition":{"kafka_topic":null,"kafka_partition":0},"offset":null}]}`:   "Kafka topic names must be valid strings and may not be null",
		`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":null},"offset":null}]}`: "Kafka partitions must be valid numbers and may not be null",
		`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{}}]}`:      "The offset for a sink connector should either be null or contain the key 'kafka_offset'",
	} {
		e.do("PATCH", "/connectors/sink/offsets", body).expectError(t, 400, msg)
	}
	e.do("PATCH", "/connectors/sink/offsets", `{"offsets":[{"partition":{"kafka_topic":"lines","kafka_partition":"0"},"offset":{"kafka_offset":5}}]}`).expect(t, 200, "")
	e.do("GET", "/connectors/sink/offsets", "").expect(t, 200, `{"offsets":[{"partition":{"kafka_topic":"lines","kafka_partition":"0"},"offset":{"kafka_offset":5}}]}`)
}

func TestPlugins(t *testing.T) {
	e := newEnv(t, Options{})
	e.do("GET", "/connector-plugins", "").expect(t, 200, `[
		{"class":"org.apache.kafka.connect.file.FileStreamSinkConnector","type":"sink","version":"4.0.0"},
		{"class":"org.apache.kafka.connect.file.FileStreamSourceConnector","type":"source","version":"4.0.0"}]`)
	e.do("GET", "/connector-plugins?connectorsOnly=true", "").expect(t, 200, "")
	var all []map[string]string
	r := e.do("GET", "/connector-plugins?connectorsOnly=false", "")
	r.expect(t, 200, "")
	r.decode(t, &all)
	kinds := map[string]int{}
	for _, p := range all {
		kinds[p["type"]]++
	}
	if len(all) != 7 || kinds["transformation"] != 1 || kinds["predicate"] != 1 || kinds["converter"] != 2 || kinds["header_converter"] != 1 {
		t.Fatalf("connectorsOnly=false: %s", r.body)
	}

	var defs []map[string]any
	r = e.do("GET", "/connector-plugins/FileStreamSource/config", "")
	r.expect(t, 200, "")
	r.decode(t, &defs)
	if len(defs) != 3 || defs[1]["name"] != "topic" || defs[2]["default_value"] != "2000" {
		t.Fatalf("plugin config: %s", r.body)
	}
	e.do("GET", "/connector-plugins/org.apache.kafka.connect.file.FileStreamSinkConnector/config", "").expect(t, 200, "")
	e.do("GET", "/connector-plugins/Nope/config", "").expectError(t, 404, "Unknown plugin Nope.")
}

func TestValidate(t *testing.T) {
	e := newEnv(t, Options{})
	var res struct {
		Name       string `json:"name"`
		ErrorCount int    `json:"error_count"`
		Groups     []string
		Configs    []struct {
			Definition *struct{ Name string } `json:"definition"`
			Value      *struct {
				Name   string
				Value  *string
				Errors []string
			} `json:"value"`
		} `json:"configs"`
	}
	r := e.do("PUT", "/connector-plugins/FileStreamSource/config/validate", `{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","name":"v","topic":"t"}`)
	r.expect(t, 200, "")
	r.decode(t, &res)
	if res.ErrorCount != 0 || res.Name != "org.apache.kafka.connect.file.FileStreamSourceConnector" || len(res.Configs) != 6 {
		t.Fatalf("validate: %s", r.body)
	}
	// Errors are still a 200.
	r = e.do("PUT", "/connector-plugins/FileStreamSinkConnector/config/validate", `{"connector.class":"FileStreamSink","name":"v","tasks.max":"x"}`)
	r.expect(t, 200, "")
	r.decode(t, &res)
	if res.ErrorCount != 2 {
		t.Fatalf("want 2 errors (tasks.max, topics): %s", r.body)
	}
	e.do("PUT", "/connector-plugins/FileStreamSink/config/validate", `{"connector.class":"FileStreamSource"}`).
		expectError(t, 400, "Included connector type FileStreamSource does not match request type FileStreamSink")
	e.do("PUT", "/connector-plugins/FileStreamSink/config/validate", `{"name":"v","topics":"t"}`).
		expectError(t, 400, "Connector config {name=v, topics=t} contains no connector type")
	e.do("PUT", "/connector-plugins/FileStreamSink/config/validate", `{"connector.class":["x"]}`).
		expectError(t, 400, `Value of "connector.class" in the connector configuration must be a string, not an array`)

	// A null value is an error on its key, as Kafka's addNullValuedErrors
	// adds it: on the key's entry (its value shown null), or on an entry of
	// its own without a definition, first.
	r = e.do("PUT", "/connector-plugins/FileStreamSource/config/validate", `{"connector.class":"FileStreamSource","name":"v","topic":"t","file":null,"zz.extra":null}`)
	r.expect(t, 200, "")
	res.Configs = nil
	r.decode(t, &res)
	const nullErr = "Null value can not be supplied as the configuration value."
	if res.ErrorCount != 2 || len(res.Configs) != 7 || res.Configs[0].Definition != nil || res.Configs[0].Value.Name != "zz.extra" ||
		res.Configs[0].Value.Value != nil || !slices.Equal(res.Configs[0].Value.Errors, []string{nullErr}) {
		t.Fatalf("validate with nulls: %s", r.body)
	}
	found := false
	for _, ci := range res.Configs {
		if ci.Definition != nil && ci.Definition.Name == "file" {
			found = ci.Value != nil && ci.Value.Value == nil && slices.Equal(ci.Value.Errors, []string{nullErr})
		}
	}
	if !found {
		t.Fatalf("file's entry lacks the null error: %s", r.body)
	}
	// A null connector.class is none.
	e.do("PUT", "/connector-plugins/FileStreamSink/config/validate", `{"connector.class":null,"topics":"t"}`).
		expectError(t, 400, "Connector config {topics=t} contains no connector type")
}

// Creating or replacing a connector with a null value is refused with
// Kafka's list of the config's errors.
func TestNullConfigValues(t *testing.T) {
	e := newEnv(t, Options{})
	want := "Connector configuration is invalid and contains the following 2 error(s):\n" +
		"Null value can not be supplied as the configuration value.\nNull value can not be supplied as the configuration value.\n" +
		"You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"
	e.do("POST", "/connectors", `{"name":"n","config":{"connector.class":"FileStreamSource","topic":"t","file":null,"extra":null}}`).expectError(t, 400, want)
	e.do("PUT", "/connectors/n/config", `{"connector.class":"FileStreamSource","topic":"t","file":null,"extra":null}`).expectError(t, 400, want)
	e.do("GET", "/connectors", "").expect(t, 200, `[]`)
}

func TestHealth(t *testing.T) {
	e := newEnv(t, Options{})
	e.do("GET", "/health", "").expect(t, 200, `{"status":"healthy","message":"Worker has completed startup and is ready to handle requests."}`)
	e.h.SetStarting(true)
	e.do("GET", "/health", "").expect(t, http.StatusServiceUnavailable, `{"status":"starting","message":"Worker is still starting up."}`)
}

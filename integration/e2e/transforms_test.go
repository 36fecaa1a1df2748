//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-io/sluice/integration/itest"
)

// Kafka's test_transformations (connect_distributed_test.py): a
// FileStreamSource whose lines are hoisted into a struct field "content"
// and stamped with the record's timestamp in "ts"; with JsonConverter
// (schemas on) every topic record is exactly
// {"schema":struct{content: string, ts: optional Timestamp},"payload":...}
// and ts is the record's CreateTime.
func TestTransformationsHoistInsert(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("hoist")
	in := e.path("in.txt")
	lines := makeLines("h", 0, 200)
	appendLines(t, in, lines)
	src := sourceConfig(e.name("src"), in, topic)
	for k, v := range map[string]string{
		"value.converter":                                 "org.apache.kafka.connect.json.JsonConverter",
		"transforms":                                      "hoistToStruct,insertTimestampField",
		"transforms.hoistToStruct.type":                   "org.apache.kafka.connect.transforms.HoistField$Value",
		"transforms.hoistToStruct.field":                  "content",
		"transforms.insertTimestampField.type":            "org.apache.kafka.connect.transforms.InsertField$Value",
		"transforms.insertTimestampField.timestamp.field": "ts",
	} {
		src[k] = v
	}
	w := e.startWorker(e.workerProps(nil), e.connector(src))
	recs := e.readTopic(topic, len(lines))
	const schema = `{"type":"struct","fields":[{"type":"string","optional":false,"field":"content"},` +
		`{"type":"int64","optional":true,"name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"ts"}],"optional":false}`
	for i, r := range recs {
		if r.Attrs.TimestampType() != 0 {
			t.Fatalf("record %d: timestamp type %d, want CreateTime", i, r.Attrs.TimestampType())
		}
		content, _ := json.Marshal(lines[i])
		want := fmt.Sprintf(`{"schema":%s,"payload":{"content":%s,"ts":%d}}`, schema, content, r.Timestamp.UnixMilli())
		if string(r.Value) != want {
			t.Fatalf("record %d:\n got %s\nwant %s", i, r.Value, want)
		}
	}
	t.Logf("%d records carry struct{content, ts} with ts = CreateTime", len(recs))
	w.waitState(e.name("src"), "RUNNING", 1)
	w.stop()
}

// Kafka's TransformationIntegrationTest.testFilterOnTopicNameWithSinkConnector:
// a sink reading two topics drops, with Filter under TopicNameMatches,
// every record of the topic the pattern matches. Those records never reach
// the sink file, and their offsets are committed all the same.
func TestFilterTopicNameMatchesOnSink(t *testing.T) {
	e := newEnv(t)
	keep, drop := e.topic("keep"), e.topic("bar")
	const n = 500
	kept := makeLines("k", 0, n)
	itest.ProduceStrings(t, e.cl, keep, kept...)
	itest.ProduceStrings(t, e.cl, drop, makeLines("b", 0, n)...)

	out := e.path("out.txt")
	sink := e.name("sink")
	cfg := sinkConfig(sink, out, keep+","+drop)
	for k, v := range map[string]string{
		"transforms":                  "filter",
		"transforms.filter.type":      "org.apache.kafka.connect.transforms.Filter",
		"transforms.filter.predicate": "barTopic",
		"predicates":                  "barTopic",
		"predicates.barTopic.type":    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
		"predicates.barTopic.pattern": "bar-.*",
	} {
		cfg[k] = v
	}
	w := e.startWorker(e.workerProps(nil), e.connector(cfg))
	waitLines(t, out, n)
	e.waitCommitted("connect-"+sink, drop, n)
	e.waitCommitted("connect-"+sink, keep, n)
	time.Sleep(quiet)
	requireLines(t, "sink file", kept, readLines(t, out))
	w.waitState(sink, "RUNNING", 1)
	w.stop()
}

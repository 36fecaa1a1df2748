//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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

	filteredSink(t, e, []string{keep, drop}, n, kept, map[string]string{
		"transforms":                  "filter",
		"transforms.filter.type":      "org.apache.kafka.connect.transforms.Filter",
		"transforms.filter.predicate": "barTopic",
		"predicates":                  "barTopic",
		"predicates.barTopic.type":    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
		"predicates.barTopic.pattern": "bar-.*",
	})
}

// filteredSink runs a file sink over topics, each of n records, with the
// filter settings: the file must hold exactly want, in order, every topic's
// offsets must be committed to its end (what was dropped included), and
// the connector must still be running.
func filteredSink(t *testing.T, e *env, topics []string, n int, want []string, filter map[string]string) {
	t.Helper()
	out := e.path("out.txt")
	sink := e.name("sink")
	cfg := sinkConfig(sink, out, strings.Join(topics, ","))
	maps.Copy(cfg, filter)
	w := e.startWorker(e.workerProps(nil), e.connector(cfg))
	waitLines(t, out, len(want))
	for _, topic := range topics {
		e.waitCommitted("connect-"+sink, topic, int64(n))
	}
	time.Sleep(quiet)
	requireLines(t, "sink file", want, readLines(t, out))
	w.waitState(sink, "RUNNING", 1)
	w.stop()
}

// Kafka's RecordIsTombstone under Filter, through a real sink: a topic of
// 400 keyed records, every fourth one (offsets 3, 7, ..., 399, the last
// record too) a tombstone, and a few values the empty string, which is not
// a tombstone. The sink file holds exactly the 300 non-null values, in
// order, empty ones as empty lines; the group's committed offset reaches
// the end of the topic, so the dropped tombstones, the last record among
// them, are consumed and committed, not left behind.
func TestFilterRecordIsTombstoneOnSink(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("tombstones")
	const n = 400
	var recs []*kgo.Record
	var want []string
	for i := range n {
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k-%d", i))}
		switch {
		case i%4 == 3:
			// Value nil: a tombstone.
		case i%100 == 50:
			r.Value = []byte{}
			want = append(want, "")
		default:
			v := fmt.Sprintf("v-%03d", i)
			r.Value = []byte(v)
			want = append(want, v)
		}
		recs = append(recs, r)
	}
	itest.Produce(t, e.cl, recs...)
	if end := e.endOffset(topic); end != n {
		t.Fatalf("topic end offset %d, want %d", end, n)
	}

	filteredSink(t, e, []string{topic}, n, want, map[string]string{
		"transforms":                          "dropTombstones",
		"transforms.dropTombstones.type":      "org.apache.kafka.connect.transforms.Filter",
		"transforms.dropTombstones.predicate": "isTombstone",
		"predicates":                          "isTombstone",
		"predicates.isTombstone.type":         "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
	})
}

// HasHeaderKey under Filter, through a real sink (Kafka's
// testFilterOnHasHeaderKeyWithSourceConnectorAndTopicCreation has a test
// source put the headers on; no source bundled with Sluice emits headers,
// nor can its transforms set one on some records and not others, so here
// the producer does). Every third record carries a "skip" header, one of
// them with a null value (the key is what counts); others carry other
// headers, one named "skip-not". Exactly the records without "skip" reach
// the sink file, in order, and every offset is committed.
func TestFilterHasHeaderKeyOnSink(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("headers")
	const n = 300
	var recs []*kgo.Record
	var want []string
	for i := range n {
		v := fmt.Sprintf("h-%03d", i)
		r := &kgo.Record{Topic: topic, Value: []byte(v)}
		switch {
		case i == 30:
			r.Headers = []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "skip"}}
		case i%3 == 0:
			r.Headers = []kgo.RecordHeader{{Key: "skip", Value: []byte("yes")}}
		case i%5 == 0:
			r.Headers = []kgo.RecordHeader{{Key: "skip-not", Value: []byte("x")}, {Key: "Skip", Value: []byte("x")}}
			want = append(want, v)
		default:
			want = append(want, v)
		}
		recs = append(recs, r)
	}
	itest.Produce(t, e.cl, recs...)

	filteredSink(t, e, []string{topic}, n, want, map[string]string{
		"transforms":                       "dropSkipped",
		"transforms.dropSkipped.type":      "org.apache.kafka.connect.transforms.Filter",
		"transforms.dropSkipped.predicate": "hasSkip",
		"predicates":                       "hasSkip",
		"predicates.hasSkip.type":          "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
		"predicates.hasSkip.name":          "skip",
	})
}

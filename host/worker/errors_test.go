package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// client is a franz-go client on the env's cluster, closed with the test.
func (e *env) client(opts ...kgo.Opt) *kgo.Client {
	e.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.cluster.ListenAddrs()...)}, opts...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cl.Close)
	return cl
}

// produce writes values to topic (created with one partition), in order.
func (e *env) produce(topic string, values ...string) {
	e.t.Helper()
	cl := e.client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		e.t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			e.t.Fatal(err)
		}
	}
}

// consume reads n records of topic from the start.
func (e *env) consume(topic string, n int) []*kgo.Record {
	e.t.Helper()
	cl := e.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			e.t.Fatalf("read %d of %d records of %s", len(out), n, topic)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func header(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

func fileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Transformations and predicates are plugins too: listed with
// connectorsOnly=false, with their settings, and a broken chain is
// refused at create with Kafka's message.
func TestTransformPlugins(t *testing.T) {
	e := startWorker(t, nil)
	var plugins []struct {
		Class   string `json:"class"`
		Type    string `json:"type"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(e.mustDo("GET", "/connector-plugins?connectorsOnly=false", nil, 200), &plugins); err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, p := range plugins {
		types[p.Class] = p.Type + " " + p.Version
	}
	for class, want := range map[string]string{
		"org.apache.kafka.connect.transforms.RegexRouter":                 "transformation 4.0.0",
		"org.apache.kafka.connect.transforms.InsertField$Value":           "transformation 4.0.0",
		"org.apache.kafka.connect.transforms.Filter":                      "transformation 4.0.0",
		"org.apache.kafka.connect.transforms.predicates.TopicNameMatches": "predicate 4.0.0",
		"org.apache.kafka.connect.transforms.predicates.HasHeaderKey":     "predicate 4.0.0",
	} {
		if types[class] != want {
			t.Errorf("%s listed as %q, want %q", class, types[class], want)
		}
	}
	var keys []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(e.mustDo("GET", "/connector-plugins/org.apache.kafka.connect.transforms.RegexRouter/config", nil, 200), &keys); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].Name != "regex" || keys[1].Name != "replacement" {
		t.Errorf("RegexRouter config %+v", keys)
	}
	if err := json.Unmarshal(e.mustDo("GET", "/connector-plugins/TopicNameMatches/config", nil, 200), &keys); err != nil || len(keys) != 1 || keys[0].Name != "pattern" {
		t.Errorf("TopicNameMatches config %+v %v", keys, err)
	}

	out := e.mustDo("PUT", "/connectors/bad/config", map[string]string{
		"connector.class": "CounterSource", "topic": "counts",
		"transforms": "r", "transforms.r.type": "RegexRouter", "transforms.r.regex": "(", "transforms.r.replacement": "x",
	}, 400)
	if !strings.Contains(string(out), "Invalid regex") || !strings.Contains(string(out), "Connector configuration is invalid and contains the following 1 error(s)") {
		t.Fatalf("create with a bad regex: %s", out)
	}
}

// A source's records go through its transform chain before the
// converters: routed to another topic and stamped with a static field.
func TestSourceTransformsApplied(t *testing.T) {
	e := startWorker(t, nil)
	e.mustDo("PUT", "/connectors/src/config", map[string]string{
		"connector.class": "CounterSource", "topic": "counts", "max.records": "20",
		"transforms":                    "route,stamp",
		"transforms.route.type":         "org.apache.kafka.connect.transforms.RegexRouter",
		"transforms.route.regex":        "count(s)",
		"transforms.route.replacement":  "routed-count$1",
		"transforms.stamp.type":         "InsertField$Value",
		"transforms.stamp.static.field": "origin",
		"transforms.stamp.static.value": "sluice",
	}, 201)
	waitUntil(t, "20 routed records", 30*time.Second, func() bool { return endOffsets(t, e.cluster.ListenAddrs(), "routed-counts") == 20 })
	for _, r := range e.consume("routed-counts", 20) {
		var env struct {
			Payload map[string]any `json:"payload"`
		}
		if err := json.Unmarshal(r.Value, &env); err != nil || env.Payload["origin"] != "sluice" {
			t.Fatalf("record %s: %v", r.Value, err)
		}
	}
	if n := endOffsets(t, e.cluster.ListenAddrs(), "counts"); n != 0 {
		t.Fatalf("%d records on the original topic", n)
	}
}

// A sink with tolerance all: malformed JSON records go to the dead letter
// queue (topic created) with their original bytes and context headers, the
// good ones reach the plugin, and the offsets of all are committed.
func TestSinkDeadLetterQueue(t *testing.T) {
	e := startWorker(t, nil)
	var values, good []string
	for i := range 20 {
		if i%2 == 1 {
			values = append(values, fmt.Sprintf(`{"n": %d`, i))
		} else {
			values = append(values, fmt.Sprintf(`{"n":%d}`, i))
			good = append(good, fmt.Sprintf(`{"n":%d}`, i))
		}
	}
	e.produce("in", values...)
	out := filepath.Join(e.dir, "out.txt")
	e.mustDo("PUT", "/connectors/snk/config", map[string]string{
		"connector.class": "io.sluice.examples.LogSink", "topics": "in", "file": out,
		"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
		"errors.tolerance": "all", "errors.log.enable": "true", "errors.log.include.messages": "true",
		"errors.deadletterqueue.topic.name":               "dlq-in",
		"errors.deadletterqueue.topic.replication.factor": "1",
		"errors.deadletterqueue.context.headers.enable":   "true",
	}, 201)
	waitUntil(t, "the good records", 30*time.Second, func() bool { return len(fileLines(t, out)) == len(good) })
	if got := fileLines(t, out); !slices.Equal(got, good) {
		t.Fatalf("sink file %q, want %q", got, good)
	}
	dlq := e.consume("dlq-in", 10)
	for i, r := range dlq {
		want := values[2*i+1]
		if string(r.Value) != want {
			t.Errorf("DLQ record %d value %q, want %q", i, r.Value, want)
		}
		for k, v := range map[string]string{
			"__connect.errors.topic": "in", "__connect.errors.partition": "0", "__connect.errors.offset": fmt.Sprint(2*i + 1),
			"__connect.errors.connector.name": "snk", "__connect.errors.task.id": "0", "__connect.errors.stage": "VALUE_CONVERTER",
			"__connect.errors.class.name":           "org.apache.kafka.connect.json.JsonConverter",
			"__connect.errors.exception.class.name": "org.apache.kafka.connect.errors.DataException",
		} {
			if got, _ := header(r, k); got != v {
				t.Errorf("DLQ record %d: %s=%q, want %q", i, k, got, v)
			}
		}
	}
	adm := kadm.NewClient(e.client())
	waitUntil(t, "offsets committed", 30*time.Second, func() bool {
		offs, err := adm.FetchOffsets(context.Background(), "connect-snk")
		if err != nil {
			return false
		}
		o, ok := offs.Lookup("in", 0)
		return ok && o.At == 20
	})
	e.waitStatus("snk", "RUNNING:RUNNING")
}

// The errant record reporter: records the sink plugin reports land in the
// dead letter queue with the original bytes and stage TASK_PUT; with
// tolerance none the first one fails the task, and the queue holds it.
func TestErrantRecordReporter(t *testing.T) {
	for _, tolerance := range []string{"all", "none"} {
		t.Run(tolerance, func(t *testing.T) {
			e := startWorker(t, nil)
			e.produce("rows", "ok-0", "bad-1", "ok-2", "bad-3", "ok-4")
			out := filepath.Join(e.dir, "rows.txt")
			e.mustDo("PUT", "/connectors/errant/config", map[string]string{
				"connector.class": "io.sluice.test.ErrantSink", "topics": "rows", "file": out,
				"value.converter":                                 "org.apache.kafka.connect.storage.StringConverter",
				"errors.tolerance":                                tolerance,
				"errors.deadletterqueue.topic.name":               "dlq-rows",
				"errors.deadletterqueue.topic.replication.factor": "1",
				"errors.deadletterqueue.context.headers.enable":   "true",
			}, 201)
			if tolerance == "all" {
				waitUntil(t, "the good rows", 30*time.Second, func() bool { return len(fileLines(t, out)) == 3 })
				dlq := e.consume("dlq-rows", 2)
				for i, r := range dlq {
					stage, _ := header(r, "__connect.errors.stage")
					msg, _ := header(r, "__connect.errors.exception.message")
					if string(r.Value) != fmt.Sprintf("bad-%d", 2*i+1) || stage != "TASK_PUT" || !strings.Contains(msg, "refused") {
						t.Errorf("DLQ record %d: %q stage %s message %q", i, r.Value, stage, msg)
					}
				}
				e.waitStatus("errant", "RUNNING:RUNNING")
				return
			}
			st := e.waitStatus("errant", "RUNNING:FAILED")
			if tr := st.Tasks[0].Trace; !strings.Contains(tr, "Tolerance exceeded in error handler") || !strings.Contains(tr, "TASK_PUT") {
				t.Errorf("trace %q", tr)
			}
			if end := endOffsets(t, e.cluster.ListenAddrs(), "dlq-rows"); end != 1 {
				t.Fatalf("DLQ holds %d records, want exactly the first bad one", end)
			}
			if r := e.consume("dlq-rows", 1)[0]; string(r.Value) != "bad-1" {
				t.Fatalf("DLQ record %q", r.Value)
			}
		})
	}
}

// A task whose plugin fails its first two starts is restarted
// automatically and ends RUNNING, its records delivered.
func TestAutoRestartFlakyPlugin(t *testing.T) {
	e := startWorker(t, nil)
	state := filepath.Join(e.dir, "starts")
	e.mustDo("PUT", "/connectors/flaky/config", map[string]string{
		"connector.class": "io.sluice.test.FlakySource", "topic": "flaky", "state.file": state, "fail.starts": "2",
		"value.converter":                        "org.apache.kafka.connect.storage.StringConverter",
		"sluice.task.restart.enable":             "true",
		"sluice.task.restart.backoff.initial.ms": "100",
		"sluice.task.restart.backoff.max.ms":     "1000",
	}, 201)
	waitUntil(t, "five records", 30*time.Second, func() bool { return endOffsets(t, e.cluster.ListenAddrs(), "flaky") == 5 })
	e.waitStatus("flaky", "RUNNING:RUNNING")
	if starts := len(fileLines(t, state)); starts != 3 {
		t.Fatalf("%d task starts, want 3 (two failed, then one that runs)", starts)
	}
}

// A task whose plugin leaks memory past sluice.plugin.memory.max.bytes is
// killed and FAILED with a trace naming the setting; the worker and the
// connector run on, and the other connector's task is untouched.
func TestPluginMemoryLimit(t *testing.T) {
	e := startWorker(t, map[string]string{"sluice.plugin.memory.max.bytes": "67108864"})
	e.mustDo("PUT", "/connectors/leaky/config", map[string]string{
		"connector.class": "io.sluice.test.FlakySource", "topic": "leaky", "state.file": filepath.Join(e.dir, "leaky"), "leak.mb": "16",
		"value.converter": "org.apache.kafka.connect.storage.StringConverter",
	}, 201)
	e.mustDo("PUT", "/connectors/steady/config", map[string]string{
		"connector.class": "io.sluice.test.FlakySource", "topic": "steady", "state.file": filepath.Join(e.dir, "steady"),
		"value.converter": "org.apache.kafka.connect.storage.StringConverter",
	}, 201)
	st := e.waitStatus("leaky", "RUNNING:FAILED")
	for _, want := range []string{"resident memory", "exceeded sluice.plugin.memory.max.bytes=67108864 (64.0 MiB)"} {
		if !strings.Contains(st.Tasks[0].Trace, want) {
			t.Errorf("trace of the leaking task should contain %q:\n%s", want, st.Tasks[0].Trace)
		}
	}
	waitUntil(t, "the steady connector's five records", 30*time.Second, func() bool { return endOffsets(t, e.cluster.ListenAddrs(), "steady") == 5 })
	e.waitStatus("steady", "RUNNING:RUNNING")
}

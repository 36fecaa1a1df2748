//go:build integration

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/integration/itest"
)

// Kafka's test_skip_and_log_to_dlq (connect_test.py): 1000 lines, the odd
// ones malformed JSON, read by a FileStreamSource with StringConverter and
// written by a FileStreamSink whose JsonConverter has no schemas.

const dlqLines = 1000

// dlqInput writes the 1000 lines: {"some_key":i} for even i, a JSON object
// cut short for odd i.
func dlqInput() (lines, good []string) {
	for i := range dlqLines {
		if i%2 == 0 {
			lines = append(lines, fmt.Sprintf(`{"some_key":%d}`, i))
			good = append(good, fmt.Sprintf("{some_key=%d}", i))
		} else {
			lines = append(lines, fmt.Sprintf(`{"some_key":%d`, i))
		}
	}
	return lines, good
}

// dlqPipeline starts a worker with the source and the sink, the sink with
// errors.tolerance=tolerance and a dead letter queue with context headers.
func (e *env) dlqPipeline(tolerance string) (w *worker, topic, dlq, out, sink string, lines, good []string) {
	e.t.Helper()
	topic = e.topic("dlq-in")
	dlq = e.name("dlq")
	in, out := e.path("in.txt"), e.path("out.txt")
	lines, good = dlqInput()
	appendLines(e.t, in, lines)
	sink = e.name("sink")
	sinkCfg := sinkConfig(sink, out, topic)
	for k, v := range map[string]string{
		"value.converter":                                 "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable":                  "false",
		"errors.tolerance":                                tolerance,
		"errors.log.enable":                               "true",
		"errors.log.include.messages":                     "true",
		"errors.deadletterqueue.topic.name":               dlq,
		"errors.deadletterqueue.topic.replication.factor": "1",
		"errors.deadletterqueue.context.headers.enable":   "true",
	} {
		sinkCfg[k] = v
	}
	w = e.startWorker(e.workerProps(nil), e.connector(sourceConfig(e.name("src"), in, topic)), e.connector(sinkCfg))
	return w, topic, dlq, out, sink, lines, good
}

// headerMap returns a record's headers; a repeated key keeps its last value.
func headerMap(r *kgo.Record) map[string]string {
	m := map[string]string{}
	for _, h := range r.Headers {
		m[h.Key] = string(h.Value)
	}
	return m
}

// checkDLQRecord checks a dead letter queue record against the bad line it
// holds, consumed from topic at offset.
func checkDLQRecord(t *testing.T, r *kgo.Record, line, topic, sink string, offset int) {
	t.Helper()
	if string(r.Value) != line || r.Key != nil {
		t.Fatalf("DLQ record %q=%q, want the raw line %q", r.Key, r.Value, line)
	}
	h := headerMap(r)
	for k, want := range map[string]string{
		"__connect.errors.topic":                "" + topic,
		"__connect.errors.partition":            "0",
		"__connect.errors.offset":               strconv.Itoa(offset),
		"__connect.errors.connector.name":       sink,
		"__connect.errors.task.id":              "0",
		"__connect.errors.stage":                "VALUE_CONVERTER",
		"__connect.errors.class.name":           "org.apache.kafka.connect.json.JsonConverter",
		"__connect.errors.exception.class.name": "org.apache.kafka.connect.errors.DataException",
	} {
		if h[k] != want {
			t.Fatalf("DLQ record of offset %d: %s=%q, want %q (headers %v)", offset, k, h[k], want, h)
		}
	}
	if msg := h["__connect.errors.exception.message"]; !strings.HasPrefix(msg, "Converting byte[] to Kafka Connect data failed due to serialization error") {
		t.Fatalf("DLQ record of offset %d: exception message %q", offset, msg)
	}
	if st := h["__connect.errors.exception.stacktrace"]; !strings.HasPrefix(st, "org.apache.kafka.connect.errors.DataException: ") {
		t.Fatalf("DLQ record of offset %d: stack trace %q", offset, st)
	}
	if len(r.Headers) != 10 {
		t.Fatalf("DLQ record of offset %d has %d headers, want the 10 context headers: %v", offset, len(r.Headers), h)
	}
}

// committedOffset is the committed offset of partition 0 of topic for the
// group, or -1.
func (e *env) committedOffset(group, topic string) int64 {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 30*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(e.cl).FetchOffsets(ctx, group)
	if err != nil {
		e.t.Fatalf("committed offsets of %s: %v", group, err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil {
		return -1
	}
	return o.At
}

// waitCommitted waits until the group's committed offset of topic's
// partition 0 is want.
func (e *env) waitCommitted(group, topic string, want int64) {
	e.t.Helper()
	deadline := time.Now().Add(dataTimeout)
	for {
		got := e.committedOffset(group, topic)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("group %s committed %d on %s, want %d", group, got, topic, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// errors.tolerance=all: every good record reaches the sink file, in order;
// the dead letter queue holds every bad raw line with its context headers;
// the error log names each; every offset is committed; the task runs on.
func TestSkipAndLogToDLQToleranceAll(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	w, topic, dlq, out, sink, lines, good := e.dlqPipeline("all")
	waitLines(t, out, len(good))
	t.Logf("%d good lines in the sink file %s after the worker started", len(good), time.Since(start).Round(time.Millisecond))
	time.Sleep(quiet)
	requireLines(t, "sink file", good, readLines(t, out))

	recs := e.readTopic(dlq, dlqLines/2)
	for i, r := range recs {
		checkDLQRecord(t, r, lines[2*i+1], topic, sink, 2*i+1)
	}
	if end := e.endOffset(dlq); end != dlqLines/2 {
		t.Fatalf("DLQ end offset %d, want %d", end, dlqLines/2)
	}
	e.waitCommitted("connect-"+sink, topic, dlqLines)
	s := w.waitState(sink, "RUNNING", 1)
	if s.task(0).Trace != "" {
		t.Fatalf("task trace %q", s.task(0).Trace)
	}
	// The whole log: LogTail reads only its last 256 KiB.
	logBytes, err := os.ReadFile(w.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	log := string(logBytes)
	wantLog := fmt.Sprintf("Error encountered in task %s-0. Executing stage 'VALUE_CONVERTER' with class 'org.apache.kafka.connect.json.JsonConverter', where consumed record is {topic='%s', partition=0, offset=1, timestamp=", sink, topic)
	if !strings.Contains(log, wantLog) {
		t.Fatalf("the worker log has no line %q", wantLog)
	}
	if n := strings.Count(log, "Error encountered in task "+sink+"-0."); n != dlqLines/2 {
		t.Fatalf("%d error log lines, want %d", n, dlqLines/2)
	}
	w.stop()
}

// errors.tolerance=none: the sink task fails on the first bad record with
// a trace naming the stage and the cause, the dead letter queue holds
// exactly that record, and nothing after it reaches the sink file.
func TestSkipAndLogToDLQToleranceNone(t *testing.T) {
	e := newEnv(t)
	w, topic, dlq, out, sink, lines, _ := e.dlqPipeline("none")
	s := w.waitStatus(sink, "task FAILED", func(s status) bool { return s.task(0).State == "FAILED" })
	tr := s.task(0).Trace
	for _, want := range []string{"Tolerance exceeded in error handler", "VALUE_CONVERTER", "org.apache.kafka.connect.json.JsonConverter",
		topic + "-0@1", "Converting byte[] to Kafka Connect data failed due to serialization error"} {
		if !strings.Contains(tr, want) {
			t.Fatalf("trace %q does not name %q", tr, want)
		}
	}
	if s.Connector.State != "RUNNING" {
		t.Fatalf("connector %s", s.Connector.State)
	}
	time.Sleep(quiet)
	if end := e.endOffset(dlq); end != 1 {
		t.Fatalf("DLQ end offset %d, want exactly the first bad record", end)
	}
	checkDLQRecord(t, e.readTopic(dlq, 1)[0], lines[1], topic, sink, 1)
	// The batch that held the bad record was not put; at most the line
	// before it could have been.
	if got := readLines(t, out); len(got) > 1 || len(got) == 1 && got[0] != "{some_key=0}" {
		t.Fatalf("sink file %q after the failure", got)
	}
	if c := e.committedOffset("connect-"+sink, topic); c > 1 {
		t.Fatalf("committed offset %d: the bad record's offset was committed", c)
	}
	w.stop()
}

// Beyond Kafka Connect, a dead letter queue for a source connector: lines
// a transform refuses (Cast to int32 of a non-number) go to the queue, as
// the connector produced them serialized with its converters, with the
// context headers of a source record; every other line reaches the topic
// in order, none stalled behind a bad one; the source's stored offset
// moves to the end of the file, past the last line, a bad one.
func TestSourceDeadLetterQueue(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("cast")
	dlq := e.name("src-dlq")
	in := e.path("in.txt")
	var lines, good, bad []string
	for i := range 601 {
		if i%3 == 0 {
			lines = append(lines, fmt.Sprintf("x-%d", i))
			bad = append(bad, fmt.Sprintf(`"x-%d"`, i))
		} else {
			lines = append(lines, strconv.Itoa(i))
			good = append(good, strconv.Itoa(i))
		}
	}
	appendLines(t, in, lines)
	name := e.name("src")
	src := sourceConfig(name, in, topic)
	for k, v := range map[string]string{
		"value.converter":                                 "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable":                  "false",
		"transforms":                                      "cast",
		"transforms.cast.type":                            "org.apache.kafka.connect.transforms.Cast$Value",
		"transforms.cast.spec":                            "int32",
		"errors.tolerance":                                "all",
		"errors.deadletterqueue.topic.name":               dlq,
		"errors.deadletterqueue.topic.replication.factor": "1",
		"errors.deadletterqueue.context.headers.enable":   "true",
	} {
		src[k] = v
	}
	w := e.startWorker(e.workerProps(nil), e.connector(src))
	requireLines(t, "topic", good, itest.Values(e.readTopic(topic, len(good))))
	recs := e.readTopic(dlq, len(bad))
	requireLines(t, "dead letter queue", bad, itest.Values(recs))
	position := 0
	for i, r := range recs {
		line := lines[3*i]
		h := headerMap(r)
		for k, want := range map[string]string{
			"__connect.errors.topic":                topic,
			"__connect.errors.connector.name":       name,
			"__connect.errors.task.id":              "0",
			"__connect.errors.stage":                "TRANSFORMATION",
			"__connect.errors.class.name":           "org.apache.kafka.connect.transforms.Cast$Value",
			"__connect.errors.exception.class.name": "org.apache.kafka.connect.errors.DataException",
			"__connect.errors.exception.message":    "Value (" + line + ") was out of range for requested data type",
			"__connect.errors.source.partition":     `{"filename":"` + in + `"}`,
			"__connect.errors.source.offset":        fmt.Sprintf(`{"position":%d}`, position+len(line)+1),
		} {
			if h[k] != want {
				t.Fatalf("DLQ record %d: %s=%q, want %q", i, k, h[k], want)
			}
		}
		for _, k := range []string{"__connect.errors.partition", "__connect.errors.offset"} {
			if _, ok := h[k]; ok {
				t.Fatalf("DLQ record %d of a source has %s", i, k)
			}
		}
		// Three lines per bad one: this one and the two good after it.
		for _, l := range lines[3*i : min(3*i+3, len(lines))] {
			position += len(l) + 1
		}
	}
	if end := e.endOffset(dlq); end != int64(len(bad)) {
		t.Fatalf("DLQ end offset %d, want %d", end, len(bad))
	}
	w.waitState(name, "RUNNING", 1)
	want := fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":%d}}]}`, in, position)
	deadline := time.Now().Add(stateTimeout)
	for {
		got := string(w.do("GET", "/connectors/"+name+"/offsets", nil, 200))
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("source offsets %s, want %s", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	w.stop()
}

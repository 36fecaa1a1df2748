package errorhandler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/convert"
	"github.com/sluice-io/sluice/host/runtime"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/transforms"
)

func consumedRecord() *kgo.Record {
	return &kgo.Record{
		Topic: "in", Partition: 3, Offset: 41,
		Key: []byte("k-41"), Value: []byte(`{"broken`),
		Headers:   []kgo.RecordHeader{{Key: "trace-id", Value: []byte("abc")}, {Key: "empty"}},
		Timestamp: time.UnixMilli(1_700_000_123_456),
	}
}

// dlqEnv is a kfake cluster (no auto-created topics) and an operator
// writing to its dead letter queue topic.
type dlqEnv struct {
	t       *testing.T
	cluster *kfake.Cluster
	op      *Operator
	topic   string
}

func newDLQEnv(t *testing.T, s Settings, opts Options) *dlqEnv {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if s.DLQTopic == "" {
		s.DLQTopic = "dlq"
	}
	if s.DLQReplicationFactor == 0 {
		s.DLQReplicationFactor = 1
	}
	opts.Task = runtime.TaskID{Connector: "orders", Task: 1}
	opts.Settings = s
	opts.ProducerOpts = []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	if opts.TaskClass == "" {
		opts.TaskClass = "io.test.OrdersSinkConnector"
	}
	opts.ValueConverterClass = "org.apache.kafka.connect.json.JsonConverter"
	op, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := op.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Close)
	return &dlqEnv{t: t, cluster: c, op: op, topic: s.DLQTopic}
}

// read reads n records of the dead letter queue topic.
func (e *dlqEnv) read(n int) []*kgo.Record {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...), kgo.ConsumeTopics(e.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			e.t.Fatalf("read %d of %d dead letter queue records", len(out), n)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func headerList(r *kgo.Record) string {
	var b strings.Builder
	for _, h := range r.Headers {
		fmt.Fprintf(&b, "%s=%s\n", h.Key, h.Value)
	}
	return b.String()
}

// The dead letter queue topic is created (1 partition) when missing; a
// sink's record lands there with its original key, value, headers and
// timestamp, followed by exactly Kafka Connect's context headers, in
// Kafka's order.
func TestDLQSinkRecordHeadersExact(t *testing.T) {
	e := newDLQEnv(t, Settings{ToleranceAll: true, DLQContextHeaders: true}, Options{})
	adm := kadm.NewClient(kgoClient(t, e.cluster))
	details, err := adm.ListTopics(context.Background(), "dlq")
	if err != nil || details["dlq"].Err != nil || len(details["dlq"].Partitions) != 1 {
		t.Fatalf("dead letter queue topic %+v %v, want 1 partition", details["dlq"], err)
	}
	rec := consumedRecord()
	cause := &convert.DataError{Msg: "Converting byte[] to Kafka Connect data failed due to serialization error"}
	err = e.op.Handle(context.Background(), runtime.ErrantRecord{
		Stage: runtime.StageValueConverter, Err: fmt.Errorf("VALUE_CONVERTER: record in-3@41: %w", cause), Consumed: rec,
	})
	if err != nil {
		t.Fatalf("Handle = %v", err)
	}
	got := e.read(1)[0]
	if string(got.Key) != "k-41" || string(got.Value) != `{"broken` || !got.Timestamp.Equal(rec.Timestamp) {
		t.Fatalf("record %q=%q at %s", got.Key, got.Value, got.Timestamp)
	}
	want := "trace-id=abc\nempty=\n" +
		"__connect.errors.topic=in\n" +
		"__connect.errors.partition=3\n" +
		"__connect.errors.offset=41\n" +
		"__connect.errors.connector.name=orders\n" +
		"__connect.errors.task.id=1\n" +
		"__connect.errors.stage=VALUE_CONVERTER\n" +
		"__connect.errors.class.name=org.apache.kafka.connect.json.JsonConverter\n" +
		"__connect.errors.exception.class.name=org.apache.kafka.connect.errors.DataException\n" +
		"__connect.errors.exception.message=Converting byte[] to Kafka Connect data failed due to serialization error\n" +
		"__connect.errors.exception.stacktrace=org.apache.kafka.connect.errors.DataException: Converting byte[] to Kafka Connect data failed due to serialization error\n" +
		"Caused by: VALUE_CONVERTER: record in-3@41: Converting byte[] to Kafka Connect data failed due to serialization error\n"
	if h := headerList(got); h != want {
		t.Fatalf("headers\n%s\nwant\n%s", h, want)
	}
	st := e.op.Stats()
	if st.DLQProduceRequests != 1 || st.DLQProduceFailures != 0 || st.RecordsSkipped != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Without context headers the record carries only its own; with tolerance
// none it is still dead lettered, and then the task fails.
func TestDLQToleranceNoneWritesThenFails(t *testing.T) {
	e := newDLQEnv(t, Settings{}, Options{})
	stageErr := &transforms.StageError{Alias: "f", Class: "org.apache.kafka.connect.transforms.Cast$Value",
		Err: &transforms.Exception{Class: transforms.DataException, Message: "Cast failed"}}
	err := e.op.Handle(context.Background(), runtime.ErrantRecord{Stage: runtime.StageTransformation, Err: stageErr, Consumed: consumedRecord()})
	var te *ToleranceError
	if !errors.As(err, &te) || te.Class != "org.apache.kafka.connect.transforms.Cast$Value" || !strings.Contains(err.Error(), "Cast failed") {
		t.Fatalf("Handle = %v", err)
	}
	got := e.read(1)[0]
	if h := headerList(got); h != "trace-id=abc\nempty=\n" {
		t.Fatalf("headers %q, want only the record's own", h)
	}
}

// An errant record a sink plugin reported (stage TASK_PUT) carries the
// plugin's stack trace and, as class, Kafka's SinkTask (which Kafka's
// WorkerErrantRecordReporter names whatever the task).
func TestDLQErrantReport(t *testing.T) {
	e := newDLQEnv(t, Settings{ToleranceAll: true, DLQContextHeaders: true}, Options{})
	err := e.op.Handle(context.Background(), runtime.ErrantRecord{
		Stage: runtime.StagePut, Err: errors.New("row rejected by the database"), Consumed: consumedRecord(),
		Trace: "java.sql.SQLException: row rejected\n\tat Db.insert(Db.java:10)",
	})
	if err != nil {
		t.Fatal(err)
	}
	h := headerList(e.read(1)[0])
	for _, want := range []string{
		"__connect.errors.stage=TASK_PUT\n",
		"__connect.errors.class.name=org.apache.kafka.connect.sink.SinkTask\n",
		"__connect.errors.exception.class.name=org.apache.kafka.connect.errors.ConnectException\n",
		"__connect.errors.exception.message=row rejected by the database\n",
		"__connect.errors.exception.stacktrace=java.sql.SQLException: row rejected\n\tat Db.insert(Db.java:10)\n",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("headers lack %q:\n%s", want, h)
		}
	}

	// The plugin named the exception's class: it is the one reported,
	// and the first line of the stack trace made up for it.
	err = e.op.Handle(context.Background(), runtime.ErrantRecord{
		Stage: runtime.StagePut, Err: errors.New("duplicate key"), Consumed: consumedRecord(),
		ExceptionClass: "java.sql.SQLIntegrityConstraintViolationException",
	})
	if err != nil {
		t.Fatal(err)
	}
	h = headerList(e.read(2)[1])
	for _, want := range []string{
		"__connect.errors.exception.class.name=java.sql.SQLIntegrityConstraintViolationException\n",
		"__connect.errors.exception.message=duplicate key\n",
		"__connect.errors.exception.stacktrace=java.sql.SQLIntegrityConstraintViolationException: duplicate key\n",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("headers lack %q:\n%s", want, h)
		}
	}
}

// A source record is written as the connector produced it, serialized with
// the task's converters (raw bytes as they are; what the converter refuses
// in its string form), with the source headers instead of partition and
// offset.
func TestDLQSourceRecord(t *testing.T) {
	str, err := convert.New("StringConverter", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := convert.NewHeader("SimpleHeaderConverter", nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newDLQEnv(t, Settings{ToleranceAll: true, DLQContextHeaders: true}, Options{
		KeyConverter: str, ValueConverter: str, HeaderConverter: hdr, TaskClass: "io.test.LinesSourceConnector"})
	src := &data.SourceRecord{
		Record: data.Record{Topic: "lines", Partition: data.NoPartition, Key: data.Raw("raw-key"), Value: "line 7",
			Headers: data.Headers{{Key: "n", Schema: data.Int32Schema, Value: int32(7)}}, Timestamp: time.UnixMilli(1_700_000_000_000)},
		SourcePartition: map[string]any{"filename": "/in.txt"},
		SourceOffset:    map[string]any{"position": int64(120)},
	}
	err = e.op.Handle(context.Background(), runtime.ErrantRecord{
		Stage: runtime.StageTransformation, Source: src,
		Err: &transforms.StageError{Alias: "h", Class: "org.apache.kafka.connect.transforms.HoistField$Value", Err: errors.New("no")},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := e.read(1)[0]
	if string(got.Key) != "raw-key" || string(got.Value) != "line 7" || !got.Timestamp.Equal(src.Timestamp) {
		t.Fatalf("record %q=%q at %s", got.Key, got.Value, got.Timestamp)
	}
	want := "n=7\n" +
		"__connect.errors.topic=lines\n" +
		"__connect.errors.connector.name=orders\n" +
		"__connect.errors.task.id=1\n" +
		"__connect.errors.stage=TRANSFORMATION\n" +
		"__connect.errors.class.name=org.apache.kafka.connect.transforms.HoistField$Value\n" +
		"__connect.errors.exception.class.name=org.apache.kafka.connect.errors.ConnectException\n" +
		"__connect.errors.exception.message=no\n" +
		"__connect.errors.exception.stacktrace=org.apache.kafka.connect.errors.ConnectException: no\n" +
		"Caused by: transformation h (org.apache.kafka.connect.transforms.HoistField$Value): no\n" +
		"__connect.errors.source.partition={\"filename\":\"/in.txt\"}\n" +
		"__connect.errors.source.offset={\"position\":120}\n"
	if h := headerList(got); h != want {
		t.Fatalf("headers\n%s\nwant\n%s", h, want)
	}
}

// A record that cannot reach the dead letter queue is not skipped: the
// handler fails (the task would), and the failure is counted and logged
// in Kafka Connect's words.
func TestDLQWriteFailureFails(t *testing.T) {
	var buf bytes.Buffer
	e := newDLQEnv(t, Settings{ToleranceAll: true}, Options{Logger: hclog.New(&hclog.LoggerOptions{Output: &buf})})
	e.cluster.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := e.op.Handle(ctx, runtime.ErrantRecord{Stage: runtime.StageValueConverter, Err: errors.New("bad"), Consumed: consumedRecord()})
	if err == nil || !strings.Contains(err.Error(), "dead letter queue dlq") {
		t.Fatalf("Handle = %v, want a dead letter queue failure", err)
	}
	if st := e.op.Stats(); st.DLQProduceFailures != 1 || st.RecordsSkipped != 0 {
		t.Fatalf("stats %+v", st)
	}
	if log := buf.String(); !strings.Contains(log, "[ERROR] Could not produce message to dead letter queue. topic=dlq") {
		t.Errorf("log %q lacks Kafka Connect's line", log)
	}
}

// An existing topic is used as it is.
func TestDLQExistingTopic(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	op, err := New(Options{Task: runtime.TaskID{Connector: "x"}, Settings: Settings{DLQTopic: "dlq", DLQReplicationFactor: 3},
		ProducerOpts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	details, err := kadm.NewClient(kgoClient(t, c)).ListTopics(context.Background(), "dlq")
	if err != nil || len(details["dlq"].Partitions) != 4 {
		t.Fatalf("topic %+v %v", details["dlq"], err)
	}
}

func kgoClient(t *testing.T, c *kfake.Cluster) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// A missing dead letter queue topic is logged and created; one that
// cannot be created fails the start, both in Kafka Connect's words
// ("Could not initialize dead letter queue with topic=..."), naming the
// cause.
func TestDLQStartFailure(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var buf bytes.Buffer
	op, err := New(Options{Task: runtime.TaskID{Connector: "orders", Task: 1},
		Settings:     Settings{DLQTopic: "dlq", DLQReplicationFactor: 3},
		ProducerOpts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)},
		Logger:       hclog.New(&hclog.LoggerOptions{Output: &buf})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = op.Start(ctx)
	t.Cleanup(op.Close)
	if err == nil || !strings.HasPrefix(err.Error(), "Could not initialize dead letter queue with topic=dlq: ") ||
		!strings.Contains(err.Error(), "replication factor 3") {
		t.Fatalf("Start = %v", err)
	}
	if log := buf.String(); !strings.Contains(log, "[ERROR] Topic dlq doesn't exist. Will attempt to create topic.") {
		t.Errorf("log %q lacks Kafka Connect's line", log)
	}
}

// A dead letter queue write waits as long as Kafka Connect's DLQ producer
// does: the worker sets its delivery.timeout.ms to Integer.MAX_VALUE, so a
// broker outage of minutes stalls the task instead of failing it.
func TestDLQWriteWaitsAsKafkaConnect(t *testing.T) {
	if want := time.Duration(math.MaxInt32) * time.Millisecond; dlqWriteTimeout != want {
		t.Fatalf("a dead letter queue write gives up after %s, Kafka Connect's after %s", dlqWriteTimeout, want)
	}
}

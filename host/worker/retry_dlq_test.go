package worker

// An internal test: Sluice's transformations and converters are built in,
// and none fails retriably, so the only way to make a stage fail with a
// RetriableException at worker level is to put a failing transformation
// into the pipeline the worker builds for the task (instances.pipelineHook).
// Everything else is the worker's own: its config, its plugin manager
// launching the log-sink example in a process, instances.NewTask with its
// converters, chain, error handler (retries, error log, dead letter queue)
// and errorRunner, and host/runtime's sink task, against kfake.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/errorhandler"
	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/runtime"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/transforms"
)

// faultyClass names the failing transformation in reports, as a custom
// SMT's class would be named in Kafka Connect.
const faultyClass = "io.sluice.test.FaultyPassthrough"

// faultyPassthrough is Kafka's FaultyPassthrough of
// ErrorHandlingIntegrationTest: it passes records through (to the
// connector's own chain, if any) except those whose value is in fail,
// which fail with a RetriableException every time, and those in flaky,
// which fail so on their first flaky[v] attempts only. It records the time
// of every attempt per value.
type faultyPassthrough struct {
	next  runtime.Transformer
	fail  map[string]bool
	flaky map[string]int

	mu       sync.Mutex
	attempts map[string][]time.Time
}

func (f *faultyPassthrough) try(r *data.Record) error {
	v, _ := r.Value.(string)
	f.mu.Lock()
	f.attempts[v] = append(f.attempts[v], time.Now())
	n := len(f.attempts[v])
	f.mu.Unlock()
	if f.fail[v] || n <= f.flaky[v] {
		return &transforms.StageError{Alias: "faulty", Class: faultyClass,
			Err: &transforms.Exception{Class: errorhandler.RetriableException, Message: "FaultyPassthrough refuses " + v}}
	}
	return nil
}

func (f *faultyPassthrough) Apply(r *data.Record) (*data.Record, error) {
	if err := f.try(r); err != nil {
		return nil, err
	}
	if f.next == nil {
		return r, nil
	}
	return f.next.Apply(r)
}

func (f *faultyPassthrough) ApplySink(r *data.SinkRecord) (*data.Record, error) {
	if err := f.try(&r.Record); err != nil {
		return nil, err
	}
	if st, ok := f.next.(runtime.SinkTransformer); ok {
		return st.ApplySink(r)
	}
	if f.next == nil {
		return &r.Record, nil
	}
	return f.next.Apply(&r.Record)
}

func (f *faultyPassthrough) times(v string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.attempts[v])
}

// runListener is the herder's side of a task: its last state.
type runListener struct {
	mu     sync.Mutex
	state  string
	failed error
}

func (l *runListener) set(s string, err error) {
	l.mu.Lock()
	l.state, l.failed = s, err
	l.mu.Unlock()
}
func (l *runListener) OnRunning()                   { l.set("RUNNING", nil) }
func (l *runListener) OnPaused()                    { l.set("PAUSED", nil) }
func (l *runListener) OnStopped()                   { l.set("STOPPED", nil) }
func (l *runListener) OnFailed(err error, _ string) { l.set("FAILED", err) }
func (l *runListener) get() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state, l.failed
}

// logSinkPluginDir builds the log-sink example into a directory of the
// test's own (the package's TestMain builds its plugins where only the
// external tests see them).
func logSinkPluginDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "log-sink"), "../../examples/go/log-sink").CombinedOutput()
	if err != nil {
		t.Fatalf("build log-sink: %v\n%s", err, out)
	}
	return dir
}

// Kafka's ErrorHandlingIntegrationTest.testSkipRetryAndDLQWithHeaders: a
// sink whose transformation fails with a RetriableException for some
// records, errors.retry.timeout=1000, errors.retry.delay.max.ms=100,
// tolerance all, the error log with messages, a dead letter queue with
// context headers. Each failing record is tried again until the timeout
// passes (at least a second after its first attempt, several attempts),
// then logged, dead-lettered with its consumed bytes and the headers
// docs/errors.md lists, and skipped; a record that fails twice and then
// passes reaches the sink; the sink gets every other record in order, the
// offsets of all are committed and the task keeps running.
func TestSinkRetriesRunOutIntoDeadLetterQueue(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	seeds := cluster.ListenAddrs()
	dir := t.TempDir()
	props := map[string]string{
		"bootstrap.servers":                 strings.Join(seeds, ","),
		"key.converter":                     "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                   "org.apache.kafka.connect.storage.StringConverter",
		"offset.storage.file.filename":      filepath.Join(dir, "offsets.json"),
		"offset.flush.interval.ms":          "200",
		"task.shutdown.graceful.timeout.ms": "3000",
		"listeners":                         "http://127.0.0.1:0",
		"plugin.path":                       logSinkPluginDir(t),
		"consumer.fetch.max.wait.ms":        "100",
	}
	wcfg, err := config.ParseWorker(props, true)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	lw := &lockedWriter{w: &logs}
	w, err := NewStandalone(wcfg, Options{LogOutput: lw, BundledPlugins: "-", PluginWatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if t.Failed() {
			t.Logf("worker log:\n%s", lw.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := w.plugins.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	in := &instances{mgr: w.plugins, cfg: w.cfg, loggers: w.loggers, log: w.log, seeds: w.seeds, stats: &w.shared}

	// 200 records; 5 fail for good, 1 fails twice and then passes.
	const total, topic, dlqTopic, name = 200, "in", "dlq-in", "snk"
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	failAt := []int{7, 50, 51, 120, total - 1}
	const flakyAt = 90
	fail, flaky := map[string]bool{}, map[string]int{fmt.Sprintf("v-%03d", flakyAt): 2}
	var values, good []string
	var recs []*kgo.Record
	for i := range total {
		v := fmt.Sprintf("v-%03d", i)
		values = append(values, v)
		if slices.Contains(failAt, i) {
			fail[v] = true
		} else {
			good = append(good, v)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k-%d", i)), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "origin", Value: []byte("test")}}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "out.txt")
	connCfg := map[string]string{
		"name": name, "connector.class": "io.sluice.examples.LogSink", "tasks.max": "1", "topics": topic, "file": out,
		"errors.retry.timeout":                            "1000",
		"errors.retry.delay.max.ms":                       "100",
		"errors.tolerance":                                "all",
		"errors.log.enable":                               "true",
		"errors.log.include.messages":                     "true",
		"errors.deadletterqueue.topic.name":               dlqTopic,
		"errors.deadletterqueue.topic.replication.factor": "1",
		"errors.deadletterqueue.context.headers.enable":   "true",
	}
	class, err := in.Lookup(ctx, connCfg["connector.class"])
	if err != nil {
		t.Fatal(err)
	}
	taskCfg := map[string]string{}
	for k, v := range connCfg {
		taskCfg[k] = v
	}
	taskCfg[herder.KeyTaskClass] = class.TaskClassName()
	spec := herder.TaskSpec{ID: herder.TaskID{Connector: name, Task: 0}, Class: class, ConnectorConfig: connCfg, TaskConfig: taskCfg}
	faulty := &faultyPassthrough{fail: fail, flaky: flaky, attempts: map[string][]time.Time{}}
	lis := &runListener{}
	in.pipelineHook = func(p runtime.Pipeline) runtime.Pipeline {
		faulty.next = p.Transforms
		p.Transforms = faulty
		return p
	}
	runner, err := in.NewTask(ctx, spec, lis)
	if err != nil {
		t.Fatal(err)
	}
	er, ok := runner.(*errorRunner)
	if !ok {
		t.Fatalf("NewTask with a dead letter queue returned %T, want *errorRunner", runner)
	}
	task, op := er, er.op

	start := time.Now()
	runDone := make(chan error, 1)
	go func() { runDone <- task.Run(context.Background()) }()
	stopped := false
	defer func() {
		if !stopped {
			task.Stop()
			<-runDone
		}
	}()

	// The sink file: every record but the failing ones, in order.
	deadline := time.Now().Add(30 * time.Second)
	for len(retryFileLines(t, out)) < len(good) {
		if st, err := lis.get(); st == "FAILED" {
			t.Fatalf("task failed: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("sink file has %d of %d lines", len(retryFileLines(t, out)), len(good))
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)

	// Offsets of all committed, the failing last record's too.
	adm := kadm.NewClient(cl)
	for {
		offs, err := adm.FetchOffsets(ctx, herder.SinkGroup(name, connCfg))
		if err == nil {
			if o, ok := offs.Lookup(topic, 0); ok && o.At == total {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offsets %v (%v), want %d", offs, err, total)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // nothing more arrives
	if got := retryFileLines(t, out); !slices.Equal(got, good) {
		t.Fatalf("sink file (%d lines) differs from the %d good records:\n got %q\nwant %q", len(got), len(good), got, good)
	}
	if st, err := lis.get(); st != "RUNNING" {
		t.Fatalf("task %s (%v), want RUNNING", st, err)
	}

	// Retries: each failing record was tried until a second after its
	// first attempt had passed, several times; the next record came only
	// after that. The flaky record was tried exactly three times.
	retryTimeout := time.Second
	for _, i := range failAt {
		v := values[i]
		at := faulty.times(v)
		if len(at) < 3 {
			t.Errorf("record %s tried %d times, want the first attempt and at least 2 retries", v, len(at))
			continue
		}
		if d := at[len(at)-1].Sub(at[0]); d < retryTimeout-150*time.Millisecond {
			t.Errorf("record %s: retries over %s after its first attempt, want about %s", v, d, retryTimeout)
		}
		if i+1 < total {
			if next := faulty.times(values[i+1]); len(next) == 0 || next[0].Sub(at[0]) < retryTimeout {
				t.Errorf("record %s after %s (first attempts %v, %v): the retry timeout did not hold the task", values[i+1], next[0].Sub(at[0]), at[0], next)
			}
		}
	}
	if elapsed < time.Duration(len(failAt))*retryTimeout {
		t.Errorf("all good records delivered after %s, less than %d retry timeouts", elapsed, len(failAt))
	}
	if n := len(faulty.times(values[flakyAt])); n != 3 {
		t.Errorf("flaky record tried %d times, want 3", n)
	}
	st := op.Stats()
	t.Logf("%d good records in %s; attempts of the failing ones %v; stats %+v", len(good), elapsed.Round(time.Millisecond),
		func() (n []int) {
			for _, i := range failAt {
				n = append(n, len(faulty.times(values[i])))
			}
			return n
		}(), st)
	if st.RecordErrors != int64(len(failAt)) || st.RecordsSkipped != int64(len(failAt)) || st.ErrorsLogged != int64(len(failAt)) ||
		st.DLQProduceRequests != int64(len(failAt)) || st.DLQProduceFailures != 0 {
		t.Errorf("error stats %+v, want %d errors, skipped, logged and dead-lettered", st, len(failAt))
	}
	if st.Retries < int64(2*len(failAt)+2) {
		t.Errorf("%d retries, want at least %d", st.Retries, 2*len(failAt)+2)
	}

	// The dead letter queue: exactly the failing records, as consumed,
	// with the context headers after their own.
	dlq := consumeN(t, cl, dlqTopic, len(failAt))
	for j, r := range dlq {
		i := failAt[j]
		if string(r.Value) != values[i] || string(r.Key) != fmt.Sprintf("k-%d", i) {
			t.Errorf("DLQ record %d: %q=%q, want record %d", j, r.Key, r.Value, i)
		}
		if len(r.Headers) != 11 || r.Headers[0].Key != "origin" || string(r.Headers[0].Value) != "test" {
			t.Errorf("DLQ record %d: %d headers %v, want its own then the 10 context headers", j, len(r.Headers), r.Headers)
		}
		h := map[string]string{}
		for _, hd := range r.Headers {
			h[hd.Key] = string(hd.Value)
		}
		for k, want := range map[string]string{
			"__connect.errors.topic":                topic,
			"__connect.errors.partition":            "0",
			"__connect.errors.offset":               fmt.Sprint(i),
			"__connect.errors.connector.name":       name,
			"__connect.errors.task.id":              "0",
			"__connect.errors.stage":                "TRANSFORMATION",
			"__connect.errors.class.name":           faultyClass,
			"__connect.errors.exception.class.name": "org.apache.kafka.connect.errors.RetriableException",
			"__connect.errors.exception.message":    "FaultyPassthrough refuses " + values[i],
		} {
			if h[k] != want {
				t.Errorf("DLQ record %d: %s=%q, want %q", j, k, h[k], want)
			}
		}
		if !strings.HasPrefix(h["__connect.errors.exception.stacktrace"], "org.apache.kafka.connect.errors.RetriableException: ") {
			t.Errorf("DLQ record %d: stack trace %q", j, h["__connect.errors.exception.stacktrace"])
		}
	}
	if n := dlqEndOffset(t, adm, dlqTopic); n != int64(len(failAt)) {
		t.Errorf("DLQ end offset %d, want %d", n, len(failAt))
	}

	task.Stop()
	stopped = true
	if err := <-runDone; err != nil {
		t.Fatalf("task run: %v", err)
	}
	log := lw.String()
	for _, i := range failAt {
		want := fmt.Sprintf("Error encountered in task %s-0. Executing stage 'TRANSFORMATION' with class '%s', where consumed record is {topic='%s', partition=0, offset=%d, timestamp=",
			name, faultyClass, topic, i)
		if !strings.Contains(log, want) {
			t.Errorf("the worker log has no line %q", want)
		}
	}
	if n := strings.Count(log, "Error encountered in task "+name+"-0."); n != len(failAt) {
		t.Errorf("%d error log lines, want %d", n, len(failAt))
	}
}

// lockedWriter serializes the worker's log writes.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *lockedWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *lockedWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func retryFileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
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

// consumeN reads n records of topic from the start.
func consumeN(t *testing.T, cl *kgo.Client, topic string, n int) []*kgo.Record {
	t.Helper()
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	c, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(out), n, topic)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func dlqEndOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := offs.Lookup(topic, 0)
	return o.Offset
}

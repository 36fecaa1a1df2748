package errorhandler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/convert"
	"github.com/sluice-io/sluice/host/runtime"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	"github.com/sluice-io/sluice/transforms"
)

// fakeClock advances only when the operator sleeps, and records the
// sleeps.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func (c *fakeClock) list() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}

func newOperator(t *testing.T, s Settings, clock *fakeClock) *Operator {
	t.Helper()
	o, err := New(Options{
		Task: runtime.TaskID{Connector: "c", Task: 2}, Settings: s, TaskClass: "io.test.TestSinkConnector",
		KeyConverterClass: "org.apache.kafka.connect.storage.StringConverter", ValueConverterClass: "org.apache.kafka.connect.json.JsonConverter",
		HeaderConverterClass: "org.apache.kafka.connect.storage.SimpleHeaderConverter",
		Now:                  clock.Now, Sleep: clock.Sleep,
		// The largest jitter: the bound is easiest to check against.
		Jitter: func(n int64) int64 { return n - 1 },
	})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func retriable(msg string) error { return &wire.Error{Kind: wire.KindRetriable, Message: msg} }

func TestBackoff(t *testing.T) {
	now := time.Unix(0, 0)
	half := func(n int64) int64 { return n / 2 }
	for _, c := range []struct {
		attempt  int
		max      time.Duration
		deadline time.Duration // from now; 0: none
		want     time.Duration
	}{
		{1, time.Minute, 0, 300 * time.Millisecond},
		{2, time.Minute, 0, 600 * time.Millisecond},
		{3, time.Minute, 0, 1200 * time.Millisecond},
		{8, time.Minute, 0, 38400 * time.Millisecond},
		// 76.8 s is above the cap: jitter in [0, 60 s).
		{9, time.Minute, 0, 30 * time.Second},
		{1000, time.Minute, 0, 30 * time.Second},
		{3, time.Second, 0, 500 * time.Millisecond},
		{1, 0, 0, 0},
		// Never past the deadline.
		{4, time.Minute, time.Second, time.Second},
		{1, time.Minute, -time.Second, 0},
	} {
		var deadline time.Time
		if c.deadline != 0 {
			deadline = now.Add(c.deadline)
		}
		if got := Backoff(c.attempt, c.max, now, deadline, half); got != c.want {
			t.Errorf("Backoff(%d, max %s, deadline +%s) = %s, want %s", c.attempt, c.max, c.deadline, got, c.want)
		}
	}
	// With real randomness the jitter stays below the cap.
	for range 1000 {
		if d := Backoff(20, time.Second, now, time.Time{}, func(n int64) int64 { return time.Now().UnixNano() % n }); d < 0 || d >= time.Second {
			t.Fatalf("jittered backoff %s outside [0, 1s)", d)
		}
	}
}

// A retriable failure is retried with Kafka's waits until the timeout, the
// last attempt right at the deadline; then the record is reported and, with
// tolerance all, skipped.
func TestRetryUntilTimeoutThenTolerate(t *testing.T) {
	clock := newClock()
	o := newOperator(t, Settings{RetryTimeout: 5 * time.Second, RetryDelayMax: time.Minute, ToleranceAll: true}, clock)
	calls := 0
	err := o.Handle(context.Background(), runtime.ErrantRecord{
		Stage: runtime.StageValueConverter, Err: retriable("schema registry unavailable"),
		Retry: func(context.Context) (runtime.Stage, error) {
			calls++
			return runtime.StageValueConverter, retriable("schema registry unavailable")
		},
	})
	if err != nil {
		t.Fatalf("Handle = %v, want nil (tolerated)", err)
	}
	want := []time.Duration{300 * time.Millisecond, 600 * time.Millisecond, 1200 * time.Millisecond, 2400 * time.Millisecond, 500 * time.Millisecond}
	if got := clock.list(); !slices.Equal(got, want) {
		t.Fatalf("sleeps %v, want %v", got, want)
	}
	st := o.Stats()
	if calls != 5 || st.Retries != 5 || st.RecordFailures != 6 || st.RecordErrors != 1 || st.RecordsSkipped != 1 || st.LastError.IsZero() {
		t.Fatalf("calls %d, stats %+v", calls, st)
	}
}

// Jittered waits near the cap still add up to no more than the timeout.
func TestRetryWaitsBoundedByTimeout(t *testing.T) {
	clock := newClock()
	o := newOperator(t, Settings{RetryTimeout: 10 * time.Second, RetryDelayMax: time.Second}, clock)
	err := o.Handle(context.Background(), runtime.ErrantRecord{
		Stage: runtime.StageTransformation, Err: retriable("busy"),
		Retry: func(context.Context) (runtime.Stage, error) { return runtime.StageTransformation, retriable("busy") },
	})
	var te *ToleranceError
	if !errors.As(err, &te) {
		t.Fatalf("Handle = %v, want a ToleranceError (tolerance none)", err)
	}
	var total time.Duration
	for _, d := range clock.list() {
		if d > time.Second {
			t.Errorf("wait %s above errors.retry.delay.max.ms", d)
		}
		total += d
	}
	if total != 10*time.Second {
		t.Errorf("waited %s in all, want exactly the 10 s timeout", total)
	}
}

// A retry that passes ends the handling: nil, nothing reported.
func TestRetryRecovers(t *testing.T) {
	clock := newClock()
	o := newOperator(t, Settings{RetryTimeout: NoRetryTimeout, RetryDelayMax: time.Minute, LogEnable: true}, clock)
	calls := 0
	err := o.Handle(context.Background(), runtime.ErrantRecord{
		Stage: runtime.StageTransformation, Err: retriable("x"),
		Retry: func(context.Context) (runtime.Stage, error) {
			calls++
			if calls < 3 {
				return runtime.StageTransformation, retriable("x")
			}
			return "", nil
		},
	})
	if err != nil || calls != 3 {
		t.Fatalf("Handle = %v after %d calls", err, calls)
	}
	st := o.Stats()
	if st.Retries != 3 || st.RecordFailures != 3 || st.RecordErrors != 0 || st.RecordsSkipped != 0 || st.ErrorsLogged != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Non-retriable failures are not retried, whatever the timeout; nor are
// failures without a Retry, nor any when the timeout is 0.
func TestNoRetry(t *testing.T) {
	for _, c := range []struct {
		name     string
		s        Settings
		err      error
		retry    bool
		wantCall int
	}{
		{"non-retriable", Settings{RetryTimeout: time.Minute}, &transforms.Exception{Class: transforms.DataException, Message: "bad"}, true, 0},
		{"no retry func", Settings{RetryTimeout: time.Minute}, retriable("x"), false, 0},
		{"timeout 0", Settings{}, retriable("x"), true, 0},
		{"a retry turns non-retriable", Settings{RetryTimeout: time.Minute, RetryDelayMax: time.Minute}, retriable("x"), true, 1},
	} {
		clock := newClock()
		o := newOperator(t, c.s, clock)
		calls := 0
		rec := runtime.ErrantRecord{Stage: runtime.StageKeyConverter, Err: c.err}
		if c.retry {
			rec.Retry = func(context.Context) (runtime.Stage, error) {
				calls++
				return runtime.StageKeyConverter, errors.New("now it is broken for good")
			}
		}
		err := o.Handle(context.Background(), rec)
		if err == nil || calls != c.wantCall {
			t.Errorf("%s: Handle = %v after %d retries, want a failure after %d", c.name, err, calls, c.wantCall)
		}
		if c.wantCall == 1 && !strings.Contains(err.Error(), "now it is broken for good") {
			t.Errorf("%s: the failure %q does not name the last error", c.name, err)
		}
	}
}

// Tolerance by stage, and the failure in Kafka Connect's words: an error
// the stage never tolerates is an "Unhandled exception" (execAndHandleError),
// a refused send under none is the producer callback's unrecoverable
// exception (WorkerSourceTask), any other "Tolerance exceeded".
func TestToleranceByStage(t *testing.T) {
	const (
		exceeded  = "Tolerance exceeded in error handler"
		unhandled = "Unhandled exception in error handler"
		send      = "Unrecoverable exception from producer send callback"
	)
	fatal := errors.New("boom")
	for _, c := range []struct {
		stage runtime.Stage
		err   error
		all   bool
		want  bool   // tolerated
		msg   string // else the failure's first words
	}{
		{runtime.StageTransformation, fatal, true, true, ""},
		{runtime.StageKeyConverter, fatal, true, true, ""},
		{runtime.StageValueConverter, fatal, true, true, ""},
		{runtime.StageHeaderConverter, fatal, true, true, ""},
		{runtime.StageProduce, fatal, true, true, ""},
		{runtime.StagePut, fatal, true, true, ""},
		{runtime.StagePoll, fatal, true, false, unhandled},
		{runtime.StagePoll, retriable("later"), true, true, ""},
		{runtime.StagePoll, retriable("later"), false, false, exceeded},
		{runtime.StageConsume, fatal, true, false, unhandled},
		{runtime.StageConsume, fatal, false, false, unhandled},
		{runtime.StageTransformation, fatal, false, false, exceeded},
		{runtime.StageValueConverter, retriable("later"), false, false, exceeded},
		{runtime.StagePut, fatal, false, false, exceeded},
		{runtime.StageProduce, fatal, false, false, send},
	} {
		o := newOperator(t, Settings{ToleranceAll: c.all}, newClock())
		err := o.Handle(context.Background(), runtime.ErrantRecord{Stage: c.stage, Err: c.err})
		if got := err == nil; got != c.want {
			t.Errorf("stage %s, %v, all=%v: Handle = %v", c.stage, c.err, c.all, err)
		}
		if err != nil {
			var te *ToleranceError
			if !errors.As(err, &te) || te.Stage != c.stage || !errors.Is(err, c.err) ||
				!strings.HasPrefix(err.Error(), c.msg+": executing stage '"+string(c.stage)+"' with class '") {
				t.Errorf("stage %s, all=%v: failure %q (%T), want %q first", c.stage, c.all, err, err, c.msg)
			}
		}
		st := o.Stats()
		if st.RecordErrors != 1 || (st.RecordsSkipped == 1) != c.want {
			t.Errorf("stage %s: stats %+v", c.stage, st)
		}
	}
}

func TestExecutingClassAndException(t *testing.T) {
	o := newOperator(t, Settings{}, newClock())
	stageErr := &transforms.StageError{Alias: "wrap", Class: "org.apache.kafka.connect.transforms.HoistField$Value",
		Err: &transforms.Exception{Class: transforms.DataException, Message: "Only Map objects supported"}}
	for _, c := range []struct {
		stage                 runtime.Stage
		err                   error
		class, exClass, exMsg string
	}{
		{runtime.StageTransformation, fmt.Errorf("TRANSFORMATION: %w", stageErr), "org.apache.kafka.connect.transforms.HoistField$Value", transforms.DataException, "Only Map objects supported"},
		{runtime.StageValueConverter, fmt.Errorf("VALUE_CONVERTER: record t-0@1: %w", &convert.DataError{Msg: "Converting byte[] to Kafka Connect data failed"}), "org.apache.kafka.connect.json.JsonConverter", DataException, "Converting byte[] to Kafka Connect data failed"},
		// Kafka's JsonConverter throws DataException("Converting byte[] to
		// Kafka Connect data failed due to serialization error: ", cause):
		// the message ends there, the cause is in the stack trace.
		{runtime.StageValueConverter, fmt.Errorf("VALUE_CONVERTER: record t-0@1: %w", &convert.DataError{Msg: "Converting byte[] to Kafka Connect data failed due to serialization error", Err: errors.New("invalid character 'b'")}),
			"org.apache.kafka.connect.json.JsonConverter", DataException, "Converting byte[] to Kafka Connect data failed due to serialization error: "},
		{runtime.StageKeyConverter, errors.New("x"), "org.apache.kafka.connect.storage.StringConverter", ConnectException, "x"},
		{runtime.StageHeaderConverter, errors.New("x"), "org.apache.kafka.connect.storage.SimpleHeaderConverter", ConnectException, "x"},
		// Kafka's WorkerErrantRecordReporter names SinkTask, not the task's class.
		{runtime.StagePut, errors.New("bad row"), "org.apache.kafka.connect.sink.SinkTask", ConnectException, "bad row"},
		{runtime.StageProduce, fmt.Errorf("KAFKA_PRODUCE: write to topic t: %w", kerr.MessageTooLarge), "org.apache.kafka.connect.runtime.WorkerSourceTask", KafkaException, kerr.MessageTooLarge.Message + ": " + kerr.MessageTooLarge.Description},
		{runtime.StagePut, &wire.Error{Kind: wire.KindRetriable, Message: "again"}, "org.apache.kafka.connect.sink.SinkTask", RetriableException, "again"},
	} {
		if got := o.executingClass(c.stage, c.err); got != c.class {
			t.Errorf("%s: class %s, want %s", c.stage, got, c.class)
		}
		ex := describe(c.err, "", "")
		trace := c.exClass + ": " + c.exMsg
		if c.err.Error() != c.exMsg {
			trace += "\nCaused by: " + c.err.Error()
		}
		if ex.class != c.exClass || ex.message != c.exMsg || ex.trace != trace {
			t.Errorf("%s: exception %+v, want class %s message %q", c.stage, ex, c.exClass, c.exMsg)
		}
	}
	if ex := describe(errors.New("bad"), "java.lang.IllegalStateException: bad\n\tat X.y(X.java:1)", ""); !strings.HasPrefix(ex.trace, "java.lang.IllegalStateException") {
		t.Errorf("the plugin's trace is not the stack trace: %+v", ex)
	}
}

func TestParseSettings(t *testing.T) {
	s, err := ParseSettings(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if s != (Settings{RetryDelayMax: time.Minute, DLQReplicationFactor: 3}) || s.Reports() {
		t.Fatalf("defaults %+v", s)
	}
	s, err = ParseSettings(map[string]string{
		KeyRetryTimeout: "-1", KeyRetryDelayMax: "1500", KeyTolerance: "ALL", KeyLogEnable: "true", KeyLogIncludeMessages: "TRUE",
		KeyDLQTopicName: " dlq ", KeyDLQReplicationFactor: "1", KeyDLQContextHeadersEnable: "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{RetryTimeout: NoRetryTimeout, RetryDelayMax: 1500 * time.Millisecond, ToleranceAll: true, LogEnable: true,
		LogIncludeMessages: true, DLQTopic: "dlq", DLQReplicationFactor: 1, DLQContextHeaders: true}
	if s != want || !s.Reports() {
		t.Fatalf("settings %+v, want %+v", s, want)
	}
	// Kafka Connect defines errors.retry.timeout without a validator and
	// retries without end for any negative value, not only -1: a
	// connector config it runs must not fail its task here.
	// A timeout too long for a time.Duration is forever too, not an
	// overflow into the past.
	for _, v := range []string{"-2", "-60000", "-9223372036854775808", "9223372036854775807"} {
		s, err := ParseSettings(map[string]string{KeyRetryTimeout: v})
		if err != nil || s.RetryTimeout != NoRetryTimeout {
			t.Errorf("%s=%s: %+v, %v; want retries without end", KeyRetryTimeout, v, s, err)
		}
	}
	if s, err := ParseSettings(map[string]string{KeyRetryDelayMax: "9223372036854775807"}); err != nil || s.RetryDelayMax <= 0 {
		t.Errorf("%s=max int64: %+v, %v; want the longest wait", KeyRetryDelayMax, s, err)
	}
	// Nor errors.retry.delay.max.ms: a negative one is no wait.
	for _, v := range []string{"-5", "-9223372036854775808"} {
		if s, err := ParseSettings(map[string]string{KeyRetryDelayMax: v}); err != nil || s.RetryDelayMax != 0 {
			t.Errorf("%s=%s: %+v, %v; want no wait", KeyRetryDelayMax, v, s, err)
		}
	}
	if _, err := ParseSettings(map[string]string{KeyRetryDelayMax: "-soon"}); err == nil || !strings.Contains(err.Error(), KeyRetryDelayMax) {
		t.Errorf("%s=-soon: %v", KeyRetryDelayMax, err)
	}
	_, err = ParseSettings(map[string]string{KeyRetryTimeout: "soon", KeyTolerance: "some", KeyLogEnable: "yes", KeyDLQReplicationFactor: "0"})
	for _, k := range []string{KeyRetryTimeout, KeyTolerance, KeyLogEnable, KeyDLQReplicationFactor} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("error %v does not name %s", err, k)
		}
	}
}

// The error log line is Kafka Connect's, with the record's coordinates
// only with errors.log.include.messages.
func TestLogReporter(t *testing.T) {
	for _, include := range []bool{false, true} {
		var buf bytes.Buffer
		o, err := New(Options{Task: runtime.TaskID{Connector: "c", Task: 0}, Settings: Settings{LogEnable: true, LogIncludeMessages: include, ToleranceAll: true},
			ValueConverterClass: "org.apache.kafka.connect.json.JsonConverter",
			Logger:              hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})})
		if err != nil {
			t.Fatal(err)
		}
		rec := consumedRecord()
		if err := o.Handle(context.Background(), runtime.ErrantRecord{Stage: runtime.StageValueConverter, Err: errors.New("bad json"), Consumed: rec}); err != nil {
			t.Fatal(err)
		}
		line := buf.String()
		head := "[ERROR] Error encountered in task c-0. Executing stage 'VALUE_CONVERTER' with class 'org.apache.kafka.connect.json.JsonConverter'"
		where := fmt.Sprintf(", where consumed record is {topic='in', partition=3, offset=41, timestamp=%d, timestampType=CreateTime}.", rec.Timestamp.UnixMilli())
		if !strings.Contains(line, head) || strings.Contains(line, where) != include || !strings.Contains(line, "error=\"bad json\"") ||
			!strings.Contains(line, "connector=c task=0 stage=VALUE_CONVERTER") {
			t.Errorf("include.messages=%v: log %q", include, line)
		}
		if include && !strings.Contains(line, "topic=in partition=3 offset=41") {
			t.Errorf("log line without the record's coordinates: %q", line)
		}
		if o.Stats().ErrorsLogged != 1 {
			t.Errorf("errors logged %d", o.Stats().ErrorsLogged)
		}
	}
}

// A record the producer refused is never written again by the operator,
// even with a Retry and a retry timeout: a second write would land behind
// the records of its partition produced since (Kafka Connect does not
// retry a failed send either). It is reported, then skipped under
// errors.tolerance=all or fails the task under none.
func TestProduceFailureNotRetried(t *testing.T) {
	for _, all := range []bool{true, false} {
		clock := newClock()
		o := newOperator(t, Settings{RetryTimeout: NoRetryTimeout, RetryDelayMax: time.Minute, ToleranceAll: all, LogEnable: true}, clock)
		calls := 0
		err := o.Handle(context.Background(), runtime.ErrantRecord{
			Stage: runtime.StageProduce, Err: fmt.Errorf("KAFKA_PRODUCE: write to topic t: %w", kerr.NotEnoughReplicas),
			Retry: func(context.Context) (runtime.Stage, error) {
				calls++
				return "", nil
			},
		})
		if calls != 0 || len(clock.list()) != 0 {
			t.Fatalf("tolerance all=%v: %d retries after %v", all, calls, clock.list())
		}
		if (err == nil) != all {
			t.Errorf("tolerance all=%v: Handle = %v", all, err)
		}
		if st := o.Stats(); st.Retries != 0 || st.RecordErrors != 1 || st.ErrorsLogged != 1 {
			t.Errorf("tolerance all=%v: stats %+v", all, st)
		}
	}
}

// errors.retry.delay.max.ms=0 leaves no room for a wait: Kafka Connect's
// first backoff then fails (ThreadLocalRandom.nextLong(0)) and the record
// is not retried. Sluice does not retry it either, rather than retrying in
// a loop without a pause until the timeout.
func TestNoRetryWithoutDelay(t *testing.T) {
	clock := newClock()
	o := newOperator(t, Settings{RetryTimeout: time.Minute, RetryDelayMax: 0}, clock)
	calls := 0
	err := o.Handle(context.Background(), runtime.ErrantRecord{
		Stage: runtime.StageValueConverter, Err: retriable("busy"),
		Retry: func(context.Context) (runtime.Stage, error) {
			calls++
			if calls == 100 {
				return "", nil
			}
			return runtime.StageValueConverter, retriable("busy")
		},
	})
	var te *ToleranceError
	if calls != 0 || !errors.As(err, &te) {
		t.Fatalf("%d retries, Handle = %v; want none and the task failed", calls, err)
	}
}

// A consumed record without a timestamp (an errant record reported with
// its coordinates only) is logged without one, as Kafka Connect's log
// reporter leaves out the timestamp of a record with no timestamp type,
// rather than as year 1.
func TestLogReporterNoTimestamp(t *testing.T) {
	var buf bytes.Buffer
	o, err := New(Options{Task: runtime.TaskID{Connector: "c", Task: 0}, Settings: Settings{LogEnable: true, LogIncludeMessages: true, ToleranceAll: true},
		Logger: hclog.New(&hclog.LoggerOptions{Output: &buf})})
	if err != nil {
		t.Fatal(err)
	}
	rec := &kgo.Record{Topic: "in", Partition: 3, Offset: 41}
	if err := o.Handle(context.Background(), runtime.ErrantRecord{Stage: runtime.StagePut, Err: errors.New("bad row"), Consumed: rec}); err != nil {
		t.Fatal(err)
	}
	want := "Executing stage 'TASK_PUT' with class 'org.apache.kafka.connect.sink.SinkTask', where consumed record is {topic='in', partition=3, offset=41}."
	if !strings.Contains(buf.String(), want) {
		t.Errorf("log %q, want %q", buf.String(), want)
	}
}

// The doubling never overflows into a negative wait, whatever the cap.
func TestBackoffNoOverflow(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for attempt := 1; attempt <= 70; attempt++ {
		if d := Backoff(attempt, math.MaxInt64, now, time.Time{}, func(n int64) int64 { return n - 1 }); d < 0 {
			t.Fatalf("attempt %d: wait %s", attempt, d)
		}
	}
}

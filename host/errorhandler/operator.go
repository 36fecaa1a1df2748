package errorhandler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/runtime"
)

// minRetryDelay is the first wait between attempts (Kafka Connect's
// RETRIES_DELAY_MIN_MS); each later one doubles it.
const minRetryDelay = 300 * time.Millisecond

// Options configure an Operator for one task.
type Options struct {
	Task     runtime.TaskID
	Settings Settings
	// TaskClass names the task in reports of TASK_POLL (TASK_PUT reports
	// name Kafka's SinkTask, as Kafka Connect's do); the converter classes
	// name the converter stages.
	TaskClass            string
	KeyConverterClass    string
	ValueConverterClass  string
	HeaderConverterClass string
	// The task's converters, which serialize a source record for the dead
	// letter queue.
	KeyConverter    runtime.Converter
	ValueConverter  runtime.Converter
	HeaderConverter runtime.HeaderConverter
	// ProducerOpts are the dead letter queue producer's client options
	// (seeds, security, the connector's producer settings). They come
	// after the operator's defaults, so they win; the client id is
	// Kafka Connect's connector-dlq-producer-<connector>-<task>.
	ProducerOpts []kgo.Opt
	Logger       hclog.Logger

	// Now, Sleep and Jitter replace the clock and randomness in tests.
	// Sleep returns ctx's error when ctx ends first; Jitter returns a
	// number in [0, n).
	Now    func() time.Time
	Sleep  func(ctx context.Context, d time.Duration) error
	Jitter func(n int64) int64
}

// Stats are an operator's counts, Kafka Connect's task-error-metrics.
type Stats struct {
	// RecordFailures counts failed attempts, retries included
	// (total-record-failures).
	RecordFailures int64
	// RecordErrors counts records that failed for good (total-record-errors).
	RecordErrors int64
	// RecordsSkipped counts records tolerated and left out
	// (total-records-skipped).
	RecordsSkipped int64
	// Retries counts retry attempts (total-retries).
	Retries int64
	// ErrorsLogged counts error log lines (total-errors-logged).
	ErrorsLogged int64
	// DLQProduceRequests and DLQProduceFailures count dead letter queue
	// writes and those that failed.
	DLQProduceRequests int64
	DLQProduceFailures int64
	// LastError is when the last record failed for good; zero if never.
	LastError time.Time
}

// Operator is one task's error handling: retries with backoff, tolerance,
// the error log and the dead letter queue. It implements
// runtime.ErrorHandler and runtime.Reporter, and is safe for concurrent
// use (a source task reports records Kafka refused on goroutines of their
// own).
type Operator struct {
	opts Options
	s    Settings
	log  hclog.Logger

	// dlq is the dead letter queue producer, from Start to Close.
	mu  sync.Mutex
	dlq *kgo.Client

	recordFailures, recordErrors, recordsSkipped, retries atomic.Int64
	errorsLogged, dlqRequests, dlqFailures                atomic.Int64
	lastError                                             atomic.Int64 // unix ms
}

var (
	_ runtime.ErrorHandler = (*Operator)(nil)
	_ runtime.Reporter     = (*Operator)(nil)
)

// New returns a task's operator. It contacts nothing: Start creates the
// dead letter queue producer (and topic) when there is one.
func New(opts Options) (*Operator, error) {
	if opts.Task.Connector == "" {
		return nil, errors.New("error handler: no connector name")
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	if opts.Jitter == nil {
		opts.Jitter = rand.Int64N
	}
	return &Operator{opts: opts, s: opts.Settings, log: opts.Logger}, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Reports implements runtime.Reporter: failures are logged or dead
// lettered.
func (o *Operator) Reports() bool { return o.s.Reports() }

// Stats returns the counts so far.
func (o *Operator) Stats() Stats {
	st := Stats{
		RecordFailures: o.recordFailures.Load(), RecordErrors: o.recordErrors.Load(),
		RecordsSkipped: o.recordsSkipped.Load(), Retries: o.retries.Load(),
		ErrorsLogged: o.errorsLogged.Load(), DLQProduceRequests: o.dlqRequests.Load(),
		DLQProduceFailures: o.dlqFailures.Load(),
	}
	if ms := o.lastError.Load(); ms != 0 {
		st.LastError = time.UnixMilli(ms)
	}
	return st
}

// Handle implements runtime.ErrorHandler as Kafka Connect's
// RetryWithToleranceOperator does. A retriable failure with a Retry is
// tried again, with Backoff between attempts, until one passes (nil: the
// task goes on with the record) or errors.retry.timeout has passed. A
// record that failed for good is reported — logged, and written to the
// dead letter queue, waiting for Kafka's acknowledgement — and then
// tolerated (nil: skipped) when errors.tolerance=all allows the stage, or
// refused: the error fails the task, naming the stage, the class and the
// cause. A dead letter queue write that fails also fails the task: the
// record would otherwise be lost.
func (o *Operator) Handle(ctx context.Context, rec runtime.ErrantRecord) error {
	o.recordFailures.Add(1)
	recovered, err := o.retry(ctx, &rec)
	if err != nil {
		return err
	}
	if recovered {
		return nil
	}
	o.recordErrors.Add(1)
	o.lastError.Store(o.opts.Now().UnixMilli())
	class := o.executingClass(rec.Stage, rec.Err)
	ex := describe(rec.Err, rec.Trace, rec.ExceptionClass)
	if o.s.LogEnable {
		o.logError(rec, class, ex)
	}
	if o.s.DLQTopic != "" {
		if err := o.deadLetter(ctx, rec, class, ex); err != nil {
			return err
		}
	}
	if !o.tolerable(rec) {
		return &ToleranceError{Stage: rec.Stage, Class: class, Err: rec.Err, reason: o.reason(rec)}
	}
	o.recordsSkipped.Add(1)
	if !o.s.LogEnable {
		o.log.Debug("record skipped (errors.tolerance=all)", "stage", rec.Stage, "class", class, "error", rec.Err)
	}
	return nil
}

// tolerable is Kafka Connect's rule for errors.tolerance=all: any failure
// of a transformation or a converter, any failure a source's producer or a
// sink's errant record reporter reports; in other stages only retriable
// ones.
func (o *Operator) tolerable(rec runtime.ErrantRecord) bool {
	return o.s.ToleranceAll && stageTolerates(rec)
}

// stageTolerates says whether the stage may tolerate the failure at all
// (Kafka's TOLERABLE_EXCEPTIONS, and its reports of failed sends and
// errant records, which tolerate anything).
func stageTolerates(rec runtime.ErrantRecord) bool {
	switch rec.Stage {
	case runtime.StageTransformation, runtime.StageKeyConverter, runtime.StageValueConverter,
		runtime.StageHeaderConverter, runtime.StageProduce, runtime.StagePut:
		return true
	}
	return Retriable(rec.Err)
}

// reason is the first words of a task's failure, Kafka Connect's: a send
// the producer refused under errors.tolerance=none fails the task as
// WorkerSourceTask's callback does; an error its stage never tolerates is
// an unhandled exception; anything else exceeds the tolerance.
func (o *Operator) reason(rec runtime.ErrantRecord) string {
	switch {
	case rec.Stage == runtime.StageProduce && !o.s.ToleranceAll:
		return reasonSendFailed
	case !stageTolerates(rec):
		return reasonUnhandled
	}
	return reasonExceeded
}

// Kafka Connect's words for a task failed by its error handling.
const (
	reasonExceeded   = "Tolerance exceeded in error handler"
	reasonUnhandled  = "Unhandled exception in error handler"
	reasonSendFailed = "Unrecoverable exception from producer send callback"
)

// retry runs rec.Retry while the failure is retriable and the retry
// timeout allows, updating rec with the last failure. It reports whether
// an attempt passed; an error means ctx ended. A record the producer
// refused is not retried: the producer has retried it already, and a
// write from here would land behind the records of its partition
// produced since (Kafka Connect does not retry a failed send either).
func (o *Operator) retry(ctx context.Context, rec *runtime.ErrantRecord) (bool, error) {
	if rec.Retry == nil || o.s.RetryTimeout == 0 || rec.Stage == runtime.StageProduce || !Retriable(rec.Err) {
		return false, nil
	}
	if o.s.RetryDelayMax <= 0 {
		// No room for a wait: Kafka Connect's first backoff fails
		// then, so it never retries; retrying without a pause would
		// spin until the timeout.
		o.log.Debug("errors.retry.delay.max.ms is 0; not retrying", "stage", rec.Stage, "error", rec.Err)
		return false, nil
	}
	start := o.opts.Now()
	var deadline time.Time
	if o.s.RetryTimeout > 0 {
		deadline = start.Add(o.s.RetryTimeout)
	}
	for attempt := 1; ; attempt++ {
		now := o.opts.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			o.log.Debug("retry timeout passed; giving up", "stage", rec.Stage, "attempts", attempt, "error", rec.Err)
			return false, nil
		}
		if err := o.opts.Sleep(ctx, Backoff(attempt, o.s.RetryDelayMax, now, deadline, o.opts.Jitter)); err != nil {
			return false, fmt.Errorf("retry %s: %w", rec.Stage, err)
		}
		o.retries.Add(1)
		stage, err := rec.Retry(ctx)
		if err == nil {
			return true, nil
		}
		o.recordFailures.Add(1)
		if stage == "" {
			stage = rec.Stage
		}
		rec.Stage, rec.Err = stage, fmt.Errorf("%s: %w", stage, err)
		if !Retriable(err) {
			return false, nil
		}
	}
}

// Backoff is Kafka Connect's wait before the retry that follows attempt
// (counted from 1): 300 ms doubled for each attempt after the first; once
// that exceeds max, a random wait in [0, max) instead (jitter(n) returns a
// number in [0, n)); never past deadline (zero: none).
func Backoff(attempt int, max time.Duration, now, deadline time.Time, jitter func(n int64) int64) time.Duration {
	// 300 ms << 34 is the last doubling a Duration holds; past it the
	// wait is over the cap whatever the cap.
	over := true
	d := time.Duration(0)
	if shift := attempt - 1; shift < 35 {
		d = minRetryDelay << shift
		over = d > max
	}
	if over {
		d = 0
		if max > 0 {
			d = time.Duration(jitter(int64(max)))
		}
	}
	if !deadline.IsZero() && now.Add(d).After(deadline) {
		d = deadline.Sub(now)
		if d < 0 {
			d = 0
		}
	}
	return d
}

// ToleranceError is the failure of a task whose error was not tolerated
// (errors.tolerance=none, or a stage that tolerance=all does not cover).
// Its message starts with Kafka Connect's words for the case: "Tolerance
// exceeded in error handler", "Unhandled exception in error handler" (a
// stage that never tolerates the error), or "Unrecoverable exception from
// producer send callback" (a refused send under errors.tolerance=none).
type ToleranceError struct {
	Stage  runtime.Stage
	Class  string
	Err    error
	reason string
}

func (e *ToleranceError) Error() string {
	reason := e.reason
	if reason == "" {
		reason = reasonExceeded
	}
	return fmt.Sprintf("%s: executing stage '%s' with class '%s': %v", reason, e.Stage, e.Class, e.Err)
}

func (e *ToleranceError) Unwrap() error { return e.Err }

package runtime

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// TaskID names one task of a connector.
type TaskID struct {
	Connector string
	Task      int
}

// String is Kafka Connect's "<connector>-<task>".
func (id TaskID) String() string { return id.Connector + "-" + strconv.Itoa(id.Task) }

// Task is a source or sink task runner. Run does the work and returns when
// the task has ended; Pause, Resume and Stop only ask and may be called from
// any goroutine, before, during or after Run.
type Task interface {
	ID() TaskID
	// Run launches the plugin process and moves records until Stop, a
	// failure or the cancellation of ctx. Cancelling ctx is a hard stop:
	// no drain, the process is killed. Run returns nil after a clean stop
	// and the failure otherwise; either way the Listener has been told.
	// Run may be called once.
	Run(ctx context.Context) error
	// Pause stops records from moving (no Poll, no Put) until Resume.
	Pause()
	Resume()
	// Stop begins the bounded drain (task.shutdown.graceful.timeout.ms);
	// it does not wait. Run returns when the drain and the kill are done.
	Stop()
}

// Listener hears a task's state changes, in order, from the goroutine that
// runs the task: OnRunning and OnPaused as the task moves between them, and
// exactly one of OnStopped and OnFailed at the end.
type Listener interface {
	OnRunning(TaskID)
	OnPaused(TaskID)
	// OnFailed reports the failure; trace is the plugin's stack trace or,
	// after a crash, its last output (Kafka Connect's status "trace").
	OnFailed(id TaskID, err error, trace string)
	OnStopped(TaskID)
}

// SourcePlugin is one source task plugin process, as the plugin manager
// gives it. Every call carries the caller's deadline; errors are classified
// *wire.Error values (possibly wrapped).
type SourcePlugin interface {
	Start(ctx context.Context, req *pluginv1.SourceTaskStartRequest) (*pluginv1.SourceTaskStartResponse, error)
	// Poll returns the answer as a wire.PollBatch (TakePoll or
	// TakePollPooled for one in shared memory, ReceivePoll or NewPollBatch
	// for one that came inline); the task converts its records. A nil
	// batch is an empty answer. The task calls the batch's Release when
	// nothing reads its records any more: at once for an empty answer,
	// otherwise once the acknowledged prefix has passed its last record
	// (sourceBatch.finish). A batch read into the memory of the task's
	// wire.PollPool (TakePollPooled; see PooledPoller) then gives that
	// memory back for a later answer. A
	// batch a record of which went to the error handler, or still in
	// flight when the task ends, is never released: it is the garbage
	// collector's.
	Poll(ctx context.Context, req *pluginv1.PollRequest) (*wire.PollBatch, error)
	Ack(ctx context.Context, req *pluginv1.AckRequest) error
	Commit(ctx context.Context) error
	Stop(ctx context.Context) error
	// Kill ends the process (gracefully, then SIGKILL) and releases it.
	Kill(ctx context.Context) error
	// Done is closed when the process has exited.
	Done() <-chan struct{}
	// WorkerTarget is where the plugin dials the Worker service.
	WorkerTarget() string
}

// PooledPoller is optionally implemented by a SourcePlugin that reads Poll
// answers into reused memory (wire.SharedRegion.TakePollPooled). The task
// calls UsePollPool once, before Start, with the pool to read every answer
// into. The task owns the pool: it sizes it from its bounds (so that the
// memory kept for reuse stays within about MaxInFlightBytes), empties it
// whenever it pauses or its source has nothing to give, and closes it when
// it stops.
type PooledPoller interface {
	UsePollPool(pool *wire.PollPool)
}

// SinkPlugin is one sink task plugin process; see SourcePlugin.
type SinkPlugin interface {
	Start(ctx context.Context, req *pluginv1.SinkTaskStartRequest) (*pluginv1.SinkTaskStartResponse, error)
	Open(ctx context.Context, req *pluginv1.OpenRequest) error
	// Put delivers b, whose records the task checked as they joined it
	// (possibly none: an empty Put). The plugin writes it into shared
	// memory (PlacePut) or sends it inline (wire.SendPut). b may be put
	// again (a redelivery) and must not be changed.
	Put(ctx context.Context, b *wire.SinkBatch) error
	PreCommit(ctx context.Context, req *pluginv1.PreCommitRequest) (*pluginv1.PreCommitResponse, error)
	Close(ctx context.Context, req *pluginv1.CloseRequest) error
	Stop(ctx context.Context) error
	Kill(ctx context.Context) error
	Done() <-chan struct{}
	WorkerTarget() string
}

// CrashReporter is optionally implemented by a SourcePlugin or SinkPlugin.
// When the process exits on its own while the task is idle (no call to fail),
// the task fails with CrashError: the exit status as message and the last
// output lines as Trace. Without it the failure says only that the process
// exited.
type CrashReporter interface {
	CrashError() error
}

// SourceLauncher starts a source task's plugin process and serves worker
// for its callbacks (at the plugin's WorkerTarget).
type SourceLauncher func(ctx context.Context, worker pluginv1.WorkerServer) (SourcePlugin, error)

// SinkLauncher starts a sink task's plugin process; see SourceLauncher.
type SinkLauncher func(ctx context.Context, worker pluginv1.WorkerServer) (SinkPlugin, error)

// Transformer is a connector's transform chain. Apply returns the record to
// use, which may be r itself, or nil when the record is dropped. A nil
// Transformer leaves records as they are.
type Transformer interface {
	Apply(r *data.Record) (*data.Record, error)
}

// Converter turns a record key or value into bytes and back. It has the
// method set of host/convert.Converter, whose converters satisfy it; the
// runner declares only what it calls.
type Converter interface {
	FromConnectData(topic string, headers data.Headers, s *data.Schema, v any) ([]byte, error)
	ToConnectData(topic string, headers data.Headers, b []byte) (*data.Schema, any, error)
}

// HeaderConverter turns one header value into bytes and back
// (host/convert.HeaderConverter).
type HeaderConverter interface {
	FromConnectHeader(topic, key string, s *data.Schema, v any) ([]byte, error)
	ToConnectHeader(topic, key string, b []byte) (*data.Schema, any, error)
}

// Stage is where in the pipeline a record failed, under Kafka Connect's
// names (they appear in DLQ headers and error logs).
type Stage string

// Pipeline stages.
const (
	StagePoll            Stage = "TASK_POLL"
	StagePut             Stage = "TASK_PUT"
	StageTransformation  Stage = "TRANSFORMATION"
	StageKeyConverter    Stage = "KEY_CONVERTER"
	StageValueConverter  Stage = "VALUE_CONVERTER"
	StageHeaderConverter Stage = "HEADER_CONVERTER"
	StageProduce         Stage = "KAFKA_PRODUCE"
	StageConsume         Stage = "KAFKA_CONSUME"
)

// ErrantRecord is a record that failed at some stage.
type ErrantRecord struct {
	Stage Stage
	Err   error
	// Source is the record as the source task polled it (source tasks).
	Source *data.SourceRecord
	// Consumed is the record as read from Kafka (sink tasks): its bytes are
	// what a dead letter queue receives.
	Consumed *kgo.Record
	// Trace is the plugin's stack trace when the plugin reported the error
	// (ReportErrantRecord).
	Trace string
	// ExceptionClass is the Java exception class the plugin named for the
	// error it reported (ReportErrantRecord); empty: the handler derives
	// one from Err.
	ExceptionClass string
	// Retry, when set, runs the failed stages again on the same record
	// (errors.retry.timeout) and returns the stage that failed and why, or
	// nil when the record got through. The handler calls it only for
	// retriable errors. After a successful call the handler returns nil
	// and the task goes on with the record as Retry left it; the task
	// tells that apart from a skipped record by the call's outcome. A
	// record Kafka refused has none: writing it again would reorder its
	// partition.
	Retry func(ctx context.Context) (Stage, error)
}

// ErrorHandler is the hook for Kafka Connect's error handling
// (errors.tolerance, errors.log.*, dead letter queue). Handle reports the
// errant record and decides: nil skips the record (tolerated; a source
// record is then acknowledged as not written), an error fails the task.
// Handle may block until the report is durable; ctx bounds it.
//
// A nil ErrorHandler fails the task on the first error
// (errors.tolerance=none, no reporting), and sink tasks answer
// ReportErrantRecord with UNIMPLEMENTED, which the SDK turns into "no
// reporter" for the connector.
type ErrorHandler interface {
	Handle(ctx context.Context, rec ErrantRecord) error
}

// Reporter is optionally implemented by an ErrorHandler: Reports says
// whether it reports errant records (error log or dead letter queue). A
// sink task whose handler reports nothing answers ReportErrantRecord with
// UNIMPLEMENTED, as Kafka Connect's errantRecordReporter() is null then.
type Reporter interface {
	Reports() bool
}

// SinkTransformer is optionally implemented by a Transformer: sink tasks
// call ApplySink, which also sees the record's Kafka offset (InsertField's
// offset.field).
type SinkTransformer interface {
	ApplySink(r *data.SinkRecord) (*data.Record, error)
}

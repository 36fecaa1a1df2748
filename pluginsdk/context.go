package pluginsdk

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// ConnectorContext lets a connector reach the worker (ConnectorContext).
type ConnectorContext interface {
	// Configs returns the configuration the connector was started with.
	Configs() map[string]string
	// RequestTaskReconfiguration asks the worker to call TaskConfigs again,
	// e.g. when the set of tables to copy changed.
	RequestTaskReconfiguration(ctx context.Context) error
	// RaiseError fails the connector with err (connector state FAILED).
	RaiseError(ctx context.Context, err error) error
}

// SourceTaskContext lets a source task reach the worker (SourceTaskContext
// and its OffsetStorageReader).
type SourceTaskContext interface {
	// Configs returns the configuration the task was started with.
	Configs() map[string]string
	// Offset returns the stored offset of a source partition, or nil when
	// none is stored.
	Offset(ctx context.Context, partition map[string]any) (map[string]any, error)
	// Offsets returns the stored offsets of several partitions, in the order
	// asked (nil entries where none is stored).
	Offsets(ctx context.Context, partitions []map[string]any) ([]map[string]any, error)
}

// SinkTaskContext lets a sink task steer its consumer (SinkTaskContext).
// Requests that change the consumer are queued and applied by the worker
// between Put calls.
type SinkTaskContext interface {
	// Configs returns the configuration the task was started with.
	Configs() map[string]string
	// Assignment returns the partitions currently assigned to the task.
	Assignment(ctx context.Context) ([]data.TopicPartition, error)
	// Pause stops delivery from the partitions until Resume.
	Pause(ctx context.Context, partitions ...data.TopicPartition) error
	// Resume resumes delivery from paused partitions.
	Resume(ctx context.Context, partitions ...data.TopicPartition) error
	// Rewind makes the consumer read these partitions from these offsets
	// (SinkTaskContext.offset(Map)).
	Rewind(ctx context.Context, offsets map[data.TopicPartition]int64) error
	// Offset rewinds one partition (SinkTaskContext.offset(tp, offset)).
	Offset(ctx context.Context, tp data.TopicPartition, offset int64) error
	// RequestCommit asks for a PreCommit and offset commit soon.
	RequestCommit(ctx context.Context) error
	// SetRetryBackoff sets the wait before a batch whose Put returned a
	// Retriable error is delivered again (SinkTaskContext.timeout).
	SetRetryBackoff(ctx context.Context, backoff time.Duration) error
	// ErrantRecordReporter reports records the task cannot process through
	// the connector's error handling (errors.tolerance, DLQ).
	ErrantRecordReporter() ErrantRecordReporter
}

// ErrantRecordReporter sends a record the task could not process through
// the connector's error handling (log, dead letter queue, tolerance).
type ErrantRecordReporter interface {
	// Report returns once the report is durable. It fails when the error
	// tolerance is exceeded; the task should then return that error.
	//
	// The dead letter queue's headers name a Java exception class for err
	// (__connect.errors.exception.class.name): the one an error in err's
	// chain returns from an ExceptionClass() string method, else
	// DataException for an Invalid error, RetriableException for a
	// Retriable one, ConnectException for any other.
	Report(ctx context.Context, rec *data.SinkRecord, err error) error
}

// callbackTimeout bounds worker callbacks made with a context that has no
// deadline of its own.
const callbackTimeout = 30 * time.Second

// workerClient is the lazily dialed connection to the worker's Worker
// service. grpc.NewClient does not connect until the first call, so an
// instance that never calls back costs nothing.
type workerClient struct {
	target string

	once   sync.Once
	conn   *grpc.ClientConn
	client pluginv1.WorkerClient
	err    error
}

func (w *workerClient) get() (pluginv1.WorkerClient, error) {
	if w.target == "" {
		return nil, ErrNoWorker
	}
	w.once.Do(func() {
		w.conn, w.err = grpc.NewClient(w.target,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(wire.MaxMessageBytes), grpc.MaxCallSendMsgSize(wire.MaxMessageBytes)))
		if w.err != nil {
			w.err = fmt.Errorf("dial worker at %s: %w", w.target, w.err)
			return
		}
		w.client = pluginv1.NewWorkerClient(w.conn)
	})
	return w.client, w.err
}

// call runs one callback with a deadline and classifies its failure.
func (w *workerClient) call(ctx context.Context, what string, fn func(context.Context, pluginv1.WorkerClient) error) error {
	c, err := w.get()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callbackTimeout)
		defer cancel()
	}
	if err := fn(ctx, c); err != nil {
		return fmt.Errorf("%s: %w", what, wire.FromStatus(err, nil))
	}
	return nil
}

// close is called once the instance is stopped; later calls fail.
func (w *workerClient) close() {
	w.once.Do(func() { w.err = errors.New("instance stopped") })
	if w.conn != nil {
		_ = w.conn.Close()
	}
}

type baseContext struct {
	configs map[string]string
	w       *workerClient
}

func (b *baseContext) Configs() map[string]string { return maps.Clone(b.configs) }

type connectorContext struct{ baseContext }

func (c *connectorContext) RequestTaskReconfiguration(ctx context.Context) error {
	return c.w.call(ctx, "request task reconfiguration", func(ctx context.Context, wc pluginv1.WorkerClient) error {
		_, err := wc.RequestTaskReconfiguration(ctx, &pluginv1.RequestTaskReconfigurationRequest{})
		return err
	})
}

func (c *connectorContext) RaiseError(ctx context.Context, e error) error {
	if e == nil {
		return errors.New("raise error: nil error")
	}
	return c.w.call(ctx, "raise error", func(ctx context.Context, wc pluginv1.WorkerClient) error {
		_, err := wc.RaiseError(ctx, &pluginv1.RaiseErrorRequest{Message: e.Error(), Trace: traceOf(e)})
		return err
	})
}

func traceOf(err error) string {
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Trace
	}
	return ""
}

type sourceTaskContext struct{ baseContext }

func (c *sourceTaskContext) Offset(ctx context.Context, partition map[string]any) (map[string]any, error) {
	offs, err := c.Offsets(ctx, []map[string]any{partition})
	if err != nil {
		return nil, err
	}
	return offs[0], nil
}

func (c *sourceTaskContext) Offsets(ctx context.Context, partitions []map[string]any) ([]map[string]any, error) {
	req := &pluginv1.SourceOffsetsRequest{Partitions: make([][]byte, len(partitions))}
	for i, p := range partitions {
		b, err := wire.EncodeJSONMap(p)
		if err != nil {
			return nil, fmt.Errorf("read source offsets: encode partition %v: %w", p, err)
		}
		req.Partitions[i] = b
	}
	var resp *pluginv1.SourceOffsetsResponse
	err := c.w.call(ctx, "read source offsets", func(ctx context.Context, wc pluginv1.WorkerClient) error {
		var err error
		resp, err = wc.SourceOffsets(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	// Match answers to questions by the partition's canonical JSON rather than
	// by position, so a worker that answers in another order or omits
	// partitions it has nothing for is read correctly.
	byPartition := make(map[string]map[string]any, len(resp.GetOffsets()))
	for _, o := range resp.GetOffsets() {
		key, err := canonicalJSON(o.GetPartition())
		if err != nil {
			return nil, fmt.Errorf("read source offsets: worker sent partition %q: %w", o.GetPartition(), err)
		}
		if len(o.GetOffset()) == 0 {
			continue
		}
		off, err := wire.DecodeJSONMap(o.GetOffset())
		if err != nil {
			return nil, fmt.Errorf("read source offsets: worker sent offset %q: %w", o.GetOffset(), err)
		}
		byPartition[key] = off
	}
	out := make([]map[string]any, len(partitions))
	for i, p := range req.Partitions {
		out[i] = byPartition[string(p)]
	}
	return out, nil
}

// canonicalJSON re-encodes a JSON object with sorted keys.
func canonicalJSON(b []byte) (string, error) {
	if len(b) == 0 {
		return "", nil
	}
	m, err := wire.DecodeJSONMap(b)
	if err != nil {
		return "", err
	}
	c, err := wire.EncodeJSONMap(m)
	return string(c), err
}

type sinkTaskContext struct{ baseContext }

func tpsToProto(tps []data.TopicPartition) []*pluginv1.TopicPartition {
	out := make([]*pluginv1.TopicPartition, len(tps))
	for i, tp := range tps {
		out[i] = &pluginv1.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
	}
	return out
}

func tpsFromProto(ps []*pluginv1.TopicPartition) []data.TopicPartition {
	out := make([]data.TopicPartition, len(ps))
	for i, p := range ps {
		out[i] = data.TopicPartition{Topic: p.GetTopic(), Partition: p.GetPartition()}
	}
	return out
}

func (c *sinkTaskContext) Assignment(ctx context.Context) ([]data.TopicPartition, error) {
	var resp *pluginv1.AssignmentResponse
	err := c.w.call(ctx, "read assignment", func(ctx context.Context, wc pluginv1.WorkerClient) error {
		var err error
		resp, err = wc.Assignment(ctx, &pluginv1.AssignmentRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	return tpsFromProto(resp.GetPartitions()), nil
}

func (c *sinkTaskContext) Pause(ctx context.Context, partitions ...data.TopicPartition) error {
	return c.w.call(ctx, "pause partitions", func(ctx context.Context, wc pluginv1.WorkerClient) error {
		_, err := wc.Pause(ctx, &pluginv1.PartitionsRequest{Partitions: tpsToProto(partitions)})
		return err
	})
}

func (c *sinkTaskContext) Resume(ctx context.Context, partitions ...data.TopicPartition) error {
	return c.w.call(ctx, "resume partitions", func(ctx context.Context, wc pluginv1.WorkerClient) error {
		_, err := wc.Resume(ctx, &pluginv1.PartitionsRequest{Partitions: tpsToProto(partitions)})
		return err
	})
}

func (c *sinkTaskContext) Rewind(ctx context.Context, offsets map[data.TopicPartition]int64) error {
	return c.w.call(ctx, "rewind partitions", func(ctx context.Context, wc pluginv1.WorkerClient) error {
		_, err := wc.Rewind(ctx, &pluginv1.RewindRequest{Offsets: offsetsToProto(offsets)})
		return err
	})
}

func (c *sinkTaskContext) Offset(ctx context.Context, tp data.TopicPartition, offset int64) error {
	return c.Rewind(ctx, map[data.TopicPartition]int64{tp: offset})
}

func (c *sinkTaskContext) RequestCommit(ctx context.Context) error {
	return c.w.call(ctx, "request commit", func(ctx context.Context, wc pluginv1.WorkerClient) error {
		_, err := wc.RequestCommit(ctx, &pluginv1.RequestCommitRequest{})
		return err
	})
}

func (c *sinkTaskContext) SetRetryBackoff(ctx context.Context, backoff time.Duration) error {
	return c.w.call(ctx, "set retry backoff", func(ctx context.Context, wc pluginv1.WorkerClient) error {
		_, err := wc.SetRetryBackoff(ctx, &pluginv1.SetRetryBackoffRequest{BackoffMs: backoff.Milliseconds()})
		return err
	})
}

func (c *sinkTaskContext) ErrantRecordReporter() ErrantRecordReporter { return errantReporter{c.w} }

type errantReporter struct{ w *workerClient }

func (r errantReporter) Report(ctx context.Context, rec *data.SinkRecord, e error) error {
	if rec == nil || e == nil {
		return errors.New("report errant record: nil record or error")
	}
	// The worker identifies the record by where it was consumed; transforms
	// may have changed Topic and Partition since.
	req := &pluginv1.ReportErrantRecordRequest{
		Topic: rec.OriginalTopic, Partition: rec.OriginalPartition, Offset: rec.OriginalOffset,
		Error: e.Error(), Trace: traceOf(e), ExceptionClass: exceptionClassOf(e),
	}
	if req.Topic == "" {
		req.Topic, req.Partition, req.Offset = rec.Topic, rec.Partition, rec.Offset
	}
	// The record itself goes too: a record reported after its Put returned
	// (from Flush, or the task's own goroutine) is no longer in the worker's
	// hands, and the worker turns this copy back into bytes for the dead
	// letter queue. A record that cannot be encoded is reported by its
	// coordinates alone.
	if schemas, recs, err := wire.EncodeSinkRecords([]*data.SinkRecord{rec}); err == nil {
		req.Record, req.Schemas = recs[0], schemas
	}
	return r.w.call(ctx, "report errant record", func(ctx context.Context, wc pluginv1.WorkerClient) error {
		_, err := wc.ReportErrantRecord(ctx, req)
		return err
	})
}

// exceptionClassOf names the Java exception class for err, or "" for the
// worker's default (ConnectException).
func exceptionClassOf(err error) string {
	var named interface{ ExceptionClass() string }
	if errors.As(err, &named) {
		return named.ExceptionClass()
	}
	return wire.KindOf(err).ExceptionClass()
}

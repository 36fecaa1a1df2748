package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-io/sluice/host/plugin"
	"github.com/sluice-io/sluice/host/runtime"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// killTimeout bounds the end of a plugin process the worker is done with.
const killTimeout = 5 * time.Second

// killQuietly ends a process the worker no longer needs; its own deadline,
// since the caller's context may be over.
func killQuietly(in *plugin.Instance) {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	_ = in.Kill(ctx)
}

// crashError describes a process that ended on its own: its exit status as
// the message, its last output lines as trace.
func crashError(in *plugin.Instance) *wire.Error {
	msg := "plugin process exited unexpectedly"
	if r := in.KillReason(); r != "" {
		// The worker ended it (over its memory limit, a call past its
		// deadline): say why.
		msg = "plugin process " + r
	}
	if err := in.ExitErr(); err != nil {
		msg += " (" + err.Error() + ")"
	}
	return &wire.Error{Kind: wire.KindCrashed, Message: msg, Trace: in.Tail()}
}

// sharedStats counts the batches that went through a task's shared memory
// region instead of the gRPC connection, for the whole worker.
type sharedStats struct {
	polls, puts atomic.Int64
}

func (s *sharedStats) poll() {
	if s != nil {
		s.polls.Add(1)
	}
}

func (s *sharedStats) put() {
	if s != nil {
		s.puts.Add(1)
	}
}

// sourcePlugin adapts a plugin Instance to runtime.SourcePlugin. Poll
// answers come through the shared memory region when the plugin accepted
// it in Start.
type sourcePlugin struct {
	in     *plugin.Instance
	stats  *sharedStats
	shared *wire.SharedRegion // set by Start if accepted; then read-only
	// answers is the memory answers in the region are read into, given
	// back by the task (PollBatch.Release) once it is done with a batch:
	// the task's, which sizes and empties it (runtime.PooledPoller); set
	// before Start.
	answers *wire.PollPool
}

var _ runtime.PooledPoller = (*sourcePlugin)(nil)

// UsePollPool implements runtime.PooledPoller.
func (p *sourcePlugin) UsePollPool(pool *wire.PollPool) { p.answers = pool }

func (p *sourcePlugin) Start(ctx context.Context, req *pluginv1.SourceTaskStartRequest) (*pluginv1.SourceTaskStartResponse, error) {
	req.SharedMemory = p.in.SharedMemory()
	resp, err := p.in.SourceTask().Start(ctx, req)
	if err == nil && resp.GetSharedMemory() && req.SharedMemory != nil {
		p.shared = p.in.Shared()
	}
	return resp, err
}

func (p *sourcePlugin) Poll(ctx context.Context, req *pluginv1.PollRequest) (*wire.PollBatch, error) {
	// An answer that comes inline is read by the call's codec straight
	// into a PollBatch.
	var batch *wire.PollBatch
	// An answer with more records than asked for is not decoded: a
	// record decoded costs many times its encoded size.
	resp, err := p.in.SourceTask().Poll(ctx, req, wire.ReceivePollAtMost(&batch, int(req.GetMaxRecords())))
	if err != nil {
		return nil, err
	}
	if resp.GetShared() == nil {
		if batch == nil {
			batch = wire.NewPollBatch(resp)
		}
		return batch, nil
	}
	if p.shared == nil {
		return nil, &wire.Error{Kind: wire.KindFatal, Message: "the plugin answered a poll through shared memory it had not accepted"}
	}
	if n := batch.Len(); n > 0 || resp.GetFirstSeq() != 0 {
		// The records inline would be dropped unseen.
		return nil, &wire.Error{Kind: wire.KindFatal, Message: fmt.Sprintf("the plugin answered a poll both through shared memory and inline (%d records)", n)}
	}
	// The answer is copied out of the region before the next Poll lets
	// the plugin write it again, into the memory of a batch the task is
	// done with, and read straight into records.
	batch, err = p.shared.TakePollPooledAtMost(resp.GetShared(), p.answers, int(req.GetMaxRecords()))
	if err != nil {
		return nil, &wire.Error{Kind: wire.KindFatal, Message: "read the poll answer from shared memory: " + err.Error()}
	}
	p.stats.poll()
	return batch, nil
}

func (p *sourcePlugin) Ack(ctx context.Context, req *pluginv1.AckRequest) error {
	_, err := p.in.SourceTask().Ack(ctx, req)
	return err
}

func (p *sourcePlugin) Commit(ctx context.Context) error {
	_, err := p.in.SourceTask().Commit(ctx, &pluginv1.CommitRequest{})
	return err
}

func (p *sourcePlugin) Stop(ctx context.Context) error {
	_, err := p.in.SourceTask().Stop(ctx, &pluginv1.StopRequest{})
	return err
}

func (p *sourcePlugin) Kill(ctx context.Context) error { return p.in.Kill(ctx) }
func (p *sourcePlugin) Done() <-chan struct{}          { return p.in.Done() }
func (p *sourcePlugin) WorkerTarget() string           { return p.in.WorkerTarget() }
func (p *sourcePlugin) CrashError() error              { return crashError(p.in) }

// sinkPlugin adapts a plugin Instance to runtime.SinkPlugin. Put batches
// go through the shared memory region when the plugin accepted it in Start
// and the batch fits; inline otherwise, split into several Puts when the
// batch exceeds the message limit (putParts).
type sinkPlugin struct {
	in    *plugin.Instance
	stats *sharedStats
	// putMu keeps Puts apart, so that a batch is never written into the
	// region while the plugin may still be reading the one before.
	putMu  sync.Mutex
	shared *wire.SharedRegion // set by Start if accepted; nil once unsafe
	// client, when set, is used instead of the instance's SinkTask client
	// (tests: a server of their own, with a smaller message limit).
	client pluginv1.SinkTaskClient
}

// task is the plugin's SinkTask client.
func (p *sinkPlugin) task() pluginv1.SinkTaskClient {
	if p.client != nil {
		return p.client
	}
	return p.in.SinkTask()
}

func (p *sinkPlugin) Start(ctx context.Context, req *pluginv1.SinkTaskStartRequest) (*pluginv1.SinkTaskStartResponse, error) {
	req.SharedMemory = p.in.SharedMemory()
	resp, err := p.task().Start(ctx, req)
	if err == nil && resp.GetSharedMemory() && req.SharedMemory != nil {
		p.putMu.Lock()
		p.shared = p.in.Shared()
		p.putMu.Unlock()
	}
	return resp, err
}

func (p *sinkPlugin) Open(ctx context.Context, req *pluginv1.OpenRequest) error {
	_, err := p.task().Open(ctx, req)
	return err
}

func (p *sinkPlugin) Put(ctx context.Context, b *wire.SinkBatch) error {
	p.putMu.Lock()
	defer p.putMu.Unlock()
	if p.shared != nil && b.Len() > 0 {
		// Written from the records straight into the region.
		if ref, ok := p.shared.PlacePut(b); ok {
			_, err := p.task().Put(ctx, &pluginv1.PutRequest{Shared: ref})
			if err == nil {
				p.stats.put()
			}
			if err != nil && (ctx.Err() != nil || wire.KindOf(err) == wire.KindTimeout) {
				// Abandoned mid-call: the plugin may still be reading the
				// region, so later batches go inline.
				p.shared = nil
			}
			return err
		}
	}
	// No region, or the batch does not fit it (or holds what only
	// protobuf writes): inline, written by the call's codec straight into
	// its send buffer.
	if b.Size() > maxPutBytes {
		return p.putParts(ctx, b)
	}
	_, err := p.task().Put(ctx, &pluginv1.PutRequest{}, wire.SendPut(b))
	return err
}

// maxPutBytes is the most an inline Put request may carry: the plugin's
// gRPC server refuses a larger message, which would fail the task. A
// variable for tests.
var maxPutBytes = wire.MaxMessageBytes

// putParts sends a batch too large for one message as consecutive Puts of
// parts that each fit, in the batch's order, and returns once all were put
// or one failed. The runtime sees one Put, so its PreCommit and commit
// come only after every part. A part answered ABORTED has the runtime
// deliver the whole batch again, the parts already put included, as any
// redelivery does (at least once). A record that alone exceeds the limit
// cannot be sent at all: the task fails naming it, before any part goes.
func (p *sinkPlugin) putParts(ctx context.Context, b *wire.SinkBatch) error {
	recs := b.Records()
	var parts []*wire.SinkBatch
	for start := 0; start < len(recs); {
		part, end, err := sinkPart(recs, start)
		if err != nil {
			return err
		}
		if end == start {
			r := recs[start]
			return &wire.Error{Kind: wire.KindFatal, Message: fmt.Sprintf(
				"put: sink record %s-%d@%d is %d bytes encoded, more than the %d a Put may carry",
				r.Topic, r.Partition, r.Offset, part.Size(), maxPutBytes)}
		}
		parts = append(parts, part)
		start = end
	}
	for i, part := range parts {
		if _, err := p.task().Put(ctx, &pluginv1.PutRequest{}, wire.SendPut(part)); err != nil {
			if i == 0 {
				return err
			}
			return fmt.Errorf("put part %d of %d: %w", i+1, len(parts), err)
		}
	}
	return nil
}

// sinkPart is the longest run of recs from start whose batch fits
// maxPutBytes, and where it ends; end == start when recs[start] alone does
// not fit (part then holds it alone, for its size).
func sinkPart(recs []*data.SinkRecord, start int) (*wire.SinkBatch, int, error) {
	part := &wire.SinkBatch{}
	end := start
	for ; end < len(recs); end++ {
		if err := part.Add(recs[end]); err != nil {
			return nil, 0, fmt.Errorf("put: %w", err)
		}
		if part.Size() > maxPutBytes {
			break
		}
	}
	if end == len(recs) || end == start {
		return part, end, nil
	}
	// The last record added overflowed the part: the part is the records
	// before it (a batch cannot drop a record).
	part = &wire.SinkBatch{}
	for _, r := range recs[start:end] {
		if err := part.Add(r); err != nil {
			return nil, 0, fmt.Errorf("put: %w", err)
		}
	}
	return part, end, nil
}

func (p *sinkPlugin) PreCommit(ctx context.Context, req *pluginv1.PreCommitRequest) (*pluginv1.PreCommitResponse, error) {
	return p.task().PreCommit(ctx, req)
}

func (p *sinkPlugin) Close(ctx context.Context, req *pluginv1.CloseRequest) error {
	_, err := p.task().Close(ctx, req)
	return err
}

func (p *sinkPlugin) Stop(ctx context.Context) error {
	_, err := p.task().Stop(ctx, &pluginv1.StopRequest{})
	return err
}

func (p *sinkPlugin) Kill(ctx context.Context) error { return p.in.Kill(ctx) }
func (p *sinkPlugin) Done() <-chan struct{}          { return p.in.Done() }
func (p *sinkPlugin) WorkerTarget() string           { return p.in.WorkerTarget() }
func (p *sinkPlugin) CrashError() error              { return crashError(p.in) }

// connectorInstance is a running connector: herder.ConnectorInstance over a
// plugin process.
type connectorInstance struct {
	in      *plugin.Instance
	stopped atomic.Bool
}

func (c *connectorInstance) TaskConfigs(ctx context.Context, maxTasks int) ([]map[string]string, error) {
	resp, err := c.in.Connector().TaskConfigs(ctx, &pluginv1.TaskConfigsRequest{MaxTasks: int32(maxTasks)})
	if err != nil {
		return nil, err
	}
	out := make([]map[string]string, len(resp.GetTasks()))
	for i, t := range resp.GetTasks() {
		out[i] = t.GetConfig()
		if out[i] == nil {
			out[i] = map[string]string{}
		}
	}
	return out, nil
}

// Stop asks the connector to stop, then ends the process; both within ctx.
func (c *connectorInstance) Stop(ctx context.Context) error {
	c.stopped.Store(true)
	var errs []error
	if !c.in.Exited() {
		if _, err := c.in.Connector().Stop(ctx, &pluginv1.StopRequest{}); err != nil {
			errs = append(errs, fmt.Errorf("stop connector: %w", err))
		}
	}
	if err := c.in.Kill(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *connectorInstance) Done() <-chan struct{} { return c.in.Done() }

func (c *connectorInstance) Err() (string, string) {
	if c.stopped.Load() {
		return "", ""
	}
	e := crashError(c.in)
	return e.Message, e.Trace
}

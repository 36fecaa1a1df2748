package runtime

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// sinkWorker is the Worker service a sink task's plugin calls back
// (SinkTaskContext). Its calls arrive on gRPC goroutines, typically while
// the plugin is inside Put, so they never wait for the task goroutine:
// requests that change the consumer are queued and applied by the task
// goroutine between Put calls, and Assignment answers from a snapshot.
type sinkWorker struct {
	pluginv1.UnimplementedWorkerServer
	t *sinkTask

	mu         sync.Mutex
	ops        []sinkOp
	commit     bool
	backoff    time.Duration
	backoffSet bool
	assignment []*pluginv1.TopicPartition
	batch      []*kgo.Record // the records of the Put in progress

	// reports are the ReportErrantRecord calls in progress.
	reports errantReports
}

// errantReports counts the ReportErrantRecord calls in progress by the
// commit they come before, so that a commit waits for the reports begun
// before it, not for those begun while it waits (Kafka Connect awaits the
// reporter's futures before each commit): a plugin may report from a
// goroutine of its own after Put returned, and offsets must not pass a
// record before it is reported (in the dead letter queue).
type errantReports struct {
	mu  sync.Mutex
	cur *reportGroup
}

// reportGroup is the reports begun between two commits.
type reportGroup struct {
	n      int
	sealed bool          // a commit waits for it: no report joins it any more
	done   chan struct{} // closed once sealed and n is 0
}

func (r *errantReports) begin() *reportGroup {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		r.cur = &reportGroup{done: make(chan struct{})}
	}
	r.cur.n++
	return r.cur
}

func (r *errantReports) end(g *reportGroup) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g.n--
	if g.n == 0 && g.sealed {
		close(g.done)
	}
}

// await waits until the reports in progress now are done, or ctx ends.
func (r *errantReports) await(ctx context.Context) {
	r.mu.Lock()
	g := r.cur
	r.cur = nil
	if g != nil {
		g.sealed = true
		if g.n == 0 {
			close(g.done)
		}
	}
	r.mu.Unlock()
	if g == nil {
		return
	}
	select {
	case <-g.done:
	case <-ctx.Done():
	}
}

type sinkOpKind int8

const (
	opPause sinkOpKind = iota
	opResume
	opRewind
)

type sinkOp struct {
	kind    sinkOpKind
	tps     []topicPartition
	offsets []int64 // opRewind, one per tp
}

func (w *sinkWorker) queue(op sinkOp) {
	w.mu.Lock()
	w.ops = append(w.ops, op)
	w.mu.Unlock()
	w.t.poke()
}

func (w *sinkWorker) setAssignment(tps []topicPartition) {
	p := tpsToProto(tps)
	w.mu.Lock()
	w.assignment = p
	w.mu.Unlock()
}

func (w *sinkWorker) setBatch(b []*kgo.Record) {
	w.mu.Lock()
	w.batch = b
	w.mu.Unlock()
}

// applyRequests applies the queued requests in the order they came and
// reports whether a commit was asked for. Holds the task's mu.
func (t *sinkTask) applyRequests() (commit bool) {
	w := t.worker
	w.mu.Lock()
	ops, commit := w.ops, w.commit
	w.ops, w.commit = nil, false
	w.mu.Unlock()
	t.takeBackoff()
	if len(ops) > 0 {
		// The staged batch was read under the old pauses and positions:
		// it is polled again under the new ones.
		t.discardStaged()
	}
	for _, op := range ops {
		switch op.kind {
		case opPause, opResume:
			for _, tp := range op.tps {
				if !t.assigned[tp] {
					t.log.Warn("ignoring pause or resume of a partition not assigned to the task", "topic", tp.topic, "partition", tp.partition)
					continue
				}
				if op.kind == opPause {
					t.pluginPaused[tp] = true
				} else {
					delete(t.pluginPaused, tp)
				}
			}
		case opRewind:
			set := map[string]map[int32]kgo.EpochOffset{}
			rewound := map[topicPartition]bool{}
			for i, tp := range op.tps {
				off := op.offsets[i]
				if !t.assigned[tp] || off < 0 {
					t.log.Warn("ignoring rewind of a partition not assigned to the task or to a negative offset", "topic", tp.topic, "partition", tp.partition, "offset", off)
					continue
				}
				if set[tp.topic] == nil {
					set[tp.topic] = map[int32]kgo.EpochOffset{}
				}
				set[tp.topic][tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
				t.delivered[tp] = off
				t.readFrom[tp] = off
				t.commits.rewound(tp)
				rewound[tp] = true
			}
			if len(set) > 0 {
				t.client.SetOffsets(set)
				t.dropPending(func(tp topicPartition) bool { return rewound[tp] })
			}
		}
	}
	return commit
}

// takeBackoff applies a retry backoff the plugin set. Holds the task's mu.
func (t *sinkTask) takeBackoff() {
	w := t.worker
	w.mu.Lock()
	if w.backoffSet {
		t.backoff, w.backoffSet = w.backoff, false
	}
	w.mu.Unlock()
}

// poke interrupts the task goroutine's consumer poll so queued requests
// are applied promptly.
func (c *control) poke() {
	c.mu.Lock()
	c.gen++
	if c.cancelCall != nil && c.idleCall {
		c.cancelCall()
	}
	c.mu.Unlock()
	c.signal()
}

func protoTPs(ps []*pluginv1.TopicPartition) []topicPartition {
	out := make([]topicPartition, len(ps))
	for i, p := range ps {
		out[i] = topicPartition{p.GetTopic(), p.GetPartition()}
	}
	return out
}

func (w *sinkWorker) SourceOffsets(context.Context, *pluginv1.SourceOffsetsRequest) (*pluginv1.SourceOffsetsResponse, error) {
	return nil, status.Errorf(codes.FailedPrecondition, "task %s is a sink task; source offsets are for source tasks", w.t.cfg.ID)
}

func (w *sinkWorker) RequestTaskReconfiguration(context.Context, *pluginv1.RequestTaskReconfigurationRequest) (*pluginv1.RequestTaskReconfigurationResponse, error) {
	return nil, status.Errorf(codes.FailedPrecondition, "task %s: task reconfiguration is requested by connectors, not tasks", w.t.cfg.ID)
}

// RaiseError fails the task with the plugin's error.
func (w *sinkWorker) RaiseError(_ context.Context, req *pluginv1.RaiseErrorRequest) (*pluginv1.RaiseErrorResponse, error) {
	w.t.fail(&wire.Error{Kind: wire.KindFatal, Message: req.GetMessage(), Trace: req.GetTrace()})
	return &pluginv1.RaiseErrorResponse{}, nil
}

func (w *sinkWorker) Assignment(context.Context, *pluginv1.AssignmentRequest) (*pluginv1.AssignmentResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return &pluginv1.AssignmentResponse{Partitions: w.assignment}, nil
}

func (w *sinkWorker) Pause(_ context.Context, req *pluginv1.PartitionsRequest) (*pluginv1.PartitionsResponse, error) {
	w.queue(sinkOp{kind: opPause, tps: protoTPs(req.GetPartitions())})
	return &pluginv1.PartitionsResponse{}, nil
}

func (w *sinkWorker) Resume(_ context.Context, req *pluginv1.PartitionsRequest) (*pluginv1.PartitionsResponse, error) {
	w.queue(sinkOp{kind: opResume, tps: protoTPs(req.GetPartitions())})
	return &pluginv1.PartitionsResponse{}, nil
}

func (w *sinkWorker) Rewind(_ context.Context, req *pluginv1.RewindRequest) (*pluginv1.RewindResponse, error) {
	op := sinkOp{kind: opRewind}
	for _, po := range req.GetOffsets() {
		op.tps = append(op.tps, topicPartition{po.GetTopic(), po.GetPartition()})
		op.offsets = append(op.offsets, po.GetOffset())
	}
	w.queue(op)
	return &pluginv1.RewindResponse{}, nil
}

func (w *sinkWorker) RequestCommit(context.Context, *pluginv1.RequestCommitRequest) (*pluginv1.RequestCommitResponse, error) {
	w.mu.Lock()
	w.commit = true
	w.mu.Unlock()
	w.t.poke()
	return &pluginv1.RequestCommitResponse{}, nil
}

func (w *sinkWorker) SetRetryBackoff(_ context.Context, req *pluginv1.SetRetryBackoffRequest) (*pluginv1.SetRetryBackoffResponse, error) {
	if req.GetBackoffMs() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "negative retry backoff %d ms", req.GetBackoffMs())
	}
	// A wait longer than a Duration holds (a Java task's
	// timeout(Long.MAX_VALUE)) is the longest one, not a product that
	// wraps around to a negative backoff.
	backoff := time.Duration(math.MaxInt64)
	if ms := req.GetBackoffMs(); ms < int64(backoff/time.Millisecond) {
		backoff = time.Duration(ms) * time.Millisecond
	}
	w.mu.Lock()
	w.backoff, w.backoffSet = backoff, true
	w.mu.Unlock()
	return &pluginv1.SetRetryBackoffResponse{}, nil
}

// ReportErrantRecord hands the record to the error handler (the DLQ and
// errors.tolerance machinery). Without one, or with one that reports
// nothing (Reporter), the task has no reporter, as
// Kafka Connect's errantRecordReporter() is null without a DLQ or error
// logging: UNIMPLEMENTED. When the handler refuses the record (tolerance
// exceeded), the call fails and so does the task.
func (w *sinkWorker) ReportErrantRecord(ctx context.Context, req *pluginv1.ReportErrantRecordRequest) (*pluginv1.ReportErrantRecordResponse, error) {
	h := w.t.cfg.Errors
	if r, ok := h.(Reporter); h == nil || ok && !r.Reports() {
		return nil, status.Errorf(codes.Unimplemented, "task %s has no errant record reporter (no dead letter queue or error logging configured)", w.t.cfg.ID)
	}
	rec := &kgo.Record{Topic: req.GetTopic(), Partition: req.GetPartition(), Offset: req.GetOffset()}
	found := false
	w.mu.Lock()
	for _, r := range w.batch {
		if r.Topic == rec.Topic && r.Partition == rec.Partition && r.Offset == rec.Offset {
			rec, found = r, true
			break
		}
	}
	w.mu.Unlock()
	if !found && req.GetRecord() != nil {
		w.fillFromReport(rec, req)
	}
	g := w.reports.begin()
	err := h.Handle(ctx, ErrantRecord{Stage: StagePut, Err: errors.New(req.GetError()), Consumed: rec, Trace: req.GetTrace(),
		ExceptionClass: req.GetExceptionClass()})
	w.reports.end(g)
	if err != nil {
		w.t.fail(err)
		return nil, status.Errorf(codes.FailedPrecondition, "errant record %s-%d@%d: %v", rec.Topic, rec.Partition, rec.Offset, err)
	}
	return &pluginv1.ReportErrantRecordResponse{}, nil
}

// fillFromReport gives rec, a reported record the worker no longer holds
// (reported after its Put returned), the key, value, headers and timestamp
// of the copy the plugin sent, converted back to bytes with the task's
// converters, as Kafka Connect's reporter does for a record it did not
// deliver. Those are the bytes of the record as the task saw it, after
// transforms, where Kafka Connect puts the originally consumed bytes of a
// record it delivered. A copy that cannot be decoded or converted leaves
// rec with its coordinates only, and is logged.
func (w *sinkWorker) fillFromReport(rec *kgo.Record, req *pluginv1.ReportErrantRecordRequest) {
	recs, err := wire.DecodeSinkRecords(req.GetSchemas(), []*pluginv1.SinkRecord{req.GetRecord()})
	if err == nil {
		err = w.t.fromConnect(&recs[0].Record, rec)
	}
	if err != nil {
		w.t.log.Warn("errant record reported after its put: its copy cannot be turned back into bytes; the dead letter queue gets its coordinates only",
			"topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "error", err)
		rec.Key, rec.Value, rec.Headers = nil, nil, nil
		return
	}
	rec.Timestamp = recs[0].Timestamp
}

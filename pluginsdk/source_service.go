package pluginsdk

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// Poll defaults for requests that leave a bound at zero.
const (
	defaultPollTimeout    = time.Second
	defaultPollMaxRecords = 1000
	defaultPollMaxBytes   = 8 << 20
	// continuationWait is the deadline of the extra task.Poll calls that fill
	// a batch once it holds records: long enough for records that are ready,
	// short enough not to hold back what is already there.
	continuationWait = 2 * time.Millisecond
	// idleBackoff spaces task.Poll calls when the task returns nothing before
	// its deadline, so such a task is not spun in a tight loop.
	idleBackoff = 10 * time.Millisecond
)

type sourceInstance struct {
	task      SourceTask
	committer Committer
	acker     RecordCommitter
	w         *workerClient
	life      context.Context
	cancel    context.CancelFunc
	stopOnce  sync.Once

	// recycler gets back the records answered through shared memory; nil
	// when the task has no RecycleRecords, or has CommitRecord, or once
	// its RecycleRecords panicked. It belongs to the holder of pollSem.
	recycler RecordRecycler
	// spare is the batch last answered, emptied: the next one fills its
	// memory (see newBatch). It belongs to the holder of pollSem.
	spare *pollBatch

	// pollSem admits one task.Poll caller at a time: a Poll RPC, or the
	// fill that polls ahead after it (the RPC hands its hold over). Stop
	// takes it to wait for either to return. The fields below belong to
	// its holder.
	pollSem    chan struct{}
	pending    []*data.SourceRecord // polled but not yet sent (batch was full)
	pendingErr error                // a Poll error to report after pending
	ahead      *pollBatch           // filled ahead of the next Poll RPC; nil: none
	nextSeq    uint64
	// prefetch: poll the task ahead of the worker (see the package doc).
	prefetch bool

	// ackMu orders acknowledgements: CommitRecord calls never overlap.
	ackMu    sync.Mutex
	inflight map[uint64]*data.SourceRecord

	// shared is the region the worker offered, if it could be mapped: Poll
	// answers are written into it, by the pollSem holder.
	shared *wire.SharedRegion
}

type sourceService struct {
	pluginv1.UnimplementedSourceTaskServer
	s *server
}

func (ss *sourceService) started() (*sourceInstance, error) {
	ss.s.mu.Lock()
	defer ss.s.mu.Unlock()
	if ss.s.source == nil {
		return nil, status.Error(codes.FailedPrecondition, "source task not started")
	}
	return ss.s.source, nil
}

func (ss *sourceService) Start(ctx context.Context, req *pluginv1.SourceTaskStartRequest) (*pluginv1.SourceTaskStartResponse, error) {
	ci, err := ss.s.lookup(req.GetConnectorClass(), pluginv1.ConnectorType_CONNECTOR_TYPE_SOURCE)
	if err != nil {
		return nil, err
	}
	var task SourceTask
	err = ss.s.guard("new source task", func() error {
		task = ci.New().(SourceConnector).NewTask()
		if task == nil {
			return fmt.Errorf("%s: NewTask returned nil", ci.Name)
		}
		return nil
	})
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	life, cancel := context.WithCancel(context.Background())
	inst := &sourceInstance{
		task: task, w: &workerClient{target: req.GetWorkerTarget()},
		life: life, cancel: cancel,
		pollSem: make(chan struct{}, 1), nextSeq: 1,
		inflight: map[uint64]*data.SourceRecord{},
		shared:   mapShared(ss.s.log, req.GetSharedMemory()),
	}
	inst.committer, _ = task.(Committer)
	inst.acker, _ = task.(RecordCommitter)
	if inst.acker == nil {
		// CommitRecord gets the records after the answer: they are not
		// the SDK's to give back.
		inst.recycler, _ = task.(RecordRecycler)
	}
	// A task with Commit may take "everything Poll returned" as delivered
	// when it commits (SourceTask.commit's own wording); records held
	// ahead would then be acknowledged upstream without reaching Kafka.
	inst.prefetch = inst.committer == nil
	role := fmt.Sprintf("source task %s-%d (%s)", req.GetConnectorName(), req.GetTaskId(), ci.Name)
	if err := ss.s.claim(role, func() { ss.s.source = inst }); err != nil {
		cancel()
		closeShared(inst.shared)
		return nil, err
	}
	cctx, done := callContext(ctx, life)
	defer done()
	props := maps.Clone(req.GetConfig())
	err = ss.s.guard("start source task", func() error {
		tc := &sourceTaskContext{baseContext{configs: props, w: inst.w}}
		return task.Start(cctx, tc, maps.Clone(props))
	})
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("start source task %s-%d: %w", req.GetConnectorName(), req.GetTaskId(), err))
	}
	return &pluginv1.SourceTaskStartResponse{RecordAcks: inst.acker != nil, SharedMemory: inst.shared != nil}, nil
}

func (ss *sourceService) Poll(ctx context.Context, req *pluginv1.PollRequest) (*pluginv1.PollResponse, error) {
	inst, err := ss.started()
	if err != nil {
		return nil, err
	}
	if inst.life.Err() != nil {
		return nil, status.Error(codes.FailedPrecondition, "source task stopped")
	}
	// Acknowledgements first: they need no hold on the task's Poll, so they
	// reach CommitRecord even while a fill ahead is still running.
	if err := inst.ack(ctx, ss.s, req.GetAcks()); err != nil {
		return nil, toStatus(ctx, err)
	}
	select {
	case inst.pollSem <- struct{}{}:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	handedOver := false
	defer func() {
		if !handedOver {
			<-inst.pollSem
		}
	}()
	if inst.life.Err() != nil {
		return nil, status.Error(codes.FailedPrecondition, "source task stopped")
	}
	b, firstSeq, err := inst.poll(ctx, ss.s, req)
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("poll: %w", err))
	}
	resp, err := inst.answer(b, firstSeq)
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("poll: %w", err))
	}
	if resp.GetShared() != nil && inst.recycler != nil {
		// The region holds the worker's copy: the records are read no
		// more. An inline answer is marshalled after this call returns,
		// from the records' own bytes, so those are not given back.
		inst.recycle(ss.s.log, b.records())
	}
	// Answered either way: nothing refers to the batch's own memory (an
	// inline answer was converted into messages of its own).
	b.enc.Reset()
	inst.spare = b
	if inst.prefetch && inst.pendingErr == nil && inst.life.Err() == nil {
		// Fill the next batch while the worker handles this one; the
		// fill holds pollSem until it is done.
		handedOver = true
		maxRecords, maxBytes, timeout := pollBounds(req)
		go func() {
			defer func() { <-inst.pollSem }()
			inst.fillAhead(ss.s, maxRecords, maxBytes, timeout)
		}()
	}
	return resp, nil
}

// pollBounds reads a request's bounds, defaulting those left at zero.
func pollBounds(req *pluginv1.PollRequest) (maxRecords, maxBytes int, timeout time.Duration) {
	maxRecords, maxBytes = int(req.GetMaxRecords()), int(req.GetMaxBytes())
	if maxRecords <= 0 {
		maxRecords = defaultPollMaxRecords
	}
	if maxBytes <= 0 {
		maxBytes = defaultPollMaxBytes
	}
	timeout = time.Duration(req.GetTimeoutMs()) * time.Millisecond
	if timeout <= 0 {
		timeout = defaultPollTimeout
	}
	return maxRecords, maxBytes, timeout
}

// fillAhead fills the batch the next Poll RPC will most likely answer with,
// under the bounds of the last one, waiting at most timeout for a first
// record. Stop cancels it through the instance's life. Holds pollSem.
func (si *sourceInstance) fillAhead(s *server, maxRecords, maxBytes int, timeout time.Duration) {
	b := si.newBatch(maxRecords, maxBytes)
	if err := si.fill(si.life, s, b, time.Now().Add(timeout)); err != nil {
		// Nothing was taken before the failure: the next Poll reports it,
		// as it would a failure that follows records.
		si.pendingErr = err
	}
	if b.len() > 0 {
		si.ahead = b
	}
}

// newBatch returns an empty batch with the given bounds: the spare one, if
// any, whose buffers an earlier answer grew. Holds pollSem.
func (si *sourceInstance) newBatch(maxRecords, maxBytes int) *pollBatch {
	b := si.spare
	if b == nil {
		return newPollBatch(maxRecords, maxBytes)
	}
	si.spare = nil
	b.maxRecords, b.maxBytes = maxRecords, maxBytes
	return b
}

// answer writes a filled batch as the Poll answer: into the shared region
// if there is one and the batch fits, else inline. Holds pollSem.
func (si *sourceInstance) answer(b *pollBatch, firstSeq uint64) (*pluginv1.PollResponse, error) {
	if b.len() == 0 {
		return &pluginv1.PollResponse{}, nil
	}
	if si.shared != nil {
		// The worker reads the region before its next Poll, which cannot
		// write it before this one is answered (pollSem is still held).
		if ref, ok := si.shared.PlacePoll(&b.enc, firstSeq); ok {
			return &pluginv1.PollResponse{Shared: ref}, nil
		}
	}
	resp, err := b.enc.Proto(firstSeq)
	if err != nil {
		return nil, fmt.Errorf("encode polled records: %w", err)
	}
	return resp, nil
}

// poll fills one batch: the one filled ahead, if any and within this
// request's bounds, topped up from the task; firstSeq is the sequence
// number of its first record. Holds pollSem.
func (si *sourceInstance) poll(rpc context.Context, s *server, req *pluginv1.PollRequest) (b *pollBatch, firstSeq uint64, err error) {
	maxRecords, maxBytes, timeout := pollBounds(req)
	deadline := time.Now().Add(timeout)
	if d, ok := rpc.Deadline(); ok {
		// Leave time to send the answer before the worker gives up on it.
		margin := min(100*time.Millisecond, time.Until(d)/10)
		if d.Add(-margin).Before(deadline) {
			deadline = d.Add(-margin)
		}
	}
	ctx, done := callContext(rpc, si.life)
	defer done()

	b = si.ahead
	si.ahead = nil
	if b != nil && !b.within(maxRecords, maxBytes) {
		// This request allows less than the last one: start over with
		// the records, in order, ahead of anything held back.
		si.pending = append(slices.Clip(b.records()), si.pending...)
		b = nil
	}
	if b == nil {
		b = si.newBatch(maxRecords, maxBytes)
	} else {
		b.maxRecords, b.maxBytes = maxRecords, maxBytes
	}
	if err := si.fill(ctx, s, b, deadline); err != nil {
		return nil, 0, err
	}
	if b.len() == 0 {
		return b, 0, nil
	}
	firstSeq = si.nextSeq
	si.nextSeq += uint64(b.len())
	if si.acker != nil {
		si.ackMu.Lock()
		for i, r := range b.records() {
			si.inflight[firstSeq+uint64(i)] = r
		}
		si.ackMu.Unlock()
	}
	return b, firstSeq, nil
}

// fill adds records to b: first those held back, then from task.Poll until b
// is full, the deadline passes (a first record is waited for until then,
// further ones briefly) or ctx ends. A task.Poll error with records already
// in b is kept in pendingErr for the next Poll; with none it is returned,
// as is an error held from before. Holds pollSem.
func (si *sourceInstance) fill(ctx context.Context, s *server, b *pollBatch, deadline time.Time) error {
	var err error
	if si.pending, err = b.add(si.pending); err != nil {
		return err
	}
	if si.pendingErr != nil && b.len() == 0 {
		err, si.pendingErr = si.pendingErr, nil
		return err
	}
	for first := true; si.pendingErr == nil && len(si.pending) == 0 && !b.full() && ctx.Err() == nil; first = false {
		now := time.Now()
		if !first && !now.Before(deadline) {
			break
		}
		pollDeadline := deadline
		if b.len() > 0 {
			if c := now.Add(continuationWait); c.Before(deadline) {
				pollDeadline = c
			}
		}
		recs, err := si.pollOnce(ctx, s, pollDeadline)
		if err != nil {
			if b.len() == 0 {
				return err
			}
			// The records already taken from the task go out now; the
			// error follows on the next Poll.
			si.pendingErr = err
			break
		}
		if len(recs) == 0 {
			if b.len() > 0 {
				break
			}
			// The task returned early with nothing: ask again shortly.
			wait := min(idleBackoff, time.Until(deadline))
			if wait <= 0 {
				break
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			continue
		}
		if si.pending, err = b.add(recs); err != nil {
			return err
		}
	}
	return nil
}

// pollOnce calls task.Poll once with the given deadline. A task that answers
// its own deadline or the Stop cancellation with the context's error has just
// found nothing; that is not a failure.
func (si *sourceInstance) pollOnce(ctx context.Context, s *server, deadline time.Time) ([]*data.SourceRecord, error) {
	pctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var recs []*data.SourceRecord
	err := s.guard("poll", func() error {
		var err error
		recs, err = si.task.Poll(pctx)
		return err
	})
	if err != nil && pctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return nil, nil
	}
	return recs, err
}

// ack delivers per-record acknowledgements to CommitRecord in the order the
// worker listed them and forgets those records. Tasks without CommitRecord
// asked for watermarks only, which need no action.
func (si *sourceInstance) ack(ctx context.Context, s *server, ab *pluginv1.AckBatch) error {
	if si.acker == nil || len(ab.GetRecords()) == 0 {
		return nil
	}
	si.ackMu.Lock()
	defer si.ackMu.Unlock()
	for _, a := range ab.GetRecords() {
		rec, ok := si.inflight[a.GetSeq()]
		if !ok {
			s.log.Warn("acknowledgement for a record this task does not hold", "seq", a.GetSeq())
			continue
		}
		delete(si.inflight, a.GetSeq())
		var md *RecordMetadata
		if a.GetWritten() {
			md = &RecordMetadata{Topic: a.GetTopic(), Partition: a.GetPartition(), Offset: a.GetOffset()}
			if a.GetTimestampMs() != 0 {
				md.Timestamp = time.UnixMilli(a.GetTimestampMs()).UTC()
			}
		}
		err := s.guard("commit record", func() error { return si.acker.CommitRecord(ctx, rec, md) })
		if err != nil {
			var pe *panicError
			if errors.As(err, &pe) {
				return err
			}
			// Kafka Connect logs commitRecord failures and carries on.
			s.log.Error("commit record failed", "seq", a.GetSeq(), "error", err)
		}
	}
	return nil
}

func (ss *sourceService) Ack(ctx context.Context, req *pluginv1.AckRequest) (*pluginv1.AckResponse, error) {
	inst, err := ss.started()
	if err != nil {
		return nil, err
	}
	if err := inst.ack(ctx, ss.s, req.GetAcks()); err != nil {
		return nil, toStatus(ctx, err)
	}
	return &pluginv1.AckResponse{}, nil
}

func (ss *sourceService) Commit(ctx context.Context, _ *pluginv1.CommitRequest) (*pluginv1.CommitResponse, error) {
	inst, err := ss.started()
	if err != nil {
		return nil, err
	}
	if inst.committer == nil {
		return &pluginv1.CommitResponse{}, nil
	}
	cctx, done := callContext(ctx, inst.life)
	defer done()
	if err := ss.s.guard("commit", func() error { return inst.committer.Commit(cctx) }); err != nil {
		return nil, toStatus(ctx, fmt.Errorf("commit: %w", err))
	}
	return &pluginv1.CommitResponse{}, nil
}

func (ss *sourceService) Stop(ctx context.Context, _ *pluginv1.StopRequest) (*pluginv1.StopResponse, error) {
	ss.s.mu.Lock()
	inst := ss.s.source
	ss.s.mu.Unlock()
	if inst == nil {
		return &pluginv1.StopResponse{}, nil
	}
	var err error
	inst.stopOnce.Do(func() {
		// Cancel an outstanding Poll and wait for it to return, so task.Stop
		// does not race task.Poll; a Poll that ignores cancellation gets half
		// of Stop's time before Stop proceeds anyway.
		inst.cancel()
		if waitForSem(ctx, inst.pollSem) {
			defer func() { <-inst.pollSem }()
		} else {
			ss.s.log.Warn("poll did not return after stop cancelled it; stopping the task anyway")
		}
		defer inst.w.close()
		err = ss.s.guard("stop source task", func() error { return inst.task.Stop(ctx) })
	})
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("stop source task: %w", err))
	}
	return &pluginv1.StopResponse{}, nil
}

// waitForSem acquires sem, giving up after half of ctx's remaining time.
func waitForSem(ctx context.Context, sem chan struct{}) bool {
	wctx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, time.Until(d)/2)
		defer cancel()
	}
	select {
	case sem <- struct{}{}:
		return true
	case <-wctx.Done():
		return false
	}
}

package pluginsdk

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

type sinkInstance struct {
	task     SinkTask
	w        *workerClient
	life     context.Context
	cancel   context.CancelFunc
	stopOnce sync.Once
	// busy admits one call at a time (the contract never overlaps them);
	// Stop takes it to wait for a running Put it has cancelled.
	busy chan struct{}
	// shared is the region the worker offered, if it could be mapped:
	// batches may then arrive through it.
	shared *wire.SharedRegion
	// borrowed is where batches are decoded for a task that borrows its
	// records (RecordBorrower): used by the holder of busy, one Put at a
	// time, each done with its records before the next decodes.
	borrowed wire.BorrowBuffer
}

type sinkService struct {
	pluginv1.UnimplementedSinkTaskServer
	s *server
}

// enter returns the started instance with its busy slot taken, and the
// context connector code runs under.
func (ks *sinkService) enter(ctx context.Context) (*sinkInstance, context.Context, func(), error) {
	ks.s.mu.Lock()
	inst := ks.s.sink
	ks.s.mu.Unlock()
	if inst == nil {
		return nil, nil, nil, status.Error(codes.FailedPrecondition, "sink task not started")
	}
	select {
	case inst.busy <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, nil, status.FromContextError(ctx.Err()).Err()
	}
	if inst.life.Err() != nil {
		<-inst.busy
		return nil, nil, nil, status.Error(codes.FailedPrecondition, "sink task stopped")
	}
	cctx, done := callContext(ctx, inst.life)
	return inst, cctx, func() { done(); <-inst.busy }, nil
}

func (ks *sinkService) Start(ctx context.Context, req *pluginv1.SinkTaskStartRequest) (*pluginv1.SinkTaskStartResponse, error) {
	ci, err := ks.s.lookup(req.GetConnectorClass(), pluginv1.ConnectorType_CONNECTOR_TYPE_SINK)
	if err != nil {
		return nil, err
	}
	var task SinkTask
	err = ks.s.guard("new sink task", func() error {
		task = ci.New().(SinkConnector).NewTask()
		if task == nil {
			return fmt.Errorf("%s: NewTask returned nil", ci.Name)
		}
		return nil
	})
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	life, cancel := context.WithCancel(context.Background())
	inst := &sinkInstance{task: task, w: &workerClient{target: req.GetWorkerTarget()}, life: life, cancel: cancel, busy: make(chan struct{}, 1),
		shared: mapShared(ks.s.log, req.GetSharedMemory())}
	role := fmt.Sprintf("sink task %s-%d (%s)", req.GetConnectorName(), req.GetTaskId(), ci.Name)
	if err := ks.s.claim(role, func() { ks.s.sink = inst }); err != nil {
		cancel()
		closeShared(inst.shared)
		return nil, err
	}
	cctx, done := callContext(ctx, life)
	defer done()
	props := maps.Clone(req.GetConfig())
	err = ks.s.guard("start sink task", func() error {
		tc := &sinkTaskContext{baseContext{configs: props, w: inst.w}}
		return task.Start(cctx, tc, maps.Clone(props))
	})
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("start sink task %s-%d: %w", req.GetConnectorName(), req.GetTaskId(), err))
	}
	return &pluginv1.SinkTaskStartResponse{SharedMemory: inst.shared != nil}, nil
}

func (ks *sinkService) Open(ctx context.Context, req *pluginv1.OpenRequest) (*pluginv1.OpenResponse, error) {
	inst, cctx, exit, err := ks.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer exit()
	if o, ok := inst.task.(PartitionOpener); ok {
		tps := tpsFromProto(req.GetPartitions())
		if err := ks.s.guard("open", func() error { return o.Open(cctx, tps) }); err != nil {
			return nil, toStatus(ctx, fmt.Errorf("open partitions: %w", err))
		}
	}
	return &pluginv1.OpenResponse{}, nil
}

func (ks *sinkService) Close(ctx context.Context, req *pluginv1.CloseRequest) (*pluginv1.CloseResponse, error) {
	inst, cctx, exit, err := ks.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer exit()
	if c, ok := inst.task.(PartitionCloser); ok {
		tps := tpsFromProto(req.GetPartitions())
		if err := ks.s.guard("close", func() error { return c.Close(cctx, tps) }); err != nil {
			return nil, toStatus(ctx, fmt.Errorf("close partitions: %w", err))
		}
	}
	return &pluginv1.CloseResponse{}, nil
}

func (ks *sinkService) Put(ctx context.Context, req *pluginv1.PutRequest) (*pluginv1.PutResponse, error) {
	inst, cctx, exit, err := ks.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer exit()
	var recs []*data.SinkRecord
	if ref := req.GetShared(); ref != nil {
		if inst.shared == nil {
			return nil, status.Error(codes.InvalidArgument, "put: batch in shared memory, but none was accepted")
		}
		// Copied out of the region (the task may keep records after Put
		// returns, when the worker writes the next batch there) and
		// decoded straight into records, which alias the copy; or, for a
		// task that borrows its records, decoded in place.
		take := inst.shared.TakeSinkRecords
		if b, ok := inst.task.(RecordBorrower); ok {
			borrows := false
			if err := ks.s.guard("borrows records", func() error { borrows = b.BorrowsRecords(); return nil }); err != nil {
				return nil, toStatus(ctx, fmt.Errorf("put: %w", err))
			}
			if borrows {
				// The records themselves are reused too, Put after Put:
				// the task keeps none.
				take = func(ref *pluginv1.SharedBatch) ([]*data.SinkRecord, error) {
					return inst.shared.BorrowSinkRecordsInto(ref, &inst.borrowed)
				}
			}
		}
		if recs, err = take(ref); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "put: %v", err)
		}
	} else if recs, err = wire.DecodeSinkRecords(req.GetSchemas(), req.GetRecords()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "put: decode records: %v", err)
	}
	if err := ks.s.guard("put", func() error { return inst.task.Put(cctx, recs) }); err != nil {
		return nil, toStatus(ctx, fmt.Errorf("put: %w", err))
	}
	return &pluginv1.PutResponse{}, nil
}

func (ks *sinkService) PreCommit(ctx context.Context, req *pluginv1.PreCommitRequest) (*pluginv1.PreCommitResponse, error) {
	inst, cctx, exit, err := ks.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer exit()
	offsets := offsetsFromProto(req.GetOffsets())
	err = ks.s.guard("pre-commit", func() error {
		switch t := inst.task.(type) {
		case PreCommitter:
			var err error
			offsets, err = t.PreCommit(cctx, offsets)
			return err
		case Flusher:
			return t.Flush(cctx, offsets)
		}
		return nil
	})
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("pre-commit: %w", err))
	}
	return &pluginv1.PreCommitResponse{Offsets: offsetsToProto(offsets)}, nil
}

func (ks *sinkService) Stop(ctx context.Context, _ *pluginv1.StopRequest) (*pluginv1.StopResponse, error) {
	ks.s.mu.Lock()
	inst := ks.s.sink
	ks.s.mu.Unlock()
	if inst == nil {
		return &pluginv1.StopResponse{}, nil
	}
	var err error
	inst.stopOnce.Do(func() {
		inst.cancel()
		if waitForSem(ctx, inst.busy) {
			defer func() { <-inst.busy }()
		} else {
			ks.s.log.Warn("sink call did not return after stop cancelled it; stopping the task anyway")
		}
		defer inst.w.close()
		err = ks.s.guard("stop sink task", func() error { return inst.task.Stop(ctx) })
	})
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("stop sink task: %w", err))
	}
	return &pluginv1.StopResponse{}, nil
}

func offsetsFromProto(ps []*pluginv1.PartitionOffset) map[data.TopicPartition]int64 {
	out := make(map[data.TopicPartition]int64, len(ps))
	for _, p := range ps {
		out[data.TopicPartition{Topic: p.GetTopic(), Partition: p.GetPartition()}] = p.GetOffset()
	}
	return out
}

// offsetsToProto lists offsets sorted by topic and partition, so answers are
// stable.
func offsetsToProto(m map[data.TopicPartition]int64) []*pluginv1.PartitionOffset {
	out := make([]*pluginv1.PartitionOffset, 0, len(m))
	for tp, off := range m {
		out = append(out, &pluginv1.PartitionOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: off})
	}
	slices.SortFunc(out, func(a, b *pluginv1.PartitionOffset) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

package runtime

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-io/sluice/host/storage"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// sourceWorker is the Worker service a source task's plugin calls back:
// OffsetStorageReader and RaiseError. Calls come from gRPC goroutines.
type sourceWorker struct {
	pluginv1.UnimplementedWorkerServer
	t *sourceTask
}

// SourceOffsets answers from the offset store, in the order asked, with each
// partition as the plugin spelled it.
func (w *sourceWorker) SourceOffsets(ctx context.Context, req *pluginv1.SourceOffsetsRequest) (*pluginv1.SourceOffsetsResponse, error) {
	canon := make([][]byte, len(req.GetPartitions()))
	for i, p := range req.GetPartitions() {
		c, err := storage.CanonicalJSON(p)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "source partition %d: %v", i, err)
		}
		canon[i] = c
	}
	stored, err := w.t.cfg.Offsets.Get(ctx, w.t.cfg.ID.Connector, canon)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "read source offsets of %s: %v", w.t.cfg.ID.Connector, err)
	}
	resp := &pluginv1.SourceOffsetsResponse{Offsets: make([]*pluginv1.SourceOffset, len(canon))}
	for i, c := range canon {
		resp.Offsets[i] = &pluginv1.SourceOffset{Partition: req.GetPartitions()[i], Offset: stored[string(c)]}
	}
	return resp, nil
}

func (w *sourceWorker) RequestTaskReconfiguration(context.Context, *pluginv1.RequestTaskReconfigurationRequest) (*pluginv1.RequestTaskReconfigurationResponse, error) {
	return nil, status.Errorf(codes.FailedPrecondition, "task %s: task reconfiguration is requested by connectors, not tasks", w.t.cfg.ID)
}

// RaiseError fails the task with the plugin's error.
func (w *sourceWorker) RaiseError(_ context.Context, req *pluginv1.RaiseErrorRequest) (*pluginv1.RaiseErrorResponse, error) {
	w.t.fail(&wire.Error{Kind: wire.KindFatal, Message: req.GetMessage(), Trace: req.GetTrace()})
	return &pluginv1.RaiseErrorResponse{}, nil
}

func (w *sourceWorker) notSink() error {
	return status.Errorf(codes.FailedPrecondition, "task %s is a source task; this call is for sink tasks", w.t.cfg.ID)
}

func (w *sourceWorker) Assignment(context.Context, *pluginv1.AssignmentRequest) (*pluginv1.AssignmentResponse, error) {
	return nil, w.notSink()
}

func (w *sourceWorker) Pause(context.Context, *pluginv1.PartitionsRequest) (*pluginv1.PartitionsResponse, error) {
	return nil, w.notSink()
}

func (w *sourceWorker) Resume(context.Context, *pluginv1.PartitionsRequest) (*pluginv1.PartitionsResponse, error) {
	return nil, w.notSink()
}

func (w *sourceWorker) Rewind(context.Context, *pluginv1.RewindRequest) (*pluginv1.RewindResponse, error) {
	return nil, w.notSink()
}

func (w *sourceWorker) RequestCommit(context.Context, *pluginv1.RequestCommitRequest) (*pluginv1.RequestCommitResponse, error) {
	return nil, w.notSink()
}

func (w *sourceWorker) SetRetryBackoff(context.Context, *pluginv1.SetRetryBackoffRequest) (*pluginv1.SetRetryBackoffResponse, error) {
	return nil, w.notSink()
}

func (w *sourceWorker) ReportErrantRecord(context.Context, *pluginv1.ReportErrantRecordRequest) (*pluginv1.ReportErrantRecordResponse, error) {
	return nil, w.notSink()
}

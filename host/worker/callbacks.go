package worker

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/storage"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// connectorWorker is the Worker service a connector instance calls back:
// its requests go to the herder (which never blocks on them), and a source
// connector may read its tasks' stored offsets (SourceConnectorContext's
// offset reader). The task-only calls answer FAILED_PRECONDITION.
type connectorWorker struct {
	pluginv1.UnimplementedWorkerServer
	name    string
	cb      herder.ConnectorCallbacks
	offsets storage.OffsetStore
}

func (w *connectorWorker) RequestTaskReconfiguration(context.Context, *pluginv1.RequestTaskReconfigurationRequest) (*pluginv1.RequestTaskReconfigurationResponse, error) {
	w.cb.RequestTaskReconfiguration()
	return &pluginv1.RequestTaskReconfigurationResponse{}, nil
}

func (w *connectorWorker) RaiseError(_ context.Context, req *pluginv1.RaiseErrorRequest) (*pluginv1.RaiseErrorResponse, error) {
	w.cb.RaiseError(req.GetMessage(), req.GetTrace())
	return &pluginv1.RaiseErrorResponse{}, nil
}

func (w *connectorWorker) SourceOffsets(ctx context.Context, req *pluginv1.SourceOffsetsRequest) (*pluginv1.SourceOffsetsResponse, error) {
	parts := make([][]byte, 0, len(req.GetPartitions()))
	canon := make([][]byte, 0, len(req.GetPartitions()))
	for _, p := range req.GetPartitions() {
		c, err := storage.CanonicalJSON(p)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "source partition %q: %v", p, err)
		}
		parts = append(parts, p)
		canon = append(canon, c)
	}
	got, err := w.offsets.Get(ctx, w.name, canon)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "read offsets of connector %s: %v", w.name, err)
	}
	out := &pluginv1.SourceOffsetsResponse{}
	for i, p := range parts {
		out.Offsets = append(out.Offsets, &pluginv1.SourceOffset{Partition: p, Offset: got[string(canon[i])]})
	}
	return out, nil
}

func taskOnly(call string) error {
	return status.Error(codes.FailedPrecondition, fmt.Sprintf("%s is for sink tasks, not connectors", call))
}

func (w *connectorWorker) Assignment(context.Context, *pluginv1.AssignmentRequest) (*pluginv1.AssignmentResponse, error) {
	return nil, taskOnly("Assignment")
}

func (w *connectorWorker) Pause(context.Context, *pluginv1.PartitionsRequest) (*pluginv1.PartitionsResponse, error) {
	return nil, taskOnly("Pause")
}

func (w *connectorWorker) Resume(context.Context, *pluginv1.PartitionsRequest) (*pluginv1.PartitionsResponse, error) {
	return nil, taskOnly("Resume")
}

func (w *connectorWorker) Rewind(context.Context, *pluginv1.RewindRequest) (*pluginv1.RewindResponse, error) {
	return nil, taskOnly("Rewind")
}

func (w *connectorWorker) RequestCommit(context.Context, *pluginv1.RequestCommitRequest) (*pluginv1.RequestCommitResponse, error) {
	return nil, taskOnly("RequestCommit")
}

func (w *connectorWorker) SetRetryBackoff(context.Context, *pluginv1.SetRetryBackoffRequest) (*pluginv1.SetRetryBackoffResponse, error) {
	return nil, taskOnly("SetRetryBackoff")
}

func (w *connectorWorker) ReportErrantRecord(context.Context, *pluginv1.ReportErrantRecordRequest) (*pluginv1.ReportErrantRecordResponse, error) {
	return nil, taskOnly("ReportErrantRecord")
}

package conformance

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// fakeWorker is an in-memory Worker service. It answers SourceOffsets from
// offsets and records every callback so checks can inspect them.
type fakeWorker struct {
	pluginv1.UnimplementedWorkerServer
	target string

	mu sync.Mutex
	// offsets maps a partition's canonical JSON to its stored offset JSON.
	offsets    map[string]string
	assignment []*pluginv1.TopicPartition
	calls      []string
	asked      []string // partitions asked for in SourceOffsets, canonical JSON
}

// startWorker serves a fakeWorker on a unix socket until the test ends.
func startWorker(t *testing.T) (*fakeWorker, error) {
	// A short directory: unix socket paths are limited to ~108 bytes.
	dir, err := os.MkdirTemp("", "slc-")
	if err != nil {
		return nil, fmt.Errorf("fake worker: %w", err)
	}
	sock := filepath.Join(dir, "worker.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("fake worker: listen: %w", err)
	}
	w := &fakeWorker{target: "unix://" + sock, offsets: map[string]string{}}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(wire.MaxMessageBytes))
	pluginv1.RegisterWorkerServer(gs, w)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	t.Cleanup(func() {
		gs.Stop()
		<-done
		_ = os.RemoveAll(dir)
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.calls) > 0 {
			t.Logf("the plugin called the worker: %v", w.calls)
		}
	})
	return w, nil
}

func (w *fakeWorker) record(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, fmt.Sprintf(format, args...))
}

func (w *fakeWorker) setOffsets(m map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.offsets = m
	w.asked = nil
}

func (w *fakeWorker) askedPartitions() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.asked...)
}

func (w *fakeWorker) SourceOffsets(_ context.Context, req *pluginv1.SourceOffsetsRequest) (*pluginv1.SourceOffsetsResponse, error) {
	resp := &pluginv1.SourceOffsetsResponse{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range req.GetPartitions() {
		key, err := canonical(p)
		if err != nil {
			return nil, fmt.Errorf("partition %q is not a JSON object: %w", p, err)
		}
		w.asked = append(w.asked, key)
		resp.Offsets = append(resp.Offsets, &pluginv1.SourceOffset{Partition: p, Offset: []byte(w.offsets[key])})
	}
	w.calls = append(w.calls, fmt.Sprintf("SourceOffsets(%d)", len(req.GetPartitions())))
	return resp, nil
}

func (w *fakeWorker) RequestTaskReconfiguration(context.Context, *pluginv1.RequestTaskReconfigurationRequest) (*pluginv1.RequestTaskReconfigurationResponse, error) {
	w.record("RequestTaskReconfiguration")
	return &pluginv1.RequestTaskReconfigurationResponse{}, nil
}

func (w *fakeWorker) RaiseError(_ context.Context, req *pluginv1.RaiseErrorRequest) (*pluginv1.RaiseErrorResponse, error) {
	w.record("RaiseError(%s)", req.GetMessage())
	return &pluginv1.RaiseErrorResponse{}, nil
}

func (w *fakeWorker) Assignment(context.Context, *pluginv1.AssignmentRequest) (*pluginv1.AssignmentResponse, error) {
	w.record("Assignment")
	w.mu.Lock()
	defer w.mu.Unlock()
	return &pluginv1.AssignmentResponse{Partitions: w.assignment}, nil
}

func (w *fakeWorker) Pause(_ context.Context, req *pluginv1.PartitionsRequest) (*pluginv1.PartitionsResponse, error) {
	w.record("Pause(%d)", len(req.GetPartitions()))
	return &pluginv1.PartitionsResponse{}, nil
}

func (w *fakeWorker) Resume(_ context.Context, req *pluginv1.PartitionsRequest) (*pluginv1.PartitionsResponse, error) {
	w.record("Resume(%d)", len(req.GetPartitions()))
	return &pluginv1.PartitionsResponse{}, nil
}

func (w *fakeWorker) Rewind(_ context.Context, req *pluginv1.RewindRequest) (*pluginv1.RewindResponse, error) {
	w.record("Rewind(%d)", len(req.GetOffsets()))
	return &pluginv1.RewindResponse{}, nil
}

func (w *fakeWorker) RequestCommit(context.Context, *pluginv1.RequestCommitRequest) (*pluginv1.RequestCommitResponse, error) {
	w.record("RequestCommit")
	return &pluginv1.RequestCommitResponse{}, nil
}

func (w *fakeWorker) SetRetryBackoff(_ context.Context, req *pluginv1.SetRetryBackoffRequest) (*pluginv1.SetRetryBackoffResponse, error) {
	w.record("SetRetryBackoff(%d)", req.GetBackoffMs())
	return &pluginv1.SetRetryBackoffResponse{}, nil
}

func (w *fakeWorker) ReportErrantRecord(_ context.Context, req *pluginv1.ReportErrantRecordRequest) (*pluginv1.ReportErrantRecordResponse, error) {
	w.record("ReportErrantRecord(%s-%d@%d: %s)", req.GetTopic(), req.GetPartition(), req.GetOffset(), req.GetError())
	return &pluginv1.ReportErrantRecordResponse{}, nil
}

// canonical re-encodes a JSON object with sorted keys, as the worker's
// offset store keys partitions.
func canonical(b []byte) (string, error) {
	m, err := wire.DecodeJSONMap(b)
	if err != nil {
		return "", err
	}
	if m == nil {
		return "", fmt.Errorf("null, not an object")
	}
	c, err := wire.EncodeJSONMap(m)
	return string(c), err
}

// Command good is a well-behaved test plugin for host/plugin: it serves a
// source and a sink class, reports its environment through Validate, polls
// batches of prebuilt 1 KiB raw records and counts what Put delivers.
// It implements the generated servers directly (no SDK).
package main

import (
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// Pool geometry; host/plugin's tests recompute the same contents.
const (
	poolSize    = 1000
	recordBytes = 1024
)

// rawStderr is fd 2 as it was before go-plugin's Serve replaced os.Stderr
// with its stdio stream.
var rawStderr = os.Stderr

func value(j int) []byte {
	v := make([]byte, recordBytes)
	for k := range v {
		v[k] = byte(j*7 + k*13)
	}
	return v
}

var pool = func() []*pluginv1.SourceRecord {
	p := make([]*pluginv1.SourceRecord, poolSize)
	for j := range p {
		p[j] = &pluginv1.SourceRecord{
			Topic: "good",
			Key:   &pluginv1.Data{Kind: &pluginv1.Data_Raw{Raw: fmt.Appendf(nil, "k-%d", j)}},
			Value: &pluginv1.Data{Kind: &pluginv1.Data_Raw{Raw: value(j)}},
		}
	}
	return p
}()

type describer struct {
	pluginv1.UnimplementedPluginServer
}

func (describer) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	return &pluginv1.DescribeResponse{Sdk: "sluice-test/good", Classes: []*pluginv1.ConnectorClass{
		{ClassName: "io.sluice.test.GoodSourceConnector", Aliases: []string{"good-source"}, Type: pluginv1.ConnectorType_CONNECTOR_TYPE_SOURCE, Version: "1.0.0", TaskClassName: "io.sluice.test.GoodSourceTask"},
		{ClassName: "io.sluice.test.GoodSinkConnector", Type: pluginv1.ConnectorType_CONNECTOR_TYPE_SINK, Version: "1.0.0"},
	}}, nil
}

type connector struct {
	pluginv1.UnimplementedConnectorServer
}

// Validate with config report=env answers one value per environment
// variable, so tests can see exactly what the worker passed.
func (connector) Validate(_ context.Context, req *pluginv1.ValidateRequest) (*pluginv1.ValidateResponse, error) {
	var out []*pluginv1.ConfigValue
	if req.GetConfig()["report"] == "env" {
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			out = append(out, &pluginv1.ConfigValue{Name: k, Value: &v})
		}
	}
	return &pluginv1.ValidateResponse{Values: out}, nil
}

type source struct {
	pluginv1.UnimplementedSourceTaskServer
	mu   sync.Mutex
	next uint64
}

func (s *source) Start(_ context.Context, req *pluginv1.SourceTaskStartRequest) (*pluginv1.SourceTaskStartResponse, error) {
	marker := req.GetConfig()["marker"]
	// One line through each output path: hclog JSON on raw stderr (parsed
	// by go-plugin) and a plain line on the synced os.Stderr.
	hclog.New(&hclog.LoggerOptions{Output: rawStderr, JSONFormat: true, Level: hclog.Info}).
		Info("source task started", "marker", marker)
	fmt.Fprintln(os.Stderr, "[WARN] synced line "+marker)
	if t := req.GetWorkerTarget(); t != "" {
		// Call the worker back, as OffsetStorageReader would.
		conn, err := grpc.NewClient(t, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, fmt.Errorf("dial worker: %w", err)
		}
		defer conn.Close()
		if _, err := pluginv1.NewWorkerClient(conn).SourceOffsets(context.Background(), &pluginv1.SourceOffsetsRequest{Partitions: [][]byte{[]byte(marker)}}); err != nil {
			return nil, fmt.Errorf("worker callback: %w", err)
		}
	}
	s.mu.Lock()
	s.next = 1
	s.mu.Unlock()
	return &pluginv1.SourceTaskStartResponse{}, nil
}

func (s *source) Poll(_ context.Context, req *pluginv1.PollRequest) (*pluginv1.PollResponse, error) {
	n := int(req.GetMaxRecords())
	if n == 0 {
		n = 100
	}
	s.mu.Lock()
	first := s.next
	s.next += uint64(n)
	s.mu.Unlock()
	start := int((first - 1) % poolSize)
	var recs []*pluginv1.SourceRecord
	if start+n <= poolSize {
		recs = pool[start : start+n]
	} else {
		recs = make([]*pluginv1.SourceRecord, n)
		for i := range recs {
			recs[i] = pool[(start+i)%poolSize]
		}
	}
	return &pluginv1.PollResponse{Records: recs, FirstSeq: first}, nil
}

func (s *source) Stop(context.Context, *pluginv1.StopRequest) (*pluginv1.StopResponse, error) {
	return &pluginv1.StopResponse{}, nil
}

type sink struct {
	pluginv1.UnimplementedSinkTaskServer
	mu          sync.Mutex
	count, size int64
	crc         uint32
}

func (s *sink) Start(context.Context, *pluginv1.SinkTaskStartRequest) (*pluginv1.SinkTaskStartResponse, error) {
	return &pluginv1.SinkTaskStartResponse{}, nil
}

func (s *sink) Put(_ context.Context, req *pluginv1.PutRequest) (*pluginv1.PutResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range req.GetRecords() {
		b := r.GetValue().GetValue().GetBytesValue()
		s.count++
		s.size += int64(len(b))
		s.crc = crc32.Update(s.crc, crc32.IEEETable, b)
	}
	return &pluginv1.PutResponse{}, nil
}

// PreCommit reports the totals as pseudo partitions: count, bytes, crc.
func (s *sink) PreCommit(context.Context, *pluginv1.PreCommitRequest) (*pluginv1.PreCommitResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &pluginv1.PreCommitResponse{Offsets: []*pluginv1.PartitionOffset{
		{Topic: "count", Offset: s.count},
		{Topic: "bytes", Offset: s.size},
		{Topic: "crc", Offset: int64(s.crc)},
	}}, nil
}

func main() {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		VersionedPlugins: wire.VersionedPlugins(wire.Servers{
			Plugin:     describer{},
			Connector:  connector{},
			SourceTask: &source{},
			SinkTask:   &sink{},
		}),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(wire.MaxMessageBytes))...)
		},
	})
}

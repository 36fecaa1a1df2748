// Command bad is a misbehaving test plugin for host/plugin. The request
// picks the misbehaviour: config "mode" in Validate, or given at Start for
// later calls (Poll, Put, Stop):
//
//	panic   panic in the handler (exit status 2)
//	exit    os.Exit(3)
//	kill    SIGKILL itself
//	hang    block forever, ignoring cancellation
//	hang-stop  behave, but block forever in Stop
//	exit0   os.Exit(0): a clean exit status, in the middle of the call
//	noise   behave, but first write a 256 KiB line, binary garbage and
//	        256 KiB of short lines to the raw stdout (after the
//	        handshake) and stderr, and close descriptor 3 (the shared
//	        memory, when the worker gave one)
//	big     answer Poll with a record of a 2 MiB value
//	leak    keep allocating memory (8 MiB every 10 ms, up to 1 GiB), then
//	        block
//	shared-unasked  answer Poll through shared memory, having declined
//	        it at Start
//	shared-and-inline  accept shared memory at Start, and answer Poll
//	        with an empty batch in it plus a record inline
//
// Every misbehaviour first prints "bad plugin: <mode> in <call>" on raw
// stderr, so crash reports can be checked for the plugin's last words.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// The process's own stdout and stderr: go-plugin's Serve points os.Stdout
// and os.Stderr elsewhere.
var rawStdout, rawStderr = os.Stdout, os.Stderr

func misbehave(mode, call string) {
	switch mode {
	case "panic", "exit", "kill", "hang", "exit0", "noise", "leak":
	default:
		return
	}
	fmt.Fprintf(rawStderr, "bad plugin: %s in %s\n", mode, call)
	switch mode {
	case "exit0":
		os.Exit(0)
	case "noise":
		long := bytes.Repeat([]byte("x"), 256<<10)
		short := bytes.Repeat(append(bytes.Repeat([]byte("y"), 1023), '\n'), 256)
		for _, f := range []*os.File{rawStdout, rawStderr} {
			_, _ = f.Write(long)
			_, _ = f.Write([]byte("\x00\xff\xfe garbage \x1b[31m\n"))
			_, _ = f.Write(short)
		}
		if l, err := os.Readlink("/proc/self/fd/3"); err == nil && strings.HasPrefix(l, "/memfd:") {
			_ = syscall.Close(3)
		}
	case "panic":
		panic("bad plugin: boom in " + call)
	case "exit":
		os.Exit(3)
	case "kill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "hang":
		select {}
	case "leak":
		var kept [][]byte
		for len(kept) < 128 {
			b := make([]byte, 8<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1 // resident, not just reserved
			}
			kept = append(kept, b)
			time.Sleep(10 * time.Millisecond)
		}
		select {}
	}
}

type modal struct {
	mu   sync.Mutex
	mode string
}

func (m *modal) set(mode string) { m.mu.Lock(); m.mode = mode; m.mu.Unlock() }
func (m *modal) get() string     { m.mu.Lock(); defer m.mu.Unlock(); return m.mode }

type describer struct {
	pluginv1.UnimplementedPluginServer
}

func (describer) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	return &pluginv1.DescribeResponse{Sdk: "sluice-test/bad", Classes: []*pluginv1.ConnectorClass{
		{ClassName: "io.sluice.test.BadSourceConnector", Type: pluginv1.ConnectorType_CONNECTOR_TYPE_SOURCE, Version: "0.0.1"},
		{ClassName: "io.sluice.test.BadSinkConnector", Type: pluginv1.ConnectorType_CONNECTOR_TYPE_SINK, Version: "0.0.1"},
	}}, nil
}

type connector struct {
	pluginv1.UnimplementedConnectorServer
	modal
}

func (c *connector) Validate(_ context.Context, req *pluginv1.ValidateRequest) (*pluginv1.ValidateResponse, error) {
	misbehave(req.GetConfig()["mode"], "validate")
	return &pluginv1.ValidateResponse{}, nil
}

func (c *connector) Start(_ context.Context, req *pluginv1.ConnectorStartRequest) (*pluginv1.ConnectorStartResponse, error) {
	c.set(req.GetConfig()["mode"])
	return &pluginv1.ConnectorStartResponse{}, nil
}

func (c *connector) Stop(context.Context, *pluginv1.StopRequest) (*pluginv1.StopResponse, error) {
	if c.get() == "hang-stop" {
		misbehave("hang", "stop")
	}
	return &pluginv1.StopResponse{}, nil
}

type source struct {
	pluginv1.UnimplementedSourceTaskServer
	modal
}

func (s *source) Start(_ context.Context, req *pluginv1.SourceTaskStartRequest) (*pluginv1.SourceTaskStartResponse, error) {
	mode := req.GetConfig()["mode"]
	s.set(mode)
	return &pluginv1.SourceTaskStartResponse{SharedMemory: mode == "shared-and-inline" && req.GetSharedMemory() != nil}, nil
}

func (s *source) Poll(context.Context, *pluginv1.PollRequest) (*pluginv1.PollResponse, error) {
	mode := s.get()
	misbehave(mode, "poll")
	records := []*pluginv1.SourceRecord{{Topic: "bad"}}
	switch mode {
	case "shared-unasked":
		return &pluginv1.PollResponse{Shared: &pluginv1.SharedBatch{Length: 16}}, nil
	case "shared-and-inline":
		return &pluginv1.PollResponse{Shared: &pluginv1.SharedBatch{}, FirstSeq: 1, Records: records}, nil
	case "big":
		records[0].Value = &pluginv1.Data{Kind: &pluginv1.Data_Raw{Raw: make([]byte, 2<<20)}}
	}
	return &pluginv1.PollResponse{FirstSeq: 1, Records: records}, nil
}

func (s *source) Stop(context.Context, *pluginv1.StopRequest) (*pluginv1.StopResponse, error) {
	if s.get() == "hang-stop" {
		misbehave("hang", "stop")
	}
	return &pluginv1.StopResponse{}, nil
}

type sink struct {
	pluginv1.UnimplementedSinkTaskServer
	modal
}

func (s *sink) Start(_ context.Context, req *pluginv1.SinkTaskStartRequest) (*pluginv1.SinkTaskStartResponse, error) {
	s.set(req.GetConfig()["mode"])
	return &pluginv1.SinkTaskStartResponse{}, nil
}

func (s *sink) Put(context.Context, *pluginv1.PutRequest) (*pluginv1.PutResponse, error) {
	misbehave(s.get(), "put")
	return &pluginv1.PutResponse{}, nil
}

func main() {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		VersionedPlugins: wire.VersionedPlugins(wire.Servers{
			Plugin:     describer{},
			Connector:  &connector{},
			SourceTask: &source{},
			SinkTask:   &sink{},
		}),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(wire.MaxMessageBytes))...)
		},
	})
}

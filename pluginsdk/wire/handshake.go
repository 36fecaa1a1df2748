package wire

import (
	"context"
	"errors"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// ProtocolVersion is the application protocol version of proto/sluice/plugin/v1.
// A plugin prints it as the second field of its handshake line.
const ProtocolVersion = 1

// PluginName is the single go-plugin plugin name a Sluice binary serves.
const PluginName = "sluice"

// MagicCookieKey and MagicCookieValue are go-plugin's magic cookie: the
// worker sets this variable when it launches a plugin, and a plugin refuses to
// run without it (so running a plugin binary by hand prints a hint instead of
// waiting on a handshake). They never change across protocol versions.
const (
	MagicCookieKey   = "SLUICE_PLUGIN_MAGIC_COOKIE"
	MagicCookieValue = "d2f3b8e4-sluice-connect-plugin-6c1a9f07"
)

// Environment variables the worker injects into every plugin process, on top
// of go-plugin's own (PLUGIN_PROTOCOL_VERSIONS, PLUGIN_MIN_PORT,
// PLUGIN_MAX_PORT, PLUGIN_UNIX_SOCKET_DIR) and PATH. Nothing else of the
// worker's environment reaches a plugin.
const (
	// EnvConnector is the connector name, empty for describe/validate processes.
	EnvConnector = "SLUICE_CONNECTOR"
	// EnvTask is the task number, or empty for a connector instance.
	EnvTask = "SLUICE_TASK"
	// EnvLogLevel is the level the plugin should log at (trace, debug, info, warn, error).
	EnvLogLevel = "SLUICE_LOG_LEVEL"
	// EnvWorkerID is the id of the launching worker (host:port of its REST URL).
	EnvWorkerID = "SLUICE_WORKER_ID"
	// EnvProfileDir, when the worker itself runs with it set, is passed on
	// unchanged: a Go plugin then writes a CPU profile of its whole life
	// into that directory (plugin-<connector>-<task>-<pid>.cpu.pprof), as the
	// worker does (worker-<pid>.cpu.pprof). For finding where time goes in
	// benchmarks; unset, nothing is profiled.
	EnvProfileDir = "SLUICE_PROFILE_DIR"
	// EnvTrace, set to anything but "" or "0" next to EnvProfileDir, adds
	// a Go execution trace (<name>-<pid>.trace) to each CPU profile: where
	// the profile shows what burns CPU, the trace shows what waits on what
	// (a task goroutine blocked on its consumer, a Put waiting for the
	// plugin). Passed on to plugins as EnvProfileDir is. Traces grow by
	// megabytes per second: for short benchmark runs only.
	EnvTrace = "SLUICE_TRACE"
)

// Handshake is the go-plugin handshake shared by worker and plugins.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   MagicCookieKey,
	MagicCookieValue: MagicCookieValue,
}

// Clients are the gRPC clients of one plugin process. Which ones answer
// depends on what the process is asked to be (see plugin.proto).
type Clients struct {
	Conn       *grpc.ClientConn
	Plugin     pluginv1.PluginClient
	Connector  pluginv1.ConnectorClient
	SourceTask pluginv1.SourceTaskClient
	SinkTask   pluginv1.SinkTaskClient
}

// Servers are the service implementations a plugin process registers. Nil
// entries are not registered (calls to them answer UNIMPLEMENTED).
type Servers struct {
	Plugin     pluginv1.PluginServer
	Connector  pluginv1.ConnectorServer
	SourceTask pluginv1.SourceTaskServer
	SinkTask   pluginv1.SinkTaskServer
}

// GRPCPlugin adapts Servers and Clients to go-plugin. The worker uses it with
// nil Servers; a plugin binary fills Servers.
type GRPCPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Servers Servers
}

// GRPCServer registers the non-nil services.
func (p *GRPCPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.Servers.Plugin == nil {
		return errors.New("sluice plugin: no Plugin service to serve")
	}
	pluginv1.RegisterPluginServer(s, p.Servers.Plugin)
	if p.Servers.Connector != nil {
		pluginv1.RegisterConnectorServer(s, p.Servers.Connector)
	}
	if p.Servers.SourceTask != nil {
		pluginv1.RegisterSourceTaskServer(s, p.Servers.SourceTask)
	}
	if p.Servers.SinkTask != nil {
		pluginv1.RegisterSinkTaskServer(s, p.Servers.SinkTask)
	}
	return nil
}

// GRPCClient returns *Clients for the connection; their calls use Codec.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	cc := codecConn{c}
	return &Clients{
		Conn:       c,
		Plugin:     pluginv1.NewPluginClient(cc),
		Connector:  pluginv1.NewConnectorClient(cc),
		SourceTask: pluginv1.NewSourceTaskClient(cc),
		SinkTask:   pluginv1.NewSinkTaskClient(cc),
	}, nil
}

// VersionedPlugins is what both sides hand to go-plugin: one entry per
// protocol version this build speaks. A later v2 adds an entry and keeps v1.
func VersionedPlugins(s Servers) map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{
		ProtocolVersion: {PluginName: &GRPCPlugin{Servers: s}},
	}
}

// MaxMessageBytes is the largest gRPC message either side accepts. Sink Put
// batches flow worker→plugin, where gRPC's default 4 MiB limit would bite.
const MaxMessageBytes = 256 << 20

// TraceMetadataKey is the trailing-metadata key carrying an error's stack
// trace. It is a binary ("-bin") key: gRPC base64-encodes its value on the
// wire, so a trace may hold newlines (a text header value may not).
const TraceMetadataKey = "sluice-trace-bin"

// Transport settings of the plugin connection, on both ends. The peers are
// two processes on one machine over a unix socket: gRPC's defaults (64 KiB
// flow-control windows grown by bandwidth probes, 32 KiB socket buffers)
// are made for networks, and with batches of a megabyte or more they make
// the sender stop for a window update every 64 KiB and write in 32 KiB
// pieces. Windows as large as a batch let a whole batch go out in one go.
const (
	streamWindowBytes = 16 << 20
	connWindowBytes   = 64 << 20
	socketBufferBytes = 1 << 20
)

// DialOptions are the worker's transport settings for a plugin connection.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithInitialWindowSize(streamWindowBytes),
		grpc.WithInitialConnWindowSize(connWindowBytes),
		grpc.WithWriteBufferSize(socketBufferBytes),
		grpc.WithReadBufferSize(socketBufferBytes),
	}
}

// ServerOptions are a plugin's transport settings for its gRPC server,
// message size limits included.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InitialWindowSize(streamWindowBytes),
		grpc.InitialConnWindowSize(connWindowBytes),
		grpc.WriteBufferSize(socketBufferBytes),
		grpc.ReadBufferSize(socketBufferBytes),
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		// A few long-lived goroutines serve the calls, rather than a
		// new one per call whose stack grows (and is copied) again on
		// every Poll and Put; a call that finds them all busy still
		// gets a goroutine of its own, so concurrent calls never wait.
		grpc.NumStreamWorkers(streamWorkers),
	}
}

// streamWorkers is how many calls a plugin serves on reused goroutines at
// once: go-plugin's own streams (stdio, broker) hold one each for the
// process's life, and a task has at most a data call (Poll or Put), a
// Commit or Ack and a Stop in flight.
const streamWorkers = 8

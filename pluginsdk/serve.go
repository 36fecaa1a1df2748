package pluginsdk

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// SDKVersion names this SDK in Describe answers.
const SDKVersion = "sluice-go/0.1.0"

// Class is one connector class a binary serves (what Kafka Connect calls a
// plugin). Its type, source or sink, is the interface New's value implements;
// its version and configuration come from that value.
type Class struct {
	// Name is the full class name users put in connector.class,
	// e.g. "io.example.OrdersSource". Unique across the worker's plugin.path.
	Name string
	// Aliases also resolve to this class; the simple name (after the last
	// '.') resolves without being listed.
	Aliases []string
	// TaskClass is the full class name of the class's tasks, e.g.
	// "io.example.OrdersSourceTask" (Kafka Connect's Connector.taskClass).
	// The worker shows it as task.class in every task configuration; when
	// empty, the worker shows Name there instead.
	TaskClass string
	// Doc is shown by GET /connector-plugins.
	Doc string
	// New returns a fresh, unstarted instance: a SourceConnector or a
	// SinkConnector. It is also called once when the process starts, to
	// describe the class, so it should only allocate.
	New func() Connector
}

// gcPercent is the plugin's garbage collection target unless GOGC is set
// or the plugin set its own before calling Serve.
const gcPercent = 200

var (
	loggerOnce sync.Once
	logger     hclog.Logger
)

// Logger returns the logger connector code should use: JSON lines on stderr,
// which the worker folds into its own log, at the level the worker asked for
// in SLUICE_LOG_LEVEL (info when unset).
func Logger() hclog.Logger {
	loggerOnce.Do(func() {
		level := hclog.LevelFromString(os.Getenv(wire.EnvLogLevel))
		if level == hclog.NoLevel {
			level = hclog.Info
		}
		logger = hclog.New(&hclog.LoggerOptions{
			Level:      level,
			Output:     os.Stderr,
			JSONFormat: true,
		})
	})
	return logger
}

// Serve serves the classes over the plugin contract and returns when the
// worker shuts the process down. Call it from main. A binary started by hand
// (without the worker's magic cookie) prints a hint and exits with status 1,
// as does one whose classes are inconsistent (empty or duplicate names, a
// New that returns neither a SourceConnector nor a SinkConnector).
func Serve(classes ...Class) {
	log := Logger()
	srv, err := newServer(classes, log)
	if err != nil {
		log.Error("cannot serve connector classes", "error", err)
		fmt.Fprintln(os.Stderr, "pluginsdk:", err)
		os.Exit(1)
	}
	// Batches make a plugin allocate much short-lived memory next to a
	// small live heap; collecting less often saves CPU per record. Only
	// when nobody chose otherwise: GOGC, or SetGCPercent before Serve.
	if old := debug.SetGCPercent(gcPercent); old != 100 {
		debug.SetGCPercent(old)
	}
	name := "plugin"
	if c := os.Getenv(wire.EnvConnector); c != "" {
		name += "-" + c + "-" + os.Getenv(wire.EnvTask)
	}
	defer wire.StartProfile(name)()
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.VersionedPlugins(srv.servers()),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			// Sink batches flow worker→plugin; gRPC's default 4 MiB receive
			// limit would reject large ones.
			// wire.Codec keeps the large buffers of Poll answers and Puts.
			return grpc.NewServer(append(append(opts, wire.ServerOptions()...),
				grpc.ForceServerCodecV2(wire.Codec()))...)
		},
		Logger: log,
	})
}

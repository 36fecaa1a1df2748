package pluginsdk

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// serve runs the SDK's services for classes on an in-memory gRPC connection
// and returns clients, as the worker would see them.
func serve(t testing.TB, classes ...Class) *wire.Clients {
	t.Helper()
	return serveLogged(t, hclog.NewNullLogger(), classes...)
}

// serveLogged is serve with the SDK logging to log.
func serveLogged(t testing.TB, log hclog.Logger, classes ...Class) *wire.Clients {
	t.Helper()
	srv, err := newServer(classes, log)
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	lis := bufconn.Listen(1 << 20)
	// The codecs the plugin process and the worker use.
	gs := grpc.NewServer(grpc.ForceServerCodecV2(wire.Codec()))
	if err := (&wire.GRPCPlugin{Servers: srv.servers()}).GRPCServer(nil, gs); err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(wire.Codec())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		gs.Stop()
	})
	return &wire.Clients{
		Conn:       conn,
		Plugin:     pluginv1.NewPluginClient(conn),
		Connector:  pluginv1.NewConnectorClient(conn),
		SourceTask: pluginv1.NewSourceTaskClient(conn),
		SinkTask:   pluginv1.NewSinkTaskClient(conn),
	}
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testSource is a source connector whose task is built by newTask.
type testSource struct {
	newTask func() SourceTask
}

func (c *testSource) Version() string     { return "1.2.3" }
func (c *testSource) Config() *config.Def { return config.NewDef() }
func (c *testSource) Start(context.Context, ConnectorContext, map[string]string) error {
	return nil
}
func (c *testSource) TaskConfigs(_ context.Context, n int) ([]map[string]string, error) {
	out := make([]map[string]string, n)
	for i := range out {
		out[i] = map[string]string{"i": string(rune('0' + i))}
	}
	return out, nil
}
func (c *testSource) Stop(context.Context) error { return nil }
func (c *testSource) NewTask() SourceTask        { return c.newTask() }

func sourceClass(newTask func() SourceTask) Class {
	return Class{Name: "test.Source", New: func() Connector { return &testSource{newTask: newTask} }}
}

// testSink is a sink connector whose task is built by newTask.
type testSink struct {
	newTask func() SinkTask
}

func (c *testSink) Version() string     { return "0.0.1" }
func (c *testSink) Config() *config.Def { return config.NewDef() }
func (c *testSink) Start(context.Context, ConnectorContext, map[string]string) error {
	return nil
}
func (c *testSink) TaskConfigs(context.Context, int) ([]map[string]string, error) {
	return []map[string]string{{}}, nil
}
func (c *testSink) Stop(context.Context) error { return nil }
func (c *testSink) NewTask() SinkTask          { return c.newTask() }

func sinkClass(newTask func() SinkTask) Class {
	return Class{Name: "test.Sink", New: func() Connector { return &testSink{newTask: newTask} }}
}

// funcSource is a SourceTask made of functions; nil ones do nothing.
type funcSource struct {
	start func(ctx context.Context, tc SourceTaskContext, props map[string]string) error
	poll  func(ctx context.Context) ([]*data.SourceRecord, error)
	stop  func(ctx context.Context) error
}

func (f *funcSource) Start(ctx context.Context, tc SourceTaskContext, props map[string]string) error {
	if f.start == nil {
		return nil
	}
	return f.start(ctx, tc, props)
}
func (f *funcSource) Poll(ctx context.Context) ([]*data.SourceRecord, error) { return f.poll(ctx) }
func (f *funcSource) Stop(ctx context.Context) error {
	if f.stop == nil {
		return nil
	}
	return f.stop(ctx)
}

// rec builds a source record whose value is the string form of i.
func rec(i int, value string) *data.SourceRecord {
	return &data.SourceRecord{
		Record: data.Record{
			Topic: "t", Partition: data.NoPartition,
			KeySchema: data.Int64Schema, Key: int64(i),
			ValueSchema: data.StringSchema, Value: value,
		},
		SourcePartition: map[string]any{"p": "x"},
		SourceOffset:    map[string]any{"i": int64(i)},
	}
}

func startSource(t *testing.T, c *wire.Clients) *pluginv1.SourceTaskStartResponse {
	t.Helper()
	resp, err := c.SourceTask.Start(callCtx(t), &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source", ConnectorName: "c", Config: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatalf("start source task: %v", err)
	}
	return resp
}

// keys decodes a PollResponse and returns its record keys.
func keys(t *testing.T, resp *pluginv1.PollResponse) []int64 {
	t.Helper()
	recs, err := wire.DecodeSourceRecords(resp.GetSchemas(), resp.GetRecords())
	if err != nil {
		t.Fatalf("decode poll response: %v", err)
	}
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.Key.(int64)
	}
	return out
}

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

var benchConfigs = []struct {
	name  string
	props map[string]string
	bytes int64
}{
	{"raw-1KiB", map[string]string{topicKey: "b", formatKey: formatRaw, recordSizeKey: "1024", keyFieldKey: "userid"}, 1024},
	// What make bench runs.
	{"raw-pageviews-1KiB", map[string]string{topicKey: "b", formatKey: formatRaw, quickstartKey: "pageviews", recordSizeKey: "1024", keyFieldKey: "pageid", seedKey: "1"}, 1024},
	{"raw-orders", map[string]string{topicKey: "b", formatKey: formatRaw, quickstartKey: "orders", keyFieldKey: "orderid"}, 0},
	{"struct-users", map[string]string{topicKey: "b"}, 0},
	{"struct-1KiB", map[string]string{topicKey: "b", recordSizeKey: "1024"}, 1024},
}

// BenchmarkPoll measures the task alone: b.N records through Poll.
func BenchmarkPoll(b *testing.B) {
	for _, bc := range benchConfigs {
		b.Run(bc.name, func(b *testing.B) {
			task := startTask(b, nil, bc.props)
			b.SetBytes(bc.bytes)
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; {
				recs, err := task.Poll(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				n += len(recs)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkGenerate measures the generator alone: b.N calls of record,
// without the SourceRecord and offset map Poll wraps each one in.
func BenchmarkGenerate(b *testing.B) {
	for _, bc := range benchConfigs {
		b.Run(bc.name, func(b *testing.B) {
			g := newGenerator(mustSettings(b, bc.props))
			b.SetBytes(bc.bytes)
			b.ReportAllocs()
			b.ResetTimer()
			for seq := range int64(b.N) {
				g.record(seq)
			}
		})
	}
}

// BenchmarkPollEncoded adds what the SDK does with each batch inside the
// plugin process: encoding it for the wire.
func BenchmarkPollEncoded(b *testing.B) {
	for _, bc := range benchConfigs {
		b.Run(bc.name, func(b *testing.B) {
			task := startTask(b, nil, bc.props)
			b.SetBytes(bc.bytes)
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; {
				recs, err := task.Poll(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := wire.EncodeSourceRecords(recs); err != nil {
					b.Fatal(err)
				}
				n += len(recs)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkPollPlaced is what the plugin process does per record when the
// worker shares memory with it, short of gRPC: Poll, then the SDK's
// SourceBatch written into the region (SharedRegion.PlacePoll), 1000
// records per answer, whose records then go back to the task. cpu-ns/record counts every thread of the process
// (the garbage collector's included), as the worker's machine pays it.
func BenchmarkPollPlaced(b *testing.B) {
	for _, bc := range benchConfigs {
		b.Run(bc.name, func(b *testing.B) {
			task := startTask(b, nil, bc.props)
			region := wire.NewSharedRegion(make([]byte, 8<<20), nil)
			b.SetBytes(bc.bytes)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU(b)
			var sb *wire.SourceBatch
			for n := 0; n < b.N; {
				if sb == nil {
					sb = &wire.SourceBatch{}
					sb.Grow(1000)
				}
				recs, err := task.Poll(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					if ok, err := sb.Add(r, 8<<20); !ok || err != nil {
						b.Fatal(ok, err)
					}
				}
				if sb.Len() >= 1000 {
					if _, ok := region.PlacePoll(sb, uint64(n+1)); !ok {
						b.Fatal("not placed")
					}
					// As the SDK does once the worker's copy is written.
					if r, ok := any(task).(interface {
						RecycleRecords([]*data.SourceRecord)
					}); ok {
						r.RecycleRecords(sb.Records())
					}
					sb = nil
				}
				n += len(recs)
			}
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/record")
		})
	}
}

// processCPU is the process's CPU time so far, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Skip("no getrusage:", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBinaryPoll polls the real plugin binary over go-plugin and gRPC,
// as the worker does: batches of up to 1000 records per Poll RPC, each
// decoded on this side.
func BenchmarkBinaryPoll(b *testing.B) {
	bin := buildPlugin(b)
	for _, bc := range benchConfigs {
		b.Run(bc.name, func(b *testing.B) {
			clients, plugin := launchPlugin(b, bin)
			target := serveWorker(b)
			ctx := context.Background()
			_, err := clients.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{
				ConnectorClass: datagenClass, ConnectorName: "bench", Config: bc.props, WorkerTarget: target,
			})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(bc.bytes)
			b.ResetTimer()
			for n := 0; n < b.N; {
				resp, err := clients.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 1000, MaxBytes: 8 << 20, TimeoutMs: 1000})
				if err != nil {
					b.Fatal(err)
				}
				recs, err := wire.DecodeSourceRecords(resp.GetSchemas(), resp.GetRecords())
				if err != nil {
					b.Fatal(err)
				}
				n += len(recs)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			stopPlugin(b, plugin, clients.SourceTask.Stop)
		})
	}
}

// BenchmarkBinaryPollShared is BenchmarkBinaryPoll with the answers in
// memory shared with the plugin, as the worker runs it: the plugin's CPU
// per record is then what a pipeline benchmark pays for the source.
func BenchmarkBinaryPollShared(b *testing.B) {
	bin := buildPlugin(b)
	for _, bc := range benchConfigs {
		b.Run(bc.name, func(b *testing.B) {
			const size = 8 << 20
			f, region := sharedFile(b, size)
			// The first of ExtraFiles is descriptor 3 in the plugin.
			clients, plugin := launchPlugin(b, bin, f)
			target := serveWorker(b)
			ctx := context.Background()
			st, err := clients.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{
				ConnectorClass: datagenClass, ConnectorName: "bench", Config: bc.props, WorkerTarget: target,
				SharedMemory: &pluginv1.SharedMemory{Fd: 3, Size: size},
			})
			if err != nil || !st.GetSharedMemory() {
				b.Fatalf("start: %v (shared memory taken: %v)", err, st.GetSharedMemory())
			}
			b.SetBytes(bc.bytes)
			b.ResetTimer()
			for n := 0; n < b.N; {
				resp, err := clients.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 1000, MaxBytes: 8 << 20, TimeoutMs: 1000})
				if err != nil {
					b.Fatal(err)
				}
				if resp.GetShared() == nil {
					b.Fatal("answer not in shared memory")
				}
				var out pluginv1.PollResponse
				if err := region.Take(resp.GetShared(), &out); err != nil {
					b.Fatal(err)
				}
				n += len(out.GetRecords())
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			stopPlugin(b, plugin, clients.SourceTask.Stop)
		})
	}
}

// BenchmarkBinaryPutShared puts batches of 1000 records (a 14-byte key and
// a 1 KiB value, bytes as ByteArrayConverter makes them) to the noop sink
// of the real plugin binary through shared memory, as the worker does:
// plugin-cpu-ns/record is what a pipeline benchmark pays for the sink.
func BenchmarkBinaryPutShared(b *testing.B) {
	bin := buildPlugin(b)
	const size, batch = 8 << 20, 1000
	f, region := sharedFile(b, size)
	clients, plugin := launchPlugin(b, bin, f)
	ctx := context.Background()
	st, err := clients.SinkTask.Start(ctx, &pluginv1.SinkTaskStartRequest{
		ConnectorClass: noopClass, ConnectorName: "bench", Config: map[string]string{}, WorkerTarget: serveWorker(b),
		SharedMemory: &pluginv1.SharedMemory{Fd: 3, Size: size},
	})
	if err != nil || !st.GetSharedMemory() {
		b.Fatalf("start: %v (shared memory taken: %v)", err, st.GetSharedMemory())
	}
	var sb wire.SinkBatch
	for i := range batch {
		v := make([]byte, 1024)
		for j := range v {
			v[j] = byte(i*7 + j*13)
		}
		r := &data.SinkRecord{Record: data.Record{Topic: "bench-topic", Partition: int32(i % 6),
			KeySchema: data.OptionalBytesSchema, Key: []byte(fmt.Sprintf("key-%010d", i)),
			ValueSchema: data.OptionalBytesSchema, Value: v, Timestamp: time.UnixMilli(1700000000000 + int64(i))},
			Offset: int64(i), TimestampType: data.CreateTime}
		if err := sb.Add(r); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(1024)
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		ref, ok := region.PlacePut(&sb)
		if !ok {
			b.Fatal("not placed")
		}
		if _, err := clients.SinkTask.Put(ctx, &pluginv1.PutRequest{Shared: ref}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	stopPlugin(b, plugin, clients.SinkTask.Stop)
}

// stopPlugin ends a benchmark of the plugin binary: it stops the task
// (stop is the task client's Stop), ends the process and reports the
// plugin's own CPU time (user and system) per record: what the worker's
// machine pays for the plugin's side of the work.
func stopPlugin(b *testing.B, plugin pluginProc, stop func(context.Context, *pluginv1.StopRequest, ...grpc.CallOption) (*pluginv1.StopResponse, error)) {
	b.Helper()
	if _, err := stop(context.Background(), &pluginv1.StopRequest{}); err != nil {
		b.Fatal(err)
	}
	if st := plugin.kill(); st != nil {
		b.ReportMetric(float64((st.UserTime()+st.SystemTime()).Nanoseconds())/float64(b.N), "plugin-cpu-ns/record")
	}
}

// sharedFile is a file of size bytes mapped as a shared region, as the
// worker offers one to a task (the plugin gets the file as ExtraFiles);
// both are closed when the benchmark ends.
func sharedFile(b *testing.B, size int) (*os.File, *wire.SharedRegion) {
	b.Helper()
	f, err := os.CreateTemp(b.TempDir(), "shared")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	if err := f.Truncate(int64(size)); err != nil {
		b.Fatal(err)
	}
	region, err := wire.MapShared(int(f.Fd()), int64(size))
	if err != nil {
		b.Skip("no shared memory here:", err)
	}
	b.Cleanup(func() { region.Close() })
	return f, region
}

func buildPlugin(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "sluice-datagen")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// pluginProc is a launched plugin process.
type pluginProc struct {
	client *goplugin.Client
	cmd    *exec.Cmd
}

// kill shuts the process down and returns its final state.
func (p pluginProc) kill() *os.ProcessState {
	p.client.Kill()
	return p.cmd.ProcessState
}

// launchPlugin starts the binary the way the worker does and returns its
// clients; the process is killed when the benchmark ends.
func launchPlugin(b *testing.B, bin string, extra ...*os.File) (*wire.Clients, pluginProc) {
	b.Helper()
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), wire.EnvLogLevel + "=warn"}
	cmd.ExtraFiles = extra
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.VersionedPlugins(wire.Servers{}),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(wire.MaxMessageBytes), grpc.MaxCallSendMsgSize(wire.MaxMessageBytes))},
		Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard}),
	})
	b.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		b.Fatal(err)
	}
	return raw.(*wire.Clients), pluginProc{client, cmd}
}

// benchWorker answers the task's offset lookup: nothing stored.
type benchWorker struct {
	pluginv1.UnimplementedWorkerServer
}

func (benchWorker) SourceOffsets(context.Context, *pluginv1.SourceOffsetsRequest) (*pluginv1.SourceOffsetsResponse, error) {
	return &pluginv1.SourceOffsetsResponse{}, nil
}

func serveWorker(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp("", "slb-")
	if err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(dir, "w.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer()
	pluginv1.RegisterWorkerServer(gs, benchWorker{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	b.Cleanup(func() {
		gs.Stop()
		<-done
		_ = os.RemoveAll(dir)
	})
	return "unix://" + sock
}

package worker

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/sluice-io/sluice/host/plugin"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// A Poll answer in shared memory the plugin never accepted (declined, or
// never offered), or one that also carries records inline, is refused with
// an error saying so: neither read from a region that is not the
// plugin's to write, nor with inline records dropped unseen.
func TestSourcePluginRefusesBadSharedAnswers(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bad")
	cmd := exec.Command("go", "build", "-o", bin, "../plugin/internal/testplugins/bad")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the bad plugin: %v\n%s", err, out)
	}
	m, err := plugin.New(plugin.Options{Logger: hclog.NewNullLogger(), WorkerID: "test-worker:8083", SocketDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	})
	for _, tc := range []struct {
		name, mode string
		region     int64
		want       string
	}{
		{"declined", "shared-unasked", 1 << 20, "the plugin answered a poll through shared memory it had not accepted"},
		{"never offered", "shared-unasked", 0, "the plugin answered a poll through shared memory it had not accepted"},
		{"both", "shared-and-inline", 1 << 20, "the plugin answered a poll both through shared memory and inline (1 records)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			in, err := m.Launch(ctx, plugin.Spec{Path: bin, Connector: "bad", SharedMemoryBytes: tc.region})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = in.Kill(ctx) }()
			p := &sourcePlugin{in: in}
			p.UsePollPool(wire.NewPollPool(1))
			if _, err := p.Start(ctx, &pluginv1.SourceTaskStartRequest{Config: map[string]string{"mode": tc.mode}}); err != nil {
				t.Fatal(err)
			}
			b, err := p.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, MaxBytes: 1 << 20, TimeoutMs: 100})
			if err == nil || wire.KindOf(err) != wire.KindFatal || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Poll = %v records, %v (kind %v); want %q", b.Len(), err, wire.KindOf(err), tc.want)
			}
		})
	}
}

// putRecorder is a plugin's SinkTask server that records the Puts it gets.
type putRecorder struct {
	pluginv1.UnimplementedSinkTaskServer
	mu   sync.Mutex
	puts [][]*data.SinkRecord
}

func (s *putRecorder) Put(_ context.Context, req *pluginv1.PutRequest) (*pluginv1.PutResponse, error) {
	recs, err := wire.DecodeSinkRecords(req.GetSchemas(), req.GetRecords())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.puts = append(s.puts, recs)
	s.mu.Unlock()
	return &pluginv1.PutResponse{}, nil
}

// sinkPluginLimited is a sinkPlugin whose plugin (putRecorder) accepts
// messages of at most limit bytes, as a real plugin accepts
// wire.MaxMessageBytes.
func sinkPluginLimited(t *testing.T, limit int) (*sinkPlugin, *putRecorder) {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(limit))
	rec := &putRecorder{}
	pluginv1.RegisterSinkTaskServer(srv, rec)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///plugin",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &sinkPlugin{client: pluginv1.NewSinkTaskClient(conn)}, rec
}

// sinkBatchOf is a batch of n records of topic-partition a-0, offsets from
// 0, with values of size bytes.
func sinkBatchOf(t *testing.T, n, size int) *wire.SinkBatch {
	t.Helper()
	var b wire.SinkBatch
	for i := range n {
		r := &data.SinkRecord{Record: data.Record{Topic: "a", Partition: 0, Value: data.Raw(bytes.Repeat([]byte{byte('a' + i%26)}, size))}, Offset: int64(i)}
		if err := b.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	return &b
}

// A Put batch larger than the transport accepts (the first poll of a batch
// is not bounded by bytes, and a batch that does not fit the shared memory
// region goes inline) is sent as several Puts that each fit, in order; the
// runtime sees one Put, which returns once every part was put, so its
// PreCommit and commit come after all of them.
func TestSinkPutSplitsBatchesAboveTheMessageLimit(t *testing.T) {
	const limit = 64 << 10
	defer func(old int) { maxPutBytes = old }(maxPutBytes)
	maxPutBytes = limit
	p, rec := sinkPluginLimited(t, limit)
	b := sinkBatchOf(t, 10, 20<<10)
	if b.Size() <= limit {
		t.Fatalf("batch of %d bytes fits the limit", b.Size())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Put(ctx, b); err != nil {
		t.Fatalf("Put of %d bytes: %v", b.Size(), err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.puts) < 2 {
		t.Fatalf("%d Puts, want the batch split", len(rec.puts))
	}
	var offsets []int64
	for _, put := range rec.puts {
		for _, r := range put {
			if want := bytes.Repeat([]byte{byte('a' + r.Offset%26)}, 20<<10); !bytes.Equal(r.Value.(data.Raw), want) {
				t.Errorf("record %d: wrong value", r.Offset)
			}
			offsets = append(offsets, r.Offset)
		}
	}
	if want := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(offsets, want) {
		t.Errorf("records put in order %v, want %v", offsets, want)
	}
}

// A single record larger than the transport accepts cannot be put: the
// task fails with an error naming it, and nothing of the batch is sent.
func TestSinkPutRefusesARecordAboveTheMessageLimit(t *testing.T) {
	const limit = 64 << 10
	defer func(old int) { maxPutBytes = old }(maxPutBytes)
	maxPutBytes = limit
	p, rec := sinkPluginLimited(t, limit)
	b := sinkBatchOf(t, 2, 100<<10)
	err := p.Put(context.Background(), b)
	if err == nil || wire.KindOf(err) != wire.KindFatal || !strings.Contains(err.Error(), "a-0@0") {
		t.Fatalf("Put = %v (kind %v), want a fatal error naming a-0@0", err, wire.KindOf(err))
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.puts) != 0 {
		t.Errorf("%d Puts sent", len(rec.puts))
	}
}

package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// expectedValue mirrors the good plugin's record pool.
func expectedValue(j int) []byte {
	v := make([]byte, 1024)
	for k := range v {
		v[k] = byte(j*7 + k*13)
	}
	return v
}

func TestPollRoundTrip(t *testing.T) {
	m, logs := newManager(t, Options{})
	in := launch(t, m, Spec{Path: goodBin, Connector: "orders", Task: 0})
	ctx := ctxT(t, 20*time.Second)
	if _, err := in.SourceTask().Start(ctx, &pluginv1.SourceTaskStartRequest{Config: map[string]string{"marker": "m-poll-1"}}); err != nil {
		t.Fatal(err)
	}
	seq := uint64(1)
	// 5000 records (5 MiB) exceed gRPC's default 4 MiB receive limit: go-plugin
	// lifts it on the worker's side.
	for _, n := range []int{100, 1000, 7, 5000} {
		resp, err := in.SourceTask().Poll(ctx, &pluginv1.PollRequest{MaxRecords: uint32(n)})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(resp.GetRecords()); got != n {
			t.Fatalf("poll %d: got %d records", n, got)
		}
		if resp.GetFirstSeq() != seq {
			t.Fatalf("poll %d: first seq %d, want %d", n, resp.GetFirstSeq(), seq)
		}
		for i, r := range resp.GetRecords() {
			j := int((seq - 1 + uint64(i)) % 1000)
			if k := string(r.GetKey().GetRaw()); k != fmt.Sprintf("k-%d", j) {
				t.Fatalf("record seq %d: key %q, want k-%d", seq+uint64(i), k, j)
			}
			if !bytes.Equal(r.GetValue().GetRaw(), expectedValue(j)) {
				t.Fatalf("record seq %d: value differs from pool entry %d", seq+uint64(i), j)
			}
		}
		seq += uint64(n)
	}

	// Both output paths reach the worker's log, tagged.
	want := map[string][]string{
		"source task started":  {"worker.plugin.good", "connector=orders", "task=0", "marker=m-poll-1", "[INFO]"},
		"synced line m-poll-1": {"worker.plugin.good", "connector=orders", "task=0", "stream=stderr", "[WARN]"},
	}
	deadline := time.Now().Add(5 * time.Second)
	for msg, parts := range want {
		for {
			line := lineWith(logs.String(), msg)
			ok := line != ""
			for _, p := range parts {
				ok = ok && strings.Contains(line, p)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no log line with %q and %q; log:\n%s", msg, parts, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if os.Getenv("SHOWLOG") != "" {
		t.Log(logs.String())
	}
	if !strings.Contains(in.Tail(), "synced line m-poll-1") {
		t.Errorf("tail lacks the synced stderr line:\n%s", in.Tail())
	}
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

func sinkRecords(n, size int, seed byte) []*pluginv1.SinkRecord {
	recs := make([]*pluginv1.SinkRecord, n)
	for i := range recs {
		b := bytes.Repeat([]byte{seed + byte(i)}, size)
		recs[i] = &pluginv1.SinkRecord{Topic: "in", Offset: int64(i),
			Value: &pluginv1.Data{Kind: &pluginv1.Data_Value{Value: &pluginv1.Value{Kind: &pluginv1.Value_BytesValue{BytesValue: b}}}}}
	}
	return recs
}

func TestPutRoundTrip(t *testing.T) {
	m, _ := newManager(t, Options{})
	in := launch(t, m, Spec{Path: goodBin, Connector: "sink", Task: 1})
	ctx := ctxT(t, 20*time.Second)
	if _, err := in.SinkTask().Start(ctx, &pluginv1.SinkTaskStartRequest{}); err != nil {
		t.Fatal(err)
	}
	var count, size int64
	var crc uint32
	put := func(recs []*pluginv1.SinkRecord) {
		t.Helper()
		if _, err := in.SinkTask().Put(ctx, &pluginv1.PutRequest{Records: recs}); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			b := r.GetValue().GetValue().GetBytesValue()
			count++
			size += int64(len(b))
			crc = crc32.Update(crc, crc32.IEEETable, b)
		}
	}
	put(sinkRecords(10, 1024, 1))
	put(sinkRecords(500, 1024, 2))
	// Larger than gRPC's default 4 MiB limit: the plugin raised its limit.
	put(sinkRecords(1, 5<<20, 3))

	resp, err := in.SinkTask().PreCommit(ctx, &pluginv1.PreCommitRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, o := range resp.GetOffsets() {
		got[o.GetTopic()] = o.GetOffset()
	}
	want := map[string]int64{"count": count, "bytes": size, "crc": int64(crc)}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("plugin counted %s=%d, want %d", k, got[k], v)
		}
	}
	if count != 511 || size != 510*1024+5<<20 {
		t.Fatalf("test sent %d records, %d bytes", count, size)
	}
}

// pluginEnv is the environment the good test plugin reports it runs with.
func pluginEnv(t *testing.T, in *Instance) map[string]string {
	t.Helper()
	resp, err := in.Connector().Validate(ctxT(t, 10*time.Second), &pluginv1.ValidateRequest{Config: map[string]string{"report": "env"}})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, v := range resp.GetValues() {
		env[v.GetName()] = v.GetValue()
	}
	return env
}

// The profiling settings reach the plugin when the worker has them, so
// that a benchmark run profiles every process of its pipeline.
func TestEnvPassesProfiling(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(wire.EnvProfileDir, dir)
	t.Setenv(wire.EnvTrace, "1")
	m, _ := newManager(t, Options{WorkerID: "w1:8083", SocketDir: t.TempDir()})
	in := launch(t, m, Spec{Path: goodBin, Connector: "env-conn", Task: 0})
	env := pluginEnv(t, in)
	for k, v := range map[string]string{wire.EnvProfileDir: dir, wire.EnvTrace: "1"} {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("plugin env %s=%q (present %v), want %q", k, got, ok, v)
		}
	}
}

func TestEnvIsClean(t *testing.T) {
	t.Setenv(wire.EnvProfileDir, "")
	t.Setenv(wire.EnvTrace, "")
	t.Setenv("HOME_SECRET", "x")
	m, _ := newManager(t, Options{WorkerID: "w1:8083", SocketDir: t.TempDir()})
	in := launch(t, m, Spec{Path: goodBin, Connector: "env-conn", Task: 2, LogLevel: "debug"})
	env := pluginEnv(t, in)
	want := map[string]string{
		"PATH":                     os.Getenv("PATH"),
		wire.EnvConnector:          "env-conn",
		wire.EnvTask:               "2",
		wire.EnvLogLevel:           "debug",
		wire.EnvWorkerID:           "w1:8083",
		wire.MagicCookieKey:        wire.MagicCookieValue,
		"PLUGIN_PROTOCOL_VERSIONS": "1",
	}
	for k, v := range want {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("plugin env %s=%q (present %v), want %q", k, got, ok, v)
		}
	}
	if d := env["PLUGIN_UNIX_SOCKET_DIR"]; !strings.HasPrefix(d, m.SocketDir()+"/"+pluginDirPrefix) {
		t.Errorf("PLUGIN_UNIX_SOCKET_DIR=%q, want a directory in %s", d, m.SocketDir())
	}
	allowed := map[string]bool{"PLUGIN_UNIX_SOCKET_DIR": true, "PLUGIN_MIN_PORT": true, "PLUGIN_MAX_PORT": true}
	var extra []string
	for k := range env {
		if _, ok := want[k]; !ok && !allowed[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("plugin env has variables beyond the contract: %v", extra)
	}
	if _, ok := env["HOME_SECRET"]; ok {
		t.Error("HOME_SECRET leaked into the plugin")
	}

	// A connector process gets an empty SLUICE_TASK.
	in2 := launch(t, m, Spec{Path: goodBin, Connector: "env-conn", Task: -1})
	env2 := pluginEnv(t, in2)
	if v, ok := env2[wire.EnvTask]; !ok || v != "" {
		t.Errorf("connector process: %s=%q (present %v), want empty", wire.EnvTask, v, ok)
	}
	if v := env2[wire.EnvLogLevel]; v != DefaultLogLevel {
		t.Errorf("default log level %q, want %q", v, DefaultLogLevel)
	}
}

// A worker on port 0 learns its id after the manager is made: later
// launches carry the new id, a refused one changes nothing.
func TestSetWorkerID(t *testing.T) {
	m, _ := newManager(t, Options{WorkerID: "w1:0", SocketDir: t.TempDir()})
	m.SetWorkerID("w1:41234")
	m.SetWorkerID("bad\nid")
	in := launch(t, m, Spec{Path: goodBin, Connector: "env-conn", Task: 0})
	if got := pluginEnv(t, in)[wire.EnvWorkerID]; got != "w1:41234" {
		t.Errorf("plugin env %s=%q, want the id set after New", wire.EnvWorkerID, got)
	}
}

type fakeWorker struct {
	pluginv1.UnimplementedWorkerServer
	mu    sync.Mutex
	parts []string
}

func (f *fakeWorker) SourceOffsets(_ context.Context, req *pluginv1.SourceOffsetsRequest) (*pluginv1.SourceOffsetsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range req.GetPartitions() {
		f.parts = append(f.parts, string(p))
	}
	return &pluginv1.SourceOffsetsResponse{}, nil
}

func TestWorkerCallback(t *testing.T) {
	m, _ := newManager(t, Options{})
	fw := &fakeWorker{}
	in := launch(t, m, Spec{Path: goodBin, Connector: "cb", Task: 0, Worker: fw})
	target := in.WorkerTarget()
	if !strings.HasPrefix(target, "unix://"+m.SocketDir()+"/") {
		t.Fatalf("worker target %q, want a unix socket in %s", target, m.SocketDir())
	}
	ctx := ctxT(t, 10*time.Second)
	if _, err := in.SourceTask().Start(ctx, &pluginv1.SourceTaskStartRequest{WorkerTarget: target, Config: map[string]string{"marker": `{"p":7}`}}); err != nil {
		t.Fatal(err)
	}
	fw.mu.Lock()
	got := append([]string(nil), fw.parts...)
	fw.mu.Unlock()
	if len(got) != 1 || got[0] != `{"p":7}` {
		t.Fatalf("worker saw partitions %q", got)
	}
	if err := in.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	sock := strings.TrimPrefix(target, "unix://")
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("worker socket %s still there after Kill (err %v)", sock, err)
	}
}

func TestKillAndLifecycle(t *testing.T) {
	m, _ := newManager(t, Options{})
	in := launch(t, m, Spec{Path: goodBin, Connector: "life", Task: 0})
	ctx := ctxT(t, 10*time.Second)
	pid := in.Pid()
	// Own process group: the terminal's Ctrl-C does not reach the plugin.
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("plugin pgid %d (err %v), want its own group %d", pgid, err, pid)
	}
	if err := in.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if in.Exited() {
		t.Fatal("exited before Kill")
	}
	start := time.Now()
	if err := in.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	// The Go plugin serves go-plugin's controller: graceful shutdown, well
	// within the 2 s kill grace.
	if d := time.Since(start); d > time.Second {
		t.Errorf("graceful Kill took %s", d)
	}
	select {
	case <-in.Done():
	default:
		t.Fatal("Done not closed after Kill returned")
	}
	if !in.Exited() || in.ExitErr() != nil {
		t.Errorf("after graceful kill: exited %v, exit err %v; want true, nil", in.Exited(), in.ExitErr())
	}
	waitGone(t, pid, 2*time.Second)
	if err := in.Kill(ctx); err != nil {
		t.Errorf("second Kill: %v", err)
	}
	_, err := in.SourceTask().Poll(ctx, &pluginv1.PollRequest{})
	we := wantKind(t, err, wire.KindCrashed)
	if !strings.Contains(err.Error(), "SourceTask.Poll") || !strings.Contains(we.Message, "stopped by the worker") {
		t.Errorf("call after Kill: %v", err)
	}
	if err := in.Ping(ctx); err == nil {
		t.Error("Ping after Kill succeeded")
	}
}

func TestLaunchFailures(t *testing.T) {
	m, _ := newManager(t, Options{StartTimeout: time.Second})
	ctx := ctxT(t, 10*time.Second)
	if _, err := m.Launch(ctx, Spec{Path: "/nonexistent/plugin", Task: -1}); err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing binary: %v", err)
	}
	if _, err := m.Launch(ctx, Spec{Path: goodBin, Task: -2}); err == nil {
		t.Error("task -2 accepted")
	}
	if _, err := m.Launch(ctx, Spec{Path: goodBin, Task: 0, LogLevel: "loud"}); err == nil {
		t.Error("log level loud accepted")
	}
	// Cancelling the context aborts a launch that would otherwise wait for
	// the start timeout, and leaves nothing running.
	sleeper := writeScript(t, t.TempDir(), "sleeper", "#!/bin/sh\nexec sleep 60\n")
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Launch(cctx, Spec{Path: sleeper, Task: -1})
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("launch with expiring ctx: %v", err)
	}
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Errorf("launch returned %s after start, want about 200ms", d)
	}
	// A line before the handshake (a debugger's banner, a log line at
	// load) is quoted, and the message says where the handshake must be.
	chatty := writeScript(t, t.TempDir(), "chatty", "#!/bin/sh\necho 'Debugger listening on ws://127.0.0.1:9229/x'\nexec sleep 60\n")
	_, err = m.Launch(ctx, Spec{Path: chatty, Task: -1})
	if err == nil || !strings.Contains(err.Error(), "Debugger listening on ws://127.0.0.1:9229/x") ||
		!strings.Contains(err.Error(), "must be the first line the plugin writes to stdout") {
		t.Errorf("a line before the handshake: %v", err)
	}
	m.mu.Lock()
	n := len(m.instances)
	m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d instances tracked after failed launches", n)
	}
}

func writeScript(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := dir + "/" + name
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOptionsValidation(t *testing.T) {
	_, err := New(Options{LogLevel: "loud", CallTimeout: -1, KillGrace: -time.Second, SocketDir: "/tmp/" + strings.Repeat("x", 80)})
	if err == nil {
		t.Fatal("invalid options accepted")
	}
	for _, want := range []string{"log level", "call timeout", "kill grace", "socket dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestCloseAbortsLaunch(t *testing.T) {
	m, _ := newManager(t, Options{StartTimeout: time.Minute})
	sleeper := writeScript(t, t.TempDir(), "sleeper", "#!/bin/sh\nexec sleep 60\n")
	errc := make(chan error, 1)
	go func() {
		_, err := m.Launch(context.Background(), Spec{Path: sleeper, Task: -1})
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond) // let the launch exec the script
	start := time.Now()
	if err := m.Close(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %s with a launch in progress", d)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("launch during Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("launch did not return after Close")
	}
	if got := entries(t, filepath.Dir(m.SocketDir())); slices.Contains(got, filepath.Base(m.SocketDir())) {
		t.Errorf("socket dir %s left behind", m.SocketDir())
	}
}

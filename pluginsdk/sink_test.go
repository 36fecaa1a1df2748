package pluginsdk

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// funcSink is a SinkTask made of functions; nil ones do nothing.
type funcSink struct {
	start func(ctx context.Context, tc SinkTaskContext, props map[string]string) error
	put   func(ctx context.Context, recs []*data.SinkRecord) error
}

func (f *funcSink) Start(ctx context.Context, tc SinkTaskContext, props map[string]string) error {
	if f.start == nil {
		return nil
	}
	return f.start(ctx, tc, props)
}
func (f *funcSink) Put(ctx context.Context, recs []*data.SinkRecord) error {
	if f.put == nil {
		return nil
	}
	return f.put(ctx, recs)
}
func (f *funcSink) Stop(context.Context) error { return nil }

type flushingSink struct {
	funcSink
	flushed []map[data.TopicPartition]int64
}

func (f *flushingSink) Flush(_ context.Context, offsets map[data.TopicPartition]int64) error {
	f.flushed = append(f.flushed, offsets)
	return nil
}

type preCommittingSink struct{ funcSink }

func (preCommittingSink) PreCommit(_ context.Context, offsets map[data.TopicPartition]int64) (map[data.TopicPartition]int64, error) {
	out := map[data.TopicPartition]int64{}
	for tp, o := range offsets {
		if tp.Partition == 0 {
			out[tp] = o - 1
		}
	}
	return out, nil
}

func startSink(t *testing.T, c *wire.Clients, target string) {
	t.Helper()
	_, err := c.SinkTask.Start(callCtx(t), &pluginv1.SinkTaskStartRequest{ConnectorClass: "test.Sink", ConnectorName: "s", WorkerTarget: target})
	if err != nil {
		t.Fatalf("start sink task: %v", err)
	}
}

var offsetsIn = []*pluginv1.PartitionOffset{{Topic: "b", Partition: 1, Offset: 7}, {Topic: "a", Partition: 0, Offset: 5}, {Topic: "a", Partition: 1, Offset: 9}}

func offsetsString(ps []*pluginv1.PartitionOffset) string {
	s := ""
	for _, p := range ps {
		s += fmt.Sprintf("%s-%d@%d ", p.GetTopic(), p.GetPartition(), p.GetOffset())
	}
	return s
}

func TestPreCommitDefaultFlushesAndCommitsAsGiven(t *testing.T) {
	task := &flushingSink{}
	c := serve(t, sinkClass(func() SinkTask { return task }))
	startSink(t, c, "")
	resp, err := c.SinkTask.PreCommit(callCtx(t), &pluginv1.PreCommitRequest{Offsets: offsetsIn})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := offsetsString(resp.GetOffsets()), "a-0@5 a-1@9 b-1@7 "; got != want {
		t.Fatalf("pre-commit answered %q, want %q", got, want)
	}
	want := map[data.TopicPartition]int64{{Topic: "a", Partition: 0}: 5, {Topic: "a", Partition: 1}: 9, {Topic: "b", Partition: 1}: 7}
	if len(task.flushed) != 1 || !mapsEqual(task.flushed[0], want) {
		t.Fatalf("Flush calls %v, want one with %v", task.flushed, want)
	}
}

func mapsEqual(a, b map[data.TopicPartition]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestPreCommitterDecides(t *testing.T) {
	c := serve(t, sinkClass(func() SinkTask { return &preCommittingSink{} }))
	startSink(t, c, "")
	resp, err := c.SinkTask.PreCommit(callCtx(t), &pluginv1.PreCommitRequest{Offsets: offsetsIn})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := offsetsString(resp.GetOffsets()), "a-0@4 "; got != want {
		t.Fatalf("pre-commit answered %q, want %q", got, want)
	}
}

func TestPutDecodesRecordsAndMapsErrors(t *testing.T) {
	var got []*data.SinkRecord
	var fail error
	c := serve(t, sinkClass(func() SinkTask {
		return &funcSink{put: func(_ context.Context, recs []*data.SinkRecord) error {
			got = append(got, recs...)
			return fail
		}}
	}))
	startSink(t, c, "")
	ctx := callCtx(t)
	in := []*data.SinkRecord{
		{Record: data.Record{Topic: "t", Partition: 3, ValueSchema: data.StringSchema, Value: "hello"}, Offset: 41, OriginalTopic: "t", OriginalPartition: 3, OriginalOffset: 41},
		{Record: data.Record{Topic: "t", Partition: 3, ValueSchema: data.StringSchema, Value: "world"}, Offset: 42, OriginalTopic: "t", OriginalPartition: 3, OriginalOffset: 42},
	}
	schemas, recs, err := wire.EncodeSinkRecords(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SinkTask.Put(ctx, &pluginv1.PutRequest{Schemas: schemas, Records: recs}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Value != "hello" || got[1].Value != "world" || got[1].Offset != 42 || got[1].Partition != 3 {
		t.Fatalf("task got %+v", got)
	}
	for _, tc := range []struct {
		err  error
		code codes.Code
	}{
		{Retriable("busy"), codes.Aborted},
		{fmt.Errorf("row 3: %w", Invalid("bad row")), codes.InvalidArgument},
		{fmt.Errorf("upsert: %w", ErrUnsupported), codes.Unimplemented},
		{errors.New("disk on fire"), codes.Unknown},
		{fmt.Errorf("start: %w", errors.Join(config.Invalid("batch.size", "x", "not a number"))), codes.InvalidArgument},
	} {
		fail = tc.err
		_, err := c.SinkTask.Put(ctx, &pluginv1.PutRequest{Schemas: schemas, Records: recs})
		if status.Code(err) != tc.code {
			t.Errorf("Put returning %q: code %v, want %v", tc.err, status.Code(err), tc.code)
		}
	}
}

// fakeWorker records the callbacks a plugin makes.
type fakeWorker struct {
	pluginv1.UnimplementedWorkerServer
	mu       sync.Mutex
	paused   []string
	rewinds  []string
	errant   []string
	copies   []string // the record copies reports carried: "topic-partition@offset value"
	offsets  map[string]string
	requests [][]string
}

func (w *fakeWorker) SourceOffsets(_ context.Context, req *pluginv1.SourceOffsetsRequest) (*pluginv1.SourceOffsetsResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	resp := &pluginv1.SourceOffsetsResponse{}
	var asked []string
	// Answer in reverse order, to prove the SDK matches by partition.
	for _, p := range slices.Backward(req.GetPartitions()) {
		asked = append(asked, string(p))
		resp.Offsets = append(resp.Offsets, &pluginv1.SourceOffset{Partition: p, Offset: []byte(w.offsets[string(p)])})
	}
	w.requests = append(w.requests, asked)
	return resp, nil
}

func (w *fakeWorker) Pause(_ context.Context, req *pluginv1.PartitionsRequest) (*pluginv1.PartitionsResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range req.GetPartitions() {
		w.paused = append(w.paused, fmt.Sprintf("%s-%d", p.GetTopic(), p.GetPartition()))
	}
	return &pluginv1.PartitionsResponse{}, nil
}

func (w *fakeWorker) Rewind(_ context.Context, req *pluginv1.RewindRequest) (*pluginv1.RewindResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rewinds = append(w.rewinds, offsetsString(req.GetOffsets()))
	return &pluginv1.RewindResponse{}, nil
}

func (w *fakeWorker) ReportErrantRecord(_ context.Context, req *pluginv1.ReportErrantRecordRequest) (*pluginv1.ReportErrantRecordResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errant = append(w.errant, fmt.Sprintf("%s-%d@%d: %s (%s)", req.GetTopic(), req.GetPartition(), req.GetOffset(), req.GetError(), req.GetExceptionClass()))
	if req.GetRecord() != nil {
		recs, err := wire.DecodeSinkRecords(req.GetSchemas(), []*pluginv1.SinkRecord{req.GetRecord()})
		if err != nil {
			w.copies = append(w.copies, "undecodable: "+err.Error())
		} else {
			w.copies = append(w.copies, fmt.Sprintf("%s-%d@%d %v", recs[0].Topic, recs[0].Partition, recs[0].Offset, recs[0].Value))
		}
	}
	if len(w.errant) > 2 {
		return nil, status.Error(codes.Unknown, "tolerance exceeded")
	}
	return &pluginv1.ReportErrantRecordResponse{}, nil
}

func serveWorker(t *testing.T, w *fakeWorker) string {
	t.Helper()
	dir, err := shortTempDir(t)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "w.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	pluginv1.RegisterWorkerServer(gs, w)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return "unix://" + sock
}

func TestSinkContextCallsReachTheWorker(t *testing.T) {
	w := &fakeWorker{}
	target := serveWorker(t, w)
	var tc SinkTaskContext
	c := serve(t, sinkClass(func() SinkTask {
		return &funcSink{start: func(_ context.Context, stc SinkTaskContext, _ map[string]string) error {
			tc = stc
			return nil
		}}
	}))
	startSink(t, c, target)
	ctx := callCtx(t)
	if err := tc.Pause(ctx, data.TopicPartition{Topic: "t", Partition: 1}, data.TopicPartition{Topic: "u", Partition: 0}); err != nil {
		t.Fatal(err)
	}
	if err := tc.Offset(ctx, data.TopicPartition{Topic: "t", Partition: 1}, 17); err != nil {
		t.Fatal(err)
	}
	rep := tc.ErrantRecordReporter()
	r := &data.SinkRecord{Record: data.Record{Topic: "renamed", Partition: 9, ValueSchema: data.StringSchema, Value: "row 5"},
		Offset: 1, OriginalTopic: "t", OriginalPartition: 1, OriginalOffset: 5}
	if err := rep.Report(ctx, r, errors.New("bad")); err != nil {
		t.Fatal(err)
	}
	// The exception's class: one the error names, else its kind's.
	if err := rep.Report(ctx, r, fmt.Errorf("insert: %w", namedErr{"dup", "java.sql.SQLException"})); err != nil {
		t.Fatal(err)
	}
	if err := rep.Report(ctx, r, Invalid("worse")); err == nil {
		t.Fatal("third report: no error although the worker refused it")
	}
	// Calls to methods the worker does not implement fail clearly.
	if _, err := tc.Assignment(ctx); err == nil {
		t.Fatal("Assignment: no error from a worker that does not implement it")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Equal(w.paused, []string{"t-1", "u-0"}) || !slices.Equal(w.rewinds, []string{"t-1@17 "}) ||
		!slices.Equal(w.errant, []string{"t-1@5: bad ()", "t-1@5: insert: dup (java.sql.SQLException)",
			"t-1@5: worse (org.apache.kafka.connect.errors.DataException)"}) {
		t.Fatalf("worker saw paused %q, rewinds %q, errant %q", w.paused, w.rewinds, w.errant)
	}
	// Each report carries the record as the task holds it, for the worker
	// to convert back when it no longer holds the record itself.
	if want := []string{"renamed-9@1 row 5", "renamed-9@1 row 5", "renamed-9@1 row 5"}; !slices.Equal(w.copies, want) {
		t.Fatalf("reports carried copies %q, want %q", w.copies, want)
	}
}

func TestSourceContextReadsOffsets(t *testing.T) {
	w := &fakeWorker{offsets: map[string]string{`{"p":1}`: `{"seq":41}`}}
	target := serveWorker(t, w)
	var got []map[string]any
	var noWorkerErr error
	c := serve(t, sourceClass(func() SourceTask {
		return &funcSource{start: func(ctx context.Context, tc SourceTaskContext, props map[string]string) error {
			if props["no-worker"] == "true" {
				_, noWorkerErr = tc.Offset(ctx, map[string]any{"p": 1})
				return nil
			}
			var err error
			got, err = tc.Offsets(ctx, []map[string]any{{"p": 1}, {"p": 2}})
			return err
		}}
	}))
	ctx := callCtx(t)
	if _, err := c.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source", WorkerTarget: target}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != nil || fmt.Sprint(got[0]) != "map[seq:41]" {
		t.Fatalf("offsets %v, want [map[seq:41] nil]", got)
	}
	if len(w.requests) != 1 || !slices.Equal(w.requests[0], []string{`{"p":2}`, `{"p":1}`}) {
		t.Fatalf("worker was asked %q", w.requests)
	}
	// A process started without a worker target fails callbacks clearly.
	c2 := serve(t, sourceClass(func() SourceTask {
		return &funcSource{start: func(ctx context.Context, tc SourceTaskContext, _ map[string]string) error {
			_, noWorkerErr = tc.Offset(ctx, map[string]any{"p": 1})
			return nil
		}}
	}))
	if _, err := c2.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source"}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(noWorkerErr, ErrNoWorker) {
		t.Fatalf("offset without a worker: %v, want ErrNoWorker", noWorkerErr)
	}
}

func TestDescribeListsClasses(t *testing.T) {
	c := serve(t, sourceClass(nil), sinkClass(nil))
	resp, err := c.Plugin.Describe(callCtx(t), &pluginv1.DescribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cl := range resp.GetClasses() {
		got = append(got, fmt.Sprintf("%s %v %s", cl.GetClassName(), cl.GetType(), cl.GetVersion()))
	}
	want := []string{"test.Source CONNECTOR_TYPE_SOURCE 1.2.3", "test.Sink CONNECTOR_TYPE_SINK 0.0.1"}
	if !slices.Equal(got, want) || resp.GetSdk() != SDKVersion {
		t.Fatalf("describe: %q sdk %q, want %q", got, resp.GetSdk(), want)
	}
}

// A declared task class reaches the worker through Describe; a class that
// declares none sends it empty, so the worker falls back to the class name.
func TestDescribeSendsTaskClass(t *testing.T) {
	src := sourceClass(nil)
	src.TaskClass = "test.SourceTask"
	c := serve(t, src, sinkClass(nil))
	resp, err := c.Plugin.Describe(callCtx(t), &pluginv1.DescribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, cl := range resp.GetClasses() {
		got[cl.GetClassName()] = cl.GetTaskClassName()
	}
	want := map[string]string{"test.Source": "test.SourceTask", "test.Sink": ""}
	if !maps.Equal(got, want) {
		t.Fatalf("task classes by class: %q, want %q", got, want)
	}
}

func TestNewServerRejectsBadClasses(t *testing.T) {
	src := sourceClass(nil)
	for name, classes := range map[string][]Class{
		"none":      nil,
		"duplicate": {src, src},
		"no name":   {{New: src.New}},
		"no New":    {{Name: "x"}},
		"not a connector type": {{Name: "x", New: func() Connector {
			return struct{ Connector }{&testSource{}}
		}}},
	} {
		if _, err := newServer(classes, nil); err == nil {
			t.Errorf("%s: newServer accepted it", name)
		}
	}
}

func shortTempDir(t *testing.T) (string, error) {
	// Unix socket paths are limited to ~108 bytes; t.TempDir can be longer.
	dir, err := os.MkdirTemp("", "sdk")
	if err == nil {
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	return dir, err
}

// namedErr is an error that names its Java exception class.
type namedErr struct{ msg, class string }

func (e namedErr) Error() string          { return e.msg }
func (e namedErr) ExceptionClass() string { return e.class }

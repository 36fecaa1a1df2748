package pluginsdk

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// counting returns a task that hands out n records, per records per Poll,
// then waits for its deadline with nothing. polls counts task.Poll calls.
func counting(n, per int, value string, polls *atomic.Int64) func() SourceTask {
	return func() SourceTask {
		next := 0
		return &funcSource{poll: func(ctx context.Context) ([]*data.SourceRecord, error) {
			polls.Add(1)
			if next >= n {
				<-ctx.Done()
				return nil, nil
			}
			var out []*data.SourceRecord
			for ; next < n && len(out) < per; next++ {
				out = append(out, rec(next, value))
			}
			return out, nil
		}}
	}
}

func seqRange(from, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(from + i)
	}
	return out
}

func TestPollAccumulatesSingleRecordPolls(t *testing.T) {
	var polls atomic.Int64
	c := serve(t, sourceClass(counting(250, 1, "v", &polls)))
	if resp := startSource(t, c); resp.GetRecordAcks() {
		t.Fatal("record_acks = true for a task without CommitRecord")
	}
	ctx := callCtx(t)
	wantFirst := []uint64{1, 101, 201}
	wantLen := []int{100, 100, 50}
	for i := range wantFirst {
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 100, TimeoutMs: 200})
		if err != nil {
			t.Fatalf("poll %d: %v", i, err)
		}
		if got := keys(t, resp); !slices.Equal(got, seqRange(int(wantFirst[i])-1, wantLen[i])) {
			t.Fatalf("poll %d: keys %v, want %d keys from %d", i, got, wantLen[i], wantFirst[i]-1)
		}
		if resp.GetFirstSeq() != wantFirst[i] {
			t.Fatalf("poll %d: first_seq %d, want %d", i, resp.GetFirstSeq(), wantFirst[i])
		}
		// One schema table entry per distinct schema, however many chunks.
		if len(resp.GetSchemas()) != 2 {
			t.Fatalf("poll %d: %d schemas in the table, want 2 (key and value)", i, len(resp.GetSchemas()))
		}
	}
	resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 100, TimeoutMs: 50})
	if err != nil || len(resp.GetRecords()) != 0 || resp.GetFirstSeq() != 0 {
		t.Fatalf("poll after the last record: %d records, first_seq %d, err %v; want an empty batch", len(resp.GetRecords()), resp.GetFirstSeq(), err)
	}
	if p := polls.Load(); p < 250 {
		t.Fatalf("task polled %d times, want at least 250 (one record per poll)", p)
	}
}

func TestPollSplitsLargeTaskBatches(t *testing.T) {
	var polls atomic.Int64
	c := serve(t, sourceClass(counting(30, 30, "v", &polls)))
	startSource(t, c)
	ctx := callCtx(t)
	var all []int64
	for i, first := 0, uint64(1); i < 3; i++ {
		// Held-back records are sent before the task is polled again, also
		// by the fill ahead: the task's one batch serves three answers.
		if polls.Load() > 1 {
			t.Fatalf("task polled %d times before poll %d, want 1: held-back records are sent before polling again", polls.Load(), i)
		}
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetRecords()) != 10 || resp.GetFirstSeq() != first {
			t.Fatalf("poll %d: %d records from seq %d, want 10 from %d", i, len(resp.GetRecords()), resp.GetFirstSeq(), first)
		}
		first += 10
		all = append(all, keys(t, resp)...)
	}
	if !slices.Equal(all, seqRange(0, 30)) {
		t.Fatalf("keys %v, want 0..29 in order", all)
	}
	// Once they are all out, the SDK may poll the task once ahead.
	if polls.Load() > 2 {
		t.Fatalf("task polled %d times, want at most 2", polls.Load())
	}
}

func TestPollHonoursMaxBytes(t *testing.T) {
	var polls atomic.Int64
	big := strings.Repeat("x", 1000)
	c := serve(t, sourceClass(counting(50, 7, big, &polls)))
	startSource(t, c)
	ctx := callCtx(t)
	var all []int64
	next := uint64(1)
	for len(all) < 50 {
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 1000, MaxBytes: 10_000, TimeoutMs: 100})
		if err != nil {
			t.Fatal(err)
		}
		n := len(resp.GetRecords())
		if n == 0 || n > 10 {
			t.Fatalf("batch of %d records of ~1 KB for max_bytes 10000", n)
		}
		if size := proto.Size(resp); size > 10_000+200 {
			t.Fatalf("batch is %d bytes for max_bytes 10000", size)
		}
		if resp.GetFirstSeq() != next {
			t.Fatalf("first_seq %d, want %d", resp.GetFirstSeq(), next)
		}
		next += uint64(n)
		all = append(all, keys(t, resp)...)
	}
	if !slices.Equal(all, seqRange(0, 50)) {
		t.Fatalf("keys %v, want 0..49 in order", all)
	}
}

// ackTask records CommitRecord calls.
type ackTask struct {
	funcSource
	mu    sync.Mutex
	calls []string
}

func (a *ackTask) CommitRecord(_ context.Context, r *data.SourceRecord, md *RecordMetadata) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := "key=" + itoa(r.Key.(int64))
	if md == nil {
		s += " dropped"
	} else {
		s += " " + md.Topic + "/" + itoa(int64(md.Partition)) + "@" + itoa(md.Offset)
	}
	a.calls = append(a.calls, s)
	return nil
}

func TestAcksReachCommitRecordInAckOrder(t *testing.T) {
	task := &ackTask{}
	var polls atomic.Int64
	inner := counting(5, 5, "v", &polls)().(*funcSource)
	task.poll = inner.poll
	c := serve(t, sourceClass(func() SourceTask { return task }))
	if !startSource(t, c).GetRecordAcks() {
		t.Fatal("record_acks = false for a task with CommitRecord")
	}
	ctx := callCtx(t)
	resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 100})
	if err != nil || len(resp.GetRecords()) != 5 {
		t.Fatalf("poll: %d records, %v", len(resp.GetRecords()), err)
	}
	written := func(seq uint64, off int64) *pluginv1.RecordAck {
		return &pluginv1.RecordAck{Seq: seq, Written: true, Topic: "out", Partition: 2, Offset: off}
	}
	// Acks on Ack, then on Poll; a repeated ack and an unknown seq are ignored.
	_, err = c.SourceTask.Ack(ctx, &pluginv1.AckRequest{Acks: &pluginv1.AckBatch{Records: []*pluginv1.RecordAck{
		written(3, 30), written(1, 10), {Seq: 5, Written: false},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 10, Acks: &pluginv1.AckBatch{
		AckedThrough: 5, Records: []*pluginv1.RecordAck{written(2, 20), written(3, 99), {Seq: 77, Written: true}, written(4, 40)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"key=2 out/2@30", "key=0 out/2@10", "key=4 dropped", "key=1 out/2@20", "key=3 out/2@40"}
	task.mu.Lock()
	defer task.mu.Unlock()
	if !slices.Equal(task.calls, want) {
		t.Fatalf("CommitRecord calls\n got %q\nwant %q", task.calls, want)
	}
}

func TestPanicIsReportedAndProcessKeepsServing(t *testing.T) {
	var panicked atomic.Bool
	c := serve(t, sourceClass(func() SourceTask {
		return &funcSource{poll: func(ctx context.Context) ([]*data.SourceRecord, error) {
			if !panicked.Swap(true) {
				var m map[string]int
				m["boom"]++ // nil map write: a runtime panic
			}
			return []*data.SourceRecord{rec(1, "after")}, nil
		}}
	}))
	startSource(t, c)
	ctx := callCtx(t)
	var trailer metadata.MD
	_, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 1, TimeoutMs: 100}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.Unknown || !strings.Contains(err.Error(), "panic") {
		t.Fatalf("poll that panics: %v, want code Unknown (fatal) naming the panic", err)
	}
	we := wire.FromStatus(err, trailer)
	trace := we.Trace
	if we.Kind != wire.KindFatal || !strings.Contains(trace, "source_test.go") || !strings.Contains(trace, "\n") {
		t.Fatalf("kind %v, trace %q: want fatal with a stack through the test's Poll", we.Kind, we.Trace)
	}
	resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 1, TimeoutMs: 100})
	if err != nil || len(resp.GetRecords()) != 1 || resp.GetFirstSeq() != 1 {
		t.Fatalf("poll after the panic: %d records from %d, %v; want the process still serving", len(resp.GetRecords()), resp.GetFirstSeq(), err)
	}
}

func TestStopUnblocksPoll(t *testing.T) {
	pollReturned := make(chan struct{})
	var stopSawPollDone atomic.Bool
	c := serve(t, sourceClass(func() SourceTask {
		return &funcSource{
			poll: func(ctx context.Context) ([]*data.SourceRecord, error) {
				<-ctx.Done()
				close(pollReturned)
				return nil, ctx.Err()
			},
			stop: func(context.Context) error {
				select {
				case <-pollReturned:
					stopSawPollDone.Store(true)
				default:
				}
				return nil
			},
		}
	}))
	startSource(t, c)
	ctx := callCtx(t)
	type result struct {
		resp *pluginv1.PollResponse
		err  error
		at   time.Time
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 60_000})
		done <- result{resp, err, time.Now()}
	}()
	time.Sleep(100 * time.Millisecond)
	stopAt := time.Now()
	if _, err := c.SourceTask.Stop(ctx, &pluginv1.StopRequest{}); err != nil {
		t.Fatalf("stop: %v", err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Poll still outstanding 10 s after Stop")
	}
	if r.err != nil || len(r.resp.GetRecords()) != 0 {
		t.Fatalf("poll cut short by stop: %v, %d records; want an empty batch", r.err, len(r.resp.GetRecords()))
	}
	if r.at.Sub(stopAt) > 5*time.Second {
		t.Fatalf("poll returned %v after stop", r.at.Sub(stopAt))
	}
	if !stopSawPollDone.Load() {
		t.Fatal("task.Stop ran before the outstanding Poll returned")
	}
	if _, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{TimeoutMs: 10}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("poll after stop: %v, want FailedPrecondition", err)
	}
}

func TestPollErrorFollowsRecordsAlreadyTaken(t *testing.T) {
	calls := 0
	c := serve(t, sourceClass(func() SourceTask {
		return &funcSource{poll: func(ctx context.Context) ([]*data.SourceRecord, error) {
			calls++
			if calls <= 2 {
				return []*data.SourceRecord{rec(calls, "v")}, nil
			}
			return nil, Retriable("upstream hiccup")
		}}
	}))
	startSource(t, c)
	ctx := callCtx(t)
	resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 100})
	if err != nil || !slices.Equal(keys(t, resp), []int64{1, 2}) {
		t.Fatalf("first poll: %v, %v; want records 1 and 2", err, resp)
	}
	_, err = c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 100})
	if status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "upstream hiccup") {
		t.Fatalf("second poll: %v, want the task's retriable error as ABORTED", err)
	}
}

func TestOneProcessServesOneInstance(t *testing.T) {
	var polls atomic.Int64
	c := serve(t, sourceClass(counting(1, 1, "v", &polls)), sinkClass(func() SinkTask { return &funcSink{} }))
	startSource(t, c)
	ctx := callCtx(t)
	_, err := c.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "source task c-0") {
		t.Fatalf("second source Start: %v, want FailedPrecondition naming the instance", err)
	}
	_, err = c.Connector.Start(ctx, &pluginv1.ConnectorStartRequest{ClassName: "test.Source"})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("connector Start after a task Start: %v, want FailedPrecondition", err)
	}
	_, err = c.SinkTask.Start(ctx, &pluginv1.SinkTaskStartRequest{ConnectorClass: "test.Sink"})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("sink Start after a source Start: %v, want FailedPrecondition", err)
	}
	// Describe and Validate still answer.
	if _, err := c.Plugin.Describe(ctx, &pluginv1.DescribeRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Connector.Validate(ctx, &pluginv1.ValidateRequest{ClassName: "test.Sink"}); err != nil {
		t.Fatal(err)
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

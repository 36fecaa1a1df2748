package pluginsdk

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// waitFor polls cond until it holds or a few seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPollFillsOneBatchAheadOfTheWorker(t *testing.T) {
	var polls atomic.Int64
	c := serve(t, sourceClass(counting(1000, 10, "v", &polls)))
	startSource(t, c)
	ctx := callCtx(t)
	resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 1000})
	if err != nil || !slices.Equal(keys(t, resp), seqRange(0, 10)) || resp.GetFirstSeq() != 1 {
		t.Fatalf("first poll: %v, %v", err, resp)
	}
	// With no Poll outstanding, the task is polled once more: the next
	// batch, and no further.
	waitFor(t, "the fill ahead", func() bool { return polls.Load() == 2 })
	time.Sleep(50 * time.Millisecond)
	if p := polls.Load(); p != 2 {
		t.Fatalf("task polled %d times with one answer sent, want 2 (one batch ahead)", p)
	}
	// The batch filled ahead is the next answer, in order and numbered on.
	resp, err = c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 1000})
	if err != nil || !slices.Equal(keys(t, resp), seqRange(10, 10)) || resp.GetFirstSeq() != 11 {
		t.Fatalf("second poll: %v, keys %v from seq %d, want 10..19 from 11", err, keys(t, resp), resp.GetFirstSeq())
	}
}

func TestPollWithSmallerBoundsSplitsTheBatchFilledAhead(t *testing.T) {
	var polls atomic.Int64
	c := serve(t, sourceClass(counting(100, 10, "v", &polls)))
	startSource(t, c)
	ctx := callCtx(t)
	if _, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 1000}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the fill ahead", func() bool { return polls.Load() == 2 })
	var all []int64
	next := uint64(11)
	for len(all) < 10 {
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 4, TimeoutMs: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(resp.GetRecords()); n == 0 || n > 4 || resp.GetFirstSeq() != next {
			t.Fatalf("%d records from seq %d for max_records 4, want 1..4 from %d", n, resp.GetFirstSeq(), next)
		}
		next += uint64(len(resp.GetRecords()))
		all = append(all, keys(t, resp)...)
	}
	if !slices.Equal(all[:10], seqRange(10, 10)) {
		t.Fatalf("keys %v, want 10..19 first, in order", all)
	}
}

func TestStopCancelsTheFillAheadBeforeTaskStop(t *testing.T) {
	var polls atomic.Int64
	var blocked, returned atomic.Bool
	stopSawPollDone := make(chan bool, 1)
	c := serve(t, sourceClass(func() SourceTask {
		return &funcSource{
			poll: func(ctx context.Context) ([]*data.SourceRecord, error) {
				if polls.Add(1) == 1 {
					return []*data.SourceRecord{rec(1, "v")}, nil
				}
				// Later polls find nothing until Stop cancels them.
				blocked.Store(true)
				<-ctx.Done()
				returned.Store(true)
				return nil, ctx.Err()
			},
			stop: func(context.Context) error {
				stopSawPollDone <- returned.Load()
				return nil
			},
		}
	}))
	startSource(t, c)
	ctx := callCtx(t)
	// The first answer waits 2 ms for more records, then goes.
	if _, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 60_000}); err != nil {
		t.Fatal(err)
	}
	// The fill ahead is now blocked in task.Poll for up to a minute.
	returned.Store(false)
	waitFor(t, "the fill ahead to block", func() bool { return blocked.Load() && polls.Load() >= 3 })
	start := time.Now()
	if _, err := c.SourceTask.Stop(ctx, &pluginv1.StopRequest{}); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stop took %v", d)
	}
	if !<-stopSawPollDone {
		t.Fatal("task.Stop ran before the fill ahead's task.Poll returned")
	}
	if _, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{TimeoutMs: 10}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("poll after stop: %v, want FailedPrecondition", err)
	}
}

// committerTask is a counting task with Commit.
type committerTask struct {
	funcSource
}

func (committerTask) Commit(context.Context) error { return nil }

func TestTaskWithCommitIsNotPolledAhead(t *testing.T) {
	var polls atomic.Int64
	c := serve(t, sourceClass(func() SourceTask {
		return &committerTask{*counting(1000, 10, "v", &polls)().(*funcSource)}
	}))
	startSource(t, c)
	ctx := callCtx(t)
	resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 1000})
	if err != nil || len(resp.GetRecords()) != 10 {
		t.Fatalf("poll: %v, %v", err, resp)
	}
	time.Sleep(100 * time.Millisecond)
	if p := polls.Load(); p != 1 {
		t.Fatalf("task with Commit polled %d times for one answer, want 1", p)
	}
}

func TestFillAheadErrorIsReportedByTheNextPoll(t *testing.T) {
	var polls atomic.Int64
	c := serve(t, sourceClass(func() SourceTask {
		return &funcSource{poll: func(context.Context) ([]*data.SourceRecord, error) {
			if polls.Add(1) == 1 {
				recs := make([]*data.SourceRecord, 10)
				for i := range recs {
					recs[i] = rec(i, "v")
				}
				return recs, nil
			}
			return nil, Retriable("upstream hiccup")
		}}
	}))
	startSource(t, c)
	ctx := callCtx(t)
	if resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 1000}); err != nil || len(resp.GetRecords()) != 10 {
		t.Fatalf("first poll: %v, %v", err, resp)
	}
	waitFor(t, "the fill ahead", func() bool { return polls.Load() == 2 })
	_, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 1000})
	if status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "upstream hiccup") {
		t.Fatalf("second poll: %v, want the fill ahead's retriable error as ABORTED", err)
	}
	// Reported once: the task is polled again after it.
	resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, TimeoutMs: 1000})
	if status.Code(err) != codes.Aborted || resp != nil {
		t.Fatalf("third poll: %v, %v; want the task's next error", err, resp)
	}
	if p := polls.Load(); p < 3 {
		t.Fatalf("task polled %d times, want the failed poll retried", p)
	}
}

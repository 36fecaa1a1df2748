//go:build integration

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupCommitEvery is how often the group baselines commit: the
// offset.flush.interval.ms the pipeline benchmarks give the worker (see
// pipelineWorkerProps). A sink's finish line is its last commit, up to one
// interval after its last record: at 50 ms that adds at most about 4 % to
// a run of a second and a half, in the baseline and the pipeline alike
// (200 ms made single runs of the same baseline differ by 20 %).
const groupCommitEvery = 50 * time.Millisecond

// consumeGroupBaseline does with raw franz-go the work a sink task does
// around its plugin, so that the noop sink can be compared with like work:
// it joins a fresh consumer group with the worker's balancer, reads the
// filled topic from the start and commits what it polled every
// groupCommitEvery, asynchronously as the sink task does (asyncCommits),
// the last time at the first tick after it read everything. It is timed the
// way noopSinkBench is: from the client's creation until the group's
// committed offsets, fetched every pollEvery, reach the end of every
// partition.
func consumeGroupBaseline(ctx context.Context, env *BenchEnv, parts int32) (Result, error) {
	return groupBaseline(ctx, env, parts, "baseline/consume-group", nil)
}

// groupBaseline is consumeGroupBaseline, reported as name-pN, with onPoll
// (if not nil) given every poll's fetches before they count as read; an
// error from it ends the benchmark.
func groupBaseline(ctx context.Context, env *BenchEnv, parts int32, name string, onPoll func(kgo.Fetches) error) (Result, error) {
	topic, err := env.FilledTopic(ctx, parts)
	if err != nil {
		return Result{}, err
	}
	admCl, err := env.NewClient()
	if err != nil {
		return Result{}, err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if err := holdsExactly(ctx, adm, topic, env.Records); err != nil {
		return Result{}, err
	}
	end := int64(env.Records)

	group := fmt.Sprintf("bench-%s-%d", topic, time.Now().UnixNano())
	// Prepare has had the broker create __consumer_offsets; this group's
	// coordinator is still looked up before the clock starts, as the
	// worker's consumer starts before the sink's clock does.
	if err := awaitCoordinator(ctx, adm, group); err != nil {
		return Result{}, err
	}
	start := time.Now()
	cl, err := env.NewClient(
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	)
	if err != nil {
		return Result{}, err
	}
	// Closing leaves the group; it happens after the clock stops, as the
	// sink's connector is deleted after it.
	defer cl.Close()

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan groupConsumed, 1)
	go func() { done <- consumeAndCommit(cctx, cl, topic, env.Records, onPoll) }()
	// wait hands back the consumer's outcome: the goroutine must have
	// returned before cl is closed.
	var (
		got      groupConsumed
		finished bool
	)
	wait := func() groupConsumed {
		if !finished {
			got, finished = <-done, true
		}
		return got
	}
	defer func() { cancel(); wait() }()

	var committed int64
	for {
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil && !kerr.IsRetriable(err) {
			// Retriable: a new group's coordinator may not be ready yet.
			return Result{}, fmt.Errorf("committed offsets of %s: %w", group, err)
		}
		committed = 0
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic && o.Err == nil {
				committed += o.At
			}
		})
		if committed >= end {
			break
		}
		select {
		case c := <-done:
			got, finished = c, true
			if c.err != nil {
				return Result{}, c.err
			}
			// Read and committed; the next fetch sees it.
			done = nil
		case <-time.After(pollEvery):
		case <-ctx.Done():
			return Result{}, fmt.Errorf("group %s: committed %d of %d: %w", group, committed, end, ctx.Err())
		}
	}
	stop := time.Now()
	secs := stop.Sub(start).Seconds()
	if committed != end {
		return Result{}, fmt.Errorf("group %s committed %d, beyond the end %d", group, committed, end)
	}
	// The consumer has polled every record before it can commit the end,
	// so it is at most finishing its last commit here.
	c := wait()
	if c.err != nil {
		return Result{}, c.err
	}
	if c.records != env.Records {
		return Result{}, fmt.Errorf("group %s read %d records from %s, it holds %d", group, c.records, topic, env.Records)
	}
	fmt.Printf("  %s-p%d: first records polled %.2fs after the client's creation; all read at %.2fs, committed seen at %.2fs\n",
		name, parts, c.first.Sub(start).Seconds(), c.last.Sub(start).Seconds(), secs)
	return Result{Records: c.records, Bytes: c.bytes, Seconds: secs}, nil
}

// groupsReady is the Prepare of the benchmarks that join a consumer group
// on the filled topic of parts partitions: the topic is filled, and the
// broker has created __consumer_offsets (which the first group to look for
// its coordinator makes it do, 0.3 s and a burst of broker CPU), so that
// no benchmark's window holds that one-off cost.
func groupsReady(parts int32) func(context.Context, *BenchEnv) error {
	return func(ctx context.Context, env *BenchEnv) error {
		if _, err := env.FilledTopic(ctx, parts); err != nil {
			return err
		}
		cl, err := env.NewClient()
		if err != nil {
			return err
		}
		defer cl.Close()
		return awaitCoordinator(ctx, kadm.NewClient(cl), "bench-prepare")
	}
}

// awaitCoordinator waits until the coordinator of group answers.
func awaitCoordinator(ctx context.Context, adm *kadm.Client, group string) error {
	for {
		_, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			return nil
		}
		if !kerr.IsRetriable(err) {
			return fmt.Errorf("coordinator of %s: %w", group, err)
		}
		if err := sleepCtx(ctx, pollEvery); err != nil {
			return fmt.Errorf("coordinator of %s: %w", group, err)
		}
	}
}

// groupConsumed is what consumeAndCommit read, or why it stopped.
type groupConsumed struct {
	records int
	bytes   int64
	// first and last are when the first and the last records were
	// polled: the first shows the cost of joining the group.
	first, last time.Time
	err         error
}

// consumeAndCommit polls until it has read want records, committing what
// it polled whenever groupCommitEvery has passed, the last time at the
// first tick after the end. As
// the worker's sink task does, it bounds each poll by the next commit so
// that commits stay on time when no records come. onPoll, if not nil,
// sees each poll's fetches first.
func consumeAndCommit(ctx context.Context, cl *kgo.Client, topic string, want int, onPoll func(kgo.Fetches) error) groupConsumed {
	var c groupConsumed
	fail := func(what string, err error) groupConsumed {
		c.err = fmt.Errorf("group consumer of %s: %s after %d of %d records: %w", topic, what, c.records, want, err)
		return c
	}
	next := time.Now().Add(groupCommitEvery)
	var commits asyncCommits
	for c.records < want {
		pctx, cancel := context.WithDeadline(ctx, next)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return fail("poll", err)
		}
		var fetchErr error
		fs.EachError(func(t string, p int32, err error) {
			// The poll's own deadline comes back as a fetch error of no
			// partition: time to commit, not a failure.
			if t == "" && p == -1 && errors.Is(err, context.DeadlineExceeded) {
				return
			}
			fetchErr = fmt.Errorf("partition %d: %w", p, err)
		})
		if fetchErr != nil {
			return fail("fetch", fetchErr)
		}
		if c.first.IsZero() && !fs.Empty() {
			c.first = time.Now()
		}
		if onPoll != nil {
			if err := onPoll(fs); err != nil {
				return fail("hand the poll on", err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			c.records++
			c.bytes += int64(len(r.Key) + len(r.Value))
		})
		if !time.Now().Before(next) {
			if err := commits.err(); err != nil {
				return fail("commit", err)
			}
			next = time.Now().Add(groupCommitEvery)
			if !commits.start(ctx, cl) {
				// As the sink task: tried again shortly.
				next = time.Now().Add(5 * time.Millisecond)
			}
		}
	}
	c.last = time.Now()
	// The last commit comes at the next tick, as a sink's does: a consumer
	// that does not know where the stream ends cannot commit "at the end".
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return fail("wait for the last commit", ctx.Err())
	}
	// Synchronous, so that the result is known before it returns; the
	// sink's last commit is asynchronous, which the finish line (the
	// group's committed offsets) does not tell apart.
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return fail("final commit", err)
	}
	if err := commits.err(); err != nil {
		return fail("commit", err)
	}
	return c
}

// asyncCommits commits as the worker's sink task does between batches, and
// as Kafka Connect does (commitAsync): without waiting for the answer, and
// none while the previous one is unanswered.
type asyncCommits struct {
	mu       sync.Mutex
	inFlight bool
	first    error
}

// start commits what the client polled, unless a commit is in flight; it
// reports whether it did.
func (a *asyncCommits) start(ctx context.Context, cl *kgo.Client) bool {
	a.mu.Lock()
	busy := a.inFlight
	a.inFlight = true
	a.mu.Unlock()
	if busy {
		return false
	}
	// Not under mu: CommitOffsets may call back before it returns.
	cl.CommitOffsets(ctx, cl.UncommittedOffsets(), func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.inFlight = false
		if err == nil && resp != nil {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil && err == nil {
						err = fmt.Errorf("partition %d: %w", p.Partition, perr)
					}
				}
			}
		}
		if err != nil && a.first == nil {
			a.first = err
		}
	})
	return true
}

// err is the first commit's error, if any failed.
func (a *asyncCommits) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.first
}

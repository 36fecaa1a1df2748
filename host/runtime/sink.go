package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// topicPartition keys per-partition state.
type topicPartition struct {
	topic     string
	partition int32
}

// sinkTask runs one sink task.
//
// The task goroutine (Run) polls the consumer and calls the plugin; the
// consumer's rebalance callbacks run on franz-go's group goroutine. With
// BlockRebalanceOnPoll the two never overlap in practice (a callback waits
// until the task goroutine allows rebalancing, which it does only right
// before it polls again), and mu makes that explicit: the task goroutine
// holds mu whenever it works on task state or calls the plugin, and releases
// it to poll and while a pipelined Put runs (its goroutine calls only Put;
// the task goroutine then only polls and converts); the callbacks take it. The plugin's Worker callbacks never
// take mu (they arrive during Put): they queue requests in worker, which the
// task goroutine applies between batches.
type sinkTask struct {
	*control
	cfg    SinkConfig
	log    hclog.Logger
	worker *sinkWorker
	// sinkTransforms is cfg.Transforms when it offers ApplySink.
	sinkTransforms SinkTransformer
	// bytesKeys and bytesValues: the key or value converter is
	// ByteArrayConverter, which toConnect does itself (passesBytes), with
	// its []byte values boxed by boxes.
	bytesKeys, bytesValues bool
	boxes                  bytesBoxes

	plugin SinkPlugin
	putter putter // runs pipelined Puts (deliverPipelined)
	client *kgo.Client
	runCtx context.Context // for the rebalance callbacks' plugin calls

	mu sync.Mutex
	// assigned holds the open partitions (Open called, Close not yet).
	assigned map[topicPartition]bool
	// delivered is, per partition, the offset after the last record
	// delivered by a successful Put (dropped records included), or the
	// offset of a rewind: what PreCommit is offered and the most a commit
	// may reach.
	delivered map[topicPartition]int64
	// readFrom is, per partition, where the task began reading it since it
	// was opened or the plugin last rewound it: the first record delivered
	// (the consumer's position at assignment), or the rewind's offset.
	// With the offsets the task committed since, it is Kafka Connect's
	// lastCommittedOffsets, where a failed PreCommit sends it back.
	readFrom map[topicPartition]int64
	// commits: the offsets this task committed, and its commits in flight.
	commits sinkCommits
	// busyChecks counts the checks that found a due commit waiting for
	// the one in flight (step).
	busyChecks int
	// pluginPaused are the partitions the plugin paused.
	pluginPaused map[topicPartition]bool
	// revokedPaused are the partitions the plugin paused that a rebalance
	// closed, until the next assignment: those it opens again stay
	// paused (an eager rebalance revokes every partition and assigns them
	// again), as Kafka Connect keeps the task's paused partitions that
	// are still assigned.
	revokedPaused map[topicPartition]bool
	// fetchPaused are the partitions paused in the consumer now.
	fetchPaused map[topicPartition]bool
	taskPaused  bool
	// pending is a batch whose Put answered ABORTED, waiting for retryAt;
	// while it waits, every assigned partition is paused (retryPaused).
	pending *sinkBatch
	// staged is the next batch, polled and converted while the plugin
	// worked on the previous one, not yet put (see loop).
	staged      *sinkBatch
	retryAt     time.Time
	retryPaused bool
	backoff     time.Duration
	nextFlush   time.Time
	// skippedBefore are the records the error handler skipped in a staged
	// batch that was thrown away: read again, they are skipped without a
	// second report (Kafka Connect reads, and reports, each record once).
	skippedBefore map[recordAt]bool
	// closed: the partitions were closed for good (stop or failure); the
	// callbacks that closing the consumer triggers leave the plugin alone.
	closed bool
}

// NewSinkTask validates cfg and returns the task; Run starts it.
func NewSinkTask(cfg SinkConfig) (Task, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	t := &sinkTask{
		control:      newControl(cfg.ID, cfg.Listener, cfg.ShutdownTimeout),
		cfg:          cfg,
		log:          cfg.Logger,
		assigned:     map[topicPartition]bool{},
		delivered:    map[topicPartition]int64{},
		readFrom:     map[topicPartition]int64{},
		commits:      sinkCommits{committed: map[topicPartition]int64{}},
		pluginPaused: map[topicPartition]bool{},
		fetchPaused:  map[topicPartition]bool{},
		backoff:      cfg.RetryBackoff,
	}
	t.worker = &sinkWorker{t: t}
	t.sinkTransforms, _ = cfg.Transforms.(SinkTransformer)
	t.bytesKeys, t.bytesValues = passesBytes(cfg.KeyConverter), passesBytes(cfg.ValueConverter)
	return t, nil
}

func (t *sinkTask) ID() TaskID { return t.cfg.ID }

// Run implements Task.
func (t *sinkTask) Run(ctx context.Context) error {
	work, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := t.begin(cancel); err != nil {
		return err
	}
	defer t.finish()
	err := t.run(work)
	t.end(err)
	return err
}

// consumerOpts are the consumer's options: the runner's group settings
// last, so the caller's options cannot undo them, and Kafka Connect's
// defaults (auto.offset.reset=earliest, client id
// connector-consumer-<connector>-<task>) first, so they can.
func (t *sinkTask) consumerOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ClientID(fmt.Sprintf("connector-consumer-%s", t.cfg.ID)),
	}
	opts = append(opts, t.cfg.ConsumerOpts...)
	balancers := t.cfg.Balancers
	if len(balancers) == 0 {
		balancers = []kgo.GroupBalancer{kgo.CooperativeStickyBalancer()}
	}
	opts = append(opts,
		kgo.ConsumerGroup(t.cfg.GroupID),
		kgo.Balancers(balancers...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(t.onAssigned),
		kgo.OnPartitionsRevoked(t.onRevoked),
		kgo.OnPartitionsLost(t.onLost),
	)
	if t.cfg.TopicsRegex != "" {
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(t.cfg.TopicsRegex))
	} else {
		opts = append(opts, kgo.ConsumeTopics(t.cfg.Topics...))
	}
	return opts
}

func (t *sinkTask) run(ctx context.Context) error {
	if _, stopping, _ := t.snapshot(); stopping {
		return nil
	}
	t.runCtx = ctx
	p, err := t.cfg.Launch(ctx, t.worker)
	if err != nil {
		return fmt.Errorf("sink task %s: launch plugin: %w", t.cfg.ID, err)
	}
	t.plugin = p
	quit := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() { t.watchProcess(p.Done(), crashError(p), quit) })
	stopWatching := sync.OnceFunc(func() { close(quit); watcher.Wait() })
	defer stopWatching()

	reason := t.start(ctx)
	if reason == nil {
		// The consumer joins the group as soon as it exists, so it is
		// created only once the plugin is started: Open must follow Start.
		cl, err := kgo.NewClient(t.consumerOpts()...)
		if err != nil {
			reason = fmt.Errorf("create consumer: %w", err)
		} else {
			t.mu.Lock()
			t.setClient(cl)
			t.mu.Unlock()
		}
	}
	if reason == nil {
		t.putter.start()
		reason = t.loop(ctx)
		t.putter.stop()
	}
	return t.teardown(ctx, reason, stopWatching)
}

func (t *sinkTask) start(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, t.cfg.CallTimeout)
	defer cancel()
	_, err := t.plugin.Start(cctx, &pluginv1.SinkTaskStartRequest{
		ConnectorClass: t.cfg.ConnectorClass,
		ConnectorName:  t.cfg.ID.Connector,
		TaskId:         int32(t.cfg.ID.Task),
		Config:         t.cfg.TaskConfig,
		WorkerTarget:   t.plugin.WorkerTarget(),
	})
	if err != nil {
		if f := t.failed(); f != nil {
			return f
		}
		if _, stopping, _ := t.snapshot(); stopping && ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("start: %w", err)
	}
	t.nextFlush = time.Now().Add(t.cfg.OffsetFlushInterval)
	return nil
}

// loop consumes and delivers until Stop (nil) or a failure (the error).
//
// Puts are pipelined: while the plugin works on one batch (on a goroutine
// of deliverPipelined's), the task goroutine polls and converts the next,
// which waits in staged. No rebalance can come in between (the consumer
// holds it until AllowRebalance), so a staged batch only ever holds
// records of open partitions; before it is put, a waiting rebalance gets
// its turn, and step throws the batch away (the consumer set back to its
// first offsets) if anything it was read under has changed.
func (t *sinkTask) loop(ctx context.Context) error {
	for {
		gen := t.generation()
		paused, stopping, failure := t.snapshot()
		switch {
		case failure != nil:
			return failure
		case stopping || ctx.Err() != nil:
			return nil
		}
		t.mu.Lock()
		if t.staged != nil {
			t.applyBeforeRebalance()
		}
		staged := t.staged != nil
		t.mu.Unlock()
		if staged {
			t.yieldToRebalance(ctx)
		}
		t.mu.Lock()
		err := t.step(ctx, paused)
		b := t.staged
		t.staged = nil
		t.mu.Unlock()
		if err != nil {
			if errors.Is(err, errStopped) {
				continue
			}
			return err
		}
		if paused {
			t.report(statePaused)
		} else {
			t.report(stateRunning)
		}
		if b == nil {
			// step may have put a batch again (a redelivery).
			t.mu.Lock()
			t.applyBeforeRebalance()
			t.mu.Unlock()
			recs := t.poll(ctx, gen)
			if len(recs) == 0 {
				if err := t.putEmpty(ctx); err != nil && !errors.Is(err, errStopped) {
					return err
				}
				continue
			}
			t.mu.Lock()
			b, err = t.convertNew(ctx, recs)
			t.mu.Unlock()
			if err != nil {
				if errors.Is(err, errStopped) {
					continue
				}
				return err
			}
			if b == nil {
				continue
			}
		}
		if err := t.deliverPipelined(ctx, b); err != nil && !errors.Is(err, errStopped) {
			return err
		}
	}
}

// applyBeforeRebalance applies what the plugin asked during the last Put
// (a rewind, a pause) before a rebalance that waited for that Put commits
// the partitions it revokes, as Kafka Connect applies rewinds at the start
// of the poll that lets the rebalance in; a commit asked for is left to
// step. Holds mu.
func (t *sinkTask) applyBeforeRebalance() {
	if t.applyRequests() {
		t.worker.mu.Lock()
		t.worker.commit = true
		t.worker.mu.Unlock()
	}
	t.applyPauses()
}

// yieldToRebalance lets a rebalance that is waiting for the task's records
// run before the staged batch is put. A poll with a context already done
// waits out a rebalance in progress, takes no records and blocks the next
// rebalance again until AllowRebalance (franz-go v1.22.3, PollRecords with
// BlockRebalanceOnPoll). The callbacks trim the staged batch of the
// partitions they close.
func (t *sinkTask) yieldToRebalance(ctx context.Context) {
	t.client.AllowRebalance()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	t.client.PollRecords(cctx, 1)
}

// step applies what changed since the last batch: the plugin's requests,
// the task's pause state (pausing commits), a due commit, a due
// redelivery. A staged batch is thrown away when the plugin asked for
// anything, the task is paused or a batch waits for redelivery. What the
// plugin asks while the commit's PreCommit runs (a rewind after a failed
// flush, a pause) applies before anything more is put, as Kafka Connect
// applies rewinds at the start of the poll that follows a commit. Holds mu.
func (t *sinkTask) step(ctx context.Context, paused bool) error {
	commit := t.applyRequests()
	if paused && !t.taskPaused {
		// As Kafka Connect asks for a commit when a sink task pauses, the
		// offsets delivered so far are committed now, not an interval on.
		commit = true
	}
	t.taskPaused = paused
	if commit || !time.Now().Before(t.nextFlush) {
		if t.commits.busy() {
			// As Kafka Connect does, no commit starts while the
			// previous one is in flight; this one (due, or asked for)
			// follows it, checked again shortly rather than an
			// interval later, and less often the longer the one in
			// flight takes (an idle task puts an empty batch at each
			// check; Kafka Connect polls without waiting meanwhile).
			wait := min(commitBusyWait<<min(t.busyChecks, 16), t.cfg.OffsetFlushInterval)
			t.busyChecks++
			t.nextFlush = time.Now().Add(wait)
		} else {
			t.busyChecks = 0
			t.nextFlush = time.Now().Add(t.cfg.OffsetFlushInterval)
			if err := t.commit(ctx, nil, false); err != nil {
				return err
			}
			// A commit asked for during this one is dropped, as Kafka
			// Connect clears the request once it has committed.
			t.applyRequests()
		}
	}
	if paused || t.pending != nil {
		t.discardStaged()
	}
	t.applyPauses()
	if t.pending != nil && !paused && !time.Now().Before(t.retryAt) {
		return t.deliver(ctx, t.pending)
	}
	return nil
}

// commitBusyWait is how soon a due commit that waits for the one in flight
// is first tried again; each further try waits twice as long, up to the
// commit interval.
const commitBusyWait = 5 * time.Millisecond

// pollDeadline is when a poll gives up waiting: the next commit or
// redelivery (none while the task is paused: a redelivery that is due
// waits for Resume, whose poke ends the poll, and a poll that ended at
// once at its past retryAt would spin). Holds mu (or runs while no
// callback can).
func (t *sinkTask) pollDeadline() time.Time {
	deadline := t.nextFlush
	if t.pending != nil && !t.taskPaused && t.retryAt.Before(deadline) {
		deadline = t.retryAt
	}
	return deadline
}

// poll lets a waiting rebalance through, then polls until records come, the
// next commit or redelivery is due, or something interrupts it (gather).
func (t *sinkTask) poll(ctx context.Context, gen uint64) []*kgo.Record {
	deadline := t.pollDeadline()
	t.client.AllowRebalance()
	pctx, done := t.interruptible(ctx, true, gen)
	defer done()
	cctx, cancel := context.WithDeadline(pctx, deadline)
	defer cancel()
	return t.gather(cctx, t.cfg.MaxBatchRecords, t.cfg.MaxBatchBytes)
}

// gather polls until records come or ctx ends. Once records came, it keeps
// taking what the consumer has already buffered, a
// consumer.max.poll.records at a time, until it holds maxRecords or
// maxBytes (what the batch has room for) or nothing more is buffered: one Put
// then carries several polls (each Put crosses a process boundary, so
// fewer, larger Puts cost less per record). No rebalance can come between
// these polls: the consumer blocks it until the next AllowRebalance.
func (t *sinkTask) gather(cctx context.Context, maxRecords, maxBytes int) []*kgo.Record {
	recs := t.pollOnce(cctx, min(t.cfg.MaxPollRecords, maxRecords))
	if len(recs) == 0 {
		return nil
	}
	size := recordBytes(recs)
	for len(recs) < maxRecords && size < maxBytes && t.client.BufferedFetchRecords() > 0 {
		// What is buffered comes back at once; the short deadline only
		// guards against buffered records the consumer will not return
		// (those of a partition paused since they were fetched).
		mctx, mcancel := context.WithTimeout(cctx, time.Millisecond)
		more := t.pollOnce(mctx, min(t.cfg.MaxPollRecords, maxRecords-len(recs)))
		mcancel()
		if len(more) == 0 {
			break
		}
		recs = append(recs, more...)
		size += recordBytes(more)
	}
	return recs
}

// pollOnce is one PollRecords, its errors logged, or the task failed for
// those that end it (consumeFailure); then no record is returned.
func (t *sinkTask) pollOnce(ctx context.Context, max int) []*kgo.Record {
	fetches := t.client.PollRecords(ctx, max)
	var failure error
	fetches.EachError(func(topic string, partition int32, err error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		if f := consumeFailure(topic, partition, err); f != nil {
			if failure == nil {
				failure = f
			}
			return
		}
		// franz-go retries what can be retried; what reaches here is
		// informational (the KAFKA_CONSUME stage of error handling).
		t.log.Warn("consume error", "topic", topic, "partition", partition, "error", err)
	})
	if failure != nil {
		t.fail(failure)
		return nil
	}
	return fetches.Records()
}

// noCommittedOffset is the text of franz-go's error for a partition that
// has no committed offset when the start offset is AtCommitted (what
// auto.offset.reset=none maps to); the error itself is not exported.
const noCommittedOffset = "partition has no prior committed offset"

// consumeFailure is the task's failure for a fetch error that ends it, as
// the consumer's exception ends a Kafka Connect sink task; nil for the
// others. Under auto.offset.reset=none those are a partition with no
// committed offset (Kafka's NoOffsetForPartitionException) and an offset
// out of range (OffsetOutOfRangeException): franz-go returns them to the
// caller only then, and does not consume the partition.
func consumeFailure(topic string, partition int32, err error) error {
	tp := fmt.Sprintf("%s-%d", topic, partition)
	switch {
	case strings.Contains(err.Error(), noCommittedOffset):
		return fmt.Errorf("%s: consume %s: no committed offset and consumer auto.offset.reset=none: "+
			"NoOffsetForPartitionException: Undefined offset with no reset policy for partitions: [%s]", StageConsume, tp, tp)
	case errors.Is(err, kerr.OffsetOutOfRange):
		return fmt.Errorf("%s: consume %s: fetch position out of range and consumer auto.offset.reset=none: "+
			"OffsetOutOfRangeException: %w", StageConsume, tp, err)
	}
	return nil
}

// recordBytes is the size of the records' keys, values and headers, as
// franz-go counts buffered bytes (convertMore counts it as it goes).
func recordBytes(recs []*kgo.Record) int {
	n := 0
	for _, r := range recs {
		n += len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			n += len(h.Key) + len(h.Value)
		}
	}
	return n
}

// teardown ends the task. A live plugin gets its partitions committed and
// closed and then Stop, within the drain deadline (Stop) or the shutdown
// timeout (failure); then the consumer leaves the group and the process is
// killed. A failure while closing turns a stop into a failure.
func (t *sinkTask) teardown(ctx context.Context, reason error, stopWatching func()) error {
	alive := t.plugin != nil && (reason == nil || !isDeadProcess(reason))
	tctx := ctx
	if reason != nil {
		t.log.Error("task failed", "error", reason)
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(context.Background(), t.cfg.ShutdownTimeout)
		defer cancel()
	}
	t.mu.Lock()
	if alive && t.client != nil && tctx.Err() == nil {
		t.closeAll(tctx)
	}
	t.closed = true
	t.pending = nil
	t.staged = nil
	t.mu.Unlock()
	if reason == nil {
		reason = t.failed()
		alive = reason == nil || !isDeadProcess(reason)
	}
	stopWatching()
	if alive && tctx.Err() == nil {
		cctx, cancel := context.WithTimeout(tctx, t.cfg.CallTimeout)
		if err := t.plugin.Stop(cctx); err != nil {
			t.log.Warn("plugin stop failed; killing it", "error", err)
		}
		cancel()
	} else if reason == nil {
		t.log.Warn("drain did not finish in time; killing the plugin", "timeout", t.cfg.ShutdownTimeout)
	}
	if t.client != nil {
		t.client.AllowRebalance()
		// Close leaves the group with no deadline of its own: a
		// coordinator that does not answer would hold the stop for
		// good. Leaving first, bounded, leaves Close nothing to wait
		// for.
		lctx, cancel := leaveContext(tctx)
		if err := t.client.LeaveGroupContext(lctx); err != nil {
			t.log.Warn("leaving the consumer group did not finish", "error", err)
		}
		cancel()
		t.client.Close()
	}
	if t.plugin != nil {
		if err := killPlugin(t.plugin.Kill, t.plugin.Done()); err != nil {
			t.log.Error("kill plugin", "error", err)
		}
	}
	return reason
}

// leaveGrace is the least time a sink task gives its LeaveGroup, even
// past the drain deadline or once Run's context is cancelled: a member that
// leaves hands its partitions over at once, one that does not holds them
// until its session times out.
const leaveGrace = time.Second

// leaveContext bounds the leave: it ends once ctx has ended and leaveGrace
// has passed, whichever is later.
func leaveContext(ctx context.Context) (context.Context, context.CancelFunc) {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	grace, cancelGrace := context.WithTimeout(context.Background(), leaveGrace)
	// Each end checks the other: whichever comes last cancels.
	stopGrace := context.AfterFunc(grace, func() {
		if ctx.Err() != nil {
			cancel()
		}
	})
	stopCtx := context.AfterFunc(ctx, func() {
		if grace.Err() != nil {
			cancel()
		}
	})
	return lctx, func() {
		stopGrace()
		stopCtx()
		cancelGrace()
		cancel()
	}
}

// setClient records the consumer; the first rebalance callback may run
// before NewClient has returned to run, so it records it too. Holds mu.
func (t *sinkTask) setClient(cl *kgo.Client) {
	if t.client == nil {
		t.client = cl
	}
}

// closeAll commits and closes every open partition (Kafka Connect's
// closeAllPartitions). Holds mu.
func (t *sinkTask) closeAll(ctx context.Context) {
	if len(t.assigned) == 0 {
		return
	}
	tps := t.assignedList()
	if err := t.commit(ctx, tps, true); err != nil {
		t.log.Warn("final commit failed", "error", err)
	}
	cctx, cancel := context.WithTimeout(ctx, t.cfg.CallTimeout)
	defer cancel()
	if err := t.plugin.Close(cctx, &pluginv1.CloseRequest{Partitions: tpsToProto(tps)}); err != nil {
		t.log.Warn("closing partitions failed", "error", err)
		if isDeadProcess(err) {
			t.failUnlessAbandoned(ctx, fmt.Errorf("close: %w", err))
		}
	}
	t.forget(tps)
}

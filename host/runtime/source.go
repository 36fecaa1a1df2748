package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/storage"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// pollRetryBackoff spaces Polls after one answered ABORTED (Kafka Connect
// polls again at once; a short pause keeps a failing task from spinning).
const pollRetryBackoff = 100 * time.Millisecond

// sourceTask runs one source task. The fields after control belong to the
// goroutine in Run, except the tracker (shared with the producer's
// callbacks and the flusher) and closing; the flusher reads plugin and cfg,
// which do not change once the loop runs.
type sourceTask struct {
	*control
	cfg     SourceConfig
	log     hclog.Logger
	tracker *ackTracker
	promise func(*kgo.Record, error)

	plugin    SourcePlugin
	client    *kgo.Client
	nextFlush time.Time
	// flushKick asks the flusher (startFlusher) for an offset flush.
	flushKick chan struct{}
	// batches holds the memory of finished Poll answers for the next
	// ones: their Kafka records here, the answers themselves in answers,
	// which the plugin reads them into (PooledPoller). Both keep as many
	// answers (answerPoolSize) and are emptied together (dropPooled).
	batches batchPool
	answers *wire.PollPool
	// closing is set once the producer's outcome no longer matters (the
	// client is being closed after a failure or a timed-out drain), so
	// the errors of abandoned records do not count as failures.
	closing atomic.Bool
	// handlers run the error handler for records Kafka refused, off the
	// producer's goroutine; hctx ends them when the run ends.
	handlers sync.WaitGroup
	hctx     context.Context
	// quickEmpty counts the answers in a row that came back empty well
	// before the Poll's timeout (loop goroutine only): see pollOnce.
	quickEmpty int
	// admin, with TopicCreation, makes sure the topics exist
	// (ensureTopic; nil until the first topic is checked): created holds
	// those that do, lastTopic the last one a record was sent to. Loop
	// goroutine only.
	admin     *kgo.Client
	created   map[string]struct{}
	lastTopic string
	// started is set once the plugin's Start succeeded: only then does a
	// failure's teardown flush (failTeardown).
	started bool
}

// NewSourceTask validates cfg and returns the task; Run starts it.
func NewSourceTask(cfg SourceConfig) (Task, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	t := &sourceTask{
		control: newControl(cfg.ID, cfg.Listener, cfg.ShutdownTimeout),
		cfg:     cfg,
		log:     cfg.Logger,
		tracker: newAckTracker(),
	}
	n := answerPoolSize(&t.cfg)
	t.batches.max = n
	t.answers = wire.NewPollPool(n)
	t.promise = t.onProduced
	return t, nil
}

// maxPooledAnswers is the most finished Poll answers a task keeps the
// memory of. Batches finish in bursts (a produce response acknowledges
// several at once, the prefix jumps when a slow Kafka partition catches
// up), and a Poll follows each bit of room under MaxInFlightBytes: in
// BenchmarkSourceRunnerPooled (1000 records of 1 KiB per answer, 32 MiB
// in flight) a pool of 4 served about half the Polls, 8 about 70%, 16
// about 85%.
const maxPooledAnswers = 8

// answerPoolSize is how many finished Poll answers' memory a task keeps
// for the next ones, in its batchPool and its wire.PollPool alike: as many
// answers of MaxPollBytes as MaxInFlightBytes holds, at least one, at most
// maxPooledAnswers. What a task keeps for reuse is then about what it may
// have in flight anyway (an answer's copy is at most MaxPollBytes and an
// eighth, its records and Kafka records some hundreds of bytes each), and
// a task configured for little memory keeps little.
func answerPoolSize(cfg *SourceConfig) int {
	n := cfg.MaxInFlightBytes / int64(max(cfg.MaxPollBytes, 1))
	return int(min(max(n, 1), maxPooledAnswers))
}

// dropPooled lets the garbage collector have the memory of finished
// answers: the task has nothing to do for a while (its source had nothing
// to give, or it is paused).
func (t *sourceTask) dropPooled() {
	t.batches.drain()
	t.answers.Drain()
}

func (t *sourceTask) ID() TaskID { return t.cfg.ID }

// Run implements Task.
func (t *sourceTask) Run(ctx context.Context) error {
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

// producerDefaults come before the caller's options, which may override
// them: Kafka Connect's acks=all, plus idempotence (kgo's default, which
// keeps order with several requests in flight), a partitioner that honours a
// record's own partition, no record-count buffer limit (the task bounds
// bytes in flight itself), and the Kafka 4 producer's own defaults where
// franz-go's differ: compression.type=none rather than snappy, and
// linger.ms=5 (KIP-1030) rather than 10 ms. run adds Kafka Connect's
// client id, connector-producer-<connector>-<task>.
func producerDefaults() []kgo.Opt {
	return []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(recordPartitioner()),
		kgo.MaxBufferedRecords(1 << 30),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(kafkaLinger),
	}
}

// kafkaLinger is the Kafka producer's linger.ms default since Kafka 4.0
// (KIP-1030), which Kafka Connect's source producers inherit.
const kafkaLinger = 5 * time.Millisecond

func (t *sourceTask) run(ctx context.Context) error {
	if _, stopping, _ := t.snapshot(); stopping {
		return nil
	}
	opts := append(producerDefaults(), kgo.ClientID(fmt.Sprintf("connector-producer-%s", t.cfg.ID)))
	opts = append(opts, t.cfg.ProducerOpts...)
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("source task %s: create producer: %w", t.cfg.ID, err)
	}
	t.client = client
	if t.cfg.TopicCreation != nil {
		t.created = map[string]struct{}{}
	}
	hctx, hcancel := context.WithCancel(ctx)
	t.hctx = hctx
	defer func() {
		t.closing.Store(true)
		client.Close()
		t.closeAdmin()
		hcancel()
		t.handlers.Wait()
	}()

	p, err := t.cfg.Launch(ctx, &sourceWorker{t: t})
	if err != nil {
		return fmt.Errorf("source task %s: launch plugin: %w", t.cfg.ID, err)
	}
	t.plugin = p
	if pp, ok := p.(PooledPoller); ok {
		pp.UsePollPool(t.answers)
	}
	quit := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() { t.watchProcess(p.Done(), crashError(p), quit) })
	stopWatching := sync.OnceFunc(func() { close(quit); watcher.Wait() })
	defer stopWatching()

	reason := t.start(ctx)
	if reason == nil {
		// A failure abandons the flusher's write at once: the failure's
		// teardown writes the offsets itself, within its own bound.
		fctx, abandonFlush := context.WithCancel(ctx)
		defer abandonFlush()
		stopFlusher := t.startFlusher(fctx)
		defer stopFlusher() // if the loop panics
		reason = t.loop(ctx)
		if reason != nil {
			abandonFlush()
		}
		stopFlusher()
	}
	// No more Polls: batches finished from here on are left to the
	// garbage collector.
	t.batches.close()
	t.answers.Close()
	if reason == nil {
		reason = t.drain(ctx, stopWatching)
	}
	if reason != nil {
		t.failTeardown(reason, stopWatching)
	}
	return reason
}

func (t *sourceTask) start(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, t.cfg.CallTimeout)
	defer cancel()
	resp, err := t.plugin.Start(cctx, &pluginv1.SourceTaskStartRequest{
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
	t.tracker.recordAcks = resp.GetRecordAcks()
	t.nextFlush = time.Now().Add(t.cfg.OffsetFlushInterval)
	t.started = true
	return nil
}

// loop polls and produces until Stop (nil) or a failure (the error).
func (t *sourceTask) loop(ctx context.Context) error {
	for {
		paused, stopping, failure := t.snapshot()
		switch {
		case failure != nil:
			return failure
		case stopping || ctx.Err() != nil:
			return nil
		}
		if t.flushIfDue(ctx) {
			continue
		}
		if paused {
			// PAUSED means nothing more lands in Kafka: records polled
			// before the pause are written (or fail) first.
			if _, n := t.tracker.inflight(); n > 0 {
				t.wait(ctx, time.Until(t.nextFlush), true)
				continue
			}
			// Nothing is in flight, so every batch is finished (the
			// tracker finishes them as the prefix passes, which
			// inflight moved just now, under the lock that counts
			// in-flight records) and none will be until a Poll: a
			// paused task keeps none of their memory.
			t.dropPooled()
			t.report(statePaused)
			t.wait(ctx, time.Until(t.nextFlush), false)
			continue
		}
		t.report(stateRunning)
		if inflight, _ := t.tracker.inflight(); inflight+t.minPollRoom() > t.cfg.MaxInFlightBytes {
			// Backpressure: no Poll until acknowledgements make room
			// for a batch worth asking for.
			t.wait(ctx, time.Until(t.nextFlush), true)
			continue
		}
		if err := t.pollOnce(ctx); err != nil && !errors.Is(err, errStopped) {
			t.fail(err)
		}
	}
}

// flushIfDue starts an offset flush once offset.flush.interval.ms has
// passed since the last one and reports whether it did: the
// acknowledgements go to the plugin, then the flusher stores the offsets
// and calls Commit. Task goroutine only: the loop, and send while it
// waits for room, so that offsets are flushed on schedule as Kafka
// Connect's committer flushes them, whatever the task is waiting for.
func (t *sourceTask) flushIfDue(ctx context.Context) bool {
	if time.Now().Before(t.nextFlush) {
		return false
	}
	t.nextFlush = time.Now().Add(t.cfg.OffsetFlushInterval)
	// An Ack that failed (logged, or the task failed) does not hold the
	// offsets back: Kafka Connect logs a commitRecord that throws and
	// commits the offsets all the same.
	_ = t.sendAcks(ctx)
	t.requestFlush()
	return true
}

// A plugin is to wait up to timeout_ms for a first record. One that
// answers at once with nothing, again and again (a plugin that ignores the
// timeout), would have the task poll it in a tight loop, a core of the
// worker's spent on nothing. From the second such answer in a row the task
// waits before the next Poll: quickEmptyBackoff, doubling up to
// maxQuickEmptyBackoff. An answer with records, or an empty one that took
// a quarter of the timeout or more, ends the streak.
const (
	quickEmptyBackoff    = 10 * time.Millisecond
	maxQuickEmptyBackoff = 100 * time.Millisecond
)

// backOffQuickEmpty counts an empty answer that took took and waits as
// above; Pause, Stop and failures end the wait.
func (t *sourceTask) backOffQuickEmpty(ctx context.Context, took time.Duration) {
	if t.cfg.PollTimeout <= 0 || took >= t.cfg.PollTimeout/4 {
		t.quickEmpty = 0
		return
	}
	t.quickEmpty++
	if t.quickEmpty < 2 {
		return
	}
	if t.quickEmpty == 2 {
		t.log.Warn("the plugin answers polls at once with no records, not waiting for the poll timeout; polling it with a backoff",
			"answered_in", took, "poll_timeout", t.cfg.PollTimeout)
	}
	t.wait(ctx, min(quickEmptyBackoff<<min(t.quickEmpty-2, 4), maxQuickEmptyBackoff), false)
}

// minPollRoom is the room under MaxInFlightBytes a Poll needs: a quarter
// of the bound (or one full batch, if smaller), so that a task at its bound
// does not poll for a record or two each time one is acknowledged.
func (t *sourceTask) minPollRoom() int64 {
	return min(int64(t.cfg.MaxPollBytes), t.cfg.MaxInFlightBytes/4)
}

// wait blocks until something changes: Pause/Resume/Stop/failure, an
// acknowledgement (when acks), ctx, or d.
func (t *sourceTask) wait(ctx context.Context, d time.Duration, acks bool) {
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	var notify chan struct{}
	if acks {
		notify = t.tracker.notify
	}
	select {
	case <-t.wake:
	case <-notify:
	case <-ctx.Done():
	case <-timer.C:
	}
}

// pollOnce asks the plugin for one batch and produces it.
func (t *sourceTask) pollOnce(ctx context.Context) error {
	inflight, _ := t.tracker.inflight()
	maxBytes := min(int64(t.cfg.MaxPollBytes), t.cfg.MaxInFlightBytes-inflight)
	req := &pluginv1.PollRequest{
		MaxRecords: uint32(t.cfg.MaxPollRecords),
		MaxBytes:   uint32(max(maxBytes, 1)),
		TimeoutMs:  uint32(t.cfg.PollTimeout.Milliseconds()),
		Acks:       t.tracker.take(),
	}
	// Only a failure interrupts a Poll: Stop lets it finish (within the
	// drain deadline), so its records and the acknowledgements it carried
	// are not lost between a cancelled call and a live plugin.
	pctx, done := t.interruptible(ctx, false, 0)
	cctx, cancel := context.WithTimeout(pctx, t.cfg.PollTimeout+t.cfg.CallTimeout)
	asked := time.Now()
	batch, err := t.plugin.Poll(cctx, req)
	cancel()
	interrupted := pctx.Err() != nil
	done()
	if err != nil {
		// Acknowledgements are not sent again: a plugin that answered has
		// taken them (the SDK acknowledges before polling), and one that
		// did not answer is gone.
		if interrupted {
			return errStopped
		}
		if wire.KindOf(err) == wire.KindRetriable {
			t.log.Warn("poll failed; will retry", "error", err)
			t.wait(ctx, pollRetryBackoff, false)
			return nil
		}
		return fmt.Errorf("poll: %w", err)
	}
	if batch.Len() == 0 {
		// Nothing to give: the task may stay idle long, and its free
		// batches are the garbage collector's.
		batch.Release()
		t.dropPooled()
		t.backOffQuickEmpty(ctx, time.Since(asked))
		return nil
	}
	t.quickEmpty = 0
	if batch.FirstSeq() == 0 {
		return &wire.Error{Kind: wire.KindFatal, Message: "poll: a batch with records has first_seq 0 (sequence numbers start at 1)"}
	}
	if batch.Len() > int(req.MaxRecords) {
		return &wire.Error{Kind: wire.KindInvalid, Message: fmt.Sprintf("poll: the answer has %d records, more than the %d asked for", batch.Len(), req.MaxRecords)}
	}
	recs, wc, err := batch.Records()
	if err != nil {
		return &wire.Error{Kind: wire.KindInvalid, Message: fmt.Sprintf("poll: decode records: %v", err)}
	}
	// The batch's Kafka records and their bookkeeping, from a finished
	// batch when there is one.
	b := t.batches.get(ctx, len(recs))
	b.answer = batch
	coords := b.coords
	for i, c := range wc {
		coords[i] = sourceCoords{partition: c.Partition, offset: c.Offset}
	}
	h0, err := t.tracker.add(batch.FirstSeq(), coords, b)
	if err != nil {
		return &wire.Error{Kind: wire.KindFatal, Message: "poll: " + err.Error()}
	}
	// Once the last record is sent, b may be finished and handed out
	// again by the next Poll: nothing after the loop touches it.
	// The slab's records are clear (finish cleared them, or they are new).
	for i, r := range recs {
		kr, m := &b.slab[i], &b.meta[i]
		// Not m.Context: see sourceBatch.
		m.h, m.r, m.c, m.b = h0+uint64(i), r, coords[i], b
		if err := t.send(ctx, kr, m); err != nil {
			return err
		}
	}
	return nil
}

// A Poll answer's memory — the copy of the answer the records were decoded
// from and the decoded records (wire.PollBatch), the Kafka records made of
// them and their bookkeeping — is reused for a later answer once the batch
// is finished: the acknowledged prefix (ackTracker) has passed its last
// record, so every record of it is acknowledged, and so is every record
// before it. Until then, these hold references into it:
//
//   - the tracker: each record's source partition and offset JSON, until
//     the record joins the prefix; the partition is then copied into the
//     offsets map's key and the offset into the tracker's own buffer
//     (pendingOffset), so nothing of the batch waits for the offset flush;
//   - franz-go: the kgo.Record (its key, value and headers alias the
//     answer; its Context is the record's produced) from Produce until its
//     promise returns, retries included; it keeps no reference to the
//     record once the promise has run. ack reads the produced record
//     (topic, partition, offset) before it returns. But franz-go may keep
//     the record's Context, the produced, longer and call its Done and Err
//     (the goroutine that waits for a new topic's metadata, a produce
//     request's or the producer id's head-of-line context), so a produced's
//     embedded Context, the run's, is written once, when its slab is made,
//     and never rewritten;
//   - transforms and converters: during send only (they return a record or
//     bytes for the kgo.Record and keep none of the input; their caches
//     hold schemas, which are decoded per batch, never the answer's bytes);
//   - strings are not the answer's: TakePollPooled copies topics, header
//     keys and string values, so the RecordAcks waiting for the plugin,
//     franz-go's topic maps and the worker's topic tracker may keep them;
//   - the error handler: a reporter may keep what it was given (a dead
//     letter queue write in flight, a log), so a batch any of whose records
//     went to it (recover, produceFailed) is kept: never reused, left to
//     the garbage collector;
//   - a task that stops or fails with records in flight: those records are
//     never acknowledged, so their batches never finish, and batches that
//     finish after the last Poll are dropped (batchPool.close,
//     wire.PollPool.Close).
//
// A finished batch keeps no reference into the answer (finish clears its
// Kafka records, bookkeeping and coordinates), so memory either pool drops
// is freed. The pools are emptied when the task pauses, when its source
// has nothing to give, and when it stops.

// sourceBatch is one Poll answer's memory from Poll to its finish.
type sourceBatch struct {
	pool   *batchPool
	answer *wire.PollBatch
	slab   []kgo.Record
	meta   []produced
	coords []sourceCoords
	// keep is set when a record of the batch went to the error handler:
	// the batch is then never reused.
	keep atomic.Bool
}

// finish runs once the prefix has passed the batch's last record: nothing
// uses the Kafka records and their bookkeeping any more (franz-go is done
// with a record once its promise has run). It clears every reference they
// hold into the answer, which goes back to its pool, but not a produced's
// Context (see above).
func (b *sourceBatch) finish() {
	if b.keep.Load() {
		return
	}
	clear(b.slab)
	for i := range b.meta {
		m := &b.meta[i]
		m.r, m.c, m.b = nil, sourceCoords{}, nil
	}
	clear(b.coords)
	b.answer.Release()
	b.answer = nil
	b.pool.put(b)
}

// batchPool is a task's free list of finished batches (the answer's memory
// goes back to the task's wire.PollPool, which Release finds). It keeps at
// most max (answerPoolSize), and none while the task has nothing to do
// (drain).
type batchPool struct {
	mu     sync.Mutex
	free   []*sourceBatch
	max    int
	closed bool
}

// get returns a batch with room for n records whose produced carry ctx,
// the run's (a task runs once, so every batch of a pool carries the same).
func (p *batchPool) get(ctx context.Context, n int) *sourceBatch {
	p.mu.Lock()
	var b *sourceBatch
	if k := len(p.free); k > 0 {
		b, p.free[k-1] = p.free[k-1], nil
		p.free = p.free[:k-1]
	}
	p.mu.Unlock()
	if b == nil {
		b = &sourceBatch{pool: p}
	}
	if cap(b.slab) < n {
		b.slab = make([]kgo.Record, n)
		b.meta = make([]produced, n)
		for i := range b.meta {
			b.meta[i].Context = ctx
		}
		b.coords = make([]sourceCoords, n)
	}
	b.slab, b.meta, b.coords = b.slab[:n], b.meta[:n], b.coords[:n]
	return b
}

// put keeps b for a later get, unless the pool is full or closed.
func (p *batchPool) put(b *sourceBatch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && len(p.free) < p.max {
		p.free = append(p.free, b)
	}
}

// drain empties the pool.
func (p *batchPool) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.free)
	p.free = p.free[:0]
}

// close empties the pool and makes it drop what it is given.
func (p *batchPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	clear(p.free)
	p.free = nil
}

// produced is a record's bookkeeping from Poll to acknowledgement. It rides
// in the Kafka record's Context (franz-go's field for enriching records),
// so one promise function serves every record and nothing is allocated per
// record. Its embedded context is the run's, which franz-go consults for
// cancellation as it would the Produce argument.
type produced struct {
	context.Context
	h uint64
	r *data.SourceRecord
	c sourceCoords
	b *sourceBatch
}

// sourceCoords are a record's source partition and offset, as the JSON the
// plugin sent (wire.PollBatch.Records): the runner stores them as they are
// (canonical JSON at flush time), and decoding them into maps for every
// record cost more than all the rest the runner does per record. A source
// partition is checked to be a JSON object where it differs from the
// previous record's; offsets are checked when stored (only the latest per
// partition is), and an invalid one fails the task then. The records'
// SourcePartition and SourceOffset maps stay nil; withCoords fills them
// when a record is reported.
type sourceCoords struct {
	partition, offset []byte
}

// withCoords returns r with its source partition and offset maps decoded,
// for error reports.
func withCoords(r *data.SourceRecord, c sourceCoords) *data.SourceRecord {
	out := *r
	out.SourcePartition, _ = wire.DecodeJSONMap(c.partition)
	out.SourceOffset, _ = wire.DecodeJSONMap(c.offset)
	return &out
}

// send transforms, converts and produces one record into kr. Records
// dropped by a transform (or skipped by error tolerance) are acknowledged
// as not written.
func (t *sourceTask) send(ctx context.Context, kr *kgo.Record, m *produced) error {
	dropped, stage, err := t.prepare(&m.r.Record, kr)
	if err != nil {
		if dropped, err = t.recover(ctx, kr, m, stage, err); err != nil {
			return err
		}
	}
	if dropped {
		t.tracker.ack(m.h, nil)
		return nil
	}
	if t.cfg.TopicCreation != nil && kr.Topic != t.lastTopic {
		if err := t.ensureTopic(ctx, kr.Topic); err != nil {
			return err
		}
	}
	kr.Context = m
	// The source partition and offset are held (in the answer's memory)
	// until the record is acknowledged, as its key and value are.
	size := int64(recordSize(kr) + len(m.c.partition) + len(m.c.offset))
	for !t.tracker.tryProduce(m.h, size, t.cfg.MaxInFlightBytes) {
		// No room: wait for acknowledgements (backpressure inside a
		// batch), flushing the offsets of those that came on schedule.
		if _, stopping, failure := t.snapshot(); stopping || failure != nil || ctx.Err() != nil {
			return errStopped
		}
		t.flushIfDue(ctx)
		t.wait(ctx, time.Until(t.nextFlush), true)
	}
	t.client.Produce(ctx, kr, t.promise)
	return nil
}

// prepare transforms and converts a polled record into kr; dropped says a
// transform dropped it.
func (t *sourceTask) prepare(r *data.Record, kr *kgo.Record) (dropped bool, stage Stage, err error) {
	if t.cfg.Transforms != nil {
		out, err := t.cfg.Transforms.Apply(r)
		if err != nil {
			return false, StageTransformation, err
		}
		if out == nil {
			return true, "", nil
		}
		r = out
	}
	stage, err = t.toKafka(r, kr)
	return false, stage, err
}

// onProduced is the promise of every produced record.
func (t *sourceTask) onProduced(kr *kgo.Record, err error) {
	m := kr.Context.(*produced)
	if err != nil {
		t.produceFailed(m, err)
		return
	}
	t.tracker.ack(m.h, kr)
}

// recover hands a record that failed at stage to the error handler, with a
// retry of prepare. It reports whether the record is to be acknowledged as
// not written (skipped, or dropped by a transform once a retry got
// through); an error fails the task.
func (t *sourceTask) recover(ctx context.Context, kr *kgo.Record, m *produced, stage Stage, err error) (bool, error) {
	err = fmt.Errorf("%s: %w", stage, err)
	if t.cfg.Errors == nil {
		return false, err
	}
	m.b.keep.Store(true) // the error handler may keep the record
	passed, dropped := false, false
	retry := func(context.Context) (Stage, error) {
		var st Stage
		var e error
		dropped, st, e = t.prepare(&m.r.Record, kr)
		passed = e == nil
		return st, e
	}
	if herr := t.cfg.Errors.Handle(ctx, ErrantRecord{Stage: stage, Err: err, Source: withCoords(m.r, m.c), Retry: retry}); herr != nil {
		if ctx.Err() != nil {
			return false, errStopped
		}
		return false, herr
	}
	return !passed || dropped, nil
}

// produceFailed runs on a producer goroutine when Kafka refused a record
// after the client's own retries. The error handler may wait (retry
// backoff, a dead letter queue write), so it runs on a goroutine of its
// own rather than on the producer's, which runs every record's promise;
// the record stays in flight until it is settled.
func (t *sourceTask) produceFailed(m *produced, err error) {
	// Whatever follows, the batch is not reused: the error handler may
	// keep the record, and franz-go may fail a batch while a request
	// with it is still being written.
	m.b.keep.Store(true)
	if t.closing.Load() || m.Context.Err() != nil {
		// Abandoned: the run is over and the record was never acknowledged.
		return
	}
	err = fmt.Errorf("%s: write to topic %s: %w", StageProduce, m.r.Topic, err)
	if t.cfg.Errors == nil {
		t.fail(err)
		return
	}
	t.handlers.Go(func() { t.handleProduceFailure(t.hctx, m, err) })
}

// handleProduceFailure settles a record Kafka refused: reported and
// skipped (acknowledged as not written), or the task fails. It is not
// written again: the producer already retried what it could (retries,
// delivery.timeout.ms), and a second write from here would land behind
// the records of its partition produced since, or swap with another
// refused one. Kafka Connect does not retry a failed send either: with
// errors.tolerance=all it reports the failure and moves on (KIP-779).
func (t *sourceTask) handleProduceFailure(ctx context.Context, m *produced, err error) {
	if herr := t.cfg.Errors.Handle(ctx, ErrantRecord{Stage: StageProduce, Err: err, Source: withCoords(m.r, m.c)}); herr != nil {
		if ctx.Err() == nil && !t.closing.Load() {
			t.fail(herr)
		}
		return
	}
	t.tracker.ack(m.h, nil)
}

// toKafka converts a record. Raw keys, values and header values bypass the
// converters: they are bytes the connector already serialized.
func (t *sourceTask) toKafka(r *data.Record, kr *kgo.Record) (Stage, error) {
	if r.Topic == "" {
		return StageProduce, errors.New("record has no topic")
	}
	kr.Topic, kr.Partition, kr.Timestamp = r.Topic, -1, r.Timestamp
	if r.Partition != data.NoPartition {
		if r.Partition < 0 {
			return StageProduce, fmt.Errorf("invalid partition %d", r.Partition)
		}
		kr.Partition = r.Partition
	}
	if len(r.Headers) > 0 {
		kr.Headers = make([]kgo.RecordHeader, len(r.Headers))
		for i, hd := range r.Headers {
			kr.Headers[i].Key = hd.Key
			if raw, ok := hd.Value.(data.Raw); ok {
				kr.Headers[i].Value = raw
				continue
			}
			b, err := t.cfg.HeaderConverter.FromConnectHeader(r.Topic, hd.Key, hd.Schema, hd.Value)
			if err != nil {
				return StageHeaderConverter, fmt.Errorf("header %s: %w", hd.Key, err)
			}
			kr.Headers[i].Value = b
		}
	}
	var err error
	if raw, ok := r.Key.(data.Raw); ok {
		kr.Key = raw
	} else if kr.Key, err = t.cfg.KeyConverter.FromConnectData(r.Topic, r.Headers, r.KeySchema, r.Key); err != nil {
		return StageKeyConverter, err
	}
	if raw, ok := r.Value.(data.Raw); ok {
		kr.Value = raw
	} else if kr.Value, err = t.cfg.ValueConverter.FromConnectData(r.Topic, r.Headers, r.ValueSchema, r.Value); err != nil {
		return StageValueConverter, err
	}
	return "", nil
}

// minRecordCharge is the least a record counts against MaxInFlightBytes.
// The worker keeps some hundreds of bytes per record in flight (its Kafka
// record, its bookkeeping, the decoded record) whatever its size: records
// with no key, value or headers, counted as nothing, would be polled
// without bound while Kafka does not acknowledge them.
const minRecordCharge = 256

// recordSize is what a record counts against MaxInFlightBytes.
func recordSize(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return max(n, minRecordCharge)
}

// flush delivers pending acknowledgements, stores the acknowledged prefix's
// offsets and, when that worked, calls the plugin's Commit
// (SourceTask.commit follows every offset flush, even an empty one).
// The drain flushes this way, once the flusher has stopped; while the task
// runs, the loop sends the acknowledgements and the flusher does the rest.
// An Ack that failed without failing the task does not keep the offsets
// from being stored (see flushIfDue).
func (t *sourceTask) flush(ctx context.Context) {
	_ = t.sendAcks(ctx)
	if t.failed() == nil {
		t.commitOffsets(ctx, context.Background())
	}
}

// sendAcks delivers the acknowledgements no Poll has carried yet. It runs
// on the task goroutine only, so that acknowledgements reach the plugin in
// the order they were taken. It returns the call's error, already handled
// (callFailed): a dead plugin has failed the task, anything else is logged.
func (t *sourceTask) sendAcks(ctx context.Context) error {
	ab := t.tracker.take()
	if ab == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, t.cfg.CallTimeout)
	err := t.plugin.Ack(cctx, &pluginv1.AckRequest{Acks: ab})
	cancel()
	if err != nil {
		t.callFailed(ctx, "ack", err)
	}
	return err
}

// commitOffsets stores the acknowledged prefix's offsets (within
// storeCtx, see storeOffsetsWithin) and, when that worked, calls the
// plugin's Commit.
func (t *sourceTask) commitOffsets(ctx, storeCtx context.Context) {
	if !t.storeOffsetsWithin(storeCtx) {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, t.cfg.CallTimeout)
	err := t.plugin.Commit(cctx)
	cancel()
	if err != nil {
		t.callFailed(ctx, "commit", err)
	}
}

// startFlusher starts the goroutine that stores offsets and calls Commit
// while the loop runs, as Kafka Connect's offset committer thread does:
// writing the offsets (a file written and synced, or a topic) and the
// plugin's Commit take milliseconds, in which the loop goes on polling and
// producing. The loop asks for a flush with flushKick. The returned
// function stops the goroutine, waiting for a flush that runs, before the
// drain's own last flush.
func (t *sourceTask) startFlusher(ctx context.Context) (stop func()) {
	t.flushKick = make(chan struct{}, 1)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-quit:
				return
			case <-t.flushKick:
				// The write ends with the run's context too: a stop
				// does not wait on a store that does not answer (the
				// drain deadline, a hard stop); the drain writes what
				// this one could not.
				t.commitOffsets(ctx, ctx)
				// A flush asked for while this one ran is dropped: as
				// Kafka Connect's committer (a fixed delay between
				// flushes), a store slower than the interval is not
				// written back to back; the loop asks again an interval
				// later.
				select {
				case <-t.flushKick:
				default:
				}
			}
		}
	})
	return sync.OnceFunc(func() {
		close(quit)
		wg.Wait()
	})
}

// requestFlush asks the flusher for a flush without waiting for it.
func (t *sourceTask) requestFlush() {
	select {
	case t.flushKick <- struct{}{}:
	default: // one is already asked for
	}
}

// callFailed handles the failure of a call whose failure Kafka Connect only
// logs (commit, acknowledgements): a dead plugin fails the task, anything
// else is logged.
func (t *sourceTask) callFailed(ctx context.Context, what string, err error) {
	if isDeadProcess(err) && ctx.Err() == nil {
		t.fail(fmt.Errorf("%s: %w", what, err))
		return
	}
	t.log.Error("plugin call failed", "call", what, "error", err)
}

// storeOffsets writes the acknowledged prefix's offsets. It has its own
// deadline, independent of the run's context, so the final flush of a
// drain that ran out of time still happens. It reports success.
func (t *sourceTask) storeOffsets() bool {
	return t.storeOffsetsWithin(context.Background())
}

// storeOffsetsWithin is storeOffsets, its write also ended by parent.
func (t *sourceTask) storeOffsetsWithin(parent context.Context) bool {
	offs := t.tracker.takeOffsets()
	if len(offs) == 0 {
		return true
	}
	entries, err := canonicalOffsets(offs)
	if err != nil {
		t.fail(&wire.Error{Kind: wire.KindInvalid, Message: fmt.Sprintf("store source offsets: %v", err)})
	}
	if len(entries) == 0 {
		return err == nil
	}
	ctx, cancel := context.WithTimeout(parent, t.cfg.OffsetFlushTimeout)
	defer cancel()
	if err := t.cfg.Offsets.Set(ctx, t.cfg.ID.Connector, entries); err != nil {
		t.tracker.restoreOffsets(offs)
		t.log.Error("storing source offsets failed; will retry at the next flush", "error", err)
		return false
	}
	return true
}

// failedFlush is a failed task's last flush with a live plugin: the
// pending acknowledgements, the offsets, then Commit if they were stored
// and the plugin is still there.
func (t *sourceTask) failedFlush(ctx context.Context) {
	// The write is bounded by the teardown's ctx; failTeardown writes
	// again, on its own deadline, what this one could not.
	if err := t.sendAcks(ctx); isDeadProcess(err) || !t.storeOffsetsWithin(ctx) {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, t.cfg.CallTimeout)
	defer cancel()
	if err := t.plugin.Commit(cctx); err != nil {
		t.log.Warn("plugin commit failed", "error", err)
	}
}

// canonicalOffsets turns the tracker's offsets into store entries with
// canonical JSON. Two spellings of one partition keep the later offset.
func canonicalOffsets(offs map[string]*pendingOffset) ([]storage.OffsetEntry, error) {
	type entry struct {
		seq    uint64
		offset []byte
	}
	byPartition := make(map[string]entry, len(offs))
	var errs []error
	for raw, p := range offs {
		cp, err := storage.CanonicalJSON([]byte(raw))
		if err != nil {
			errs = append(errs, fmt.Errorf("source partition %s: %w", raw, err))
			continue
		}
		var co []byte
		if len(p.offset) > 0 {
			if co, err = storage.CanonicalJSON(p.offset); err != nil {
				errs = append(errs, fmt.Errorf("source offset %s: %w", p.offset, err))
				continue
			}
			// An offset is a map in Kafka Connect, as a partition is
			// (checked as the answer is read): a number or an array
			// stored here could be read back by no task.
			if co[0] != '{' && string(co) != "null" {
				errs = append(errs, fmt.Errorf("source offset %.40s of source partition %s: not a JSON object", co, raw))
				continue
			}
		}
		if cur, ok := byPartition[string(cp)]; !ok || cur.seq < p.seq {
			byPartition[string(cp)] = entry{p.seq, co}
		}
	}
	out := make([]storage.OffsetEntry, 0, len(byPartition))
	for part, e := range byPartition {
		out = append(out, storage.OffsetEntry{Partition: []byte(part), Offset: e.offset})
	}
	return out, errors.Join(errs...)
}

// drain is the stop handshake of plugin.proto: no more polling; wait,
// bounded by the drain deadline (ctx), for what is in flight; send the last
// acknowledgements; store offsets; Commit; Stop; kill. If the deadline
// passes first, the offsets of what was acknowledged are still stored and
// the process is killed. A failure during the drain (a record Kafka
// refused, a crash) is returned for failTeardown.
func (t *sourceTask) drain(ctx context.Context, stopWatching func()) error {
	if err := t.client.Flush(ctx); err == nil {
		for {
			if _, n := t.tracker.inflight(); n == 0 || ctx.Err() != nil || t.failed() != nil {
				break
			}
			t.wait(ctx, time.Hour, true)
		}
	}
	if f := t.failed(); f != nil {
		return f
	}
	if ctx.Err() != nil {
		t.closing.Store(true)
		t.storeOffsets()
		t.log.Warn("drain did not finish in time; killing the plugin", "timeout", t.cfg.ShutdownTimeout)
	} else {
		t.flush(ctx)
		if f := t.failed(); f != nil {
			return f
		}
		// From here on the process is expected to go away.
		stopWatching()
		if err := t.plugin.Stop(ctx); err != nil {
			t.log.Warn("plugin stop failed; killing it", "error", err)
		}
	}
	stopWatching()
	t.closing.Store(true)
	if err := killPlugin(t.plugin.Kill, t.plugin.Done()); err != nil {
		t.log.Error("kill plugin", "error", err)
	}
	return nil
}

// failTeardown ends a failed task as Kafka Connect ends one (its final
// offset commit, then the task's stop): the offsets of the acknowledged
// prefix are stored (what was acknowledged stays safe whatever failed
// after it); a live plugin that started first hears of every record in
// that prefix (commitRecord), then gets Commit once they are stored, and
// any live plugin then gets Stop, all bounded by the shutdown timeout;
// and the process is killed.
func (t *sourceTask) failTeardown(reason error, stopWatching func()) {
	t.closing.Store(true)
	stopWatching()
	t.log.Error("task failed", "error", reason)
	if t.plugin != nil && !isDeadProcess(reason) {
		ctx, cancel := context.WithTimeout(context.Background(), t.cfg.ShutdownTimeout)
		if t.started {
			t.failedFlush(ctx)
		}
		if err := t.plugin.Stop(ctx); err != nil {
			t.log.Warn("plugin stop failed", "error", err)
		}
		cancel()
	}
	t.storeOffsets()
	if t.plugin != nil {
		if err := killPlugin(t.plugin.Kill, t.plugin.Done()); err != nil {
			t.log.Error("kill plugin", "error", err)
		}
	}
}

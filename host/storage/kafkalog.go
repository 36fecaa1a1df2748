package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// LogConfig configures a KafkaLog.
type LogConfig struct {
	// Topic is the compacted topic the log reads and writes.
	Topic string
	// ClientOpts reach the cluster: seed brokers, TLS, SASL, client id. The
	// log adds its own consume and produce options after them.
	ClientOpts []kgo.Opt
	// ReadCommitted reads with isolation.level=read_committed, as Kafka
	// Connect's config and offset stores do when exactly-once source support
	// is on; end offsets are then last stable offsets.
	ReadCommitted bool
	// NoRecordRetries fails a write on its first error instead of letting
	// the client retry it, so the caller can decide whether the write is
	// still wanted (the status store drops stale statuses instead of
	// re-sending them, as Kafka Connect's does).
	NoRecordRetries bool
	// Logger receives the log's warnings; nil discards them.
	Logger hclog.Logger
}

// InternalClientID is the client id of an internal store's Kafka client, as
// Kafka Connect names them: "<group.id>[-<client.id>]-<store>" with store
// "configs", "offsets" or "statuses", and "connect" for an empty group.id.
// Pass it in LogConfig.ClientOpts with kgo.ClientID.
func InternalClientID(groupID, clientID, store string) string {
	base := groupID
	if base == "" {
		base = "connect"
	}
	if clientID != "" {
		base += "-" + clientID
	}
	return base + "-" + store
}

// ErrLogClosed is returned by the calls of a KafkaLog after Close.
var ErrLogClosed = errors.New("kafka log closed")

// KafkaLog is a compacted topic read as a log, Kafka Connect's
// KafkaBasedLog: Start reads every partition from its beginning up to the end
// offsets found at start, handing each record to the consume function, and
// then keeps following the topic; ReadToEnd waits until everything written
// before the call has been handed over; Send writes keyed records, a nil
// value being a tombstone.
//
// Records are partitioned as Java's producer partitions keyed records:
// toPositive(murmur2(key)) % partitions, so a key lands on the partition a
// Java worker would choose. Writes are not idempotent (Kafka Connect's
// internal producers disable idempotence so the worker needs no
// IDEMPOTENT_WRITE ACL); with one request in flight per broker they still
// keep their order.
//
// The consume function runs on the log's own goroutine, one record at a
// time, in offset order per partition. It must not call ReadToEnd (which
// waits for that goroutine).
type KafkaLog struct {
	cfg     LogConfig
	logger  hclog.Logger
	consume func(*kgo.Record)

	cl  *kgo.Client
	adm *kadm.Client

	mu      sync.Mutex
	pos     map[int32]int64 // next offset to hand over, per partition
	waiters []*endWaiter
	started bool
	closed  bool

	stop context.CancelFunc
	done chan struct{}
}

type endWaiter struct {
	target map[int32]int64
	ch     chan struct{}
}

// NewKafkaLog prepares a log; nothing is read or written before Start.
func NewKafkaLog(cfg LogConfig, consume func(*kgo.Record)) *KafkaLog {
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &KafkaLog{cfg: cfg, logger: logger, consume: consume, done: make(chan struct{})}
}

// Start connects, reads the whole topic to the end offsets it finds now and
// then follows the topic in the background until Close. The topic must exist
// (EnsureTopics creates it). Start is called once, before the other
// methods; when it fails the log is closed.
func (l *KafkaLog) Start(ctx context.Context) error {
	if err := l.start(ctx); err != nil {
		l.Close()
		return fmt.Errorf("start log %s: %w", l.cfg.Topic, err)
	}
	return nil
}

func (l *KafkaLog) start(ctx context.Context) error {
	l.mu.Lock()
	if l.started || l.closed {
		l.mu.Unlock()
		return errors.New("already started or closed")
	}
	l.started = true
	l.mu.Unlock()

	opts := append(slices.Clone(l.cfg.ClientOpts),
		kgo.DefaultProduceTopic(l.cfg.Topic),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.DisableIdempotentWrite(),
		kgo.KeepControlRecords(),
	)
	if l.cfg.ReadCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if l.cfg.NoRecordRetries {
		opts = append(opts, kgo.RecordRetries(0))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.cl, l.adm = cl, kadm.NewClient(cl)
	l.mu.Unlock()

	starts, err := listOffsetsRetrying(ctx, func(ctx context.Context) (kadm.ListedOffsets, error) {
		return l.adm.ListStartOffsets(ctx, l.cfg.Topic)
	})
	if err != nil {
		return fmt.Errorf("list start offsets: %w", err)
	}
	pos := map[int32]int64{}
	assign := map[int32]kgo.Offset{}
	starts.Each(func(o kadm.ListedOffset) {
		if o.Topic == l.cfg.Topic && o.Partition >= 0 {
			pos[o.Partition] = o.Offset
			assign[o.Partition] = kgo.NewOffset().At(o.Offset)
		}
	})
	if len(pos) == 0 {
		return kerr.UnknownTopicOrPartition
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{l.cfg.Topic: assign})

	loopCtx, cancel := context.WithCancel(context.Background())
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		cancel()
		return ErrLogClosed
	}
	l.pos = pos
	l.stop = cancel
	l.mu.Unlock()
	go l.run(loopCtx)

	if err := l.ReadToEnd(ctx); err != nil {
		return fmt.Errorf("initial read: %w", err)
	}
	return nil
}

// Partitions returns the number of partitions the log reads (fixed at Start).
func (l *KafkaLog) Partitions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pos)
}

// run is the consume loop; Close stops it.
func (l *KafkaLog) run(ctx context.Context) {
	defer close(l.done)
	for {
		fs := l.cl.PollFetches(ctx)
		if fs.IsClientClosed() || ctx.Err() != nil {
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				l.logger.Warn("read internal topic", "topic", topic, "partition", p, "error", err)
			}
		})
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			for _, r := range p.Records {
				// Control records (transaction markers a Java worker with
				// exactly-once writes) carry no data but do take an
				// offset; handing nothing over for them still advances
				// the position, or ReadToEnd would wait forever on a
				// topic ending in a marker.
				if !r.Attrs.IsControl() {
					l.consume(r)
				}
			}
			l.advance(p.Partition, p.Records[len(p.Records)-1].Offset+1)
		})
	}
}

func (l *KafkaLog) advance(partition int32, next int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if next > l.pos[partition] {
		l.pos[partition] = next
	}
	kept := l.waiters[:0]
	for _, w := range l.waiters {
		if l.reachedLocked(w.target) {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	clear(l.waiters[len(kept):])
	l.waiters = kept
}

func (l *KafkaLog) reachedLocked(target map[int32]int64) bool {
	for p, end := range target {
		if l.pos[p] < end {
			return false
		}
	}
	return true
}

// ReadToEnd returns once every record written to the topic before the call
// (every record below the end offsets it reads now) has been handed to the
// consume function.
func (l *KafkaLog) ReadToEnd(ctx context.Context) error {
	if err := l.check(); err != nil {
		return err
	}
	var (
		ends kadm.ListedOffsets
		err  error
	)
	ends, err = listOffsetsRetrying(ctx, func(ctx context.Context) (kadm.ListedOffsets, error) {
		if l.cfg.ReadCommitted {
			return l.adm.ListCommittedOffsets(ctx, l.cfg.Topic)
		}
		return l.adm.ListEndOffsets(ctx, l.cfg.Topic)
	})
	if err != nil {
		return fmt.Errorf("read %s to end: list end offsets: %w", l.cfg.Topic, err)
	}
	w := &endWaiter{target: map[int32]int64{}, ch: make(chan struct{})}
	l.mu.Lock()
	ends.Each(func(o kadm.ListedOffset) {
		// Partitions added after Start are not read, as in Kafka Connect.
		if _, ok := l.pos[o.Partition]; ok && o.Topic == l.cfg.Topic {
			w.target[o.Partition] = o.Offset
		}
	})
	if l.reachedLocked(w.target) {
		l.mu.Unlock()
		return nil
	}
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()

	select {
	case <-w.ch:
		return nil
	case <-l.done:
		return fmt.Errorf("read %s to end: %w", l.cfg.Topic, ErrLogClosed)
	case <-ctx.Done():
		l.mu.Lock()
		if i := slices.Index(l.waiters, w); i >= 0 {
			l.waiters = slices.Delete(l.waiters, i, i+1)
		}
		l.mu.Unlock()
		return fmt.Errorf("read %s to end: %w", l.cfg.Topic, ctx.Err())
	}
}

func (l *KafkaLog) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrLogClosed
	case l.pos == nil:
		return fmt.Errorf("kafka log %s: not started", l.cfg.Topic)
	}
	return nil
}

// Entry is one record to write: a nil Value is a tombstone.
type Entry struct {
	Key, Value []byte
}

// Send writes the entries in order and returns when the broker has
// acknowledged all of them, or with the first error. When ctx ends first,
// Send returns its error; records already handed to the client may still be
// written.
func (l *KafkaLog) Send(ctx context.Context, entries ...Entry) error {
	if err := l.check(); err != nil {
		return err
	}
	results := make(chan error, len(entries))
	for _, e := range entries {
		l.cl.Produce(ctx, &kgo.Record{Key: e.Key, Value: e.Value}, func(_ *kgo.Record, err error) {
			results <- err
		})
	}
	var first error
	for range entries {
		select {
		case err := <-results:
			if err != nil && first == nil {
				first = err
			}
		case <-ctx.Done():
			return fmt.Errorf("write to %s: %w", l.cfg.Topic, ctx.Err())
		}
	}
	if first != nil {
		return fmt.Errorf("write to %s: %w", l.cfg.Topic, first)
	}
	return nil
}

// SendAsync writes one entry without waiting; done (optional) receives the
// outcome on a client goroutine and must not block.
func (l *KafkaLog) SendAsync(ctx context.Context, e Entry, done func(*kgo.Record, error)) {
	if err := l.check(); err != nil {
		if done != nil {
			done(nil, err)
		}
		return
	}
	l.cl.Produce(ctx, &kgo.Record{Key: e.Key, Value: e.Value}, done)
}

// Flush waits for every write handed to the log so far.
func (l *KafkaLog) Flush(ctx context.Context) error {
	if err := l.check(); err != nil {
		return err
	}
	if err := l.cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush writes to %s: %w", l.cfg.Topic, err)
	}
	return nil
}

// Close stops following the topic and closes the client; writes not yet
// acknowledged fail. Close waits for the consume goroutine and may be called
// more than once.
func (l *KafkaLog) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	running := l.stop != nil
	cl := l.cl
	l.mu.Unlock()
	if running {
		l.stop()
	}
	if cl != nil {
		cl.Close()
	}
	if running {
		<-l.done
	}
}

// listOffsetsRetrying lists offsets, retrying retriable broker errors (a
// leader election, a broker briefly fenced) with a growing backoff until
// ctx ends, as Kafka Connect's KafkaBasedLog does: a worker must not give
// up at start-up on an error that passes in a second.
func listOffsetsRetrying(ctx context.Context, list func(context.Context) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
	if _, ok := ctx.Deadline(); !ok {
		// An error that stays retriable (a topic that never appears) must
		// still end in an error, not a worker that hangs at start.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	backoff := 50 * time.Millisecond
	for {
		offs, err := list(ctx)
		if err == nil {
			err = offs.Error()
		}
		if err == nil || !kerr.IsRetriable(err) || ctx.Err() != nil {
			return offs, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return offs, err
		case <-t.C:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

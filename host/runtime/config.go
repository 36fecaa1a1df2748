package runtime

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/storage"
)

// Defaults, under the Kafka Connect settings they stand for.
const (
	// DefaultOffsetFlushInterval is offset.flush.interval.ms.
	DefaultOffsetFlushInterval = 60 * time.Second
	// DefaultOffsetFlushTimeout is offset.flush.timeout.ms.
	DefaultOffsetFlushTimeout = 5 * time.Second
	// DefaultShutdownTimeout is task.shutdown.graceful.timeout.ms.
	DefaultShutdownTimeout = 5 * time.Second
	// DefaultCallTimeout bounds a plugin call (other than Poll's own wait).
	DefaultCallTimeout = 30 * time.Second
	// DefaultPollTimeout is how long a Poll waits for the first record.
	DefaultPollTimeout = time.Second
	// DefaultSourceMaxPollRecords bounds a source Poll batch.
	DefaultSourceMaxPollRecords = 1000
	// DefaultMaxPollBytes bounds the encoded size of a source Poll batch.
	DefaultMaxPollBytes = 4 << 20
	// DefaultMaxInFlightBytes bounds the bytes produced but not yet
	// acknowledged by Kafka (Kafka's producer buffer.memory).
	DefaultMaxInFlightBytes = 32 << 20
	// DefaultSinkMaxPollRecords is consumer.max.poll.records.
	DefaultSinkMaxPollRecords = 500
	// DefaultSinkMaxBatchRecords bounds the records of one Put, which may
	// gather several polls. With batches through shared memory, 10000
	// records (and 16 MiB) moved 10–20 % more 1 KiB records per second
	// through a noop sink on six partitions than 5000 (and 8 MiB), for less
	// CPU per record; 2000 moved 10 % fewer.
	DefaultSinkMaxBatchRecords = 10000
	// DefaultSinkMaxBatchBytes is the size (keys, values, headers) past
	// which a Put batch takes no further poll. It stays well inside the
	// default shared memory region (32 MiB), so a full batch still goes
	// through it.
	DefaultSinkMaxBatchBytes = 16 << 20
	// DefaultRetryBackoff is the wait before a batch whose Put answered
	// ABORTED is delivered again, until the task sets its own.
	DefaultRetryBackoff = time.Second
)

// Timing is what source and sink tasks share. Zero fields take the defaults.
type Timing struct {
	// OffsetFlushInterval is offset.flush.interval.ms.
	OffsetFlushInterval time.Duration
	// OffsetFlushTimeout is offset.flush.timeout.ms: the bound of one offset
	// write or commit.
	OffsetFlushTimeout time.Duration
	// ShutdownTimeout is task.shutdown.graceful.timeout.ms: the whole drain
	// after Stop, before the process is killed.
	ShutdownTimeout time.Duration
	// CallTimeout is the deadline of each plugin call.
	CallTimeout time.Duration
}

func (t *Timing) normalize() error {
	var errs []error
	for _, d := range []struct {
		v    *time.Duration
		def  time.Duration
		name string
	}{
		{&t.OffsetFlushInterval, DefaultOffsetFlushInterval, "offset flush interval"},
		{&t.OffsetFlushTimeout, DefaultOffsetFlushTimeout, "offset flush timeout"},
		{&t.ShutdownTimeout, DefaultShutdownTimeout, "shutdown timeout"},
		{&t.CallTimeout, DefaultCallTimeout, "call timeout"},
	} {
		if *d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %s is negative", d.name, *d.v))
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	return errors.Join(errs...)
}

// Pipeline is the record path around the plugin, the same for sources and
// sinks.
type Pipeline struct {
	KeyConverter    Converter
	ValueConverter  Converter
	HeaderConverter HeaderConverter
	// Transforms may be nil (no transforms).
	Transforms Transformer
	// Errors may be nil: the first error fails the task.
	Errors ErrorHandler
}

func (p *Pipeline) validate() error {
	var errs []error
	if p.KeyConverter == nil {
		errs = append(errs, errors.New("no key converter"))
	}
	if p.ValueConverter == nil {
		errs = append(errs, errors.New("no value converter"))
	}
	if p.HeaderConverter == nil {
		errs = append(errs, errors.New("no header converter"))
	}
	return errors.Join(errs...)
}

// SourceConfig is everything a source task runner needs.
type SourceConfig struct {
	ID             TaskID
	ConnectorClass string
	// TaskConfig is the configuration the connector gave this task.
	TaskConfig map[string]string
	Launch     SourceLauncher
	Pipeline
	// ProducerOpts are the producer's client options: seeds, security and
	// the connector's producer.* / producer.override.* settings (see
	// ProducerOptions). They are applied after the runner's defaults
	// (idempotent, acks=all, no per-record buffering limit), so they win.
	ProducerOpts []kgo.Opt
	// Offsets stores source offsets.
	Offsets storage.OffsetStore
	// TopicCreation, when set, has the task make sure each topic it
	// writes to exists before its first record to it, creating it with
	// its group's settings (topic.creation.*, when the worker's
	// topic.creation.enable is true; see ParseTopicCreation). Nil: the
	// task creates no topic.
	TopicCreation *TopicCreation
	Timing
	// PollTimeout is how long a Poll waits for records.
	PollTimeout time.Duration
	// MaxPollRecords and MaxPollBytes bound one Poll batch.
	MaxPollRecords int
	MaxPollBytes   int
	// MaxInFlightBytes bounds the bytes (keys, values, headers, at least
	// minRecordCharge a record, plus source partitions and offsets)
	// produced and not yet acknowledged by Kafka. When reached, the task
	// stops polling until acknowledgements drain: a slow broker slows the
	// plugin instead of growing memory.
	MaxInFlightBytes int64
	Listener         Listener
	Logger           hclog.Logger
}

func (c *SourceConfig) normalize() error {
	var errs []error
	if c.ID.Connector == "" {
		errs = append(errs, errors.New("no connector name"))
	}
	if c.ID.Task < 0 {
		errs = append(errs, fmt.Errorf("negative task number %d", c.ID.Task))
	}
	if c.Launch == nil {
		errs = append(errs, errors.New("no launcher"))
	}
	if c.Offsets == nil {
		errs = append(errs, errors.New("no offset store"))
	}
	errs = append(errs, c.Pipeline.validate(), c.Timing.normalize())
	if c.PollTimeout < 0 || c.MaxPollRecords < 0 || c.MaxPollBytes < 0 || c.MaxInFlightBytes < 0 {
		errs = append(errs, errors.New("negative poll timeout, batch bound or in-flight bound"))
	}
	if c.PollTimeout == 0 {
		c.PollTimeout = DefaultPollTimeout
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = DefaultSourceMaxPollRecords
	}
	if c.MaxPollBytes == 0 {
		c.MaxPollBytes = DefaultMaxPollBytes
	}
	if c.MaxInFlightBytes == 0 {
		c.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("source task %s: %w", c.ID, err)
	}
	return nil
}

// SinkConfig is everything a sink task runner needs.
type SinkConfig struct {
	ID             TaskID
	ConnectorClass string
	TaskConfig     map[string]string
	Launch         SinkLauncher
	Pipeline
	// Topics and TopicsRegex are the connector's topics and topics.regex;
	// exactly one is set.
	Topics      []string
	TopicsRegex string
	// GroupID is the consumer group; default "connect-<connector>".
	GroupID string
	// ConsumerOpts are the consumer's client options: seeds, security and
	// the consumer.* / consumer.override.* settings (see ConsumerOptions).
	// Group, topics, balancer, commits and rebalance callbacks are the
	// runner's and must not be set here.
	ConsumerOpts []kgo.Opt
	// Balancers are the consumer's partition assignors
	// (consumer.partition.assignment.strategy); nil: cooperative-sticky.
	Balancers []kgo.GroupBalancer
	// MaxPollRecords is consumer.max.poll.records: the most records one
	// poll of the consumer returns.
	MaxPollRecords int
	// MaxBatchRecords bounds the records of one Put. A Put gathers the
	// polls the consumer can answer at once (records already fetched),
	// up to this bound; never fewer than MaxPollRecords. Zero:
	// MaxPollRecords when that is set (a Put is one poll, as in Kafka
	// Connect), otherwise DefaultSinkMaxBatchRecords.
	MaxBatchRecords int
	// MaxBatchBytes is the size (keys, values, headers) at which a Put
	// batch takes no further poll; one poll may take it past the bound.
	MaxBatchBytes int
	Timing
	// RetryBackoff is the wait before redelivering a batch whose Put
	// answered ABORTED, until the task sets its own (SetRetryBackoff).
	RetryBackoff time.Duration
	Listener     Listener
	Logger       hclog.Logger
}

func (c *SinkConfig) normalize() error {
	var errs []error
	if c.ID.Connector == "" {
		errs = append(errs, errors.New("no connector name"))
	}
	if c.ID.Task < 0 {
		errs = append(errs, fmt.Errorf("negative task number %d", c.ID.Task))
	}
	if c.Launch == nil {
		errs = append(errs, errors.New("no launcher"))
	}
	switch {
	case len(c.Topics) > 0 && c.TopicsRegex != "":
		errs = append(errs, errors.New("both topics and topics.regex are set; set exactly one"))
	case len(c.Topics) == 0 && c.TopicsRegex == "":
		errs = append(errs, errors.New("neither topics nor topics.regex is set; set exactly one"))
	case c.TopicsRegex != "":
		if _, err := regexp.Compile(c.TopicsRegex); err != nil {
			errs = append(errs, fmt.Errorf("topics.regex: %w", err))
		}
	default:
		for _, t := range c.Topics {
			if t == "" {
				errs = append(errs, errors.New("topics holds an empty topic name"))
				break
			}
		}
	}
	errs = append(errs, c.Pipeline.validate(), c.Timing.normalize())
	if c.MaxPollRecords < 0 || c.MaxBatchRecords < 0 || c.MaxBatchBytes < 0 || c.RetryBackoff < 0 {
		errs = append(errs, errors.New("negative max poll records, batch bound or retry backoff"))
	}
	switch {
	case c.MaxBatchRecords > 0:
	case c.MaxPollRecords > 0:
		// max.poll.records set and no batch bound: a Put is one poll,
		// as in Kafka Connect, for sinks tuned by it.
		c.MaxBatchRecords = c.MaxPollRecords
	default:
		c.MaxBatchRecords = DefaultSinkMaxBatchRecords
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = DefaultSinkMaxPollRecords
	}
	c.MaxBatchRecords = max(c.MaxBatchRecords, c.MaxPollRecords)
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = DefaultSinkMaxBatchBytes
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.GroupID == "" {
		c.GroupID = "connect-" + c.ID.Connector
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sink task %s: %w", c.ID, err)
	}
	return nil
}

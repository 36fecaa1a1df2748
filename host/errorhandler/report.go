package errorhandler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/runtime"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Context headers of a dead letter queue record (Kafka Connect's
// DeadLetterQueueReporter), in the order they are added.
const (
	HeaderPrefix              = "__connect.errors."
	HeaderTopic               = HeaderPrefix + "topic"
	HeaderPartition           = HeaderPrefix + "partition"
	HeaderOffset              = HeaderPrefix + "offset"
	HeaderConnectorName       = HeaderPrefix + "connector.name"
	HeaderTaskID              = HeaderPrefix + "task.id"
	HeaderStage               = HeaderPrefix + "stage"
	HeaderClassName           = HeaderPrefix + "class.name"
	HeaderExceptionClassName  = HeaderPrefix + "exception.class.name"
	HeaderExceptionMessage    = HeaderPrefix + "exception.message"
	HeaderExceptionStacktrace = HeaderPrefix + "exception.stacktrace"

	// Sluice's, for records of source tasks, which have no consumed
	// partition and offset: the source partition and offset the connector
	// gave the record, as JSON.
	HeaderSourcePartition = HeaderPrefix + "source.partition"
	HeaderSourceOffset    = HeaderPrefix + "source.offset"
)

// Dead letter queue producer settings, before the caller's options: Kafka
// Connect's acks=all, no compression.
func dlqDefaults() []kgo.Opt {
	return []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
}

// dlqWriteTimeout bounds one dead letter queue write: Kafka Connect's
// delivery.timeout.ms for its connector producers (Integer.MAX_VALUE ms,
// some 24 days), so a broker outage stalls the task, as it does in Kafka
// Connect, rather than failing it. franz-go's own record timeout counts
// from the record's timestamp, which a dead letter queue record keeps from
// the original record, so it is turned off for this producer and the write
// is bounded by its context instead; the task's stop ends it sooner.
const dlqWriteTimeout = math.MaxInt32 * time.Millisecond

// dlqPartitions is the partition count of a dead letter queue topic the
// worker creates, as Kafka Connect's.
const dlqPartitions = 1

// Start prepares the dead letter queue, when there is one: its producer
// (client id connector-dlq-producer-<connector>-<task>) and its topic,
// created with one partition and the configured replication factor when
// missing, as Kafka Connect does when the task starts. Without a dead
// letter queue it does nothing.
func (o *Operator) Start(ctx context.Context) error {
	if o.s.DLQTopic == "" {
		return nil
	}
	opts := append(dlqDefaults(), o.opts.ProducerOpts...)
	opts = append(opts, kgo.ClientID("connector-dlq-producer-"+o.opts.Task.String()), kgo.RecordDeliveryTimeout(0))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("dead letter queue producer: %w", err)
	}
	if err := ensureTopic(ctx, kadm.NewClient(cl), o.s.DLQTopic, o.s.DLQReplicationFactor, o.log); err != nil {
		cl.Close()
		// Kafka Connect's words, which users grep for.
		return fmt.Errorf("Could not initialize dead letter queue with topic=%s: %w", o.s.DLQTopic, err)
	}
	o.mu.Lock()
	o.dlq = cl
	o.mu.Unlock()
	return nil
}

// Close closes the dead letter queue producer.
func (o *Operator) Close() {
	o.mu.Lock()
	cl := o.dlq
	o.dlq = nil
	o.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
}

// ensureTopic creates topic unless it exists, saying so at ERROR in
// Kafka Connect's words.
func ensureTopic(ctx context.Context, adm *kadm.Client, topic string, rf int16, log hclog.Logger) error {
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("look up: %w", err)
	}
	if d, ok := details[topic]; ok && d.Err == nil {
		return nil
	}
	log.Error(fmt.Sprintf("Topic %s doesn't exist. Will attempt to create topic.", topic))
	resp, err := adm.CreateTopic(ctx, dlqPartitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create (1 partition, replication factor %d): %w", rf, err)
	}
	return nil
}

// deadLetter writes the record to the dead letter queue and waits for
// Kafka's acknowledgement.
func (o *Operator) deadLetter(ctx context.Context, rec runtime.ErrantRecord, class string, ex exception) error {
	o.mu.Lock()
	cl := o.dlq
	o.mu.Unlock()
	if cl == nil {
		return fmt.Errorf("dead letter queue %s: the producer is not started", o.s.DLQTopic)
	}
	kr := o.dlqRecord(rec, class, ex)
	o.dlqRequests.Add(1)
	ctx, cancel := context.WithTimeout(ctx, dlqWriteTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, kr).FirstErr(); err != nil {
		o.dlqFailures.Add(1)
		// Kafka Connect's words, which users grep for.
		o.log.Error("Could not produce message to dead letter queue. topic="+o.s.DLQTopic, "error", err)
		return fmt.Errorf("write the record that failed at %s to the dead letter queue %s: %w (the failure: %v)", rec.Stage, o.s.DLQTopic, err, rec.Err)
	}
	return nil
}

// dlqRecord builds the dead letter queue record: a sink's consumed record
// as it was read (key, value, headers, timestamp), or a source's record
// as the connector produced it, before transforms, serialized with the
// task's converters. Then the context headers, when enabled.
func (o *Operator) dlqRecord(rec runtime.ErrantRecord, class string, ex exception) *kgo.Record {
	kr := &kgo.Record{Topic: o.s.DLQTopic}
	var topic, partition, offset string
	var srcPartition, srcOffset []byte
	switch {
	case rec.Consumed != nil:
		c := rec.Consumed
		kr.Key, kr.Value, kr.Timestamp = c.Key, c.Value, c.Timestamp
		kr.Headers = append(kr.Headers, c.Headers...)
		topic, partition, offset = c.Topic, strconv.Itoa(int(c.Partition)), strconv.FormatInt(c.Offset, 10)
	case rec.Source != nil:
		s := rec.Source
		kr.Key, kr.Value, kr.Headers = o.serialize(&s.Record)
		kr.Timestamp = s.Timestamp
		topic = s.Topic
		srcPartition, _ = json.Marshal(s.SourcePartition)
		srcOffset, _ = json.Marshal(s.SourceOffset)
	}
	if !o.s.DLQContextHeaders {
		return kr
	}
	add := func(k, v string) { kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)}) }
	add(HeaderTopic, topic)
	if rec.Consumed != nil {
		add(HeaderPartition, partition)
		add(HeaderOffset, offset)
	}
	add(HeaderConnectorName, o.opts.Task.Connector)
	add(HeaderTaskID, strconv.Itoa(o.opts.Task.Task))
	add(HeaderStage, string(rec.Stage))
	add(HeaderClassName, class)
	add(HeaderExceptionClassName, ex.class)
	add(HeaderExceptionMessage, ex.message)
	add(HeaderExceptionStacktrace, ex.trace)
	if rec.Source != nil {
		add(HeaderSourcePartition, string(srcPartition))
		add(HeaderSourceOffset, string(srcOffset))
	}
	return kr
}

// serialize turns a source record into bytes with the task's converters;
// data.Raw passes as it is, and what a converter refuses (it may be why
// the record failed) is written in its string form instead.
func (o *Operator) serialize(r *data.Record) (key, value []byte, headers []kgo.RecordHeader) {
	part := func(c runtime.Converter, s *data.Schema, v any) []byte {
		switch x := v.(type) {
		case nil:
			return nil
		case data.Raw:
			return x
		}
		if c != nil {
			if b, err := c.FromConnectData(r.Topic, r.Headers, s, v); err == nil {
				return b
			}
		}
		return []byte(data.FormatValue(v))
	}
	key = part(o.opts.KeyConverter, r.KeySchema, r.Key)
	value = part(o.opts.ValueConverter, r.ValueSchema, r.Value)
	for _, h := range r.Headers {
		var b []byte
		switch x := h.Value.(type) {
		case nil:
		case data.Raw:
			b = x
		default:
			var err error
			if o.opts.HeaderConverter != nil {
				b, err = o.opts.HeaderConverter.FromConnectHeader(r.Topic, h.Key, h.Schema, h.Value)
			}
			if o.opts.HeaderConverter == nil || err != nil {
				b = []byte(data.FormatValue(h.Value))
			}
		}
		headers = append(headers, kgo.RecordHeader{Key: h.Key, Value: b})
	}
	return key, value, headers
}

// logError writes Kafka Connect's error log line: "Error encountered in
// task <c>-<t>. Executing stage '<S>' with class '<C>'", with the record
// when errors.log.include.messages is set (a sink record's coordinates, a
// source record's content).
func (o *Operator) logError(rec runtime.ErrantRecord, class string, ex exception) {
	var b strings.Builder
	fmt.Fprintf(&b, "Error encountered in task %s. Executing stage '%s' with class '%s'", o.opts.Task, rec.Stage, class)
	fields := []any{"connector", o.opts.Task.Connector, "task", o.opts.Task.Task, "stage", string(rec.Stage), "class", class}
	if o.s.LogIncludeMessages {
		switch {
		case rec.Consumed != nil:
			c := rec.Consumed
			tsType := "CreateTime"
			if c.Attrs.TimestampType() == 1 {
				tsType = "LogAppendTime"
			}
			fmt.Fprintf(&b, ", where consumed record is {topic='%s', partition=%d, offset=%d", c.Topic, c.Partition, c.Offset)
			// Kafka prints no timestamp for a record without one (no
			// timestamp type): a reported record known only by its
			// coordinates.
			if !c.Timestamp.IsZero() {
				fmt.Fprintf(&b, ", timestamp=%d, timestampType=%s", c.Timestamp.UnixMilli(), tsType)
			}
			b.WriteByte('}')
			fields = append(fields, "topic", c.Topic, "partition", c.Partition, "offset", c.Offset)
		case rec.Source != nil:
			fmt.Fprintf(&b, ", where source record is = %s", sourceString(rec.Source))
			fields = append(fields, "topic", rec.Source.Topic)
		}
	}
	b.WriteByte('.')
	fields = append(fields, "exception", ex.class, "error", rec.Err)
	o.log.Error(b.String(), fields...)
	o.errorsLogged.Add(1)
}

// sourceString prints a source record as Kafka Connect's
// SourceRecord.toString does.
func sourceString(r *data.SourceRecord) string {
	partition := "null"
	if r.Partition != data.NoPartition {
		partition = strconv.Itoa(int(r.Partition))
	}
	ts := "null"
	if !r.Timestamp.IsZero() {
		ts = strconv.FormatInt(r.Timestamp.UnixMilli(), 10)
	}
	schema := func(s *data.Schema) string {
		if s == nil {
			return "null"
		}
		return s.String()
	}
	// ConnectHeaders prints its list (Java's "[a, b]"), or nothing when no
	// header was ever added.
	headers := ""
	if len(r.Headers) > 0 {
		hs := make([]string, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = "ConnectHeader(key=" + h.Key + ", value=" + data.FormatValue(h.Value) + ", schema=" + schema(h.Schema) + ")"
		}
		headers = "[" + strings.Join(hs, ", ") + "]"
	}
	return fmt.Sprintf("SourceRecord{sourcePartition=%s, sourceOffset=%s} ConnectRecord{topic='%s', kafkaPartition=%s, key=%s, keySchema=%s, value=%s, valueSchema=%s, timestamp=%s, headers=ConnectHeaders(headers=%s)}",
		data.FormatValue(r.SourcePartition), data.FormatValue(r.SourceOffset), r.Topic, partition,
		data.FormatValue(r.Key), schema(r.KeySchema), data.FormatValue(r.Value), schema(r.ValueSchema), ts, headers)
}

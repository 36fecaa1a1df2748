package pluginsdk

import (
	"context"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// SourceTask reads from an external system (Kafka Connect's SourceTask).
//
// Call order: Start, Poll repeatedly (with Commit and CommitRecord between
// and during polls), Stop.
type SourceTask interface {
	// Start starts the task with the configuration its connector gave it.
	Start(ctx context.Context, tc SourceTaskContext, props map[string]string) error
	// Poll returns the next records. When nothing is ready it waits, at most
	// until ctx's deadline, and then returns nil, nil. The SDK calls Poll again
	// at once while records keep coming, to fill the batch it sends to the
	// worker, so returning one record per call is fine.
	Poll(ctx context.Context) ([]*data.SourceRecord, error)
	// Stop stops the task. An outstanding Poll has its context cancelled first.
	Stop(ctx context.Context) error
}

// Committer is implemented by source tasks that act after the worker has
// flushed offsets (SourceTask.commit), e.g. to acknowledge upstream in bulk.
// As in Kafka Connect, Commit may run while Poll runs (the worker flushes
// offsets off its poll loop), so it may see records that Poll returned and
// the worker has not yet received; the offsets stored before it are only
// ever those of records written to Kafka.
type Committer interface {
	Commit(ctx context.Context) error
}

// RecordMetadata is where Kafka stored a source record (RecordMetadata).
type RecordMetadata struct {
	Topic     string
	Partition int32
	Offset    int64
	// Timestamp is zero when Kafka returned none.
	Timestamp time.Time
}

// RecordCommitter is implemented by source tasks that want to hear about
// every record once it is written to Kafka, or dropped by a transform or by
// error tolerance (SourceTask.commitRecord); md is nil for a dropped record.
// Implementing it makes the worker send one acknowledgement per record,
// which costs more than the watermark it sends otherwise. An error returned
// here is logged and does not fail the task (as in Kafka Connect).
type RecordCommitter interface {
	CommitRecord(ctx context.Context, rec *data.SourceRecord, md *RecordMetadata) error
}

// SinkTask writes records to an external system (Kafka Connect's SinkTask).
//
// Call order: Start; Open as partitions are assigned; Put with records of
// open partitions; PreCommit before every offset commit; Close as partitions
// are revoked; Stop. Calls never overlap, except that Stop cancels a Put
// still running.
type SinkTask interface {
	// Start starts the task with the configuration its connector gave it.
	Start(ctx context.Context, tc SinkTaskContext, props map[string]string) error
	// Put delivers a batch. Returning a Retriable error makes the worker
	// deliver the same records again after a backoff.
	Put(ctx context.Context, recs []*data.SinkRecord) error
	// Stop stops the task.
	Stop(ctx context.Context) error
}

// RecordBorrower is implemented by sink tasks that are done with the
// records of a Put when it returns: after Put they keep no record, not the
// slice of them, and nothing of a record that is or holds a []byte or
// data.Raw (keys, values, header values, at any depth), because they write
// or copy what they need during the call. BorrowsRecords returning true
// lets the SDK decode each batch straight from the memory the worker
// shares with the plugin, instead of copying it out first: a sink's
// largest cost per record after the decoding itself. The records' bytes
// then point into that memory, where the next batch will be written; and
// the records, the slice Put gets and the interface values that hold the
// []byte and data.Raw values are those of the batch before, written again
// for the next batch rather than allocated anew (wire.BorrowBuffer). A
// task that keeps any of them sees it change under it, even an interface
// value whose bytes it never looked at; bytes.Clone what must outlive the
// call. Strings (topics, header keys, string values) are copies either
// way, and may be kept. Batches that came inline over gRPC get records of
// their own, as for any task.
type RecordBorrower interface {
	BorrowsRecords() bool
}

// PartitionOpener is implemented by sink tasks that prepare per-partition
// state when partitions are assigned (SinkTask.open).
type PartitionOpener interface {
	Open(ctx context.Context, partitions []data.TopicPartition) error
}

// PartitionCloser is implemented by sink tasks that release per-partition
// state when partitions are revoked (SinkTask.close).
type PartitionCloser interface {
	Close(ctx context.Context, partitions []data.TopicPartition) error
}

// Flusher is implemented by sink tasks that must make everything put so far
// durable before offsets are committed (SinkTask.flush). offsets hold, per
// partition, the next offset to read.
type Flusher interface {
	Flush(ctx context.Context, offsets map[data.TopicPartition]int64) error
}

// PreCommitter is implemented by sink tasks that decide themselves which
// offsets are safe to commit (SinkTask.preCommit): it gets the offsets of
// everything delivered and returns those to commit (an empty map skips this
// commit). Without it the SDK calls Flush, if implemented, and commits the
// offsets as given.
type PreCommitter interface {
	PreCommit(ctx context.Context, offsets map[data.TopicPartition]int64) (map[data.TopicPartition]int64, error)
}

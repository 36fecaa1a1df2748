package data

import "time"

// NoPartition is Record.Partition when no Kafka partition is chosen.
const NoPartition int32 = -1

// Raw is a key, value or header value the connector already serialized.
type Raw []byte

// Header is one record header. Order and repeated keys are kept.
type Header struct {
	Key    string
	Schema *Schema
	Value  any
}

// Headers is a record's ordered header list.
type Headers []Header

// Record is what source and sink records share (Kafka Connect's
// ConnectRecord); transforms work on it.
type Record struct {
	Topic string
	// Partition is the Kafka partition, or NoPartition.
	Partition   int32
	KeySchema   *Schema
	Key         any
	ValueSchema *Schema
	Value       any
	// Timestamp is zero when unset.
	Timestamp time.Time
	Headers   Headers
}

// TransactionBoundary is a source task's request to commit or abort the
// current transaction after a record (exactly-once source, KIP-618).
type TransactionBoundary int8

// Transaction boundary requests.
const (
	NoBoundary TransactionBoundary = iota
	CommitAfter
	AbortAfter
)

// SourceRecord is a record a source task produces.
type SourceRecord struct {
	Record
	// SourcePartition and SourceOffset are JSON-compatible maps; the worker
	// stores the offset of the last acknowledged record per partition.
	SourcePartition map[string]any
	SourceOffset    map[string]any
	Transaction     TransactionBoundary
}

// TimestampType is Kafka's record timestamp type.
type TimestampType int8

// Timestamp types.
const (
	NoTimestampType TimestampType = iota
	CreateTime
	LogAppendTime
)

// SinkRecord is a record the worker delivers to a sink task.
type SinkRecord struct {
	Record
	Offset        int64
	TimestampType TimestampType
	// Where the record was consumed (before transforms); commits use these.
	OriginalTopic     string
	OriginalPartition int32
	OriginalOffset    int64
}

// TopicPartition names a Kafka partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

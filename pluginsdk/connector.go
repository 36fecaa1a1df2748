package pluginsdk

import (
	"context"

	"github.com/sluice-io/sluice/pluginsdk/config"
)

// Connector is one connector instance (Kafka Connect's Connector). It decides
// how the work is split into tasks; the tasks move the data.
//
// Call order: Start, then any number of TaskConfigs, then Stop. Config and
// Version may be called at any time, also on an instance that is never
// started (Describe, Validate).
type Connector interface {
	// Version is the connector's version, shown by GET /connector-plugins.
	Version() string
	// Config declares the connector's own settings. It is the default
	// validation (see Validator) and what the worker shows users.
	Config() *config.Def
	// Start starts the instance with its configuration. cc reaches the worker.
	Start(ctx context.Context, cc ConnectorContext, props map[string]string) error
	// TaskConfigs returns at most maxTasks task configurations; the worker
	// starts one task per entry and hands it that map.
	TaskConfigs(ctx context.Context, maxTasks int) ([]map[string]string, error)
	// Stop releases what Start acquired.
	Stop(ctx context.Context) error
}

// SourceConnector is a connector whose tasks read from an external system
// and produce records to Kafka.
type SourceConnector interface {
	Connector
	// NewTask returns a new, unstarted task.
	NewTask() SourceTask
}

// SinkConnector is a connector whose tasks consume records from Kafka and
// write them to an external system.
type SinkConnector interface {
	Connector
	// NewTask returns a new, unstarted task.
	NewTask() SinkTask
}

// Validator is implemented by connectors that validate more than each key of
// Config() on its own (Connector.validate overridden in Kafka Connect), e.g.
// rules between keys. It is called on an instance that was never started.
// Without it, validation is Config().Validate(props).
type Validator interface {
	Validate(ctx context.Context, props map[string]string) ([]config.ConfigValue, error)
}

// OffsetChange is one partition's requested offset change. Offset nil means
// reset (forget the stored offset). Sink partitions look like
// {"kafka_topic":"t","kafka_partition":0} with offsets {"kafka_offset":42}.
type OffsetChange struct {
	Partition map[string]any
	Offset    map[string]any
}

// OffsetAlterer is implemented by connectors that take part in altering or
// resetting their offsets (KIP-875 alterOffsets). It returns true when it
// altered the offsets in the external system too; returning an Invalid error
// vetoes the change. It is called on an instance that was never started,
// with the connector's configuration. Without it the worker alters the
// offsets it stores and nothing else.
type OffsetAlterer interface {
	AlterOffsets(ctx context.Context, props map[string]string, offsets []OffsetChange) (bool, error)
}

// ExactlyOnce is a source connector's answer to exactlyOnceSupport.
type ExactlyOnce int

// ExactlyOnce values.
const (
	// ExactlyOnceUnknown is Kafka Connect's null: the connector cannot tell.
	ExactlyOnceUnknown ExactlyOnce = iota
	ExactlyOnceSupported
	ExactlyOnceUnsupported
)

// ExactlyOnceSupporter is implemented by source connectors that can tell
// whether a configuration supports exactly-once delivery (KIP-618). Without
// it the answer is ExactlyOnceUnknown.
type ExactlyOnceSupporter interface {
	ExactlyOnceSupport(ctx context.Context, props map[string]string) (ExactlyOnce, error)
}

// TransactionBoundaryDefiner is implemented by source connectors whose tasks
// can define transaction boundaries themselves (transaction.boundary=connector,
// canDefineTransactionBoundaries). Without it the answer is false.
type TransactionBoundaryDefiner interface {
	CanDefineTransactionBoundaries(ctx context.Context, props map[string]string) (bool, error)
}

// Package worker assembles a Sluice worker from its configuration: the
// logger registry, the plugin manager (plugin.path, then the bundled
// plugins directory next to the binary: bin/plugins beside bin/sluice, when
// it exists), the Kafka client, the offsets file, the herder and the REST
// API; and it stops them in order.
//
// It is also where the herder's abstract Instances meet the real thing:
// connector instances are plugin processes (host/plugin) started with a
// Worker callback service that forwards RequestTaskReconfiguration and
// RaiseError to the herder; tasks are host/runtime runners whose launcher
// starts the task's plugin process. Each task gets converters built from
// its connector's key.converter, value.converter and header.converter
// (with their prefixed settings) or, when the connector sets none, the
// worker's; producer and consumer options from bootstrap.servers, the
// worker's producer.* / consumer.* settings and the connector's
// producer.override.* / consumer.override.* settings (KIP-458), client ids
// connector-producer-<task> and connector-consumer-<task>, and sink tasks
// the consumer group connect-<name> (or consumer.override.group.id). Sink
// connectors' offsets are read and changed on that group with kadm. A source
// task's producer reports each topic Kafka acknowledged a record of, once
// per task run, to the herder's active topics (KIP-558).
//
// Each task also gets its connector's transform chain (transforms.Chain:
// after poll and before the converters for sources, after the converters
// and before put for sinks) and its error handling (host/errorhandler:
// errors.* retries, tolerance, error log, and a dead letter queue whose
// producer and topic are set up before the task runs). The herder lists
// and validates transformations and predicates through transformCatalog.
//
// config.providers are built from the worker properties
// (host/configprovider) and handed to the herder, which resolves
// ${provider:path:key} variables when connectors and tasks start and when
// configs are validated. Both herders restart a connector and its tasks
// when values a provider gave a TTL expire, unless the connector sets
// config.action.reload=none (the built-in providers give none).
//
// The REST request timeout (90 s, as Kafka Connect's) can be set with the
// Sluice property sluice.rest.request.timeout.ms (host/config), which Kafka
// Connect lacks (its tests change the timeout in process);
// Options.RESTTimeout wins.
//
// Accepted so existing files load, and ignored with a warning:
// rest.extension.classes (Java REST extensions cannot run here).
//
// Shutdown order: the REST API stops taking requests; every task gets Stop
// and all drain together for at most task.shutdown.graceful.timeout.ms
// before their plugins are killed; connectors stop; the plugin manager
// kills whatever is left and cleans its sockets; the Kafka client closes.
// A plugin that crashes or hangs fails its own connector or task only.
package worker

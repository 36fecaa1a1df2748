// Package herder decides what runs on a worker and answers for it: it holds
// connector configurations and target states, starts connector and task
// instances (each a plugin process, through host/plugin and host/runtime),
// tracks their statuses, and applies restarts, pauses, stops and config
// changes. Herder is the interface the REST API uses; the standalone herder
// keeps state in memory (offsets in a file), the distributed one on Kafka.
package herder

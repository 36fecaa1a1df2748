// Package resttest is an in-memory herder.Herder for testing the REST API
// and its clients without plugin processes: it stores configs exactly as
// given, keeps target states, statuses, task configs, restart plans, active
// topics and offsets with Kafka Connect's preconditions and messages, knows
// the FileStreamSource and FileStreamSink connectors by full name, simple
// name and alias, and reports the stage it is in. A Before hook lets a test
// make any call hang or fail, as a plugin stuck in validate would.
package resttest

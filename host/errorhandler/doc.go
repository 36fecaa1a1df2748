// Package errorhandler is Kafka Connect's error handling for one task
// (KIP-298, KIP-610): the errors.* connector settings, retries with
// backoff, error tolerance, the error log and the dead letter queue. Its
// Operator is the runtime's ErrorHandler: the task runner hands it every
// record that failed a stage (a transformation, a converter, the
// producer, or a sink plugin's errant record report) and the operator
// decides whether the record is retried, skipped or fails the task.
//
// # Retries
//
// A retriable failure (a plugin's RetriableException, a retriable Kafka
// error) is tried again through the record's Retry while
// errors.retry.timeout allows (-1: forever). A record the producer
// refused (KAFKA_PRODUCE) is not: the producer has retried it already
// (retries, delivery.timeout.ms), and a write from here would land behind
// the records of its partition produced since. As in Kafka Connect, which
// does not retry a failed send, it is reported and then skipped or fails
// the task. The waits are
// Kafka Connect's: 300 ms, doubled each attempt, and once that exceeds
// errors.retry.delay.max.ms a random wait below it; never past the
// timeout (with errors.retry.delay.max.ms=0, no retry: Kafka's first
// wait fails then). Retries apply whatever the tolerance.
//
// # Tolerance and reports
//
// A record that failed for good is reported first — an ERROR log line in
// Kafka Connect's words with errors.log.enable (the record's coordinates
// or content with errors.log.include.messages), and a dead letter queue
// record with errors.deadletterqueue.topic.name — and the tolerance
// decides after: errors.tolerance=all skips a record that failed in a
// transformation, a converter, the producer or a sink's put report, and
// one with a retriable error elsewhere; otherwise the task fails with a
// ToleranceError ("Tolerance exceeded in error handler"; Kafka's other
// words where it has them: "Unrecoverable exception from producer send
// callback" for a refused send, "Unhandled exception in error handler" for
// an error the stage never tolerates) naming the stage, the class and the
// cause. So with tolerance none the first bad record
// still reaches the dead letter queue before the task fails.
//
// # Dead letter queue
//
// Each task has its own producer, client id
// connector-dlq-producer-<connector>-<task>, with the worker's producer
// settings and the connector's overrides. Start creates the topic when it
// is missing (1 partition, errors.deadletterqueue.topic.replication.factor,
// -1 for the broker's default). A sink's record goes out as it was
// consumed: key, value, headers and timestamp untouched, the partition the
// producer's choice. With errors.deadletterqueue.context.headers.enable
// the __connect.errors.* headers follow the record's own: topic,
// partition, offset, connector.name, task.id, stage, class.name,
// exception.class.name, exception.message, exception.stacktrace.
//
// Beyond Kafka Connect, source connectors have a dead letter queue too,
// with the same settings. A source record has no consumed bytes: it is
// written as the connector produced it (before transforms), serialized
// with the task's converters, a part they refuse written in its string
// form. Its context headers are __connect.errors.topic (the topic the
// record was for), connector.name, task.id, stage, class.name and the
// exception headers, without partition and offset, plus
// __connect.errors.source.partition and __connect.errors.source.offset:
// the connector's source partition and offset as JSON.
//
// Differences from Kafka Connect: Handle returns only once the dead letter
// queue write is acknowledged (Kafka waits for it before committing the
// sink's offsets, which comes to the same); a dead letter queue write that
// fails fails the task, where Kafka fails it only for an errant record
// report and logs and forgets a converter's or a transformation's record,
// which would be lost; the stack trace header holds the plugin's trace
// when the plugin sent one, otherwise the exception class and the error.
package errorhandler

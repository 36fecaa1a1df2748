// Package itest holds helpers for integration tests that run against real
// Kafka (see package kafkatest) and real sluice processes:
//
//   - NewClient: a franz-go client that is closed when the test ends.
//   - CreateTopic / CreateTopicRF: create a topic with kadm and wait until
//     every partition has a leader.
//   - ProduceStrings / Produce: synchronous produce that fails the test on
//     error.
//   - ReadTopic: read a topic from the start until n records or a timeout.
//   - Compare / RequireValues: multiset comparison of record values that
//     reports counts of missing, extra and duplicated values and the first
//     difference, so a failing delivery test says what went wrong.
//   - StartWorker / StartProcess: run bin/sluice (or any program) as a child
//     that dies with the test process, logs to a file under t.TempDir() and
//     can be stopped gracefully, killed and tailed.
//
// The helpers compile without Java or Kafka, so the package is untagged; the
// tests that need a broker carry the `integration` build tag.
package itest

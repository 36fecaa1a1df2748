// Package runtime runs source and sink tasks: it drives one task's plugin
// process through the calls of plugin.proto and moves records between it
// and Kafka, with converters and transforms in between.
//
// # Tasks
//
// NewSourceTask and NewSinkTask validate a configuration once and return a
// Task. The caller (the herder) runs it with Run(ctx) on a goroutine of its
// own and steers it with Pause, Resume and Stop, which only record the wish
// and wake the task: they never block and are safe from any goroutine, at
// any time, even before Run. The plugin process is reached through the
// small SourcePlugin / SinkPlugin interfaces, started by a launcher that
// also serves this task's Worker service (the plugin's callbacks); the
// plugin manager adapts its instances to them.
//
// # States
//
// The Listener hears, in order and from Run's goroutine:
//
//	OnRunning  after Start succeeded and whenever the task resumes
//	OnPaused   when the task stops moving records: a source task once the
//	           records it polled before the pause are written (also instead
//	           of OnRunning when paused before it ever ran)
//	OnStopped  once, after a Stop (or ctx cancellation) ended the task
//	OnFailed   once, after a failure ended it, with the plugin's trace
//
// Exactly one of OnStopped and OnFailed ends every Run. A failure is any
// error from a plugin call other than the ones Kafka Connect tolerates
// (ABORTED answers are retried; a failing Commit or PreCommit of a live
// plugin is logged), a record Kafka refuses, a record the pipeline cannot
// convert (until the error-handling hook, ErrorHandler, tolerates it),
// RaiseError from the plugin, or the process exiting under the task.
//
// # Source tasks
//
// One goroutine (Run's) makes the plugin calls but Commit: Start, then a
// loop of Poll, with acknowledgements riding on each Poll, an offset flush
// every offset.flush.interval.ms (Ack of what is pending; then the flusher
// goroutine, as Kafka Connect's offset committer thread, runs
// OffsetStore.Set and then Commit while the loop goes on polling, so a slow
// store — a synced file, a topic — never holds up the records; the drain's
// last flush runs on Run's goroutine once the flusher has stopped), and
// waits while paused (no Poll) or while the bytes in flight
// are at MaxInFlightBytes (backpressure: no Poll until acknowledgements make
// room for a batch, and no record of a batch is produced before it fits, so
// a slow broker slows the plugin instead of growing memory).
//
// With TopicCreation (topic.creation.*, KIP-158) the task makes sure each
// topic it writes to exists before its first record to it, creating it with
// its group's partitions, replication factor and topic configs.
//
// Records are produced asynchronously; franz-go's producer goroutines run
// the promise, which marks the record in the ackTracker. The acked prefix
// is the invariant that makes offsets safe: records enter the tracker in
// poll order, acknowledgements arrive in any order across partitions, and
// only the longest fully acknowledged run from the oldest record counts.
// acked_through is its last sequence number; the offsets stored are, per
// source partition, those of its latest record. So a stored offset never
// passes a record that could still be lost, whatever order Kafka answered
// in. A record dropped by a transform is acknowledged at once, as not
// written, and its offset counts like any other. A record that fails a
// transform or a converter goes to the ErrorHandler with a Retry of its
// stages (errors.retry.timeout). A record Kafka refused (once the
// producer's own retries are over) goes to it without one, as Kafka
// Connect does not send a failed record again either: a second write
// would land behind the records of its partition produced since. It is
// handled on a goroutine of its own, joined before Run returns, and stays
// in flight until it is reported and skipped (acknowledged as not
// written) or fails the task.
//
// Stop is the drain handshake of plugin.proto, bounded as a whole by
// task.shutdown.graceful.timeout.ms from the moment Stop is called: stop
// polling (an outstanding Poll is allowed to finish, so neither its records
// nor the acknowledgements it carried are lost), flush the producer and
// wait for every record in flight to be acknowledged, Ack the rest, store
// the offsets, Commit, Stop, and kill the process. When the deadline passes
// first, every call still running is abandoned, the offsets of the acked
// prefix are stored anyway, and the process is killed; the task still
// ends STOPPED. A failure ends as Kafka Connect's final offset commit of a
// failing task: a live plugin is sent the pending acknowledgements, the
// acked prefix's offsets are stored, Commit and Stop follow (bounded by the
// same timeout), and the process is killed; a dead one only has the
// offsets stored.
//
// # Sink tasks
//
// Each task has its own franz-go consumer in the group (default
// connect-<connector>), with the cooperative-sticky balancer, auto-commit
// off and BlockRebalanceOnPoll. With consumer.auto.offset.reset=none a
// partition with no committed offset, or whose offset is out of range,
// fails the task with an error naming it (Kafka's
// NoOffsetForPartitionException, OffsetOutOfRangeException), as the
// consumer's exception fails a Kafka Connect task. Run's goroutine polls up to
// consumer.max.poll.records, keeps polling what the consumer has already
// fetched until the batch reaches MaxBatchRecords or MaxBatchBytes (the
// connector settings sluice.sink.batch.max.records and .max.bytes; a Sluice
// choice: one Put per poll, as Kafka Connect does, pays a process crossing
// per few hundred records; a connector that sets max.poll.records and no
// batch bound keeps Puts to that many records), converts (headers, key, value),
// applies the transforms and Puts the batch. No rebalance comes between
// those polls: the consumer holds it until the next AllowRebalance, which
// comes only once the batch is delivered or kept for redelivery. The
// first poll of a batch is not bounded by bytes (the consumer returns
// records, not bytes), so a batch may exceed what one gRPC message
// carries (wire.MaxMessageBytes); the worker's SinkPlugin then sends it
// as several Puts in order, and the one Put the runner sees returns once
// all were put, so PreCommit and commits still follow the whole batch.
//
// Puts are pipelined: a Put runs on a goroutine of its own while Run's
// goroutine polls (without AllowRebalance, so still no rebalance) and
// converts the next batch, which is staged: every fetch as it arrives, up
// to the batch bounds, since the consumer fetches again only once what it
// buffered is taken; the polling ends when the Put returns. Before the staged batch is put, a waiting rebalance gets its turn
// (AllowRebalance and a poll on a done context, which waits out a rebalance
// in progress and takes no records); its callbacks drop the staged records
// of the partitions they close. What the plugin asked during a Put (a
// rewind, a pause; a redelivery's too) applies before the next rebalance
// can run, so a revocation commits a rewind's offset, as in Kafka Connect.
// The staged batch is thrown away, and the
// consumer set back to its first offsets, when the plugin asked for a pause,
// resume or rewind meanwhile, the task was paused, a PreCommit failed, or
// the Put answered ABORTED: it was read under state that no longer holds,
// and is read again under the new. Between batches it applies what the
// plugin asked through the Worker service (pause, resume, rewind, commit,
// retry backoff: queued, since those calls arrive during Put) and commits
// every offset.flush.interval.ms: PreCommit is offered the delivered offsets
// (last delivered + 1, dropped records included) and exactly what it returns
// is committed, ignoring offsets beyond what was delivered or for
// partitions not owned, as Kafka Connect does. As in Kafka Connect, that
// periodic commit is asynchronous (the task goes on polling and putting
// while the coordinator writes it; a commit that comes due while one is in
// flight waits for it), and the commit of partitions being revoked or
// closed at stop is synchronous.
//
// The rebalance callbacks run on franz-go's group goroutine. Because of
// BlockRebalanceOnPoll they run only while Run's goroutine is polling,
// never while it holds records; a mutex makes the hand-over explicit.
// Assignment opens partitions (Open); revocation offers PreCommit, commits
// what it returns and closes them; loss closes them without a commit. A
// partition the plugin paused that a rebalance closes and the next
// assignment opens again (an eager rebalance) stays paused.
//
// A Put answered ABORTED keeps its batch: every partition is paused (so no
// newer record overtakes it), the task keeps polling (so rebalances go
// through) and the same records are delivered again after the backoff
// (SetRetryBackoff, or the configured default), minus those of partitions
// revoked or rewound meanwhile; a batch left with none resumes the
// partitions at once. A PreCommit that fails sends the partitions back to
// their last committed offsets, or where the task began reading them
// (Kafka Connect's position at assignment, or a rewind since), and what
// was delivered since is delivered again. Pause pauses every partition,
// commits what was delivered (Kafka Connect asks for a commit then) and Put
// is not called until Resume. Stop commits and closes every partition, stops
// the plugin, leaves the group and kills the process, all within the drain
// deadline (the leave gets at least a second, past it if need be, so the
// partitions go to another member at once); a Put still running at the
// deadline is abandoned.
//
// # Goroutines
//
// Run owns what it starts and returns only when it has ended: the process
// watcher (which fails the task when the process exits under it) is joined
// before the kill, and the producer or consumer is closed before Run
// returns, which ends franz-go's goroutines and runs every outstanding
// promise. A sink's Put goroutine is joined before the Put's outcome is
// applied. The only thing that may outlive Run is the drain timer's
// cancel, a no-op by then. The Worker service's methods run on the
// plugin's gRPC goroutines and touch only the request queue, the
// assignment snapshot, the offset store and the failure record.
package runtime

// Package pluginsdk is the Go SDK for Sluice connector authors. A connector
// binary implements the interfaces of this package — close to Kafka Connect's
// SourceConnector, SourceTask, SinkConnector and SinkTask — and calls Serve
// from main; the SDK speaks the plugin contract of proto/sluice/plugin/v1
// (go-plugin handshake, gRPC services, batching, acknowledgements, errors).
//
// # Processes
//
// The worker starts one process per connector instance and one per task, so
// a process serves exactly one instance: the first Start call (of a
// connector, a source task or a sink task) decides which class and role the
// process has, and any later Start fails with FAILED_PRECONDITION. Describe
// and Validate work on any process.
//
// # Contexts and deadlines
//
// Every method takes a context.Context carrying the deadline of the RPC that
// caused it; methods must return before it. Stop cancels the context of any
// call still running on the instance (a blocked Poll or Put), so code that
// honours ctx stops promptly.
//
// # Concurrency
//
// Calls of one kind never overlap, as in Kafka Connect: one Poll at a time,
// one Put at a time. Poll may be called while no Poll RPC is outstanding
// (see Polling ahead). SourceTask.Stop is called after an outstanding Poll
// has returned (its context is cancelled first), unless Poll ignores its
// context past Stop's deadline. Commit and CommitRecord may run while Poll runs, as
// commit() and commitRecord() do in Kafka Connect; CommitRecord calls never
// overlap each other and come in the order the worker acknowledged.
//
// # Polling ahead
//
// While the worker handles one batch, the SDK fills the next: as soon as it
// has answered a Poll it polls the task again (under the bounds of that Poll
// and with its timeout for a first record) and keeps the batch until the
// next Poll arrives, so generating and encoding records overlaps the
// worker's decoding and producing. It holds at most that one batch; a Poll
// with smaller bounds takes what fits and the rest follows in order. A
// failure while filling ahead is reported by the next Poll.
//
// Records filled ahead are numbered and sent only when a Poll takes them. If
// the worker stops the task first (it stops polling before Stop), they are
// dropped: they were never delivered, so the worker never acknowledges them
// or stores their offsets, and the next run resumes from the last stored
// offsets and reads them again — as in Kafka Connect when a task stops with
// records polled but not yet sent. CommitRecord is never called for them.
// Tasks that implement Committer are not polled ahead: Kafka Connect's
// commit() may treat everything poll() returned as delivered.
//
// # Records a sink task borrows
//
// The records given to SinkTask.Put are the task's to keep, as in Kafka
// Connect: the SDK copies each batch out of the memory it shares with the
// worker before decoding it. A task that is done with its records when Put
// returns (it writes or copies what it needs during the call) implements
// RecordBorrower and says so; its records' bytes (keys, values, header
// values, data.Raw) then point straight into the shared memory, where the
// worker writes the next batch, and the copy is skipped. The records
// themselves, the slice Put gets and the interface values holding their
// bytes are reused for the next batch as well, so the task keeps none of
// them. Strings are copies either way. The noop sink and FileStreamSink
// borrow.
//
// # Records a source task gets back
//
// A source task that makes many records can reuse them. If it implements
// RecordRecycler, the SDK hands Poll's records back (RecycleRecords) once
// it has written them into the memory it shares with the worker, and Poll
// may fill them again instead of allocating new ones. Records answered
// inline over gRPC never come back, nor do those of a task that
// implements RecordCommitter, so the task must also work when nothing
// comes back; nor do any after a RecycleRecords that panicked (the panic
// is logged; the answer it followed goes out as usual). The datagen
// source recycles.
//
// # Errors
//
// Return Retriable(...) for a transient failure (the worker retries the same
// call: the same Put batch, the next Poll), Invalid(...) for bad
// configuration or data, ErrUnsupported for an unsupported operation; any
// other error fails the instance. A panic in connector code is recovered and
// reported as a fatal error whose trace is the panic's stack; the process keeps
// serving so the worker can stop it in order.
//
// # Logging
//
// Logger returns an hclog logger writing JSON lines to stderr at the level
// of SLUICE_LOG_LEVEL; the worker parses them into its own log with the
// connector and task attached. Do not write to stdout: go-plugin reads the
// handshake from it.
package pluginsdk

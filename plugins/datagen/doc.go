// Command datagen is the plugin binary of Sluice's generator connectors, for
// demos, tests and benchmarks:
//
//   - DatagenConnector (io.sluice.connect.datagen.DatagenConnector) produces
//     made-up records of a quickstart schema (users, orders, pageviews) with
//     Connect schemas, or as pre-serialized JSON bytes (format=raw) that the
//     worker writes as they are. Records are a pure function of (random.seed,
//     task, sequence number), so a seeded run is reproducible, and each task
//     resumes after the sequence number it last had acknowledged.
//   - NoopSinkConnector (io.sluice.connect.datagen.NoopSinkConnector) accepts
//     records, counts them and drops them: the sink end of a benchmark.
//
// Generation is cheap on purpose (one PCG reseed per record, no reflection,
// payload text cut from a pool made once; raw records written straight into
// JSON from pre-encoded names and strings, their keys and values carved from
// shared chunks), so a task makes well over a million 1 KiB records per
// second and the pipeline, not the generator, is what a benchmark measures.
// Contents vary from record to record, since identical values would make
// compression look better than it is on real data.
package main

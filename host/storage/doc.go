// Package storage keeps the worker's state: source offsets, connector
// configurations and statuses. Standalone mode keeps offsets in a local file
// (FileOffsetStore); distributed mode keeps all three on compacted Kafka
// topics. Either way the records are Kafka Connect's: an offset is stored
// under the key ["<connector>",{<source partition>}] with the offset object
// as value, both as compact JSON with object keys sorted, so the bytes are
// deterministic and a logical partition always maps to the same key.
//
// # Kafka stores (distributed mode)
//
// The three internal topics hold exactly the records Kafka Connect writes,
// so a Sluice cluster can take over the topics of a Java Connect cluster and
// the other way round:
//
//	config.storage.topic  (1 partition)
//	  connector-{c}          {"properties":{...}}      null = deleted
//	  task-{c}-{t}           {"properties":{...}}
//	  commit-{c}             {"tasks":N}
//	  target-state-{c}       {"state":"PAUSED","state.v2":"STOPPED"}
//	  tasks-fencing-{c}      {"task-count":N}
//	  restart-connector-{c}  {"include-tasks":b,"only-failed":b}
//	  session-key            {"key":"<base64>","algorithm":"HmacSHA256","creation-timestamp":ms}
//	  logger-cluster-{ns}    {"level":"DEBUG"}
//	offset.storage.topic  (default 25 partitions)
//	  ["{c}",{partition}]    {offset}                  null = reset
//	status.storage.topic  (default 5 partitions)
//	  status-connector-{c}   {"state":..,"trace":..|null,"worker_id":"host:port","generation":N}
//	  status-task-{c}-{t}    same
//	  status-topic-{topic}:connector-{c}  {"topic":{"name":..,"connector":..,"task":N,"discoverTimestamp":ms}}
//
// Values are written as Kafka Connect's JsonConverter writes them with
// schemas disabled: compact, Struct fields in schema order, Jackson's string
// escaping (jsonwrite.go). Maps (connector properties, offset partitions) are
// written with sorted keys; Java writes its map's order, which no reader
// depends on except the offsets lookup, which is why offset keys are
// canonicalized on read.
//
// EnsureTopics creates missing topics compacted, and refuses to start on an
// existing topic that is not exactly cleanup.policy=compact, or a config
// topic with more than one partition.
//
// Each store sits on a KafkaLog, Kafka Connect's KafkaBasedLog: Start reads
// the topic from the beginning to the end offsets found at start, so the
// store holds its whole state before the worker serves, and then follows the
// topic; ReadToEnd waits until everything written before the call has been
// read. Writes are keyed and partitioned with Java's default partitioner
// (murmur2), so a key lands on the same partition whichever worker writes
// it, and compaction keeps only its last value.
//
// ConfigStore applies task configs only when their commit record arrives,
// all together, and marks a connector inconsistent when a commit finds its
// task set incomplete (compaction or a leader dying mid-write); its snapshot
// carries the config offset the group protocol compares. StatusStore keeps a
// stale status from winning, with Kafka Connect's three rules: safe writes
// yield to another worker's newer generation, failed writes are re-sent only
// while current, and a late UNASSIGNED of an older generation than the
// RUNNING already read is ignored. KafkaOffsetStore reads to the end before
// every Get, so a task starting on a new worker sees the offsets its
// previous owner committed.
//
// Not done yet: exactly-once source support (transactional config writes by
// the leader, read_committed reads are available through LogConfig) and
// connector-specific offsets topics.
package storage

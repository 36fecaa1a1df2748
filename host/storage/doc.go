// Package storage keeps the worker's state: source offsets, connector
// configurations and statuses. Standalone mode keeps offsets in a local file
// (FileOffsetStore); distributed mode keeps all three on compacted Kafka
// topics. Either way the records are Kafka Connect's: an offset is stored
// under the key ["<connector>",{<source partition>}] with the offset object
// as value, both as compact JSON with object keys sorted, so the bytes are
// deterministic and a logical partition always maps to the same key.
package storage

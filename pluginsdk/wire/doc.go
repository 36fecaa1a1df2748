// Package wire is the protocol between the Sluice worker and its plugins, as
// seen from Go: go-plugin's handshake and plugin set (handshake.go), the
// mapping between package data and the generated proto types (one place,
// used by both sides), and the error classification of plugin.proto.
//
// The worker (host/) and the Go SDK (pluginsdk) both import it; it imports
// neither.
//
// # Data mapping
//
// EncodeSchema/DecodeSchema and EncodeValue/DecodeValue convert one schema or
// value; EncodeSourceRecords/DecodeSourceRecords and the sink pair convert a
// whole batch together with its schema table (SchemaEncoder, SchemaDecoder):
// each distinct schema travels once per batch and records refer to it by a
// 1-based index, so a batch of a million records of one struct type carries
// one schema.
//
// The rules, in both directions:
//
//   - Integers of every width travel as int_value and floats as float_value;
//     the schema restores the Go width (int8 ... int64, float32, float64),
//     rejecting out-of-range values. Schemaless values come back as int64 and
//     float64, as Kafka Connect's JsonConverter reads them.
//   - Logical values travel physical (data.ToPhysical): Decimal as two's
//     complement bytes, Date and Time as int32, Timestamp as int64, and come
//     back as data.Decimal and UTC time.Time.
//   - Maps come back as map[string]any when every key is a string and as
//     data.Map (entry order kept) otherwise.
//   - A data.Raw key, value or header value travels as Data.raw without a
//     schema and comes back as data.Raw.
//   - A nil key or value without a schema is an absent Data; nil with a
//     schema is a null Value with the schema reference.
//   - Source records: Partition data.NoPartition is an absent
//     kafka_partition and a zero Timestamp an absent timestamp_ms. Sink
//     records: a zero Timestamp is timestamp_ms -1 (Kafka's "no timestamp").
//   - Source partitions and offsets are compact JSON with sorted keys
//     (EncodeJSONMap), so equal maps are equal bytes.
//
// Errors name the path to what is wrong: "source record 3 (topic orders):
// value: field lines: element 0: field amount: ...".
//
// # Cost
//
// The batch converters allocate per batch, not per record, where they can:
// records, their Data messages, plain bytes and string values, and the JSON
// of source partitions and offsets (a partition map shared by the records of
// a batch is written once) are carved from slabs. Codec is protobuf with
// the buffers of large messages (a batch of a thousand 1 KiB records is just
// over gRPC's 1 MiB pooling limit) kept for reuse; the SDK's server and the
// clients GRPCPlugin returns use it. It decodes the two large
// messages of the data path, a Poll answer and a Put request, by hand
// (fastdecode.go): records come from slabs and their bytes and strings
// alias a buffer the message keeps, and anything unusual goes to protobuf.
// It encodes them by hand too (fastencode.go): one sizing pass, then the
// bytes written back to front into one buffer, byte for byte protobuf's
// deterministic output; messages it does not handle go to proto.Marshal.
//
// On the plugin side, the SDK skips the generated messages for batches in
// shared memory: a Put batch is read from its bytes straight into sink
// records (DecodePutBatch, SharedRegion.TakeSinkRecords; putdecode.go),
// and a Poll answer is written from the source records straight into the
// region (SourceBatch, SharedRegion.PlacePoll; pollencode.go). Both give
// exactly what the two steps (convert, then encode or decode) give, and
// hand anything unusual to them.
//
// The worker does the same for the other halves: a Poll answer is read
// from its bytes straight into source records and the JSON of their
// source partitions and offsets (PollBatch; SharedRegion.TakePoll from the
// region, ReceivePoll from gRPC's receive buffer), and a Put batch is
// written from the sink records straight into the region (SinkBatch,
// SharedRegion.PlacePut) or gRPC's send buffer (SendPut).
package wire

package errorhandler

import (
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// The error log prints a source record as SourceRecord.toString does: Java
// toString forms of its values, and the headers as ConnectHeaders prints
// its list ("[...]"), or nothing when there are none.
func TestSourceString(t *testing.T) {
	r := &data.SourceRecord{
		Record: data.Record{Topic: "lines", Partition: data.NoPartition, Key: "k", KeySchema: data.StringSchema, Value: 1.0, ValueSchema: data.Float64Schema,
			Headers: data.Headers{
				{Key: "n", Schema: data.Int32Schema, Value: int32(7)},
				{Key: "at", Schema: data.TimestampSchema(false), Value: time.UnixMilli(0).UTC()},
			},
			Timestamp: time.UnixMilli(1_700_000_000_000)},
		SourcePartition: map[string]any{"filename": "/in.txt"},
		SourceOffset:    map[string]any{"position": int64(120)},
	}
	want := "SourceRecord{sourcePartition={filename=/in.txt}, sourceOffset={position=120}} ConnectRecord{topic='lines', kafkaPartition=null, key=k, keySchema=Schema{STRING}, value=1.0, valueSchema=Schema{FLOAT64}, timestamp=1700000000000, " +
		"headers=ConnectHeaders(headers=[ConnectHeader(key=n, value=7, schema=Schema{INT32}), ConnectHeader(key=at, value=Thu Jan 01 00:00:00 UTC 1970, schema=Schema{org.apache.kafka.connect.data.Timestamp:INT64})])}"
	if got := sourceString(r); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	r.Headers = nil
	want = "SourceRecord{sourcePartition={filename=/in.txt}, sourceOffset={position=120}} ConnectRecord{topic='lines', kafkaPartition=null, key=k, keySchema=Schema{STRING}, value=1.0, valueSchema=Schema{FLOAT64}, timestamp=1700000000000, headers=ConnectHeaders(headers=)}"
	if got := sourceString(r); got != want {
		t.Errorf("no headers:\ngot  %s\nwant %s", got, want)
	}
}

package pluginsdk

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// recordSize must never undercount what a record adds to a PollResponse
// (max_bytes is a bound), and should not overcount by much.
func TestRecordSizeBoundsTheEncodedRecord(t *testing.T) {
	s := data.StructBuilder().Name("s").Field("id", data.Int64Schema).Field("name", data.StringSchema).MustBuild()
	recs := []*data.SourceRecord{
		{Record: data.Record{Topic: "t", Partition: data.NoPartition}},
		{Record: data.Record{Topic: "topic", Partition: 3, Key: data.Raw("k"), Value: data.Raw(make([]byte, 1024))},
			SourcePartition: map[string]any{"task": int64(0)}, SourceOffset: map[string]any{"seq": int64(1) << 40}},
		{Record: data.Record{Topic: "t", Partition: -5, ValueSchema: s, Value: data.NewStruct(s).MustPut("id", int64(-1)).MustPut("name", "n"),
			Headers: data.Headers{{Key: "h", Value: data.Raw("v")}, {Key: "h2", Schema: data.StringSchema, Value: "x"}}}},
		{Record: data.Record{Topic: "t", Partition: data.NoPartition, Value: data.Raw(make([]byte, 300_000))}},
	}
	_, encoded, err := wire.EncodeSourceRecords(recs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range encoded {
		exact := proto.Size(&pluginv1.PollResponse{Records: []*pluginv1.SourceRecord{r}})
		got := recordSize(r)
		if got < exact || got > exact+250 {
			t.Errorf("record %d: recordSize %d, encoded %d", i, got, exact)
		}
	}
}

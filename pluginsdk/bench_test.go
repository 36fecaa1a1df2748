package pluginsdk

import (
	"context"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// BenchmarkPollOneRecordPerTaskPoll measures records per second through the
// SDK's Poll RPC (in-memory gRPC) for a task returning one record per Poll,
// batched 1000 to a response.
func BenchmarkPollOneRecordPerTaskPoll(b *testing.B) {
	schema := &data.Schema{Type: data.StructType, Fields: []data.Field{
		{Name: "task", Index: 0, Schema: data.Int32Schema},
		{Name: "seq", Index: 1, Schema: data.Int64Schema},
	}}
	part := map[string]any{"task": int64(0)}
	c := serve(b, sourceClass(func() SourceTask {
		seq := int64(0)
		return &funcSource{poll: func(context.Context) ([]*data.SourceRecord, error) {
			seq++
			return []*data.SourceRecord{{
				Record: data.Record{Topic: "t", Partition: data.NoPartition, ValueSchema: schema,
					Value: data.NewStruct(schema).MustPut("task", int32(0)).MustPut("seq", seq)},
				SourcePartition: part, SourceOffset: map[string]any{"seq": seq},
			}}, nil
		}}
	}))
	ctx := context.Background()
	if _, err := c.SourceTask.Start(ctx, &pluginv1.SourceTaskStartRequest{ConnectorClass: "test.Source"}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	n := 0
	for n < b.N {
		resp, err := c.SourceTask.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 1000, TimeoutMs: 1000})
		if err != nil {
			b.Fatal(err)
		}
		n += len(resp.GetRecords())
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}

package plugin

import (
	"context"
	"fmt"
	"testing"
	"time"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// BenchmarkPoll measures the source data path through a real plugin
// process: one unary Poll per batch of 1 KiB raw records, as a task runner
// drives it. b.N counts Poll calls.
func BenchmarkPoll(b *testing.B) {
	for _, batch := range []int{100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			m, _ := newManager(b, Options{})
			in := launch(b, m, Spec{Path: goodBin, Connector: "bench", Task: 0})
			ctx := context.Background()
			if _, err := in.SourceTask().Start(ctx, &pluginv1.SourceTaskStartRequest{}); err != nil {
				b.Fatal(err)
			}
			req := &pluginv1.PollRequest{MaxRecords: uint32(batch)}
			var records, bytes int64
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				resp, err := in.SourceTask().Poll(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range resp.GetRecords() {
					bytes += int64(len(r.GetValue().GetRaw()))
				}
				records += int64(len(resp.GetRecords()))
			}
			secs := time.Since(start).Seconds()
			b.ReportMetric(float64(records)/secs, "records/s")
			b.ReportMetric(float64(bytes)/1e6/secs, "MB/s")
		})
	}
}

package worker

import (
	"strings"
	"testing"
)

func TestSinkBatchLimits(t *testing.T) {
	recs, bytes, err := sinkBatchLimits(map[string]string{})
	if err != nil || recs != 0 || bytes != 0 {
		t.Fatalf("unset: %d %d %v, want zeros (the runtime's defaults)", recs, bytes, err)
	}
	recs, bytes, err = sinkBatchLimits(map[string]string{"sluice.sink.batch.max.records": " 20000 ", "sluice.sink.batch.max.bytes": "33554432"})
	if err != nil || recs != 20000 || bytes != 32<<20 {
		t.Fatalf("set: %d %d %v", recs, bytes, err)
	}
	for _, bad := range []map[string]string{
		{"sluice.sink.batch.max.records": "0"},
		{"sluice.sink.batch.max.records": "4294967296"},
		{"sluice.sink.batch.max.bytes": "lots"},
		{"sluice.sink.batch.max.bytes": "-1"},
	} {
		if _, _, err := sinkBatchLimits(bad); err == nil || !strings.Contains(err.Error(), "sluice.sink.batch.max.") {
			t.Fatalf("%v: error %v", bad, err)
		}
	}
}

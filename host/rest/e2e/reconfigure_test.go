package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// createTopic creates a topic of one partition.
func (e *env) createTopic(topic string) {
	e.t.Helper()
	e.createTopicPartitions(topic, 1)
}

// produceValues writes "<prefix>-<i>" for i in [from, to) to topic, in
// order, as plain (non-JSON) string values with no key; it returns them.
// The topic must exist.
func (e *env) produceValues(topic, prefix string, from, to int) []string {
	e.t.Helper()
	cl := e.kafka()
	defer cl.Close()
	var vals []string
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		v := fmt.Sprintf("%s-%04d", prefix, i)
		vals = append(vals, v)
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		e.t.Fatalf("produce to %s: %v", topic, err)
	}
	return vals
}

// sinkOffsets is a sink connector's committed offsets per "topic-partition"
// from GET /connectors/{c}/offsets.
func (e *env) sinkOffsets(name string) map[string]int64 {
	e.t.Helper()
	out := map[string]int64{}
	for _, o := range e.offsets(name).Offsets {
		tp := fmt.Sprintf("%v-%v", o.Partition["kafka_topic"], o.Partition["kafka_partition"])
		off, ok := o.Offset["kafka_offset"].(float64)
		if !ok {
			e.t.Fatalf("sink offset %v of %s has no numeric kafka_offset", o.Offset, tp)
		}
		out[tp] = int64(off)
	}
	return out
}

// waitSinkOffsets waits until the sink's committed offsets are exactly want.
func (e *env) waitSinkOffsets(name string, want map[string]int64) {
	e.t.Helper()
	var got map[string]int64
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = e.sinkOffsets(name)
		if maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("offsets of %s: %v, want %v", name, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kafka's testRuntimePropertyReconfiguration: a sink fails on records its
// value converter cannot read; a PUT that changes nothing but
// value.converter must restart the task (in a new plugin process), which
// then delivers every record exactly once, in order, from where the failed
// one left off (nothing was committed), and commits up to the topic's end.
func TestConverterOnlyReconfiguration(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	const topic, n, m = "conv", 500, 50
	out := e.dir + "/out.txt"
	e.createTopic(topic)
	want := e.produceValues(topic, "line", 0, n)
	if end := e.endOffset(topic); end != n {
		t.Fatalf("end offset of %s: %d, want %d", topic, end, n)
	}

	cfg := map[string]string{
		"connector.class":                "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"file":                           out,
		"topics":                         topic,
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "true",
	}
	e.create("conv-snk", cfg)
	st := e.waitStatus("conv-snk", "RUNNING:FAILED")
	trace := st.Tasks[0].Trace
	// The first record fails, in the value converter, with JsonConverter's
	// message.
	for _, s := range []string{"Tolerance exceeded in error handler", "'VALUE_CONVERTER'",
		"'org.apache.kafka.connect.json.JsonConverter'", topic + "-0@0",
		"Converting byte[] to Kafka Connect data failed due to serialization error"} {
		if !strings.Contains(trace, s) {
			t.Fatalf("trace of the failed task lacks %q:\n%s", s, trace)
		}
	}
	// The failed task's process is gone; nothing was written or committed.
	e.waitPids("conv-snk", "connector")
	if got := fileLines(t, out); len(got) != 0 {
		t.Fatalf("the failed task wrote %d lines %s", len(got), abbrev(got))
	}
	if got := e.sinkOffsets("conv-snk"); len(got) != 0 {
		t.Fatalf("the failed task committed %v", got)
	}

	// Only value.converter changes (schemas.enable stays, now meaningless).
	cfg["value.converter"] = "org.apache.kafka.connect.storage.StringConverter"
	var info connectorInfo
	strict(t, e.must("PUT", "/connectors/conv-snk/config", cfg, 200), &info)
	if !maps.Equal(info.Config, withName(cfg, "conv-snk")) {
		t.Fatalf("PUT answered config %v", info.Config)
	}
	st = e.waitStatus("conv-snk", "RUNNING:RUNNING")
	if st.Tasks[0].Trace != "" {
		t.Fatalf("trace kept after the reconfiguration: %q", st.Tasks[0].Trace)
	}
	// The task runs again, in a process of its own.
	pids := e.waitPids("conv-snk", "connector", "task 0")
	waitFile(t, out, want)
	e.waitSinkOffsets("conv-snk", map[string]int64{topic + "-0": n})
	if end := e.endOffset(topic); end != n {
		t.Fatalf("end offset of %s: %d, want %d", topic, end, n)
	}

	// New records after the reconfiguration arrive once each, after the
	// first ones; the task stays in the same process.
	want = append(slices.Clone(want), e.produceValues(topic, "line", n, n+m)...)
	waitFile(t, out, want)
	e.waitSinkOffsets("conv-snk", map[string]int64{topic + "-0": n + m})
	time.Sleep(500 * time.Millisecond) // a duplicate would show by now
	if got := fileLines(t, out); !slices.Equal(got, want) {
		t.Fatalf("file holds %d lines %s, want %d %s", len(got), abbrev(got), len(want), abbrev(want))
	}
	if got := e.pids("conv-snk"); !maps.Equal(got, pids) {
		t.Fatalf("processes %v, want %v", got, pids)
	}
	e.waitStatus("conv-snk", "RUNNING:RUNNING")
}

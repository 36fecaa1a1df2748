package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// createTopicPartitions creates a topic of n partitions.
func (e *env) createTopicPartitions(topic string, n int32) {
	e.t.Helper()
	cl := e.kafka()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := kadm.NewClient(cl).CreateTopic(ctx, n, 1, nil, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		e.t.Fatalf("create topic %s: %v", topic, err)
	}
}

// produceTo writes each value to its partition of topic (vals[p] in order
// to partition p) as plain string values with no key. The topic must exist.
func (e *env) produceTo(topic string, vals map[int32][]string) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, p := range slices.Sorted(maps.Keys(vals)) {
		for _, v := range vals[p] {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		e.t.Fatalf("produce to %s: %v", topic, err)
	}
	for _, r := range res {
		if want := vals[r.Record.Partition]; r.Record.Topic != topic || !slices.Contains(want, string(r.Record.Value)) {
			e.t.Fatalf("record %q went to %s-%d", r.Record.Value, r.Record.Topic, r.Record.Partition)
		}
	}
}

// splitByPartition sorts the lines of a file into the partitions they were
// produced to (by owner), keeping their order; a line of no partition
// fails the test.
func splitByPartition(t *testing.T, lines []string, owner map[string]int32) map[int32][]string {
	t.Helper()
	out := map[int32][]string{}
	for _, l := range lines {
		p, ok := owner[l]
		if !ok {
			t.Fatalf("file holds %q, which was never produced", l)
		}
		out[p] = append(out[p], l)
	}
	return out
}

// Kafka's ConnectorOffsetsIntegrationTest
// (testCreateSinkConnectorWithStoppedInitialStateAndModifyOffsets): a sink
// created STOPPED (KIP-980) has no offsets; they can be altered before its
// first run, and once resumed it consumes each partition from its altered
// offset, nothing earlier, up to the end.
func TestSinkOffsetsBeforeFirstRun(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	const topic, name = "sink-late", "sink-late"
	out := e.dir + "/out.txt"
	e.createTopicPartitions(topic, 2)
	// Line i goes to partition i%2: 50 lines each.
	produced := map[int32][]string{}
	owner := map[string]int32{}
	for i := range 100 {
		v := fmt.Sprintf("line-%04d", i)
		p := int32(i % 2)
		produced[p] = append(produced[p], v)
		owner[v] = p
	}
	e.produceTo(topic, produced)
	if end := e.endOffset(topic); end != 100 {
		t.Fatalf("end offset of %s: %d, want 100", topic, end)
	}

	var info connectorInfo
	cfg := map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": topic}
	strict(t, e.must("POST", "/connectors", map[string]any{"name": name, "initial_state": "STOPPED", "config": cfg}, 201), &info)
	if !maps.Equal(info.Config, withName(cfg, name)) || info.Type != "sink" || len(info.Tasks) != 0 {
		t.Fatalf("create answered %+v", info)
	}
	e.waitStatus(name, "STOPPED:")
	if o := e.offsets(name); o.Offsets == nil || len(o.Offsets) != 0 {
		t.Fatalf("offsets before the first run %+v", o)
	}

	alter := map[string]any{"offsets": []any{
		map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 0}, "offset": map[string]any{"kafka_offset": 30}},
		map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 1}, "offset": map[string]any{"kafka_offset": 10}},
	}}
	var m message
	strict(t, e.must("PATCH", "/connectors/"+name+"/offsets", alter, 200), &m)
	if m.Message != "The offsets for this connector have been altered successfully" {
		t.Fatalf("alter message %q", m.Message)
	}
	altered := map[string]int64{topic + "-0": 30, topic + "-1": 10}
	if got := e.sinkOffsets(name); !maps.Equal(got, altered) {
		t.Fatalf("offsets after alter %v, want %v", got, altered)
	}
	// Still stopped: nothing ran, nothing was written.
	if st := e.status(name); st.summary() != "STOPPED:" {
		t.Fatalf("status after alter %s", st.summary())
	}
	if got := fileLines(t, out); len(got) != 0 {
		t.Fatalf("file holds %d lines before the first run", len(got))
	}

	e.must("PUT", "/connectors/"+name+"/resume", nil, 202)
	e.waitStatus(name, "RUNNING:RUNNING")
	want := map[int32][]string{0: produced[0][30:], 1: produced[1][10:]}
	total := len(want[0]) + len(want[1])
	var got []string
	waitUntil(t, fmt.Sprintf("%d lines in the file", total), 15*time.Second, func() bool {
		got = fileLines(t, out)
		return len(got) >= total
	})
	e.waitSinkOffsets(name, map[string]int64{topic + "-0": 50, topic + "-1": 50})
	time.Sleep(300 * time.Millisecond) // a duplicate or a late earlier line would show by now
	got = fileLines(t, out)
	byPart := splitByPartition(t, got, owner)
	for p := range int32(2) {
		if !slices.Equal(byPart[p], want[p]) {
			t.Fatalf("partition %d: file holds %d lines %s, want %d %s", p, len(byPart[p]), abbrev(byPart[p]), len(want[p]), abbrev(want[p]))
		}
	}
	if len(got) != total {
		t.Fatalf("file holds %d lines, want %d", len(got), total)
	}

	// Running (and paused), the offsets cannot be altered.
	refused := func(state, method string, body any) {
		t.Helper()
		if msg := e.mustFail(method, "/connectors/"+name+"/offsets", body, 400); msg != stoppedMsg(name) {
			t.Fatalf("%s while %s: %q, want %q", method, state, msg, stoppedMsg(name))
		}
	}
	refused("running", "PATCH", alter)
	refused("running", "DELETE", nil)
	e.must("PUT", "/connectors/"+name+"/pause", nil, 202)
	e.waitStatus(name, "PAUSED:PAUSED")
	refused("paused", "PATCH", alter)
	e.waitSinkOffsets(name, map[string]int64{topic + "-0": 50, topic + "-1": 50})
	if strings.Join(fileLines(t, out), "\n") != strings.Join(got, "\n") {
		t.Fatalf("the refused PATCH changed the file")
	}
}

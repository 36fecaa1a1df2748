//go:build integration

package distributed

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/integration/itest"
)

// TestSpreadBalancedAndForwarded: three workers; three sink connectors of
// three tasks each, each created through a different worker (so at least
// two through followers, forwarded to the leader). Every connector and task
// runs, spread so that no worker has two more connectors or tasks than
// another; every worker answers the same status; records reach every sink
// file; the internal topics hold Kafka Connect's records.
func TestSpreadBalancedAndForwarded(t *testing.T) {
	e := newEnv(t, nil)
	ws := []*worker{e.addWorker(), e.addWorker(), e.addWorker()}

	var names, topics, outs []string
	for i, w := range ws {
		name := e.name(fmt.Sprintf("sink%d", i))
		topic := e.topic(fmt.Sprintf("in%d", i), 3)
		out := e.path(name + ".txt")
		w.create(sinkConfig(name, out, topic, 3))
		names, topics, outs = append(names, name), append(topics, topic), append(outs, out)
	}
	for _, n := range names {
		ws[0].waitStatus(n, "RUNNING", stateTimeout, allIn("RUNNING", 3))
	}

	// Every worker answers the same statuses, connector list and task
	// configs.
	var connCount, taskCount = map[string]int{}, map[string]int{}
	for _, n := range names {
		var first status
		for i, w := range ws {
			s := w.waitStatus(n, "RUNNING", stateTimeout, allIn("RUNNING", 3))
			if i == 0 {
				first = s
				continue
			}
			if !reflect.DeepEqual(first, s) {
				t.Fatalf("status of %s differs: %s says %s, %s says %s", n, ws[0].url, first, w.url, s)
			}
		}
		connCount[first.Connector.WorkerID]++
		for _, tk := range first.Tasks {
			taskCount[tk.WorkerID]++
		}
		tasks0 := ws[0].do(http.MethodGet, "/connectors/"+n+"/tasks", nil, http.StatusOK)
		for _, w := range ws[1:] {
			if got := w.do(http.MethodGet, "/connectors/"+n+"/tasks", nil, http.StatusOK); string(got) != string(tasks0) {
				t.Fatalf("tasks of %s differ between workers:\n%s\n%s", n, tasks0, got)
			}
		}
	}
	list0 := ws[0].do(http.MethodGet, "/connectors", nil, http.StatusOK)
	for _, w := range ws[1:] {
		if got := w.do(http.MethodGet, "/connectors", nil, http.StatusOK); string(got) != string(list0) {
			t.Fatalf("connector lists differ: %s vs %s", list0, got)
		}
	}
	t.Logf("connectors per worker %v, tasks per worker %v", connCount, taskCount)
	requireBalanced(t, "connectors", connCount, ws, 3)
	requireBalanced(t, "tasks", taskCount, ws, 9)

	// Data flows through every connector.
	for i, topic := range topics {
		var lines []string
		for j := range 300 {
			lines = append(lines, fmt.Sprintf("c%d-line-%04d", i, j))
		}
		var recs []*kgo.Record
		for j, l := range lines {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(j % 3), Value: []byte(l)})
		}
		itest.Produce(t, e.cl, recs...)
		waitAll(t, outs[i], lines, dataTimeout)
	}

	checkInternalRecords(t, e, names[0], ws)
}

// requireBalanced checks max − min < 2 over the workers, and the total.
func requireBalanced(t *testing.T, what string, count map[string]int, ws []*worker, total int) {
	t.Helper()
	lo, hi, sum := 1<<30, 0, 0
	for _, w := range ws {
		n := count[w.id()]
		lo, hi, sum = min(lo, n), max(hi, n), sum+n
	}
	if sum != total || hi-lo >= 2 {
		t.Fatalf("%s not balanced over the workers: %v (total %d, want %d)", what, count, sum, total)
	}
}

// checkInternalRecords reads the config and status topics raw and checks
// the records of connector name against Kafka Connect's formats
// (KafkaConfigBackingStore, KafkaStatusBackingStore): keys, JSON field
// names and order, value types.
func checkInternalRecords(t *testing.T, e *env, name string, ws []*worker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cfgRecs := readAll(ctx, t, e, e.props["config.storage.topic"])
	last := map[string][]byte{}
	var keys []string
	for _, r := range cfgRecs {
		k := string(r.Key)
		if !strings.HasSuffix(k, name) && !strings.Contains(k, name+"-") {
			continue
		}
		keys = append(keys, k)
		last[k] = r.Value
	}
	for _, k := range []string{"connector-" + name, "task-" + name + "-0", "task-" + name + "-1", "task-" + name + "-2", "commit-" + name} {
		if _, ok := last[k]; !ok {
			t.Fatalf("config topic: no record %q; keys of %s: %v", k, name, keys)
		}
	}
	var conn struct {
		Properties map[string]string `json:"properties"`
	}
	mustJSON(t, last["connector-"+name], &conn)
	if conn.Properties["name"] != name || conn.Properties["connector.class"] != fileSink {
		t.Fatalf("connector record %s", last["connector-"+name])
	}
	requireFieldOrder(t, last["connector-"+name], "properties")
	var task struct {
		Properties map[string]string `json:"properties"`
	}
	mustJSON(t, last["task-"+name+"-0"], &task)
	if task.Properties["task.class"] != "org.apache.kafka.connect.file.FileStreamSinkTask" || task.Properties["topics"] == "" {
		t.Fatalf("task record without Kafka's task.class or topics: %s", last["task-"+name+"-0"])
	}
	if got := string(last["commit-"+name]); got != `{"tasks":3}` {
		t.Fatalf("commit record %s, want {\"tasks\":3}", got)
	}

	stRecs := readAll(ctx, t, e, e.props["status.storage.topic"])
	stLast := map[string][]byte{}
	for _, r := range stRecs {
		stLast[string(r.Key)] = r.Value
	}
	ids := map[string]bool{}
	for _, w := range ws {
		ids[w.id()] = true
	}
	for _, k := range []string{"status-connector-" + name, "status-task-" + name + "-0", "status-task-" + name + "-2"} {
		v, ok := stLast[k]
		if !ok {
			t.Fatalf("status topic: no record %q", k)
		}
		requireFieldOrder(t, v, "state", "trace", "worker_id", "generation")
		var st struct {
			State      string  `json:"state"`
			Trace      *string `json:"trace"`
			WorkerID   string  `json:"worker_id"`
			Generation int     `json:"generation"`
		}
		mustJSON(t, v, &st)
		if st.State != "RUNNING" || st.Trace != nil || !ids[st.WorkerID] || st.Generation < 1 {
			t.Fatalf("status record %s = %s: want RUNNING, trace null, a worker's id, a generation", k, v)
		}
	}
}

func readAll(ctx context.Context, t *testing.T, e *env, topic string) []*kgo.Record {
	t.Helper()
	cl := itest.NewClient(t, e.kafka.Bootstrap(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ends, err := endOffsets(ctx, e, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []*kgo.Record
	for {
		done := true
		for p, end := range ends {
			if end > 0 && !seen(out, p, end) {
				done = false
			}
		}
		if done {
			return out
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %v", topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
}

func seen(recs []*kgo.Record, p int32, end int64) bool {
	for _, r := range slices.Backward(recs) {
		if r.Partition == p && r.Offset >= end-1 {
			return true
		}
	}
	return false
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// requireFieldOrder checks the top-level fields of a JSON object, in order.
func requireFieldOrder(t *testing.T, b []byte, fields ...string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if _, err := dec.Token(); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	var got []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		got = append(got, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
	}
	if !slices.Equal(got, fields) {
		t.Fatalf("record %s: fields %v, want %v", b, got, fields)
	}
}

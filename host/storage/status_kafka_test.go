package storage

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (k *testKafka) startStatuses(topic string) *StatusStore {
	k.t.Helper()
	s := NewStatusStore(LogConfig{Topic: topic, ClientOpts: k.opts})
	if err := s.Start(testCtx(k.t)); err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(s.Close)
	return s
}

// topicRecords renders a topic's records as "key = value" lines.
func (k *testKafka) topicRecords(topic string) []string {
	var out []string
	for _, r := range k.readAll(topic) {
		v := "null"
		if r.Value != nil {
			v = string(r.Value)
		}
		out = append(out, string(r.Key)+" = "+v)
	}
	return out
}

func TestStatusStoreRecordsAreKafkaConnects(t *testing.T) {
	// Every record shape, byte for byte, against kafka-connect-anchor.md §2.4
	// (trace is null when there is none: the field is an optional Struct
	// field, which JsonConverter writes as null, not absent).
	k := newTestKafka(t)
	k.createTopic("connect-status", 1, "compact") // one partition: a total order to compare
	s := k.startStatuses("connect-status")
	ctx := testCtx(t)
	steps := []error{
		s.PutConnector(ctx, "c", Status{State: StateRunning, WorkerID: "host:8083", Generation: 2}),
		s.PutTask(ctx, TaskID{"c", 0}, Status{State: StateFailed, Trace: "org.apache.kafka.connect.errors.ConnectException: boom\n\tat X.y(X.java:1)", WorkerID: "host:8083", Generation: 2}),
		s.PutTask(ctx, TaskID{"my-conn", 12}, Status{State: StateUnassigned, WorkerID: "10.0.0.1:8083", Generation: 0}),
		s.PutTopic(ctx, TopicStatus{Topic: "orders", Connector: "c", Task: 0, DiscoverTimestamp: 1700000000123}),
		s.DeleteTopic(ctx, "c", "orders"),
		s.DeleteTask(ctx, TaskID{"my-conn", 12}, "10.0.0.1:8083", 0),
		s.DeleteConnector(ctx, "c", "host:8083", 3),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := []string{
		`status-connector-c = {"state":"RUNNING","trace":null,"worker_id":"host:8083","generation":2}`,
		`status-task-c-0 = {"state":"FAILED","trace":"org.apache.kafka.connect.errors.ConnectException: boom\n\tat X.y(X.java:1)","worker_id":"host:8083","generation":2}`,
		`status-task-my-conn-12 = {"state":"UNASSIGNED","trace":null,"worker_id":"10.0.0.1:8083","generation":0}`,
		`status-topic-orders:connector-c = {"topic":{"name":"orders","connector":"c","task":0,"discoverTimestamp":1700000000123}}`,
		`status-topic-orders:connector-c = null`,
		`status-task-my-conn-12 = null`,
		`status-connector-c = null`,
	}
	if got := k.topicRecords("connect-status"); !slices.Equal(got, want) {
		t.Fatalf("status topic holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := s.PutConnector(ctx, "c", Status{State: "BROKEN"}); err == nil {
		t.Fatal("unknown state written")
	}
}

func TestStatusStoreRoundTripAndDeletes(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("connect-status", 5, "compact")
	ctx := testCtx(t)
	a := k.startStatuses("connect-status")
	run := Status{State: StateRunning, WorkerID: "a:8083", Generation: 1}
	for _, err := range []error{
		a.PutConnector(ctx, "c", run),
		a.PutTask(ctx, TaskID{"c", 0}, run),
		a.PutTask(ctx, TaskID{"c", 1}, Status{State: StateFailed, Trace: "boom", WorkerID: "a:8083", Generation: 1}),
		a.PutConnector(ctx, "d", run),
		a.PutTask(ctx, TaskID{"d", 0}, run),
		a.PutTopic(ctx, TopicStatus{Topic: "t2", Connector: "c", Task: 1, DiscoverTimestamp: 2}),
		a.PutTopic(ctx, TopicStatus{Topic: "t1", Connector: "c", Task: 0, DiscoverTimestamp: 1}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Statuses become visible when read back.
	if err := a.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	b := k.startStatuses("connect-status")
	for i, s := range []*StatusStore{a, b} {
		if got := s.Connectors(); !slices.Equal(got, []string{"c", "d"}) {
			t.Fatalf("store %d: connectors %v", i, got)
		}
		tasks := s.Tasks("c")
		if len(tasks) != 2 || tasks[0].ID != (TaskID{"c", 0}) || tasks[0].Status != run ||
			tasks[1].State != StateFailed || tasks[1].Trace != "boom" {
			t.Fatalf("store %d: tasks %+v", i, tasks)
		}
		if topics := s.Topics("c"); len(topics) != 2 || topics[0].Topic != "t1" || topics[1] != (TopicStatus{"t2", "c", 1, 2}) {
			t.Fatalf("store %d: topics %+v", i, topics)
		}
	}
	// Deleting a connector drops its task statuses too (Kafka's leader
	// writes task tombstones as well; readers do not wait for them).
	if err := a.DeleteConnector(ctx, "c", "a:8083", 2); err != nil {
		t.Fatal(err)
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Connector("c"); ok || len(b.Tasks("c")) != 0 {
		t.Fatalf("deleted connector still has statuses: %v", b.Tasks("c"))
	}
	if st, ok := b.Task(TaskID{"d", 0}); !ok || st != run {
		t.Fatalf("other connector's task lost: %+v %v", st, ok)
	}
}

func TestStatusStoreStaleWritesNeverWin(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("connect-status", 1, "compact")
	ctx := testCtx(t)
	// Worker b took the task over at generation 5.
	k.produce("connect-status", 0, [2]string{"status-task-c-0", `{"state":"RUNNING","trace":null,"worker_id":"b:8083","generation":5}`})
	a := k.startStatuses("connect-status")
	before := len(k.readAll("connect-status"))

	// a, still at generation 4, reports its shutdown safely: dropped.
	if err := a.PutTaskSafe(ctx, TaskID{"c", 0}, Status{State: StateUnassigned, WorkerID: "a:8083", Generation: 4}); err != nil {
		t.Fatal(err)
	}
	if n := len(k.readAll("connect-status")); n != before {
		t.Fatalf("stale safe write reached the topic (%d records, had %d)", n, before)
	}
	// A safe write of the same or a newer generation goes through.
	if err := a.PutTaskSafe(ctx, TaskID{"c", 0}, Status{State: StateFailed, Trace: "x", WorkerID: "a:8083", Generation: 5}); err != nil {
		t.Fatal(err)
	}
	if err := a.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := a.Task(TaskID{"c", 0}); st.State != StateFailed || st.WorkerID != "a:8083" {
		t.Fatalf("safe write of the current generation: %+v", st)
	}
	// The worker's own status never blocks it: same worker, lower generation.
	if err := a.PutTaskSafe(ctx, TaskID{"c", 0}, Status{State: StateUnassigned, WorkerID: "a:8083", Generation: 1}); err != nil {
		t.Fatal(err)
	}
	if err := a.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := a.Task(TaskID{"c", 0}); st.State != StateUnassigned {
		t.Fatalf("own lower-generation safe write: %+v", st)
	}

	// Readers ignore a late UNASSIGNED of an older generation than the
	// RUNNING they hold, whoever wrote it (KAFKA-12525) ...
	k.produce("connect-status", 0,
		[2]string{"status-task-c-1", `{"state":"RUNNING","trace":null,"worker_id":"b:8083","generation":7}`},
		[2]string{"status-task-c-1", `{"state":"UNASSIGNED","trace":null,"worker_id":"a:8083","generation":6}`},
	)
	fresh := k.startStatuses("connect-status")
	for i, s := range []*StatusStore{a, fresh} {
		if err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if st, _ := s.Task(TaskID{"c", 1}); st.State != StateRunning || st.WorkerID != "b:8083" || st.Generation != 7 {
			t.Fatalf("store %d: stale UNASSIGNED won: %+v", i, st)
		}
	}
	// ... but not one of the same generation, nor other states.
	k.produce("connect-status", 0,
		[2]string{"status-task-c-1", `{"state":"UNASSIGNED","trace":null,"worker_id":"b:8083","generation":7}`},
		[2]string{"status-task-c-2", `{"state":"RUNNING","trace":null,"worker_id":"b:8083","generation":7}`},
		[2]string{"status-task-c-2", `{"state":"FAILED","trace":"t","worker_id":"a:8083","generation":6}`},
	)
	if err := a.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := a.Task(TaskID{"c", 1}); st.State != StateUnassigned {
		t.Fatalf("UNASSIGNED of the same generation ignored: %+v", st)
	}
	if st, _ := a.Task(TaskID{"c", 2}); st.State != StateFailed {
		t.Fatalf("FAILED of an older generation ignored by the reader: %+v", st)
	}
}

// failProduces makes the cluster answer the next n produce requests with
// NOT_LEADER_OR_FOLLOWER (retriable), calling each before answering.
func (k *testKafka) failProduces(n int32, each func()) *atomic.Int32 {
	var left atomic.Int32
	left.Store(n)
	k.c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if left.Add(-1) < 0 {
			k.c.DropControl()
			return nil, nil, false
		}
		k.c.KeepControl()
		if each != nil {
			each()
		}
		req := kreq.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return &left
}

func TestStatusStoreResendsOnlyCurrentWrites(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("connect-status", 1, "compact")
	ctx := testCtx(t)
	s := k.startStatuses("connect-status")

	// A retriable failure: the write is still current, so it is re-sent.
	k.failProduces(1, nil)
	if err := s.PutTask(ctx, TaskID{"c", 0}, Status{State: StateRunning, WorkerID: "a:1", Generation: 3}); err != nil {
		t.Fatal(err)
	}
	if got := k.topicRecords("connect-status"); len(got) != 1 || !strings.Contains(got[0], `"generation":3`) {
		t.Fatalf("after one failure: %q", got)
	}

	// The worker moves to a new generation while the write is failing: the
	// old write is dropped instead of landing after newer statuses.
	k.failProduces(1, func() {
		s.mu.Lock()
		s.generation = 4
		s.mu.Unlock()
	})
	if err := s.PutTask(ctx, TaskID{"c", 0}, Status{State: StateUnassigned, WorkerID: "a:1", Generation: 3}); err != nil {
		t.Fatal(err)
	}
	if got := k.topicRecords("connect-status"); len(got) != 1 {
		t.Fatalf("stale write re-sent: %q", got)
	}
}

func TestStatusStoreReadsJavaRecords(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("connect-status", 1, "compact")
	k.produce("connect-status", 0,
		[2]string{"status-connector-my-conn", `{"state":"RUNNING","worker_id":"10.1.2.3:8083","generation":12,"version":"4.1.0"}`}, // no trace field, extra field
		[2]string{"status-task-my-conn-3", `{"state":"PAUSED","trace":null,"worker_id":"10.1.2.3:8083","generation":12}`},
		[2]string{"status-task-my-conn-x", `{"state":"PAUSED","trace":null,"worker_id":"w","generation":1}`}, // bad task number
		[2]string{"status-connector-bad", `{"state":"SLEEPING","trace":null,"worker_id":"w","generation":1}`},
		[2]string{"status-connector-nogen", `{"state":"RUNNING","trace":null,"worker_id":"w"}`},
		[2]string{"status-topic-orders.v1:connector-my-conn", `{"topic":{"name":"orders.v1","connector":"my-conn","task":3,"discoverTimestamp":1690000000000}}`},
		[2]string{"status-topic-broken", `{"topic":{}}`},
		[2]string{"something-else", `{}`},
	)
	s := k.startStatuses("connect-status")
	if st, ok := s.Connector("my-conn"); !ok || st != (Status{State: StateRunning, WorkerID: "10.1.2.3:8083", Generation: 12}) {
		t.Fatalf("connector status %+v %v", st, ok)
	}
	if tasks := s.Tasks("my-conn"); len(tasks) != 1 || tasks[0].ID.Task != 3 || tasks[0].State != StatePaused {
		t.Fatalf("tasks %+v", tasks)
	}
	if got := s.Connectors(); !slices.Equal(got, []string{"my-conn"}) {
		t.Fatalf("invalid records were kept: %v", got)
	}
	if ts, ok := s.Topic("my-conn", "orders.v1"); !ok || ts != (TopicStatus{"orders.v1", "my-conn", 3, 1690000000000}) {
		t.Fatalf("topic status %+v %v", ts, ok)
	}
}

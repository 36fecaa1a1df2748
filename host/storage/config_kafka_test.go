package storage

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// eventLog records listener calls as strings.
type eventLog struct {
	mu     sync.Mutex
	events []string
	signal chan struct{}
}

func newEventLog() *eventLog { return &eventLog{signal: make(chan struct{}, 1000)} }

func (e *eventLog) add(format string, args ...any) {
	e.mu.Lock()
	e.events = append(e.events, fmt.Sprintf(format, args...))
	e.mu.Unlock()
	e.signal <- struct{}{}
}

func (e *eventLog) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

func (e *eventLog) ConnectorConfigUpdated(c string) { e.add("updated %s", c) }
func (e *eventLog) ConnectorConfigRemoved(c string) { e.add("removed %s", c) }
func (e *eventLog) TaskConfigsCommitted(c string, ids []TaskID) {
	e.add("committed %s %v", c, ids)
}
func (e *eventLog) TargetStateChanged(c string)       { e.add("target %s", c) }
func (e *eventLog) RestartRequested(r RestartRequest) { e.add("restart %+v", r) }
func (e *eventLog) SessionKeyUpdated(k SessionKey) {
	e.add("session-key %s %d", k.Algorithm, k.CreationTimestamp)
}
func (e *eventLog) LoggerLevelChanged(ns, level string) { e.add("logger %s=%s", ns, level) }

func (k *testKafka) startConfigs(topic string, l ConfigListener) *ConfigStore {
	k.t.Helper()
	s := NewConfigStore(LogConfig{Topic: topic, ClientOpts: k.opts}, l)
	if err := s.Start(testCtx(k.t)); err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(s.Close)
	return s
}

func stateOf(t *testing.T, snap *ConfigSnapshot, name string) TargetState {
	t.Helper()
	ts, _ := snap.TargetState(name)
	return ts
}

func TestConfigStoreRoundTrip(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("connect-configs", 1, "compact")
	ctx := testCtx(t)
	a := k.startConfigs("connect-configs", nil)
	if snap := a.Snapshot(); snap.Offset() != -1 || len(snap.Connectors()) != 0 {
		t.Fatalf("empty topic: offset %d, connectors %v", snap.Offset(), snap.Connectors())
	}
	paused := TargetPaused
	if err := a.PutConnectorConfig(ctx, "src", map[string]string{"connector.class": "FileStreamSource", "tasks.max": "2"}, &paused); err != nil {
		t.Fatal(err)
	}
	if err := a.PutConnectorConfig(ctx, "sink", map[string]string{"connector.class": "FileStreamSink"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.PutTaskConfigs(ctx, "src", []map[string]string{{"task": "0"}, {"task": "1"}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutTaskConfigs(ctx, "sink", []map[string]string{{"task": "only"}}); err != nil {
		t.Fatal(err)
	}
	// The writes read to the end: the writer's snapshot has them at once.
	snap := a.Snapshot()
	if got := snap.Connectors(); !slices.Equal(got, []string{"sink", "src"}) {
		t.Fatalf("connectors %v", got)
	}
	if stateOf(t, snap, "src") != TargetPaused || stateOf(t, snap, "sink") != TargetStarted {
		t.Fatalf("target states %v %v", stateOf(t, snap, "src"), stateOf(t, snap, "sink"))
	}
	// target-state, connector, connector, task, task, commit, task, commit.
	if snap.Offset() != 8 {
		t.Fatalf("config offset %d, want 8", snap.Offset())
	}
	if err := a.PutTargetState(ctx, "sink", TargetStopped); err != nil {
		t.Fatal(err)
	}
	if err := a.PutTaskConfigs(ctx, "sink", nil); err != nil { // stopping: zero tasks
		t.Fatal(err)
	}

	// A second worker starting now sees everything the first wrote.
	b := k.startConfigs("connect-configs", nil)
	snap = b.Snapshot()
	if snap.Offset() != 10 {
		t.Fatalf("fresh store offset %d, want 10", snap.Offset())
	}
	if cfg := snap.ConnectorConfig("src"); !maps.Equal(cfg, map[string]string{"connector.class": "FileStreamSource", "tasks.max": "2"}) {
		t.Fatalf("src config %v", cfg)
	}
	if got := snap.Tasks("src"); !slices.Equal(got, []TaskID{{"src", 0}, {"src", 1}}) {
		t.Fatalf("src tasks %v", got)
	}
	if cfg := snap.TaskConfig(TaskID{"src", 1}); !maps.Equal(cfg, map[string]string{"task": "1"}) {
		t.Fatalf("src-1 config %v", cfg)
	}
	if stateOf(t, snap, "sink") != TargetStopped || snap.TaskCount("sink") != 0 || len(snap.Tasks("sink")) != 0 {
		t.Fatalf("stopped sink: state %v, %d tasks", stateOf(t, snap, "sink"), snap.TaskCount("sink"))
	}
	if snap.TaskConfig(TaskID{"sink", 0}) != nil {
		t.Fatal("task beyond the committed count is visible")
	}
	if applied := snap.AppliedConnectorConfig("src"); applied["tasks.max"] != "2" {
		t.Fatalf("applied connector config %v", applied)
	}
	if g, ok := snap.TaskConfigGeneration("src"); !ok || g != 0 {
		t.Fatalf("generation %d %v", g, ok)
	}

	// Remove: both stores lose the connector and its tasks.
	if err := b.RemoveConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	if err := a.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for i, s := range []*ConfigStore{a, b} {
		snap := s.Snapshot()
		if snap.Contains("src") || snap.ConnectorConfig("src") != nil || len(snap.Tasks("src")) != 0 || snap.TaskConfig(TaskID{"src", 0}) != nil {
			t.Fatalf("store %d still has src", i)
		}
		if _, ok := snap.TargetState("src"); ok {
			t.Fatalf("store %d still has src's target state", i)
		}
	}
}

func TestConfigStoreRecordsAreKafkaConnects(t *testing.T) {
	// Every record shape the store writes, byte for byte, against
	// kafka-connect-anchor.md §2.2 (and Kafka's KafkaConfigBackingStore).
	k := newTestKafka(t)
	k.createTopic("connect-configs", 1, "compact")
	ctx := testCtx(t)
	s := k.startConfigs("connect-configs", nil)
	stopped := TargetStopped
	steps := []func() error{
		func() error {
			return s.PutConnectorConfig(ctx, "c", map[string]string{"tasks.max": "1", "connector.class": "X", "quote": `a"b\c`}, &stopped)
		},
		func() error { return s.PutTargetState(ctx, "c", TargetStarted) },
		func() error { return s.PutTargetState(ctx, "c", TargetPaused) },
		func() error { return s.PutTaskConfigs(ctx, "c", []map[string]string{{"k": "v0"}, {"k": "v1"}}) },
		func() error { return s.PutTaskCountRecord(ctx, "c", 2) },
		func() error { return s.PutRestartRequest(ctx, RestartRequest{Connector: "c", IncludeTasks: true}) },
		func() error {
			return s.PutSessionKey(ctx, SessionKey{Key: []byte{0xde, 0xad, 0xbe, 0xef}, Algorithm: "HmacSHA256", CreationTimestamp: 1700000000000})
		},
		func() error { return s.PutLoggerLevel(ctx, "org.apache.kafka.connect", "DEBUG") },
		func() error { return s.RemoveConnector(ctx, "c") },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := []string{
		`target-state-c = {"state":"PAUSED","state.v2":"STOPPED"}`,
		`connector-c = {"properties":{"connector.class":"X","quote":"a\"b\\c","tasks.max":"1"}}`,
		`target-state-c = {"state":"STARTED","state.v2":"STARTED"}`,
		`target-state-c = {"state":"PAUSED","state.v2":"PAUSED"}`,
		`task-c-0 = {"properties":{"k":"v0"}}`,
		`task-c-1 = {"properties":{"k":"v1"}}`,
		`commit-c = {"tasks":2}`,
		`tasks-fencing-c = {"task-count":2}`,
		`restart-connector-c = {"include-tasks":true,"only-failed":false}`,
		`session-key = {"key":"3q2+7w==","algorithm":"HmacSHA256","creation-timestamp":1700000000000}`,
		`logger-cluster-org.apache.kafka.connect = {"level":"DEBUG"}`,
		`connector-c = null`,
		`target-state-c = null`,
	}
	var got []string
	for _, r := range k.readAll("connect-configs") {
		v := "null"
		if r.Value != nil {
			v = string(r.Value)
		}
		got = append(got, string(r.Key)+" = "+v)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("config topic holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// And they read back.
	snap := s.Snapshot()
	if sk := snap.SessionKey(); sk == nil || string(sk.Key) != "\xde\xad\xbe\xef" || sk.Algorithm != "HmacSHA256" || sk.CreationTimestamp != 1700000000000 {
		t.Fatalf("session key %+v", sk)
	}
	if n, ok := snap.TaskCountRecord("c"); !ok || n != 2 || snap.PendingFencing("c") {
		t.Fatalf("task count record %d %v, pending fencing %v", n, ok, snap.PendingFencing("c"))
	}
}

func TestConfigStoreTaskConfigsNeedTheirCommit(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("connect-configs", 1, "compact")
	ev := newEventLog()
	s := k.startConfigs("connect-configs", ev)
	ctx := testCtx(t)
	if err := s.PutConnectorConfig(ctx, "c", map[string]string{"a": "1"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTaskConfigs(ctx, "c", []map[string]string{{"gen": "1"}}); err != nil {
		t.Fatal(err)
	}
	// A leader writing a new set dies before its commit record.
	k.produce("connect-configs", 0,
		[2]string{"task-c-0", `{"properties":{"gen":"2"}}`},
		[2]string{"task-c-1", `{"properties":{"gen":"2"}}`})
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := k.startConfigs("connect-configs", nil)
	for i, snap := range []*ConfigSnapshot{s.Snapshot(), fresh.Snapshot()} {
		if got := snap.TaskConfigs("c"); len(got) != 1 || got[0]["gen"] != "1" {
			t.Fatalf("store %d: uncommitted task configs visible: %v", i, got)
		}
	}
	// The commit applies both, atomically.
	k.produce("connect-configs", 0, [2]string{"commit-c", `{"tasks":2}`})
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	if got := snap.TaskConfigs("c"); len(got) != 2 || got[0]["gen"] != "2" || got[1]["gen"] != "2" {
		t.Fatalf("after commit: %v", got)
	}
	if g, _ := snap.TaskConfigGeneration("c"); g != 1 {
		t.Fatalf("generation %d, want 1", g)
	}
	// A commit naming a task whose config is missing: inconsistent, no
	// tasks, until a complete set is committed.
	k.produce("connect-configs", 0,
		[2]string{"task-c-0", `{"properties":{"gen":"3"}}`},
		[2]string{"commit-c", `{"tasks":2}`})
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	snap = s.Snapshot()
	if !slices.Equal(snap.Inconsistent(), []string{"c"}) || len(snap.Tasks("c")) != 0 || snap.TaskConfig(TaskID{"c", 0}) != nil {
		t.Fatalf("incomplete commit: inconsistent %v, tasks %v", snap.Inconsistent(), snap.Tasks("c"))
	}
	if err := s.PutTaskConfigs(ctx, "c", []map[string]string{{"gen": "4"}}); err != nil {
		t.Fatal(err)
	}
	snap = s.Snapshot()
	if len(snap.Inconsistent()) != 0 || len(snap.Tasks("c")) != 1 || snap.TaskConfig(TaskID{"c", 0})["gen"] != "4" {
		t.Fatalf("after a fresh set: inconsistent %v, tasks %v", snap.Inconsistent(), snap.TaskConfigs("c"))
	}
	want := []string{
		"updated c",
		"committed c [c-0]",
		"committed c [c-0 c-1]",
		"committed c []",
		"committed c [c-0]",
	}
	if got := ev.get(); !slices.Equal(got, want) {
		t.Fatalf("listener heard %q, want %q", got, want)
	}
}

func TestConfigStoreDeletedConnectorsOldTasksIgnored(t *testing.T) {
	// ConnectWorkerIntegrationTest.testCompactedDeletedOlderConnectorConfig:
	// after compaction the old connector's config and tombstone are gone but
	// its task and commit records remain before the new connector's config.
	k := newTestKafka(t)
	k.createTopic("connect-configs", 1, "compact")
	k.produce("connect-configs", 0,
		[2]string{"task-c-0", `{"properties":{"old":"yes"}}`},
		[2]string{"task-c-1", `{"properties":{"old":"yes"}}`},
		[2]string{"commit-c", `{"tasks":2}`},
		[2]string{"target-state-c", `{"state":"STARTED","state.v2":"STARTED"}`},
		[2]string{"connector-c", `{"properties":{"new":"yes"}}`},
	)
	s := k.startConfigs("connect-configs", nil)
	snap := s.Snapshot()
	if !snap.Contains("c") || snap.TaskCount("c") != 0 || len(snap.Tasks("c")) != 0 || snap.TaskConfig(TaskID{"c", 0}) != nil {
		t.Fatalf("recreated connector inherited old tasks: count %d, tasks %v", snap.TaskCount("c"), snap.TaskConfigs("c"))
	}
	// Deleting and recreating through the store: task-* records stay on the
	// topic but do not come back with the new connector.
	ctx := testCtx(t)
	if err := s.PutTaskConfigs(ctx, "c", []map[string]string{{"t": "0"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveConnector(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutConnectorConfig(ctx, "c", map[string]string{"again": "yes"}, nil); err != nil {
		t.Fatal(err)
	}
	for i, snap := range []*ConfigSnapshot{s.Snapshot(), k.startConfigs("connect-configs", nil).Snapshot()} {
		if snap.TaskCount("c") != 0 || snap.TaskConfig(TaskID{"c", 0}) != nil || stateOf(t, snap, "c") != TargetStarted {
			t.Fatalf("store %d: recreated connector: %d tasks, %v", i, snap.TaskCount("c"), snap.TaskConfigs("c"))
		}
	}
}

func TestConfigStoreReadsJavaRecords(t *testing.T) {
	// Records as Java workers of several versions write them, with fields a
	// future version might add, and malformed ones a reader must skip.
	k := newTestKafka(t)
	k.createTopic("connect-configs", 1, "compact")
	k.produce("connect-configs", 0,
		[2]string{"connector-legacy", `{"properties":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","null.value":null},"extra":1}`},
		[2]string{"target-state-legacy", `{"state":"PAUSED"}`}, // a worker before KIP-875
		[2]string{"target-state-v2", `{"state":"PAUSED","state.v2":"STOPPED","future":true}`},
		[2]string{"connector-v2", `{"properties":{"tasks.max":"3"}}`},
		[2]string{"task-my-dashed-conn-0", `{"properties":{"x":"y"},"unknown":{}}`},
		[2]string{"connector-my-dashed-conn", `{"properties":{}}`},
		[2]string{"commit-my-dashed-conn", `{"tasks":1,"more":"x"}`},
		[2]string{"tasks-fencing-my-dashed-conn", `{"task-count":1}`},
		[2]string{"session-key", `{"key":"AAEC","algorithm":"HmacSHA256","creation-timestamp":1}`},
		[2]string{"connector-bad", `{"props":{}}`},
		[2]string{"target-state-v2", `{"state":"RUNNING"}`}, // invalid: ignored, keeps STOPPED
		[2]string{"task-nonumber", `{"properties":{}}`},
		[2]string{"what-is-this", `{}`},
		[2]string{"restart-connector-v2", `{"include-tasks":true}`}, // read before start: not replayed
	)
	ev := newEventLog()
	s := k.startConfigs("connect-configs", ev)
	snap := s.Snapshot()
	if got := snap.Connectors(); !slices.Equal(got, []string{"legacy", "my-dashed-conn", "v2"}) {
		t.Fatalf("connectors %v", got)
	}
	if cfg := snap.ConnectorConfig("legacy"); len(cfg) != 1 || cfg["connector.class"] == "" {
		t.Fatalf("legacy config %v", cfg)
	}
	if stateOf(t, snap, "legacy") != TargetPaused || stateOf(t, snap, "v2") != TargetStopped {
		t.Fatalf("target states legacy=%s v2=%s", stateOf(t, snap, "legacy"), stateOf(t, snap, "v2"))
	}
	if got := snap.TaskConfigs("my-dashed-conn"); len(got) != 1 || got[0]["x"] != "y" {
		t.Fatalf("dashed connector's tasks %v", got)
	}
	if snap.PendingFencing("my-dashed-conn") {
		t.Fatal("fencing pending after a task count record")
	}
	if sk := snap.SessionKey(); sk == nil || string(sk.Key) != "\x00\x01\x02" {
		t.Fatalf("session key %+v", sk)
	}
	if len(ev.get()) != 0 {
		t.Fatalf("initial read reached the listener: %v", ev.get())
	}
	// Records after start reach the listener, restart fields defaulting.
	k.produce("connect-configs", 0,
		[2]string{"restart-connector-v2", `{"only-failed":true}`},
		[2]string{"restart-connector-v2", `{"include-tasks":"yes","only-failed":false}`},
		[2]string{"logger-cluster-org.foo", `{"level":"TRACE"}`},
		[2]string{"target-state-v2", `{"state":"STARTED"}`},
		[2]string{"connector-v2", tombstone},
		[2]string{"target-state-v2", tombstone},
	)
	if err := s.Refresh(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"restart {Connector:v2 IncludeTasks:false OnlyFailed:true}",
		"restart {Connector:v2 IncludeTasks:false OnlyFailed:false}",
		"logger org.foo=TRACE",
		"target v2",
		"removed v2",
	}
	if got := ev.get(); !slices.Equal(got, want) {
		t.Fatalf("listener heard\n%q\nwant\n%q", got, want)
	}
}

func TestConfigStoreListenerOrderAndWaits(t *testing.T) {
	// The listener hears each write of another worker once Refresh returns.
	k := newTestKafka(t)
	k.createTopic("connect-configs", 1, "compact")
	ev := newEventLog()
	follower := k.startConfigs("connect-configs", ev)
	leader := k.startConfigs("connect-configs", nil)
	ctx := testCtx(t)
	if err := leader.PutConnectorConfig(ctx, "c", map[string]string{"a": "b"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := leader.PutTargetState(ctx, "c", TargetPaused); err != nil {
		t.Fatal(err)
	}
	if err := follower.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ev.get(); !slices.Equal(got, []string{"updated c", "target c"}) {
		t.Fatalf("heard %q", got)
	}
	// And without Refresh, the follower catches up by itself.
	if err := leader.PutRestartRequest(ctx, RestartRequest{Connector: "c", OnlyFailed: true}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for len(ev.get()) < 3 {
		select {
		case <-deadline:
			t.Fatalf("follower never read the restart request: %q", ev.get())
		case <-ev.signal:
		}
	}
	if got := ev.get()[2]; got != "restart {Connector:c IncludeTasks:false OnlyFailed:true}" {
		t.Fatalf("heard %q", got)
	}
}

func TestConfigStoreRefusesPartitionedTopic(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("connect-configs", 3, "compact")
	s := NewConfigStore(LogConfig{Topic: "connect-configs", ClientOpts: k.opts}, nil)
	defer s.Close()
	err := s.Start(testCtx(t))
	if !errors.Is(err, ErrTopicUnfit) || !strings.Contains(err.Error(), "Topic 'connect-configs' supplied via the 'config.storage.topic' property is required to have a single partition in order to guarantee consistency of connector configurations, but found 3 partitions.") {
		t.Fatalf("start on a 3-partition config topic: %v", err)
	}
}

func TestConfigStoreAfterCompaction(t *testing.T) {
	// Kafka's own example: a connector goes from 2 tasks to 1; compaction
	// removes the first task-c-0 and commit-c, leaving task-c-1 of the old
	// set before the new task-c-0. The state read back is the new one.
	k := newTestKafka(t)
	k.createTopic("connect-configs", 1, "compact")
	ctx := testCtx(t)
	s := k.startConfigs("connect-configs", nil)
	if err := s.PutConnectorConfig(ctx, "c", map[string]string{"v": "1"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTaskConfigs(ctx, "c", []map[string]string{{"set": "old"}, {"set": "old"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTaskConfigs(ctx, "c", []map[string]string{{"set": "new"}}); err != nil {
		t.Fatal(err)
	}
	// Something after, so the last commit is not in kfake's active segment.
	if err := s.PutTargetState(ctx, "c", TargetStarted); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTargetState(ctx, "c", TargetPaused); err != nil {
		t.Fatal(err)
	}
	before := len(k.readAll("connect-configs"))
	k.c.Compact()
	after := k.topicRecords("connect-configs")
	if len(after) >= before {
		t.Fatalf("nothing compacted: %d records before, %d after", before, len(after))
	}
	snap := k.startConfigs("connect-configs", nil).Snapshot()
	if got := snap.TaskConfigs("c"); len(got) != 1 || got[0]["set"] != "new" || len(snap.Inconsistent()) != 0 {
		t.Fatalf("after compaction (%q): tasks %v, inconsistent %v", after, got, snap.Inconsistent())
	}
	if stateOf(t, snap, "c") != TargetPaused {
		t.Fatalf("target state %s", stateOf(t, snap, "c"))
	}
}

package herder_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/cluster"
	"github.com/sluice-io/sluice/host/configprovider"
	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/rest"
	"github.com/sluice-io/sluice/host/storage"
	"github.com/sluice-io/sluice/pluginsdk/config"
)

// Distributed herders on an in-process kfake cluster: the config, status
// and offsets topics and the group are real Kafka protocol, the connectors
// and tasks are the fakes of fake_test.go.

const (
	dGroup       = "sluice-test"
	dConfigTopic = "sluice-configs"
	dOffsetTopic = "sluice-offsets"
	dStatusTopic = "sluice-status"
	// dPatience bounds a wait that includes a rebalance.
	dPatience = 15 * time.Second
)

type dEnv struct {
	t    *testing.T
	c    *kfake.Cluster
	opts []kgo.Opt
	// resolver is the herders' config provider resolver (nil: none).
	resolver *configprovider.Resolver
	// group, when set, changes the group settings of every herder started.
	group func(*cluster.Config)
	// urls are the REST URLs of the herders started withREST, by name.
	urls map[string]string
	// wrap, when set, changes the instances every herder started uses.
	wrap func(*fakeInstances) herder.Instances
	// logOpts, when set, adds client options to the internal topic logs
	// of the herder named worker.
	logOpts func(worker, topic string) []kgo.Opt
	// options, when set, changes the options of every herder started.
	options func(*herder.DistributedOptions)
}

func newDEnv(t *testing.T) *dEnv {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e := &dEnv{t: t, c: c, opts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, urls: map[string]string{}}
	cl, err := kgo.NewClient(e.opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics := storage.InternalTopics{
		Config: storage.ConfigTopic(dConfigTopic, 1),
		Offset: storage.OffsetTopic(dOffsetTopic, 5, 1),
		Status: storage.StatusTopic(dStatusTopic, 5, 1),
	}
	if err := storage.EnsureTopics(ctxT(t), kadm.NewClient(cl), topics, hclog.NewNullLogger()); err != nil {
		t.Fatal(err)
	}
	return e
}

func testLogger(name string) hclog.Logger {
	if os.Getenv("SLUICE_TEST_LOG") == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Debug})
}

// start runs a distributed herder named name on in; withREST serves its
// REST API on a loopback port (needed to forward to it).
func (e *dEnv) start(name string, in *fakeInstances, withREST bool) *herder.Distributed {
	t := e.t
	t.Helper()
	logConf := func(topic string) storage.LogConfig {
		opts := append(slices.Clone(e.opts), kgo.ClientID(name+"-"+topic))
		if e.logOpts != nil {
			opts = append(opts, e.logOpts(name, topic)...)
		}
		return storage.LogConfig{Topic: topic, ClientOpts: opts}
	}
	offsets := storage.NewKafkaOffsetStore(logConf(dOffsetTopic))
	if err := offsets.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(offsets.Close)
	gcl, err := kgo.NewClient(append(slices.Clone(e.opts), kgo.ClientID(name+"-group"))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gcl.Close)
	group := cluster.Config{
		Client: gcl, GroupID: dGroup,
		SessionTimeout: 1500 * time.Millisecond, HeartbeatInterval: 250 * time.Millisecond, RebalanceTimeout: 3 * time.Second,
	}
	if e.group != nil {
		e.group(&group)
	}
	var inst herder.Instances = in
	if e.wrap != nil {
		inst = e.wrap(in)
	}
	opts := herder.DistributedOptions{
		StandaloneOptions: herder.StandaloneOptions{
			WorkerID:            name,
			Instances:           inst,
			Offsets:             offsets,
			Groups:              &fakeGroups{offsets: map[string]map[string]map[int32]int64{}},
			Converters:          stringConverterOnly,
			TaskShutdownTimeout: time.Second,
			Logger:              testLogger(name),
			Resolver:            e.resolver,
		},
		URL:       "http://" + name + "/",
		Group:     group,
		ConfigLog: logConf(dConfigTopic),
		StatusLog: logConf(dStatusTopic),
	}
	if e.options != nil {
		e.options(&opts)
	}
	h, err := herder.NewDistributed(opts)
	if err != nil {
		t.Fatal(err)
	}
	if withREST {
		srv, err := rest.New(h, nil, rest.Options{AdminListeners: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(hs.Close)
		h.SetURL(hs.URL + "/")
		e.urls[name] = hs.URL
	}
	if err := h.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("close %s: %v", name, err)
		}
	})
	dWait(t, name+" assigned", func() bool { return h.Health(context.Background()) == nil })
	return h
}

func stringConverterOnly(prop, class string, _ map[string]string) error {
	if class != "org.apache.kafka.connect.storage.StringConverter" {
		return config.Invalid(prop, class, "Class "+class+" could not be found.")
	}
	return nil
}

func dWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(dPatience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dStates waits until the connector's states ("connector:task0,...") are
// want; a connector without status yet reads "".
func dStates(t *testing.T, h herder.Herder, name, want string) {
	t.Helper()
	var got string
	deadline := time.Now().Add(dPatience)
	for {
		got = ""
		if st, err := h.ConnectorStatus(context.Background(), name); err == nil {
			parts := make([]string, len(st.Tasks))
			for i, ts := range st.Tasks {
				parts[i] = ts.State
			}
			got = st.Connector.State + ":" + strings.Join(parts, ",")
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("states of %s: got %q, want %q", name, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// statusRecord is a record of the status topic as written.
type statusRecord struct {
	State      string `json:"state"`
	Trace      string `json:"trace"`
	WorkerID   string `json:"worker_id"`
	Generation int32  `json:"generation"`
}

// statusRecords reads the status topic from the start to its current end
// with a client of its own and returns the records of key, in order.
func (e *dEnv) statusRecords(key string) []statusRecord {
	e.t.Helper()
	var byPart = map[int32][]statusRecord{}
	var part int32 = -1
	e.eachRecord(dStatusTopic, func(r *kgo.Record) {
		if string(r.Key) != key || r.Value == nil {
			return
		}
		var s statusRecord
		if err := json.Unmarshal(r.Value, &s); err != nil {
			e.t.Fatalf("status record %s: %v", r.Value, err)
		}
		part = r.Partition
		byPart[r.Partition] = append(byPart[r.Partition], s)
	})
	// One key lives in one partition: its records are in write order.
	return byPart[part]
}

// eachRecord calls fn with every record topic holds now, from the start,
// in order within each partition.
func (e *dEnv) eachRecord(topic string, fn func(*kgo.Record)) {
	t := e.t
	t.Helper()
	ctx := ctxT(t)
	cl, err := kgo.NewClient(append(slices.Clone(e.opts), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %v", topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
			fn(r)
		})
	}
}

// waitStatusTail waits until the last status records of key are states.
func (e *dEnv) waitStatusTail(key string, states ...string) []statusRecord {
	e.t.Helper()
	var recs []statusRecord
	dWait(e.t, key+" ending "+strings.Join(states, ","), func() bool {
		recs = e.statusRecords(key)
		got := statesOf(recs)
		return len(got) >= len(states) && slices.Equal(got[len(got)-len(states):], states)
	})
	return recs
}

func statesOf(rs []statusRecord) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.State
	}
	return out
}

// A single worker creates a connector, runs its tasks and writes their
// statuses, with its worker id and the group generation, to the status
// topic.
func TestDistributedCreateRunsTasks(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	h := e.start("w1", in, false)
	info, created, err := h.PutConnectorConfig(ctxT(t), "src", srcConfig(), false, herder.TargetStarted)
	if err != nil {
		t.Fatal(err)
	}
	if !created || info.Name != "src" || info.Config["topic"] != "t" {
		t.Fatalf("created %v, info %+v", created, info)
	}
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")
	if n := in.count(in.starts, "src"); n != 1 {
		t.Fatalf("%d connector starts, want 1", n)
	}
	for _, id := range []string{"src-0", "src-1"} {
		if n := in.count(in.taskStarts, id); n != 1 {
			t.Fatalf("%d starts of %s, want 1", n, id)
		}
		if tk := in.task(id); tk.spec.TaskConfig["task.class"] == "" || tk.spec.TaskConfig["n"] != id[len(id)-1:] {
			t.Fatalf("task config of %s: %v", id, tk.spec.TaskConfig)
		}
	}
	tcs, err := h.TaskConfigs(ctxT(t), "src")
	if err != nil || len(tcs) != 2 {
		t.Fatalf("task configs %v, %v", tcs, err)
	}
	conn := e.statusRecords("status-connector-src")
	task := e.statusRecords("status-task-src-1")
	if len(conn) == 0 || len(task) == 0 {
		t.Fatalf("status records: connector %v, task %v", conn, task)
	}
	last, lastTask := conn[len(conn)-1], task[len(task)-1]
	if last.State != "RUNNING" || last.WorkerID != "w1" || last.Generation < 1 {
		t.Fatalf("connector status record %+v", last)
	}
	if lastTask.State != "RUNNING" || lastTask.WorkerID != "w1" || lastTask.Generation < last.Generation {
		t.Fatalf("task status record %+v (connector's generation %d)", lastTask, last.Generation)
	}
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", srcConfig(), false, herder.TargetStarted); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second create: %v", err)
	}
}

// Pause, resume, task restart, connector restart with tasks, stop and
// resume from STOPPED act on the instances and show in the statuses.
func TestDistributedLifecycle(t *testing.T) {
	e, in, h := runningSrc(t)

	if err := h.PauseConnector(ctxT(t), "src"); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "PAUSED:PAUSED,PAUSED")
	if tk := in.task("src-0"); !tk.isPaused() {
		t.Fatal("task runner not paused")
	}
	if err := h.ResumeConnector(ctxT(t), "src"); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")
	if tk := in.task("src-0"); tk.isPaused() {
		t.Fatal("task runner still paused")
	}

	if err := h.RestartTask(ctxT(t), herder.TaskID{Connector: "src", Task: 1}); err != nil {
		t.Fatal(err)
	}
	dWait(t, "a second start of src-1", func() bool { return in.count(in.taskStarts, "src-1") == 2 })
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")
	if n := in.count(in.taskStarts, "src-0"); n != 1 {
		t.Fatalf("src-0 started %d times, want 1", n)
	}
	e.waitStatusTail("status-task-src-1", "RESTARTING", "RUNNING")

	if _, err := h.RestartConnector(ctxT(t), "src", true, false); err != nil {
		t.Fatal(err)
	}
	dWait(t, "connector and tasks restarted", func() bool {
		return in.count(in.starts, "src") == 2 && in.count(in.taskStarts, "src-0") == 2 && in.count(in.taskStarts, "src-1") == 3
	})
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")

	if err := h.StopConnector(ctxT(t), "src"); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "STOPPED:")
	if n := in.count(in.stops, "src"); n < 2 {
		t.Fatalf("%d connector stops, want the restart's and the stop's", n)
	}
	if err := h.ResumeConnector(ctxT(t), "src"); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")
	if n := in.count(in.starts, "src"); n != 3 {
		t.Fatalf("%d connector starts, want 3", n)
	}

	if err := h.DeleteConnector(ctxT(t), "src"); err != nil {
		t.Fatal(err)
	}
	dWait(t, "connector gone", func() bool {
		cs, _ := h.Connectors(context.Background())
		return len(cs) == 0 && in.count(in.stops, "src") == 3
	})
}

// A task that fails its first three starts is restarted on its worker
// after the doubled backoff each time; its statuses go FAILED, RESTARTING,
// RUNNING with the generation.
func TestDistributedAutoRestart(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	in.failNext("src-0", 3)
	h := e.start("w1", in, false)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", restartConfig(), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dWait(t, "four starts", func() bool { return len(in.runs("src-0")) == 4 })
	dStates(t, h, "src", "RUNNING:RUNNING")
	runs := in.runs("src-0")
	for i, want := range []time.Duration{40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond} {
		if gap := runs[i+1].Sub(runs[i]); gap < want || gap > want+2*time.Second {
			t.Errorf("restart %d came %s after the failure, want the %s backoff", i+1, gap, want)
		}
	}
	time.Sleep(400 * time.Millisecond)
	if n := len(in.runs("src-0")); n != 4 {
		t.Fatalf("%d starts of a running task, want 4", n)
	}
	recs := e.waitStatusTail("status-task-src-0", "FAILED", "RESTARTING", "RUNNING")
	got := statesOf(recs)
	var fails, restarts int
	for _, s := range got {
		switch s {
		case "FAILED":
			fails++
		case "RESTARTING":
			restarts++
		}
	}
	if fails != 3 || restarts != 3 {
		t.Fatalf("status records of src-0: %v", got)
	}
	if last := recs[len(recs)-1]; last.Generation < 1 || last.WorkerID != "w1" {
		t.Fatalf("last status record %+v", last)
	}
}

// After max.attempts automatic restarts in a row the task stays FAILED
// with the trace of its last failure.
func TestDistributedAutoRestartGivesUp(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	in.failNext("src-0", 1000)
	h := e.start("w1", in, false)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", restartConfig("sluice.task.restart.max.attempts", "2"), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dWait(t, "three starts", func() bool { return len(in.runs("src-0")) == 3 })
	dStates(t, h, "src", "RUNNING:FAILED")
	time.Sleep(500 * time.Millisecond) // more than the longest backoff
	if n := len(in.runs("src-0")); n != 3 {
		t.Fatalf("%d starts, want 3 (the first and two automatic restarts)", n)
	}
	st, err := h.TaskStatus(ctxT(t), herder.TaskID{Connector: "src", Task: 0})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "FAILED" || !strings.Contains(st.Trace, "start 3 of src-0 failed on purpose") {
		t.Fatalf("status %+v", st)
	}
}

// A restart by hand during the backoff wins: the automatic restart finds
// the task replaced and does nothing.
func TestDistributedAutoRestartYieldsToManualRestart(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	in.failNext("src-0", 1)
	h := e.start("w1", in, false)
	cfg := restartConfig("sluice.task.restart.backoff.initial.ms", "700", "sluice.task.restart.backoff.max.ms", "5000")
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", cfg, false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:FAILED")
	if err := h.RestartTask(ctxT(t), herder.TaskID{Connector: "src", Task: 0}); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:RUNNING")
	time.Sleep(1200 * time.Millisecond) // past the automatic restart's time
	if n := len(in.runs("src-0")); n != 2 {
		t.Fatalf("%d starts, want 2 (the first and the manual restart)", n)
	}
	dStates(t, h, "src", "RUNNING:RUNNING")
}

// Pausing the connector during the backoff drops the automatic restart;
// the task stays FAILED after the resume, as in Kafka Connect.
func TestDistributedAutoRestartDroppedOnPause(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	in.failNext("src-0", 1)
	h := e.start("w1", in, false)
	cfg := restartConfig("sluice.task.restart.backoff.initial.ms", "700", "sluice.task.restart.backoff.max.ms", "5000")
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", cfg, false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:FAILED")
	if err := h.PauseConnector(ctxT(t), "src"); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "PAUSED:FAILED")
	if err := h.ResumeConnector(ctxT(t), "src"); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:FAILED")
	time.Sleep(1200 * time.Millisecond)
	if n := len(in.runs("src-0")); n != 1 {
		t.Fatalf("%d starts, want 1", n)
	}
	dStates(t, h, "src", "RUNNING:FAILED")
}

// Two workers: creates through either worker succeed (the follower's is
// forwarded to the leader over REST), both workers see both connectors and
// the same statuses, and the tasks spread over both.
func TestDistributedForwardedCreate(t *testing.T) {
	e := newDEnv(t)
	in1, in2 := newFakeInstances(), newFakeInstances()
	h1 := e.start("w1", in1, true)
	h2 := e.start("w2", in2, true)
	for i, h := range []*herder.Distributed{h1, h2} {
		name := []string{"a", "b"}[i]
		var err error
		for range 50 { // 409 while the second worker's join settles
			_, _, err = h.PutConnectorConfig(ctxT(t), name, srcConfig(), false, herder.TargetStarted)
			if err == nil || !strings.Contains(err.Error(), "momentarily") && !strings.Contains(err.Error(), "conflicting") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("create %s through w%d: %v", name, i+1, err)
		}
	}
	for _, h := range []*herder.Distributed{h1, h2} {
		dWait(t, "both connectors known", func() bool {
			cs, _ := h.Connectors(context.Background())
			return slices.Equal(cs, []string{"a", "b"})
		})
		dStates(t, h, "a", "RUNNING:RUNNING,RUNNING")
		dStates(t, h, "b", "RUNNING:RUNNING,RUNNING")
	}
	var n1, n2 int
	for _, id := range []string{"a-0", "a-1", "b-0", "b-1"} {
		c1, c2 := in1.count(in1.taskStarts, id), in2.count(in2.taskStarts, id)
		n1, n2 = n1+c1, n2+c2
	}
	if n1 == 0 || n2 == 0 {
		t.Fatalf("task starts: w1 %d, w2 %d; want the tasks spread over both", n1, n2)
	}
}

func (t *fakeTask) isPaused() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.paused
}

// A task that ran for the maximum backoff before failing counts as a first
// failure again; one that fails soon after its restart uses up the
// attempts (here one) and stays FAILED.
func TestDistributedAutoRestartCountsAfresh(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	in.failNext("src-0", 1)
	h := e.start("w1", in, false)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", restartConfig("sluice.task.restart.max.attempts", "1"), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dWait(t, "the automatic restart", func() bool { return len(in.runs("src-0")) == 2 })
	dStates(t, h, "src", "RUNNING:RUNNING")
	time.Sleep(350 * time.Millisecond) // past backoff.max.ms (300)
	in.task("src-0").fail <- errors.New("failed after a long run")
	dWait(t, "a restart after the long run", func() bool { return len(in.runs("src-0")) == 3 })
	dStates(t, h, "src", "RUNNING:RUNNING")
	in.task("src-0").fail <- errors.New("failed at once")
	dStates(t, h, "src", "RUNNING:FAILED")
	time.Sleep(500 * time.Millisecond)
	if n := len(in.runs("src-0")); n != 3 {
		t.Fatalf("%d starts, want 3", n)
	}
	st, err := h.TaskStatus(ctxT(t), herder.TaskID{Connector: "src", Task: 0})
	if err != nil || !strings.Contains(st.Trace, "failed at once") {
		t.Fatalf("status %+v, %v", st, err)
	}
}

// A round whose assignment comes from a config snapshot older than what
// this worker has read (here: from before the connector was created, so it
// assigns nothing) is not acted upon: the connector and its tasks keep
// running, the worker rejoins at once and the next round, assigned from the
// current snapshot, resolves the rebalance (Kafka Connect's herder requests
// a rejoin when its config offset does not match the assignment's).
func TestDistributedAssignmentFromOlderConfigRejoins(t *testing.T) {
	_, in, h := runningSrc(t)
	gen := herder.Generation(h)
	off := h.ConfigSnapshot().Offset
	if gen < 1 || off < 2 {
		t.Fatalf("generation %d, config offset %d before the stale round", gen, off)
	}

	h.OnAssigned(ctxT(t), cluster.Assignment{Generation: gen, IsLeader: true, ConfigOffset: off - 2})
	dWait(t, "a rejoin after the stale round", func() bool { return herder.Generation(h) > gen })
	dWait(t, "the next round resolved", func() bool {
		_, err := h.ConnectorInfo(context.Background(), "src")
		return err == nil
	})
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")
	if n := in.count(in.stops, "src"); n != 0 {
		t.Fatalf("connector stopped %d times by a round from an older config", n)
	}
	for _, id := range []string{"src-0", "src-1"} {
		if n := in.count(in.taskStarts, id); n != 1 {
			t.Fatalf("%d starts of %s, want 1", n, id)
		}
	}
}

// runningSrc starts worker w1 and creates connector "src" (two tasks) on
// it, returning once the connector and its tasks run.
func runningSrc(t *testing.T) (*dEnv, *fakeInstances, *herder.Distributed) {
	t.Helper()
	e := newDEnv(t)
	in := newFakeInstances()
	h := e.start("w1", in, false)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", srcConfig(), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")
	return e, in, h
}

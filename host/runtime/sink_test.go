package runtime

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

func sinkConfig(c *kfake.Cluster, f *fakeSink, l Listener, topics ...string) SinkConfig {
	return SinkConfig{
		ID:             TaskID{"snk", 0},
		ConnectorClass: "FakeSink",
		TaskConfig:     map[string]string{"task.class": "FakeSinkTask"},
		Launch:         f.launch,
		Pipeline:       testPipeline(),
		Topics:         topics,
		ConsumerOpts:   []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.FetchMaxWait(100 * time.Millisecond)},
		Timing:         Timing{OffsetFlushInterval: time.Hour, ShutdownTimeout: 5 * time.Second},
		MaxPollRecords: 50,
		Listener:       l,
	}
}

// committedOffsets reads the group's committed offsets from the cluster.
func committedOffsets(t testing.TB, c *kfake.Cluster, group string) map[string]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			out[tpString(o.Topic, o.Partition)] = o.At
		}
	})
	return out
}

// deliveredCounts counts how often each "<topic>-<p>@<offset>" was
// delivered by a successful Put.
func deliveredCounts(recs []*data.SinkRecord) map[string]int {
	out := map[string]int{}
	for _, r := range recs {
		out[fmt.Sprintf("%s-%d@%d", r.OriginalTopic, r.OriginalPartition, r.OriginalOffset)]++
	}
	return out
}

// startSinkTask runs task n of the "snk" connector on c with f as its
// plugin and cfg changed by mod (nil: unchanged).
func startSinkTask(t *testing.T, c *kfake.Cluster, f *fakeSink, n int, mod func(*SinkConfig), topics ...string) (Task, func() error) {
	t.Helper()
	cfg := sinkConfig(c, f, nil, topics...)
	cfg.ID.Task = n
	if mod != nil {
		mod(&cfg)
	}
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return task, runTask(t, task)
}

// stopDeliveredOnce stops the tasks, each Run ending without error, and
// checks that their plugins were put want distinct records, each once.
func stopDeliveredOnce(t *testing.T, want int, tasks []Task, waits []func() error, fakes ...*fakeSink) {
	t.Helper()
	for _, task := range tasks {
		task.Stop()
	}
	for _, wait := range waits {
		if err := wait(); err != nil {
			t.Fatal(err)
		}
	}
	var recs []*data.SinkRecord
	for _, f := range fakes {
		recs = append(recs, f.deliveredList()...)
	}
	all := deliveredCounts(recs)
	if len(all) != want {
		t.Errorf("%d distinct records, want %d", len(all), want)
	}
	for k, n := range all {
		if n != 1 {
			t.Errorf("%s delivered %d times", k, n)
		}
	}
}

func TestSinkValidation(t *testing.T) {
	base := func() SinkConfig {
		return SinkConfig{ID: TaskID{"s", 0}, Launch: newFakeSink(&events{}).launch, Pipeline: testPipeline()}
	}
	for name, tc := range map[string]struct {
		mod  func(*SinkConfig)
		want string
	}{
		"neither": {func(*SinkConfig) {}, "neither topics nor topics.regex"},
		"both":    {func(c *SinkConfig) { c.Topics = []string{"a"}; c.TopicsRegex = "a.*" }, "both topics and topics.regex"},
		"regex":   {func(c *SinkConfig) { c.TopicsRegex = "a(" }, "topics.regex"},
		"empty":   {func(c *SinkConfig) { c.Topics = []string{"a", ""} }, "empty topic name"},
	} {
		cfg := base()
		tc.mod(&cfg)
		if _, err := NewSinkTask(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
	cfg := base()
	cfg.Topics = []string{"a"}
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := task.(*sinkTask)
	if st.cfg.GroupID != "connect-s" || st.cfg.MaxPollRecords != DefaultSinkMaxPollRecords || st.cfg.RetryBackoff != DefaultRetryBackoff ||
		st.cfg.OffsetFlushInterval != DefaultOffsetFlushInterval {
		t.Errorf("defaults: %+v", st.cfg)
	}
}

// Exactly the records of the subscribed topics reach Put, each once, with
// their converted contents and coordinates; the stop commits them all.
func TestSinkDeliversSubscribedTopics(t *testing.T) {
	for _, regex := range []bool{false, true} {
		t.Run(fmt.Sprintf("regex=%v", regex), func(t *testing.T) {
			c := newCluster(t, 1, map[string]int32{"a": 3, "b": 2, "other": 1})
			const per = 30
			for _, tp := range []struct {
				topic string
				parts int32
			}{{"a", 3}, {"b", 2}, {"other", 1}} {
				for p := range tp.parts {
					produceTo(t, c, tp.topic, p, 0, per)
				}
			}
			ev := &events{}
			f := newFakeSink(ev)
			l := newRecListener()
			cfg := sinkConfig(c, f, l, "a", "b")
			if regex {
				cfg.Topics, cfg.TopicsRegex = nil, "^(a|b)$"
			}
			task, err := NewSinkTask(cfg)
			if err != nil {
				t.Fatal(err)
			}
			wait := runTask(t, task)
			eventually(t, "all records delivered", func() bool { return len(f.deliveredList()) >= 5*per })
			time.Sleep(200 * time.Millisecond) // anything more would be wrong
			if got := f.openList(); !slices.Equal(got, []string{"a-0", "a-1", "a-2", "b-0", "b-1"}) {
				t.Errorf("open partitions = %v", got)
			}
			task.Stop()
			if err := wait(); err != nil {
				t.Fatal(err)
			}
			if f.mu.Lock(); f.shared == 0 {
				t.Error("no Put went through shared memory")
			}
			f.mu.Unlock()
			counts := deliveredCounts(f.deliveredList())
			if len(counts) != 5*per {
				t.Errorf("%d distinct records delivered, want %d", len(counts), 5*per)
			}
			for k, n := range counts {
				if n != 1 || strings.HasPrefix(k, "other") {
					t.Errorf("record %s delivered %d times", k, n)
				}
			}
			for _, r := range f.deliveredList() {
				want := fmt.Sprintf("%s-%d-%d", r.Topic, r.Partition, r.Offset)
				if r.Value != want || r.Key != "k"+want || r.ValueSchema == nil || r.ValueSchema.Type != data.String {
					t.Errorf("record %s: key %v value %v", want, r.Key, r.Value)
				}
				if len(r.Headers) != 1 || r.Headers[0].Key != "h" || r.Headers[0].Value != "hv" {
					t.Errorf("record %s headers %v", want, r.Headers)
				}
				if r.TimestampType != data.CreateTime || r.Timestamp.IsZero() || r.OriginalOffset != r.Offset || r.OriginalTopic != r.Topic {
					t.Errorf("record %s: timestamp %v/%v, original %s-%d@%d", want, r.Timestamp, r.TimestampType, r.OriginalTopic, r.OriginalPartition, r.OriginalOffset)
				}
			}
			got := committedOffsets(t, c, "connect-snk")
			want := map[string]int64{"a-0": per, "a-1": per, "a-2": per, "b-0": per, "b-1": per}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("committed %v, want %v", got, want)
			}
			// Close came after the last PreCommit, Stop after Close.
			pre, cl, stop := ev.lastIndex("precommit"), ev.lastIndex("close"), ev.lastIndex("stop")
			if !(pre >= 0 && pre < cl && cl < stop) {
				t.Errorf("stop order: %v", ev.list())
			}
			if got := l.list(); !slices.Equal(got, []string{"running", "stopped"}) {
				t.Errorf("states = %v", got)
			}
		})
	}
}

// The commit is exactly what PreCommit returned: lower offsets as they are,
// higher ones than delivered ignored, omitted partitions not committed.
func TestSinkCommitsWhatPreCommitReturns(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 3})
	for p := range int32(3) {
		produceTo(t, c, "a", p, 0, 10)
	}
	ev := &events{}
	f := newFakeSink(ev)
	f.preCommit = func(offered []*pluginv1.PartitionOffset) []*pluginv1.PartitionOffset {
		var out []*pluginv1.PartitionOffset
		for _, o := range offered {
			switch o.Partition {
			case 0:
				out = append(out, &pluginv1.PartitionOffset{Topic: "a", Partition: 0, Offset: 5})
			case 1:
				out = append(out, &pluginv1.PartitionOffset{Topic: "a", Partition: 1, Offset: o.Offset + 10})
			}
		}
		// Not assigned: ignored.
		return append(out, &pluginv1.PartitionOffset{Topic: "zzz", Partition: 0, Offset: 1})
	}
	task, err := NewSinkTask(sinkConfig(c, f, nil, "a"))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "all delivered", func() bool { return len(f.deliveredList()) == 30 })
	if _, err := f.workerServer().RequestCommit(context.Background(), &pluginv1.RequestCommitRequest{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the requested commit", func() bool { return ev.lastIndex("precommit") >= 0 })
	if got := ev.list()[ev.lastIndex("precommit")]; got != "precommit a-0=10,a-1=10,a-2=10" {
		t.Errorf("offered %s", got)
	}
	eventually(t, "a-0 committed", func() bool { return committedOffsets(t, c, "connect-snk")["a-0"] == 5 })
	if got := committedOffsets(t, c, "connect-snk"); len(got) != 1 {
		t.Errorf("committed %v, want only a-0=5", got)
	}
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got := committedOffsets(t, c, "connect-snk"); fmt.Sprint(got) != "map[a-0:5]" {
		t.Errorf("committed after stop %v, want only a-0=5", got)
	}
}

// holdFirstCommit makes the cluster hold the first OffsetCommit it gets
// until release (or the test's end); held turns 1 once it does.
func holdFirstCommit(t *testing.T, c *kfake.Cluster) (held *atomic.Int32, release func()) {
	held = new(atomic.Int32)
	ch := make(chan struct{})
	release = sync.OnceFunc(func() { close(ch) })
	t.Cleanup(release)
	c.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if held.CompareAndSwap(0, 1) {
			c.SleepControl(func() { <-ch })
		}
		return nil, nil, false
	})
	return held, release
}

// The periodic commit is asynchronous, as Kafka Connect's commitAsync: while
// the group coordinator takes its time over a commit, records go on being
// put; no second commit starts until the first is answered, and the
// commits that follow it reach the end.
func TestSinkSlowCommitDoesNotStallPuts(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 100)
	held, release := holdFirstCommit(t, c)
	ev := &events{}
	f := newFakeSink(ev)
	cfg := sinkConfig(c, f, nil, "a")
	cfg.OffsetFlushInterval = 20 * time.Millisecond
	// Longer than the test waits: a commit made on the task goroutine
	// would hold it all that time.
	cfg.OffsetFlushTimeout = time.Minute
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "a commit held by the coordinator", func() bool { return held.Load() == 1 })
	produceTo(t, c, "a", 0, 100, 100)
	eventually(t, "the records produced after it put", func() bool { return len(f.deliveredList()) == 200 })
	st := task.(*sinkTask)
	st.commits.mu.Lock()
	inFlight := st.commits.inFlight
	st.commits.mu.Unlock()
	if inFlight != 1 {
		t.Errorf("%d commits in flight while the first was unanswered, want 1", inFlight)
	}
	release()
	eventually(t, "everything committed", func() bool { return committedOffsets(t, c, "connect-snk")["a-0"] == 200 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got := deliveredCounts(f.deliveredList()); len(got) != 200 {
		t.Errorf("%d distinct records put, want 200", len(got))
	}
}

// heldCommitSink is a sink task on a cluster that holds its first
// OffsetCommit (holdFirstCommit), committing every hour unless asked, with
// the 50 records of partition a-0 delivered.
type heldCommitSink struct {
	c       *kfake.Cluster
	f       *fakeSink
	ev      *events
	task    Task
	wait    func() error
	held    *atomic.Int32
	release func()
}

func startHeldCommitSink(t *testing.T) *heldCommitSink {
	t.Helper()
	h := &heldCommitSink{c: newCluster(t, 1, map[string]int32{"a": 1}), ev: &events{}}
	produceTo(t, h.c, "a", 0, 0, 50)
	h.held, h.release = holdFirstCommit(t, h.c)
	h.f = newFakeSink(h.ev)
	task, err := NewSinkTask(sinkConfig(h.c, h.f, nil, "a"))
	if err != nil {
		t.Fatal(err)
	}
	h.task, h.wait = task, runTask(t, task)
	eventually(t, "all delivered", func() bool { return len(h.f.deliveredList()) == 50 })
	return h
}

// askCommit is the plugin's RequestCommit.
func (h *heldCommitSink) askCommit(t *testing.T) {
	t.Helper()
	if _, err := h.f.workerServer().RequestCommit(context.Background(), &pluginv1.RequestCommitRequest{}); err != nil {
		t.Fatal(err)
	}
}

func (h *heldCommitSink) stop(t *testing.T) {
	t.Helper()
	h.task.Stop()
	if err := h.wait(); err != nil {
		t.Fatal(err)
	}
}

// A commit the plugin asks for while another is in flight is not lost: it
// starts as soon as the first is answered, not an interval later.
func TestSinkRequestedCommitFollowsTheOneInFlight(t *testing.T) {
	h := startHeldCommitSink(t)
	c, f, ev, held := h.c, h.f, h.ev, h.held
	h.askCommit(t)
	eventually(t, "the first commit held", func() bool { return held.Load() == 1 })
	produceTo(t, c, "a", 0, 50, 50)
	eventually(t, "the next records delivered", func() bool { return len(f.deliveredList()) == 100 })
	h.askCommit(t)
	time.Sleep(50 * time.Millisecond)
	if n := strings.Count(strings.Join(ev.list(), "\n"), "precommit"); n != 1 {
		t.Fatalf("%d PreCommits while the first commit was in flight, want 1: %v", n, ev.list())
	}
	h.release()
	eventually(t, "the asked-for commit of everything", func() bool { return committedOffsets(t, c, "connect-snk")["a-0"] == 100 })
	h.stop(t)
}

// A due commit waiting for a slow one in flight is checked less and less
// often: an idle task puts an empty batch at each check, and a coordinator
// that takes seconds must not turn that into hundreds of calls.
func TestSinkWaitingCommitBacksOff(t *testing.T) {
	h := startHeldCommitSink(t)
	f, ev, held := h.f, h.ev, h.held
	empty := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.empty
	}
	h.askCommit(t)
	eventually(t, "the first commit held", func() bool { return held.Load() == 1 })
	before := empty()
	h.askCommit(t)
	time.Sleep(400 * time.Millisecond)
	// 5, 10, 20, ... ms apart: 7 checks in 400 ms; every 5 ms would be 80.
	if n := empty() - before; n < 2 || n > 12 {
		t.Errorf("%d empty puts while a due commit waited 400 ms, want 2 to 12", n)
	}
	h.release()
	eventually(t, "the commit asked for second", func() bool { return strings.Count(strings.Join(ev.list(), "\n"), "precommit") == 2 })
	h.stop(t)
}

// The result of a commit that was in flight while partitions were closed
// records nothing: the partitions may come back, and the task must not
// take an old commit for theirs.
func TestSinkCommitsIgnoreResultsAcrossForget(t *testing.T) {
	tp := topicPartition{"a", 0}
	c := sinkCommits{committed: map[topicPartition]int64{}}
	ok := &kmsg.OffsetCommitResponse{Topics: []kmsg.OffsetCommitResponseTopic{{Topic: "a", Partitions: []kmsg.OffsetCommitResponseTopicPartition{{Partition: 0}}}}}
	log := hclog.NewNullLogger()

	e := c.begin()
	if !c.busy() {
		t.Fatal("not busy with a commit in flight")
	}
	c.done(e, map[topicPartition]int64{tp: 10}, ok, nil, log)
	if off, found := c.committedAt(tp); !found || off != 10 || c.busy() {
		t.Fatalf("after a commit: %d %v busy=%v", off, found, c.busy())
	}

	e = c.begin()
	c.forget([]topicPartition{tp})
	c.done(e, map[topicPartition]int64{tp: 20}, ok, nil, log)
	if off, found := c.committedAt(tp); found {
		t.Errorf("a commit begun before forget recorded %d", off)
	}
	if c.busy() {
		t.Error("still busy after the commit was answered")
	}

	failed := &kmsg.OffsetCommitResponse{Topics: []kmsg.OffsetCommitResponseTopic{{Topic: "a", Partitions: []kmsg.OffsetCommitResponseTopicPartition{{Partition: 0, ErrorCode: kerr.RebalanceInProgress.Code}}}}}
	e = c.begin()
	c.done(e, map[topicPartition]int64{tp: 30}, failed, nil, log)
	e = c.begin()
	c.done(e, map[topicPartition]int64{tp: 40}, nil, context.Canceled, log)
	if off, found := c.committedAt(tp); found {
		t.Errorf("a failed commit recorded %d", off)
	}
}

// A Put that answers ABORTED gets the same batch again after the backoff
// the task set; nothing is lost or doubled.
func TestSinkRetriablePutRedelivers(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 2})
	produceTo(t, c, "a", 0, 0, 40)
	produceTo(t, c, "a", 1, 0, 40)
	ev := &events{}
	f := newFakeSink(ev)
	const backoff = 150 * time.Millisecond
	f.putHook = func(_ context.Context, call int, _ []*data.SinkRecord) error {
		if call == 1 {
			if _, err := f.workerServer().SetRetryBackoff(context.Background(), &pluginv1.SetRetryBackoffRequest{BackoffMs: backoff.Milliseconds()}); err != nil {
				t.Error(err)
			}
		}
		if call <= 2 {
			return wire.Retriable("database busy")
		}
		return nil
	}
	cfg := sinkConfig(c, f, nil, "a")
	cfg.RetryBackoff = time.Hour // the task's own backoff must win
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "all delivered", func() bool { return len(f.deliveredList()) >= 80 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	batches, times := f.batches, f.putTimes
	f.mu.Unlock()
	key := func(b []*data.SinkRecord) string {
		var ks []string
		for _, r := range b {
			ks = append(ks, fmt.Sprintf("%d@%d", r.OriginalPartition, r.OriginalOffset))
		}
		return strings.Join(ks, " ")
	}
	if key(batches[1]) != key(batches[0]) || key(batches[2]) != key(batches[0]) {
		t.Errorf("redelivered batches differ:\n%s\n%s\n%s", key(batches[0]), key(batches[1]), key(batches[2]))
	}
	for i := 1; i <= 2; i++ {
		if gap := times[i].Sub(times[i-1]); gap < backoff {
			t.Errorf("redelivery %d came after %s, backoff %s", i, gap, backoff)
		}
	}
	counts := deliveredCounts(f.deliveredList())
	if len(counts) != 80 {
		t.Errorf("%d distinct records delivered, want 80", len(counts))
	}
	for k, n := range counts {
		if n != 1 {
			t.Errorf("record %s delivered %d times", k, n)
		}
	}
	if got := committedOffsets(t, c, "connect-snk"); got["a-0"] != 40 || got["a-1"] != 40 {
		t.Errorf("committed %v", got)
	}
}

// Rewind makes the consumer read a partition again from the given offset.
func TestSinkRewindRedelivers(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 2})
	produceTo(t, c, "a", 0, 0, 10)
	produceTo(t, c, "a", 1, 0, 10)
	ev := &events{}
	f := newFakeSink(ev)
	task, err := NewSinkTask(sinkConfig(c, f, nil, "a"))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "all delivered", func() bool { return len(f.deliveredList()) == 20 })
	if _, err := f.workerServer().Rewind(context.Background(), &pluginv1.RewindRequest{
		Offsets: []*pluginv1.PartitionOffset{{Topic: "a", Partition: 0, Offset: 4}},
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "redelivery", func() bool { return len(f.deliveredList()) == 26 })
	time.Sleep(200 * time.Millisecond)
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	counts := deliveredCounts(f.deliveredList())
	for p := range 2 {
		for o := range 10 {
			want := 1
			if p == 0 && o >= 4 {
				want = 2
			}
			if got := counts[fmt.Sprintf("a-%d@%d", p, o)]; got != want {
				t.Errorf("a-%d@%d delivered %d times, want %d", p, o, got, want)
			}
		}
	}
}

// A second consumer joining takes partitions away: the first task commits
// and closes them; the second opens them and starts from those offsets.
func TestSinkRevocationCommitsAndCloses(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"r": 4})
	for p := range int32(4) {
		produceTo(t, c, "r", p, 0, 20)
	}
	ev1 := &events{}
	f1, f2 := newFakeSink(ev1), newFakeSink(&events{})
	task1, wait1 := startSinkTask(t, c, f1, 0, nil, "r")
	eventually(t, "task 1 delivers all", func() bool { return len(f1.deliveredList()) == 80 })
	if got := f1.openList(); len(got) != 4 {
		t.Fatalf("task 1 open = %v", got)
	}
	task2, wait2 := startSinkTask(t, c, f2, 1, nil, "r")
	eventually(t, "the rebalance", func() bool { return len(f2.openList()) == 2 && len(f1.openList()) == 2 })
	closeAt := ev1.lastIndex("close")
	if closeAt < 1 || !strings.HasPrefix(ev1.list()[closeAt-1], "precommit ") {
		t.Fatalf("task 1 closed without a pre-commit first: %v", ev1.list())
	}
	closed := strings.Split(strings.TrimPrefix(ev1.list()[closeAt], "close "), ",")
	if !slices.Equal(closed, f2.openList()) {
		t.Errorf("task 1 closed %v, task 2 opened %v", closed, f2.openList())
	}
	got := committedOffsets(t, c, "connect-snk")
	for _, tp := range closed {
		if got[tp] != 20 {
			t.Errorf("revoked %s committed at %d, want 20 (committed: %v)", tp, got[tp], got)
		}
	}
	// Task 2 starts where task 1 left off: new records only.
	for p := range int32(4) {
		produceTo(t, c, "r", p, 20, 5)
	}
	eventually(t, "new records delivered", func() bool { return len(f1.deliveredList())+len(f2.deliveredList()) == 100 })
	time.Sleep(200 * time.Millisecond)
	stopDeliveredOnce(t, 100, []Task{task1, task2}, []func() error{wait1, wait2}, f1, f2)
}

// Paused: no Put. Resumed: the records that came meanwhile move.
func TestSinkPauseResume(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 2})
	produceTo(t, c, "a", 0, 0, 5)
	ev := &events{}
	f := newFakeSink(ev)
	l := newRecListener()
	task, err := NewSinkTask(sinkConfig(c, f, l, "a"))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "first records", func() bool { return len(f.deliveredList()) == 5 })
	task.Pause()
	l.await(t, "paused")
	calls := f.putCalls()
	produceTo(t, c, "a", 0, 5, 5)
	produceTo(t, c, "a", 1, 0, 5)
	time.Sleep(400 * time.Millisecond)
	if f.putCalls() != calls {
		t.Errorf("%d Put calls while paused", f.putCalls()-calls)
	}
	task.Resume()
	l.await(t, "running")
	eventually(t, "records after resume", func() bool { return len(f.deliveredList()) == 15 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got := l.list(); !slices.Equal(got, []string{"running", "paused", "running", "stopped"}) {
		t.Errorf("states = %v", got)
	}
}

// The plugin pauses one partition: the other keeps moving; resumed, it
// catches up. Assignment answers the open partitions.
func TestSinkPluginPausesPartition(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 2})
	produceTo(t, c, "a", 0, 0, 5)
	produceTo(t, c, "a", 1, 0, 5)
	ev := &events{}
	f := newFakeSink(ev)
	task, err := NewSinkTask(sinkConfig(c, f, nil, "a"))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "first records", func() bool { return len(f.deliveredList()) == 10 })
	w := f.workerServer()
	ctx := context.Background()
	as, err := w.Assignment(ctx, &pluginv1.AssignmentRequest{})
	if err != nil || tpsString(as.Partitions) != "a-0,a-1" {
		t.Fatalf("assignment = %v, %v", as, err)
	}
	if _, err := w.Pause(ctx, &pluginv1.PartitionsRequest{Partitions: []*pluginv1.TopicPartition{{Topic: "a", Partition: 0}}}); err != nil {
		t.Fatal(err)
	}
	// Let the pause apply before producing: requests apply between batches.
	time.Sleep(100 * time.Millisecond)
	produceTo(t, c, "a", 0, 5, 5)
	produceTo(t, c, "a", 1, 5, 5)
	eventually(t, "a-1 moves", func() bool { return deliveredCounts(f.deliveredList())["a-1@9"] == 1 })
	time.Sleep(200 * time.Millisecond)
	if deliveredCounts(f.deliveredList())["a-0@5"] != 0 {
		t.Fatal("a paused partition was delivered")
	}
	if _, err := w.Resume(ctx, &pluginv1.PartitionsRequest{Partitions: []*pluginv1.TopicPartition{{Topic: "a", Partition: 0}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a-0 catches up", func() bool { return deliveredCounts(f.deliveredList())["a-0@9"] == 1 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if n := len(deliveredCounts(f.deliveredList())); n != 20 {
		t.Errorf("%d distinct records", n)
	}
}

// Failures: a fatal Put error, a converter error and a crash each fail the
// task; a live plugin is stopped, a dead one only killed.
func TestSinkFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		setup     func(*kfake.Cluster, *fakeSink)
		wantErr   string
		wantTrace string
		wantStop  bool
	}{
		{"put", func(c *kfake.Cluster, f *fakeSink) {
			produceTo(t, c, "a", 0, 0, 3)
			f.putHook = func(context.Context, int, []*data.SinkRecord) error {
				return &wire.Error{Kind: wire.KindFatal, Message: "table missing", Trace: "at Writer.write"}
			}
		}, "put: table missing", "at Writer.write", true},
		{"converter", func(c *kfake.Cluster, _ *fakeSink) {
			cl, _ := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
			defer cl.Close()
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "a", Value: []byte("bad value")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}, string(StageValueConverter), "", true},
		{"crash", func(c *kfake.Cluster, f *fakeSink) {
			produceTo(t, c, "a", 0, 0, 3)
			f.putHook = func(context.Context, int, []*data.SinkRecord) error {
				f.crash()
				return f.crashErr()
			}
		}, "plugin exited", crashTrace, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 1, map[string]int32{"a": 1})
			ev := &events{}
			f := newFakeSink(ev)
			tc.setup(c, f)
			l := newRecListener()
			task, err := NewSinkTask(sinkConfig(c, f, l, "a"))
			if err != nil {
				t.Fatal(err)
			}
			err = runTask(t, task)()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Run = %v, want %q", err, tc.wantErr)
			}
			l.await(t, "failed")
			if tc.wantTrace != "" && l.trace != tc.wantTrace {
				t.Errorf("trace = %q", l.trace)
			}
			if stopped := ev.lastIndex("stop") >= 0; stopped != tc.wantStop {
				t.Errorf("plugin stopped: %v, want %v (%v)", stopped, tc.wantStop, ev.list())
			}
			if f.kills() != 1 {
				t.Errorf("killed %d times", f.kills())
			}
		})
	}
}

// A Put that hangs past the drain deadline is abandoned and the plugin
// killed; the task ends STOPPED.
func TestSinkHungPutIsKilled(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 3)
	ev := &events{}
	f := newFakeSink(ev)
	inPut := make(chan struct{})
	f.putHook = func(ctx context.Context, _ int, _ []*data.SinkRecord) error {
		close(inPut)
		<-ctx.Done() // hang until the runner abandons the call
		return &wire.Error{Kind: wire.KindTimeout, Message: "call abandoned"}
	}
	l := newRecListener()
	cfg := sinkConfig(c, f, l, "a")
	cfg.ShutdownTimeout = 300 * time.Millisecond
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	<-inPut
	start := time.Now()
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stop took %s", took)
	}
	if f.kills() != 1 || ev.lastIndex("stop") >= 0 {
		t.Errorf("events %v, kills %d", ev.list(), f.kills())
	}
	if got := l.list(); got[len(got)-1] != "stopped" {
		t.Errorf("states %v", got)
	}
}

// The Worker service of a sink refuses source calls and has no errant
// record reporter without error handling.
func TestSinkWorkerService(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	ev := &events{}
	f := newFakeSink(ev)
	l := newRecListener()
	task, err := NewSinkTask(sinkConfig(c, f, l, "a"))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	l.await(t, "running")
	w := f.workerServer()
	ctx := context.Background()
	if _, err := w.SourceOffsets(ctx, &pluginv1.SourceOffsetsRequest{}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("SourceOffsets: %v", err)
	}
	if _, err := w.ReportErrantRecord(ctx, &pluginv1.ReportErrantRecordRequest{Topic: "a"}); status.Code(err) != codes.Unimplemented {
		t.Errorf("ReportErrantRecord: %v", err)
	}
	if _, err := w.SetRetryBackoff(ctx, &pluginv1.SetRetryBackoffRequest{BackoffMs: -1}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("SetRetryBackoff(-1): %v", err)
	}
	if _, err := w.RaiseError(ctx, &pluginv1.RaiseErrorRequest{Message: "gone", Trace: "tr"}); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err == nil || err.Error() != "gone" {
		t.Errorf("Run = %v", err)
	}
	if l.trace != "tr" {
		t.Errorf("trace %q", l.trace)
	}
}

// With an error handler, ReportErrantRecord reaches it with the consumed
// record, and a refusal fails the task.
func TestSinkErrantRecordHook(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 3)
	ev := &events{}
	f := newFakeSink(ev)
	var got []ErrantRecord
	h := errorHandlerFunc(func(_ context.Context, r ErrantRecord) error {
		got = append(got, r)
		if len(got) > 1 {
			return errors.New("tolerance exceeded")
		}
		return nil
	})
	f.putHook = func(_ context.Context, call int, recs []*data.SinkRecord) error {
		r := recs[0]
		_, err := f.workerServer().ReportErrantRecord(context.Background(), &pluginv1.ReportErrantRecordRequest{
			Topic: r.OriginalTopic, Partition: r.OriginalPartition, Offset: r.OriginalOffset, Error: "bad row", Trace: "at x",
			ExceptionClass: "java.sql.SQLException"})
		return err
	}
	cfg := sinkConfig(c, f, nil, "a")
	cfg.MaxPollRecords = 1
	cfg.Errors = h
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = runTask(t, task)()
	if err == nil || !strings.Contains(err.Error(), "tolerance exceeded") {
		t.Fatalf("Run = %v", err)
	}
	if len(got) != 2 || got[0].Stage != StagePut || got[0].Consumed.Offset != 0 || string(got[0].Consumed.Value) != "a-0-0" ||
		got[0].Err.Error() != "bad row" || got[0].Trace != "at x" || got[0].ExceptionClass != "java.sql.SQLException" || got[1].Consumed.Offset != 1 {
		t.Errorf("reports = %+v", got)
	}
}

// A record reported after its Put returned (from a later Put here; from
// Flush in a real task) is no longer in the worker's hands: the copy the
// plugin sends with the report is turned back into bytes with the task's
// converters for the error handler (the dead letter queue). Without a copy,
// or with one that cannot be decoded, the handler gets its coordinates.
func TestSinkErrantRecordReportedAfterItsPut(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 4)
	ev := &events{}
	f := newFakeSink(ev)
	var mu sync.Mutex
	var got []ErrantRecord
	h := errorHandlerFunc(func(_ context.Context, r ErrantRecord) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
		return nil
	})
	var first *data.SinkRecord
	f.putHook = func(_ context.Context, call int, recs []*data.SinkRecord) error {
		if len(recs) == 0 {
			return nil
		}
		if first == nil {
			r := *recs[0]
			first = &r
			return nil
		}
		if recs[0].Offset != 1 {
			return nil
		}
		report := func(req *pluginv1.ReportErrantRecordRequest) {
			req.Topic, req.Partition, req.Offset, req.Error = first.OriginalTopic, first.OriginalPartition, first.OriginalOffset, "late"
			if _, err := f.workerServer().ReportErrantRecord(context.Background(), req); err != nil {
				t.Errorf("ReportErrantRecord: %v", err)
			}
		}
		schemas, copies, err := wire.EncodeSinkRecords([]*data.SinkRecord{first})
		if err != nil {
			t.Fatal(err)
		}
		report(&pluginv1.ReportErrantRecordRequest{Record: copies[0], Schemas: schemas})
		report(&pluginv1.ReportErrantRecordRequest{})
		// A copy whose value refers to a schema the request does not carry.
		bad := proto.Clone(copies[0]).(*pluginv1.SinkRecord)
		bad.Value = &pluginv1.Data{Schema: 99}
		report(&pluginv1.ReportErrantRecordRequest{Record: bad})
		return nil
	}
	cfg := sinkConfig(c, f, nil, "a")
	cfg.MaxPollRecords = 1
	cfg.MaxBatchRecords = 1
	cfg.Errors = h
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "three reports", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 3 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	withCopy := got[0].Consumed
	// The test converters turn a string s into the bytes "C:"+s, a header
	// into "H:"+s: the record went back through the task's converters.
	if withCopy.Topic != "a" || withCopy.Offset != 0 || string(withCopy.Key) != "C:ka-0-0" || string(withCopy.Value) != "C:a-0-0" ||
		len(withCopy.Headers) != 1 || withCopy.Headers[0].Key != "h" || string(withCopy.Headers[0].Value) != "H:hv" {
		t.Errorf("report with a copy reached the handler as %s-%d@%d key %q value %q headers %v", withCopy.Topic, withCopy.Partition,
			withCopy.Offset, withCopy.Key, withCopy.Value, withCopy.Headers)
	}
	if !withCopy.Timestamp.Equal(first.Timestamp) {
		t.Errorf("timestamp %v, want the record's %v", withCopy.Timestamp, first.Timestamp)
	}
	for i, r := range got[1:] {
		if c := r.Consumed; c.Offset != 0 || c.Key != nil || c.Value != nil || len(c.Headers) != 0 {
			t.Errorf("report %d (no usable copy) reached the handler with key %q value %q headers %v", i+2, c.Key, c.Value, c.Headers)
		}
	}
	if got[0].Err.Error() != "late" || got[0].Stage != StagePut {
		t.Errorf("report: stage %s error %v", got[0].Stage, got[0].Err)
	}
}

type errorHandlerFunc func(context.Context, ErrantRecord) error

func (f errorHandlerFunc) Handle(ctx context.Context, r ErrantRecord) error { return f(ctx, r) }

// Records a transform drops are not delivered, but count as consumed.
func TestSinkTransformDrops(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 10)
	ev := &events{}
	f := newFakeSink(ev)
	cfg := sinkConfig(c, f, nil, "a")
	cfg.Transforms = transformFunc(func(r *data.Record) (*data.Record, error) {
		if strings.HasSuffix(r.Value.(string), "-9") {
			return nil, nil
		}
		out := *r
		out.Topic = "renamed"
		return &out, nil
	})
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "delivery", func() bool { return len(f.deliveredList()) == 9 })
	time.Sleep(100 * time.Millisecond)
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.deliveredList() {
		if r.Topic != "renamed" || r.OriginalTopic != "a" {
			t.Errorf("record topic %s original %s", r.Topic, r.OriginalTopic)
		}
	}
	if got := committedOffsets(t, c, "connect-snk"); got["a-0"] != 10 {
		t.Errorf("committed %v, want a-0=10 (the dropped record counts)", got)
	}
	var ks []string
	for k := range deliveredCounts(f.deliveredList()) {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	if len(ks) != 9 || slices.Contains(ks, "a-0@9") {
		t.Errorf("delivered %v", ks)
	}
}

// Lost partitions are closed without a commit (they may be someone else's
// already) and nothing more of them is delivered.
func TestSinkLostPartitionsCloseWithoutCommit(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 2})
	produceTo(t, c, "a", 0, 0, 5)
	produceTo(t, c, "a", 1, 0, 5)
	ev := &events{}
	f := newFakeSink(ev)
	task, err := NewSinkTask(sinkConfig(c, f, nil, "a"))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "delivery", func() bool { return len(f.deliveredList()) == 10 })
	before := len(ev.list())
	task.(*sinkTask).onLost(context.Background(), nil, map[string][]int32{"a": {0}})
	after := ev.list()[before:]
	if !slices.Equal(after, []string{"close a-0"}) {
		t.Errorf("events on loss = %v, want only the close", after)
	}
	as, _ := f.workerServer().Assignment(context.Background(), &pluginv1.AssignmentRequest{})
	if tpsString(as.Partitions) != "a-1" {
		t.Errorf("assignment after loss = %s", tpsString(as.Partitions))
	}
	if got := committedOffsets(t, c, "connect-snk"); len(got) != 0 {
		t.Errorf("committed %v", got)
	}
	produceTo(t, c, "a", 0, 5, 5)
	produceTo(t, c, "a", 1, 5, 5)
	eventually(t, "a-1 moves", func() bool { return len(f.deliveredList()) == 15 })
	time.Sleep(200 * time.Millisecond)
	if n := deliveredCounts(f.deliveredList())["a-0@5"]; n != 0 {
		t.Errorf("a lost partition was delivered")
	}
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// A Put gathers what several polls return at once, up to the batch bounds;
// every record is still delivered once, in order per partition.
func TestSinkBatchGathersPolls(t *testing.T) {
	for name, tc := range map[string]struct {
		maxBatch, maxBytes int
		wantMax            int  // largest Put allowed
		wantGather         bool // some Put holds more than one poll
	}{
		"records bound": {maxBatch: 120, wantMax: 120, wantGather: true},
		"bytes bound":   {maxBatch: 1000, maxBytes: 1, wantMax: 50},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, 1, map[string]int32{"a": 2})
			produceTo(t, c, "a", 0, 0, 300)
			produceTo(t, c, "a", 1, 0, 300)
			f := newFakeSink(&events{})
			cfg := sinkConfig(c, f, nil, "a") // MaxPollRecords 50
			cfg.MaxBatchRecords, cfg.MaxBatchBytes = tc.maxBatch, tc.maxBytes
			task, err := NewSinkTask(cfg)
			if err != nil {
				t.Fatal(err)
			}
			wait := runTask(t, task)
			eventually(t, "delivery", func() bool { return len(f.deliveredList()) >= 600 })
			task.Stop()
			if err := wait(); err != nil {
				t.Fatal(err)
			}
			next := map[int32]int64{}
			for _, r := range f.deliveredList() {
				if r.OriginalOffset != next[r.OriginalPartition] {
					t.Fatalf("partition %d: got offset %d, want %d", r.OriginalPartition, r.OriginalOffset, next[r.OriginalPartition])
				}
				next[r.OriginalPartition]++
			}
			if next[0] != 300 || next[1] != 300 {
				t.Fatalf("delivered %v, want 300 of each partition", next)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			largest := 0
			for _, b := range f.batches {
				largest = max(largest, len(b))
			}
			if largest > tc.wantMax || tc.wantGather && largest <= cfg.MaxPollRecords {
				t.Errorf("largest Put %d records (of %d Puts); want at most %d, gathering polls %v", largest, len(f.batches), tc.wantMax, tc.wantGather)
			}
		})
	}
}

// While a Put runs, the records of every fetch that arrives are taken and
// converted at once, not left buffered until the Put ends (the consumer
// fetches again only once its buffer is drained): records produced in three
// rounds while the first Put is held go out together in the second, up to
// the batch bound; a second Put answered ABORTED takes the gathered batch
// again, whole. Every record is delivered once, in order.
func TestSinkGathersFetchesDuringPut(t *testing.T) {
	for name, tc := range map[string]struct {
		maxBatch int
		abort    bool
		// want: the sizes of the first Puts.
		want func(sizes []int) bool
	}{
		// Rounds 2 and 3 come 200 ms apart: at least two of the three
		// (before this change, exactly one) make the second Put.
		"unbounded": {want: func(s []int) bool { return s[0] == 10 && s[1] >= 20 }},
		"bounded":   {maxBatch: 15, want: func(s []int) bool { return s[0] == 10 && s[1] == 15 }},
		"aborted":   {abort: true, want: func(s []int) bool { return len(s) > 2 && s[0] == 10 && s[1] >= 20 && s[2] == s[1] }},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, 1, map[string]int32{"a": 1})
			produceTo(t, c, "a", 0, 0, 10)
			f := newFakeSink(&events{})
			release := make(chan struct{})
			f.putHook = func(ctx context.Context, call int, _ []*data.SinkRecord) error {
				switch {
				case call == 1:
					select {
					case <-release:
					case <-ctx.Done():
						return ctx.Err()
					}
				case call == 2 && tc.abort:
					return wire.Retriable("busy")
				}
				return nil
			}
			cfg := sinkConfig(c, f, nil, "a")
			if tc.maxBatch > 0 {
				cfg.MaxPollRecords, cfg.MaxBatchRecords = 5, tc.maxBatch
			}
			cfg.RetryBackoff = 20 * time.Millisecond
			task, err := NewSinkTask(cfg)
			if err != nil {
				t.Fatal(err)
			}
			wait := runTask(t, task)
			eventually(t, "the first Put", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.calls == 1 })
			for round := 1; round <= 3; round++ {
				produceTo(t, c, "a", 0, round*10, 10)
				time.Sleep(200 * time.Millisecond)
			}
			close(release)
			eventually(t, "delivery", func() bool { return len(f.deliveredList()) >= 40 })
			task.Stop()
			if err := wait(); err != nil {
				t.Fatal(err)
			}
			var sizes []int
			f.mu.Lock()
			for _, b := range f.batches {
				sizes = append(sizes, len(b))
			}
			f.mu.Unlock()
			if len(sizes) < 2 || !tc.want(sizes) {
				t.Fatalf("Puts of %v records", sizes)
			}
			delivered := f.deliveredList()
			if len(delivered) != 40 {
				t.Fatalf("%d records delivered, want 40", len(delivered))
			}
			for i, r := range delivered {
				if r.OriginalOffset != int64(i) {
					t.Fatalf("record %d has offset %d", i, r.OriginalOffset)
				}
			}
		})
	}
}

// Unset, max.poll.records is Kafka's default per poll and a Put gathers up
// to DefaultSinkMaxBatchRecords; set, it bounds a Put as in Kafka Connect.
func TestSinkBatchDefaults(t *testing.T) {
	for _, tc := range []struct{ poll, batch, wantPoll, wantBatch int }{
		{0, 0, DefaultSinkMaxPollRecords, DefaultSinkMaxBatchRecords},
		{100, 0, 100, 100},
		{100, 1000, 100, 1000},
		{100, 10, 100, 100},
	} {
		cfg := SinkConfig{ID: TaskID{"s", 0}, Launch: newFakeSink(&events{}).launch, Pipeline: testPipeline(), Topics: []string{"a"},
			MaxPollRecords: tc.poll, MaxBatchRecords: tc.batch}
		if err := cfg.normalize(); err != nil {
			t.Fatal(err)
		}
		if cfg.MaxPollRecords != tc.wantPoll || cfg.MaxBatchRecords != tc.wantBatch || cfg.MaxBatchBytes != DefaultSinkMaxBatchBytes {
			t.Errorf("poll %d batch %d: got poll %d batch %d bytes %d", tc.poll, tc.batch, cfg.MaxPollRecords, cfg.MaxBatchRecords, cfg.MaxBatchBytes)
		}
	}
}

// As Kafka Connect does, a poll that brings nothing is followed by an empty
// put (at the pace of the poll deadline, the next commit), and so is a
// batch that transforms emptied; offsets still move past dropped records.
func TestSinkEmptyPuts(t *testing.T) {
	dropAll := transformFunc(func(*data.Record) (*data.Record, error) { return nil, nil })
	t.Run("idle", func(t *testing.T) {
		c := newCluster(t, 1, map[string]int32{"a": 1})
		f := newFakeSink(&events{})
		cfg := sinkConfig(c, f, nil, "a")
		cfg.Timing.OffsetFlushInterval = 100 * time.Millisecond
		task, err := NewSinkTask(cfg)
		if err != nil {
			t.Fatal(err)
		}
		wait := runTask(t, task)
		eventually(t, "empty puts while idle", func() bool { return f.emptyPuts() >= 3 })
		task.Stop()
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if n := f.putCalls(); n != 0 {
			t.Fatalf("%d puts with records from an empty topic", n)
		}
	})
	t.Run("emptied by transforms", func(t *testing.T) {
		// Commits an hour apart: no poll ends empty on its own, so every
		// empty put is a batch the transform emptied.
		c := newCluster(t, 1, map[string]int32{"a": 1})
		produceTo(t, c, "a", 0, 0, 10)
		f := newFakeSink(&events{})
		cfg := sinkConfig(c, f, nil, "a")
		cfg.Transforms = dropAll
		task, err := NewSinkTask(cfg)
		if err != nil {
			t.Fatal(err)
		}
		wait := runTask(t, task)
		eventually(t, "the emptied batch put", func() bool { return f.emptyPuts() >= 1 })
		task.Stop()
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if n := f.putCalls(); n != 0 || len(f.deliveredList()) != 0 {
			t.Fatalf("%d puts with records; every record was dropped", n)
		}
		if got := committedOffsets(t, c, "connect-snk"); got["a-0"] != 10 {
			t.Fatalf("committed %v, want a-0=10 (dropped records count)", got)
		}
	})
}

// A record that cannot be encoded for the Put (here a transform left a
// value its schema does not allow) fails the task with the error of
// wire.EncodeSinkRecords, once every record of the batch went through the
// pipeline; nothing of the batch is put.
func TestSinkUnencodableRecordFails(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	produceTo(t, c, "a", 0, 0, 3)
	ev := &events{}
	f := newFakeSink(ev)
	l := newRecListener()
	cfg := sinkConfig(c, f, l, "a")
	var seen atomic.Int32
	cfg.Transforms = transformFunc(func(r *data.Record) (*data.Record, error) {
		seen.Add(1)
		if r.Value == "a-0-1" {
			out := *r
			out.Value = 42
			return &out, nil
		}
		return r, nil
	})
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = runTask(t, task)()
	want := regexp.MustCompile(`^encode records for put: sink record [01] \(a-0@1\): value: value of type int does not match schema type string$`)
	if wire.KindOf(err) != wire.KindInvalid || !want.MatchString(err.Error()) {
		t.Fatalf("Run = %v (kind %v)", err, wire.KindOf(err))
	}
	l.await(t, "failed")
	if n := seen.Load(); n != 3 {
		t.Errorf("the transform saw %d records, want all 3", n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.batches {
		if len(b) > 0 {
			t.Errorf("a batch of %d records was put", len(b))
		}
	}
}

// consumer.partition.assignment.strategy with an eager assignor
// (RoundRobinAssignor): the group runs "roundrobin", every rebalance
// revokes (commits and closes) all of a task's partitions before the new
// split, and nothing is delivered twice.
func TestSinkEagerAssignor(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"r": 4})
	for p := range int32(4) {
		produceTo(t, c, "r", p, 0, 20)
	}
	s, err := ConsumerOptions(map[string]string{"partition.assignment.strategy": "org.apache.kafka.clients.consumer.RoundRobinAssignor"})
	if err != nil {
		t.Fatal(err)
	}
	ev1 := &events{}
	f1, f2 := newFakeSink(ev1), newFakeSink(&events{})
	eager := func(cfg *SinkConfig) { cfg.Balancers = s.Balancers }
	task1, wait1 := startSinkTask(t, c, f1, 0, eager, "r")
	eventually(t, "task 1 delivers all", func() bool { return len(f1.deliveredList()) == 80 })
	task2, wait2 := startSinkTask(t, c, f2, 1, eager, "r")
	eventually(t, "the rebalance", func() bool { return len(f2.openList()) == 2 && len(f1.openList()) == 2 })
	// Eager: task 1 gave up all four partitions, not just the two that moved.
	closeAt := ev1.lastIndex("close")
	if closeAt < 0 {
		t.Fatalf("task 1 closed nothing: %v", ev1.list())
	}
	if closed := strings.Split(strings.TrimPrefix(ev1.list()[closeAt], "close "), ","); len(closed) != 4 {
		t.Errorf("task 1 closed %v in the eager rebalance, want all 4 partitions", closed)
	}
	// Round robin over the sorted members: the partitions alternate.
	for _, open := range [][]string{f1.openList(), f2.openList()} {
		if len(open) != 2 || open[0][len(open[0])-1]%2 != open[1][len(open[1])-1]%2 {
			t.Errorf("a task opened %v, want two partitions of the same parity", open)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	groups, err := kadm.NewClient(cl).DescribeGroups(context.Background(), "connect-snk")
	if err != nil {
		t.Fatal(err)
	}
	if g := groups["connect-snk"]; g.Protocol != "roundrobin" {
		t.Errorf("group protocol %q, want roundrobin", g.Protocol)
	}
	for p := range int32(4) {
		produceTo(t, c, "r", p, 20, 5)
	}
	eventually(t, "new records delivered", func() bool { return len(f1.deliveredList())+len(f2.deliveredList()) == 100 })
	time.Sleep(200 * time.Millisecond)
	stopDeliveredOnce(t, 100, []Task{task1, task2}, []func() error{wait1, wait2}, f1, f2)
}

// consumer.group.protocol=consumer (KIP-848): the broker assigns the
// partitions; two tasks split them and deliver every record once.
func TestSinkConsumerGroupProtocol(t *testing.T) {
	// The broker's heartbeat interval (5 s by default) paces each step of
	// a KIP-848 reassignment: revoke at one heartbeat, assign at the next.
	c := newCluster(t, 1, map[string]int32{"r": 4}, kfake.BrokerConfigs(map[string]string{"group.consumer.heartbeat.interval.ms": "100"}))
	for p := range int32(4) {
		produceTo(t, c, "r", p, 0, 20)
	}
	s, err := ConsumerOptions(map[string]string{"group.protocol": "consumer"})
	if err != nil {
		t.Fatal(err)
	}
	f1, f2 := newFakeSink(&events{}), newFakeSink(&events{})
	kip848 := func(cfg *SinkConfig) {
		cfg.ConsumerOpts = append(cfg.ConsumerOpts, s.Opts...)
		cfg.Balancers = s.Balancers
	}
	task1, wait1 := startSinkTask(t, c, f1, 0, kip848, "r")
	eventually(t, "task 1 delivers all", func() bool { return len(f1.deliveredList()) == 80 })
	task2, wait2 := startSinkTask(t, c, f2, 1, kip848, "r")
	eventually(t, "the broker's split", func() bool { return len(f2.openList()) == 2 && len(f1.openList()) == 2 })
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed["connect-snk"]; !ok || g.GroupType != "consumer" {
		t.Errorf("group connect-snk listed as %+v, want type consumer", g)
	}
	for p := range int32(4) {
		produceTo(t, c, "r", p, 20, 5)
	}
	eventually(t, "new records delivered", func() bool { return len(f1.deliveredList())+len(f2.deliveredList()) == 100 })
	time.Sleep(200 * time.Millisecond)
	stopDeliveredOnce(t, 100, []Task{task1, task2}, []func() error{wait1, wait2}, f1, f2)
}

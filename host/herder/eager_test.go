package herder_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/cluster"
	"github.com/sluice-io/sluice/host/herder"
)

// connect.protocol=eager on distributed herders: the group runs Kafka
// Connect's "default" protocol, every rebalance stops everything first, and
// nothing is signed.

// liveWork tracks, across all workers of a test, which connector instances
// and tasks run where right now, and records any that ran on two workers at
// once.
type liveWork struct {
	t       *testing.T
	mu      sync.Mutex
	where   map[string]string // item → worker running it
	overlap []string
}

func newLiveWork(t *testing.T) *liveWork {
	return &liveWork{t: t, where: map[string]string{}}
}

func (l *liveWork) claim(item, worker string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.where[item]; ok {
		l.overlap = append(l.overlap, item+" on "+worker+" while on "+w)
	}
	l.where[item] = worker
}

func (l *liveWork) release(item, worker string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.where[item] == worker {
		delete(l.where, item)
	}
}

// running is what runs now, as "item@worker", sorted.
func (l *liveWork) running() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for item, w := range l.where {
		out = append(out, item+"@"+w)
	}
	slices.Sort(out)
	return out
}

func (l *liveWork) overlaps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.overlap)
}

// wrap makes dEnv's herders report to l; worker names come from the order
// herders are started in.
func (l *liveWork) wrap(e *dEnv, names ...string) {
	next := 0
	e.wrap = func(in *fakeInstances) herder.Instances {
		name := names[next]
		next++
		return &trackedInstances{Instances: in, l: l, worker: name}
	}
}

type trackedInstances struct {
	herder.Instances
	l      *liveWork
	worker string
}

func (ti *trackedInstances) StartConnector(ctx context.Context, name string, class herder.Class, cfg map[string]string, cb herder.ConnectorCallbacks) (herder.ConnectorInstance, error) {
	ti.l.claim(name, ti.worker)
	ci, err := ti.Instances.StartConnector(ctx, name, class, cfg, cb)
	if err != nil {
		ti.l.release(name, ti.worker)
		return nil, err
	}
	return &trackedConn{ConnectorInstance: ci, release: func() { ti.l.release(name, ti.worker) }}, nil
}

func (ti *trackedInstances) NewTask(ctx context.Context, spec herder.TaskSpec, tl herder.TaskListener) (herder.TaskRunner, error) {
	r, err := ti.Instances.NewTask(ctx, spec, tl)
	if err != nil {
		return nil, err
	}
	return &trackedTask{TaskRunner: r, l: ti.l, item: spec.ID.String(), worker: ti.worker}, nil
}

type trackedConn struct {
	herder.ConnectorInstance
	once    sync.Once
	release func()
}

func (c *trackedConn) Stop(ctx context.Context) error {
	err := c.ConnectorInstance.Stop(ctx)
	c.once.Do(c.release)
	return err
}

type trackedTask struct {
	herder.TaskRunner
	l            *liveWork
	item, worker string
}

func (t *trackedTask) Run(ctx context.Context) error {
	t.l.claim(t.item, t.worker)
	defer t.l.release(t.item, t.worker)
	return t.TaskRunner.Run(ctx)
}

// describeGroup is the coordinator's description of the workers' group.
func (e *dEnv) describeGroup() kadm.DescribedGroup {
	e.t.Helper()
	cl, err := kgo.NewClient(e.opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	gs, err := kadm.NewClient(cl).DescribeGroups(ctxT(e.t), dGroup)
	if err != nil {
		e.t.Fatal(err)
	}
	return gs[dGroup]
}

// groupProtocol is the protocol the coordinator runs the group with.
func (e *dEnv) groupProtocol() string { return e.describeGroup().Protocol }

// onWorker matches running() entries of worker w.
func onWorker(w string) func(string) bool {
	return func(s string) bool { return strings.HasSuffix(s, "@"+w) }
}

// starts is how often each of items was started on any of ins.
func starts(ins []*fakeInstances, items ...string) map[string]int {
	out := map[string]int{}
	for _, in := range ins {
		for _, it := range items {
			out[it] += in.count(in.starts, it) + in.count(in.taskStarts, it)
		}
	}
	return out
}

// Two workers on connect.protocol=eager run a connector and its tasks
// exactly once between them; when a third joins, everything is stopped and
// started again (stop-the-world), and it still runs exactly once, never on
// two workers at the same time.
func TestDistributedEager(t *testing.T) {
	e := newDEnv(t)
	e.group = func(c *cluster.Config) { c.Protocol = cluster.Eager }
	live := newLiveWork(t)
	live.wrap(e, "w1", "w2", "w3")
	in1, in2, in3 := newFakeInstances(), newFakeInstances(), newFakeInstances()
	h1 := e.start("w1", in1, true)
	h2 := e.start("w2", in2, true)
	if p := e.groupProtocol(); p != "default" {
		t.Fatalf("group protocol %q", p)
	}
	createRetrying(t, h2, "src")
	dStates(t, h1, "src", "RUNNING:RUNNING,RUNNING")
	dStates(t, h2, "src", "RUNNING:RUNNING,RUNNING")
	items := []string{"src", "src-0", "src-1"}
	dWait(t, "each item running once", func() bool { return len(live.running()) == 3 })
	// Two workers: the connector goes to the first member, its tasks
	// round-robin from the second, so both workers run something.
	before := live.running()
	if !slices.ContainsFunc(before, onWorker("w1")) || !slices.ContainsFunc(before, onWorker("w2")) {
		t.Fatalf("work not spread over both workers: %v", before)
	}
	// The follower's connector sent its task configs to the leader
	// unsigned (no session key exists under eager).
	if keys := e.sessionKeys(); len(keys) != 0 {
		t.Fatalf("session keys written under eager: %v", keys)
	}
	startsBefore := starts([]*fakeInstances{in1, in2}, items...)
	var tasksBefore []*fakeTask
	for _, in := range []*fakeInstances{in1, in2} {
		for _, id := range items[1:] {
			if tk := in.task(id); tk != nil {
				tasksBefore = append(tasksBefore, tk)
			}
		}
	}
	if len(tasksBefore) != 2 {
		t.Fatalf("%d task runners before w3 joined", len(tasksBefore))
	}

	h3 := e.start("w3", in3, true)
	dStates(t, h3, "src", "RUNNING:RUNNING,RUNNING")
	dWait(t, "each item running once after w3 joined", func() bool {
		return len(live.running()) == 3 && h1.Health(context.Background()) == nil && h2.Health(context.Background()) == nil
	})
	// Every item was stopped and started again, though at most one of the
	// three moved to w3.
	after := starts([]*fakeInstances{in1, in2, in3}, items...)
	for _, it := range items {
		if after[it] <= startsBefore[it] {
			t.Errorf("%s started %d times before w3 joined and %d after: not restarted", it, startsBefore[it], after[it])
		}
	}
	for _, tk := range tasksBefore {
		select {
		case <-tk.stop:
		default:
			t.Errorf("task %s from before w3 joined still runs", tk.spec.ID)
		}
	}
	for _, in := range []*fakeInstances{in1, in2} {
		if n := in.count(in.stops, "src"); in.count(in.starts, "src") > 0 && n == 0 {
			t.Errorf("the connector was never stopped on a worker that ran it")
		}
	}
	if o := live.overlaps(); len(o) != 0 {
		t.Fatalf("ran on two workers at once: %v", o)
	}
	if got := live.running(); len(got) != 3 {
		t.Fatalf("running %v", got)
	}
}

// A sessioned worker and an eager one: the group settles on "default", the
// sessioned worker neither signs nor checks internal requests (no session
// key), and the connector runs exactly once. Without the eager worker the
// group goes back to "sessioned" and checks signatures again.
func TestDistributedMixedGroupDowngrades(t *testing.T) {
	e := newDEnv(t)
	live := newLiveWork(t)
	live.wrap(e, "w1", "w2")
	h1 := e.start("w1", newFakeInstances(), true) // sessioned, the default
	if p := e.groupProtocol(); p != "sessioned" {
		t.Fatalf("group protocol %q", p)
	}
	dWait(t, "a session key", func() bool { return len(e.sessionKeys()) == 1 })
	if code, msg := postTasks(t, e.urls["w1"], "missing", "[]", nil); code != 400 || msg != "Internal request missing required signature" {
		t.Fatalf("unsigned under sessioned: %d %q", code, msg)
	}

	e.group = func(c *cluster.Config) { c.Protocol = cluster.Eager }
	h2 := e.start("w2", newFakeInstances(), true)
	dWait(t, "w1 healthy", func() bool { return h1.Health(context.Background()) == nil })
	if p := e.groupProtocol(); p != "default" {
		t.Fatalf("mixed group protocol %q", p)
	}
	for _, name := range []string{"a", "b"} {
		createRetrying(t, h1, name)
	}
	for _, name := range []string{"a", "b"} {
		dStates(t, h2, name, "RUNNING:RUNNING,RUNNING")
	}
	dWait(t, "six items running", func() bool { return len(live.running()) == 6 })
	// Unsigned internal requests are taken on both workers now.
	for _, w := range []string{"w1", "w2"} {
		if code, msg := postTasks(t, e.urls[w], "missing", "[]", nil); code != 404 {
			t.Errorf("%s, unsigned, downgraded group: %d %q", w, code, msg)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), dPatience)
	defer cancel()
	if err := h2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	dWait(t, "the group back on sessioned", func() bool { return e.groupProtocol() == "sessioned" })
	dStates(t, h1, "a", "RUNNING:RUNNING,RUNNING")
	dStates(t, h1, "b", "RUNNING:RUNNING,RUNNING")
	dWait(t, "w1 runs all six", func() bool {
		got := live.running()
		return len(got) == 6 && !slices.ContainsFunc(got, onWorker("w2"))
	})
	dWait(t, "signatures checked again", func() bool {
		code, _ := postTasks(t, e.urls["w1"], "missing", "[]", nil)
		return code == 400
	})
	if o := live.overlaps(); len(o) != 0 {
		t.Fatalf("ran on two workers at once: %v", o)
	}
}

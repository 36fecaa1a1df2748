package herder_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/herder"
)

// Ports of Kafka Connect's ConnectorRestartApiIntegrationTest (KIP-745):
// every onlyFailed/includeTasks combination on a running connector, a
// failed connector and failed tasks, with exact counts of connector and
// task starts and stops, on a standalone herder, a one-worker and a
// four-worker distributed cluster.

// countingInstances counts connector start attempts (also failed ones,
// as Kafka's counter does) and task runner stops.
type countingInstances struct {
	*fakeInstances
	mu         sync.Mutex
	connStarts map[string]int
	taskStops  map[string]int
}

func newCountingInstances(in *fakeInstances) *countingInstances {
	return &countingInstances{fakeInstances: in, connStarts: map[string]int{}, taskStops: map[string]int{}}
}

func (c *countingInstances) StartConnector(ctx context.Context, name string, class herder.Class, cfg map[string]string, cb herder.ConnectorCallbacks) (herder.ConnectorInstance, error) {
	c.mu.Lock()
	c.connStarts[name]++
	c.mu.Unlock()
	return c.fakeInstances.StartConnector(ctx, name, class, cfg, cb)
}

func (c *countingInstances) NewTask(ctx context.Context, spec herder.TaskSpec, l herder.TaskListener) (herder.TaskRunner, error) {
	r, err := c.fakeInstances.NewTask(ctx, spec, l)
	if err != nil {
		return nil, err
	}
	return &countingTask{fakeTask: r.(*fakeTask), c: c}, nil
}

type countingTask struct {
	*fakeTask
	c *countingInstances
}

func (t *countingTask) Stop() {
	t.c.mu.Lock()
	t.c.taskStops[t.spec.ID.String()]++
	t.c.mu.Unlock()
	t.fakeTask.Stop()
}

// restartCounts are the starts and stops of connector "a" and its tasks
// a-0 and a-1: {connector starts, connector stops, a-0 starts, a-0 stops,
// a-1 starts, a-1 stops}.
type restartCounts [6]int

// restartCluster is what a test needs of one herder set-up.
type restartCluster struct {
	h      herder.Herder // the herder the restart is asked of
	status herder.Herder // a herder to read statuses from
	ins    []*countingInstances
	wait   func(t *testing.T, want string)
}

func (rc *restartCluster) counts() restartCounts {
	var out restartCounts
	for _, c := range rc.ins {
		c.mu.Lock()
		out[0] += c.connStarts["a"]
		out[3] += c.taskStops["a-0"]
		out[5] += c.taskStops["a-1"]
		c.mu.Unlock()
		out[1] += c.count(c.stops, "a")
		out[2] += c.count(c.taskStarts, "a-0")
		out[4] += c.count(c.taskStarts, "a-1")
	}
	return out
}

func (rc *restartCluster) setFail(f func(*fakeInstances)) {
	for _, c := range rc.ins {
		c.mu.Lock()
		c.fakeInstances.mu.Lock()
		f(c.fakeInstances)
		c.fakeInstances.mu.Unlock()
		c.mu.Unlock()
	}
}

func standaloneRestartCluster(t *testing.T) *restartCluster {
	var c *countingInstances
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) {
		c = newCountingInstances(o.Instances.(*fakeInstances))
		o.Instances = c
	})
	return &restartCluster{h: f.h, status: f.h, ins: []*countingInstances{c}, wait: func(t *testing.T, want string) {
		t.Helper()
		waitStates(t, f.h, "a", want)
	}}
}

// distributedRestartCluster starts workers distributed workers; the
// restart is asked of the last one, which runs nothing of "a" when there
// are more workers than instances of "a" (Kafka's multi-worker variant).
func distributedRestartCluster(t *testing.T, workers int) *restartCluster {
	e := newDEnv(t)
	rc := &restartCluster{}
	e.wrap = func(in *fakeInstances) herder.Instances {
		c := newCountingInstances(in)
		rc.ins = append(rc.ins, c)
		return c
	}
	var hs []*herder.Distributed
	for i := range workers {
		hs = append(hs, e.start(fmt.Sprintf("w%d", i+1), newFakeInstances(), workers > 1))
	}
	rc.status = hs[0]
	rc.h = hs[len(hs)-1]
	rc.wait = func(t *testing.T, want string) {
		t.Helper()
		dStates(t, hs[0], "a", want)
	}
	return rc
}

type restartCase struct {
	name                  string
	onlyFailed, withTasks bool
	// state is how "a" is broken before the restart: "" (running),
	// "connector" (its start fails), "tasks" (both fail), "task1".
	broken string
	// before and after are the states before and after the restart.
	before, after string
	// delta is the change of restartCounts the restart makes.
	delta restartCounts
	noop  bool
}

var restartCases = []restartCase{
	{name: "RunningConnectorAndTasksRestartOnlyConnector", before: "RUNNING:RUNNING,RUNNING", after: "RUNNING:RUNNING,RUNNING", delta: restartCounts{1, 1, 0, 0, 0, 0}},
	{name: "RunningConnectorAndTasksRestartBothConnectorAndTasks", withTasks: true, before: "RUNNING:RUNNING,RUNNING", after: "RUNNING:RUNNING,RUNNING", delta: restartCounts{1, 1, 1, 1, 1, 1}},
	{name: "RunningConnectorAndTasksRestartOnlyFailedConnectorNoop", onlyFailed: true, before: "RUNNING:RUNNING,RUNNING", after: "RUNNING:RUNNING,RUNNING", noop: true},
	{name: "RunningConnectorAndTasksRestartBothConnectorAndTasksNoop", onlyFailed: true, withTasks: true, before: "RUNNING:RUNNING,RUNNING", after: "RUNNING:RUNNING,RUNNING", noop: true},
	{name: "FailedConnectorRestartOnlyConnector", broken: "connector", before: "FAILED:", after: "FAILED:", delta: restartCounts{1, 0, 0, 0, 0, 0}},
	{name: "FailedConnectorRestartBothConnectorAndTasks", broken: "connector", withTasks: true, before: "FAILED:", after: "FAILED:", delta: restartCounts{1, 0, 0, 0, 0, 0}},
	{name: "FailedConnectorRestartOnlyFailedConnectorAndTasks", broken: "connector", onlyFailed: true, withTasks: true, before: "FAILED:", after: "FAILED:", delta: restartCounts{1, 0, 0, 0, 0, 0}},
	{name: "FailedTasksRestartOnlyConnector", broken: "tasks", before: "RUNNING:FAILED,FAILED", after: "RUNNING:FAILED,FAILED", delta: restartCounts{1, 1, 0, 0, 0, 0}},
	{name: "FailedTasksRestartOnlyTasks", broken: "tasks", onlyFailed: true, withTasks: true, before: "RUNNING:FAILED,FAILED", after: "RUNNING:FAILED,FAILED", delta: restartCounts{0, 0, 1, 1, 1, 1}},
	{name: "FailedTasksRestartWithoutIncludeTasksNoop", broken: "tasks", onlyFailed: true, before: "RUNNING:FAILED,FAILED", after: "RUNNING:FAILED,FAILED", noop: true},
	{name: "FailedTasksRestartBothConnectorAndTasks", broken: "tasks", withTasks: true, before: "RUNNING:FAILED,FAILED", after: "RUNNING:FAILED,FAILED", delta: restartCounts{1, 1, 1, 1, 1, 1}},
	{name: "OneFailedTasksRestartOnlyOneTasks", broken: "task1", onlyFailed: true, withTasks: true, before: "RUNNING:RUNNING,FAILED", after: "RUNNING:RUNNING,FAILED", delta: restartCounts{0, 0, 0, 0, 1, 1}},
}

func runRestartCase(t *testing.T, rc *restartCluster, tc restartCase) {
	ctx := ctxT(t)
	switch tc.broken {
	case "connector":
		rc.setFail(func(in *fakeInstances) { in.startErr = errors.New("connector start failed on purpose") })
	case "tasks":
		rc.setFail(func(in *fakeInstances) { in.failRuns["a-0"], in.failRuns["a-1"] = 1000, 1000 })
	case "task1":
		rc.setFail(func(in *fakeInstances) { in.failRuns["a-1"] = 1000 })
	}
	if _, _, err := rc.status.PutConnectorConfig(ctx, "a", srcConfig(), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	rc.wait(t, tc.before)
	time.Sleep(200 * time.Millisecond) // let a rebalance settle
	before := rc.counts()
	plan, err := rc.h.RestartConnector(ctx, "a", tc.withTasks, tc.onlyFailed)
	if err != nil {
		t.Fatal(err)
	}
	legacy := !tc.withTasks && !tc.onlyFailed
	if legacy != (plan == nil) {
		t.Fatalf("plan %+v for onlyFailed=%v includeTasks=%v", plan, tc.onlyFailed, tc.withTasks)
	}
	if tc.noop {
		if plan.Connector.State == herder.StateRestarting {
			t.Fatalf("no-op plan restarts the connector: %+v", plan)
		}
		for _, ts := range plan.Tasks {
			if ts.State == herder.StateRestarting {
				t.Fatalf("no-op plan restarts a task: %+v", plan)
			}
		}
	}
	if plan != nil {
		// As Kafka's buildRestartPlan: an instance to restart shows
		// RESTARTING with the trace it failed with.
		if plan.Connector.State == herder.StateRestarting && tc.broken == "connector" && !strings.Contains(plan.Connector.Trace, "on purpose") {
			t.Fatalf("plan's connector lost its trace: %+v", plan.Connector)
		}
		for _, ts := range plan.Tasks {
			failed := tc.broken == "tasks" || (tc.broken == "task1" && ts.ID == 1)
			if ts.State == herder.StateRestarting && failed && ts.Trace == "" {
				t.Fatalf("plan's task %d lost its trace: %+v", ts.ID, plan)
			}
			if ts.State == herder.StateRestarting && !failed && ts.Trace != "" {
				t.Fatalf("plan's running task %d has a trace: %+v", ts.ID, plan)
			}
		}
	}
	var want restartCounts
	for i := range want {
		want[i] = before[i] + tc.delta[i]
	}
	dWait(t, fmt.Sprintf("counts %v", want), func() bool { return rc.counts() == want })
	rc.wait(t, tc.after)
	time.Sleep(300 * time.Millisecond)
	if got := rc.counts(); got != want {
		t.Fatalf("starts/stops of a, a-0, a-1: %v, want %v (before %v)", got, want, before)
	}
}

func TestConnectorRestartAPI(t *testing.T) {
	setups := []struct {
		name string
		new  func(*testing.T) *restartCluster
	}{
		{"standalone", standaloneRestartCluster},
		{"distributed", func(t *testing.T) *restartCluster { return distributedRestartCluster(t, 1) }},
	}
	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			for _, tc := range restartCases {
				t.Run(tc.name, func(t *testing.T) { runRestartCase(t, s.new(t), tc) })
			}
			t.Run("RestartUnknownConnector", func(t *testing.T) {
				rc := s.new(t)
				for _, of := range []bool{false, true} {
					for _, it := range []bool{false, true} {
						_, err := rc.h.RestartConnector(ctxT(t), "Unknown", it, of)
						herderErr(t, err, herder.ErrNotFound, "Unknown")
					}
				}
			})
		})
	}
}

// The multi-worker variants: four workers, the restart asked of one that
// runs nothing of "a"; the connector restarts exactly once, its tasks at
// least once (a rebalance may restart them too, as Kafka's test allows).
func TestConnectorRestartAPIMultiWorker(t *testing.T) {
	for _, withTasks := range []bool{false, true} {
		t.Run(fmt.Sprintf("includeTasks=%v", withTasks), func(t *testing.T) {
			rc := distributedRestartCluster(t, 4)
			ctx := ctxT(t)
			if _, _, err := rc.status.PutConnectorConfig(ctx, "a", srcConfig(), false, herder.TargetStarted); err != nil {
				t.Fatal(err)
			}
			rc.wait(t, "RUNNING:RUNNING,RUNNING")
			last := rc.ins[len(rc.ins)-1]
			dWait(t, "a balanced off the last worker", func() bool {
				return last.count(last.starts, "a") == 0 && last.count(last.taskStarts, "a-0") == 0 && last.count(last.taskStarts, "a-1") == 0
			})
			time.Sleep(500 * time.Millisecond)
			before := rc.counts()
			if _, err := rc.h.RestartConnector(ctx, "a", withTasks, false); err != nil {
				t.Fatal(err)
			}
			dWait(t, "the connector restarted", func() bool {
				c := rc.counts()
				return c[0] == before[0]+1 && c[1] == before[1]+1 && (!withTasks || (c[2] > before[2] && c[4] > before[4]))
			})
			rc.wait(t, "RUNNING:RUNNING,RUNNING")
			time.Sleep(300 * time.Millisecond)
			after := rc.counts()
			if after[0] != before[0]+1 || after[1] != before[1]+1 {
				t.Fatalf("connector starts/stops %v -> %v, want one restart", before, after)
			}
			if !withTasks && (after[2] != before[2] || after[4] != before[4]) {
				t.Fatalf("tasks restarted by a connector-only restart: %v -> %v", before, after)
			}
		})
	}
}

//go:build integration

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/integration/internal/childproc"
	"github.com/sluice-io/sluice/integration/itest"
	"github.com/sluice-io/sluice/integration/kafkatest"
)

// Distributed-mode timings. Both report a duration, not a throughput:
// Seconds is the figure measured and Records the number of tasks it covers
// (Bytes stays 0), so the records/s column of the table means nothing for
// them.
//
//	sluice/failover-kill  three workers run a counter source with six tasks;
//	                      the worker owning task 0 is SIGKILLed. Seconds is
//	                      the time from the SIGKILL until every task is
//	                      RUNNING on a surviving worker (as GET status on a
//	                      survivor shows), with scheduled.rebalance.max.delay.ms=0
//	                      and session.timeout.ms=6000 (the broker's minimum):
//	                      the session timeout dominates. Records: tasks moved.
//	sluice/join-pause     the same three workers and connector; a fourth
//	                      worker joins. Seconds is the longest time between
//	                      two consecutive records of a task that did not move
//	                      (records every 10 ms), from just before the join
//	                      until two seconds after the new worker runs its
//	                      tasks. Records: the tasks that did not move.
func init() {
	// Prepare builds the counter plugin, outside what is measured.
	build := func(_ context.Context, env *BenchEnv) error {
		_, err := counterPluginDir(env)
		return err
	}
	Register(Benchmark{Name: "sluice/failover-kill", Prepare: build, Run: benchFailoverKill})
	Register(Benchmark{Name: "sluice/join-pause", Prepare: build, Run: benchJoinPause})
}

// distSessionTimeout is the group session timeout of the benchmark
// workers: Kafka's group.min.session.timeout.ms, the lowest a broker with
// default settings accepts.
const distSessionTimeout = 6 * time.Second

// distCluster is a group of `sluice distributed` workers with their own
// internal topics.
type distCluster struct {
	env     *BenchEnv
	dir     string
	props   map[string]string
	workers []*distWorker
}

type distWorker struct {
	id   string // host:port, the worker id
	url  string
	proc *childproc.Process
}

var counterBuild struct {
	once sync.Once
	dir  string
	err  error
}

// counterPluginDir builds examples/go/counter-source once per run.
func counterPluginDir(env *BenchEnv) (string, error) {
	counterBuild.once.Do(func() {
		root, err := itest.RepoRoot()
		if err != nil {
			counterBuild.err = err
			return
		}
		dir := filepath.Join(env.Dir, "example-plugins")
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "counter-source"), "./examples/go/counter-source")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			counterBuild.err = fmt.Errorf("build counter-source: %w\n%s", err, out)
			return
		}
		counterBuild.dir = dir
	})
	return counterBuild.dir, counterBuild.err
}

func newDistCluster(env *BenchEnv, name string) (*distCluster, error) {
	root, err := itest.RepoRoot()
	if err != nil {
		return nil, err
	}
	plugins, err := counterPluginDir(env)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(env.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster dir: %w", err)
	}
	return &distCluster{env: env, dir: dir, props: map[string]string{
		"bootstrap.servers":                 env.Cluster.BootstrapString(),
		"group.id":                          name,
		"config.storage.topic":              name + "-configs",
		"offset.storage.topic":              name + "-offsets",
		"status.storage.topic":              name + "-status",
		"config.storage.replication.factor": "1",
		"offset.storage.replication.factor": "1",
		"status.storage.replication.factor": "1",
		"offset.storage.partitions":         "5",
		"status.storage.partitions":         "3",
		"key.converter":                     "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                   "org.apache.kafka.connect.storage.StringConverter",
		"plugin.path":                       filepath.Join(root, "bin", "plugins") + "," + plugins,
		"offset.flush.interval.ms":          "1000",
		"task.shutdown.graceful.timeout.ms": "5000",
		"session.timeout.ms":                strconv.FormatInt(distSessionTimeout.Milliseconds(), 10),
		"heartbeat.interval.ms":             "1000",
		"scheduled.rebalance.max.delay.ms":  "0",
		"log.level":                         "INFO",
	}}, nil
}

// add starts one more worker and waits until it is healthy (joined).
func (c *distCluster) add(ctx context.Context) (*distWorker, error) {
	bin, err := itest.SluiceBin()
	if err != nil {
		return nil, err
	}
	ports, err := kafkatest.FreePorts(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	props := maps.Clone(c.props)
	props["listeners"] = fmt.Sprintf("http://127.0.0.1:%d", port)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	path := filepath.Join(c.dir, fmt.Sprintf("worker-%d.properties", port))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return nil, fmt.Errorf("write worker properties: %w", err)
	}
	p, err := childproc.Start(childproc.Spec{Path: bin, Args: []string{"distributed", path}, LogPath: filepath.Join(c.dir, fmt.Sprintf("worker-%d.log", port))})
	if err != nil {
		return nil, err
	}
	w := &distWorker{id: fmt.Sprintf("127.0.0.1:%d", port), url: fmt.Sprintf("http://127.0.0.1:%d", port), proc: p}
	c.workers = append(c.workers, w)
	ctx, cancel := context.WithTimeout(ctx, workerStartTimeout)
	defer cancel()
	sw := &sluiceWorker{url: w.url}
	for {
		code, _, err := sw.call(ctx, http.MethodGet, "/health", nil)
		if err == nil && code == http.StatusOK {
			return w, nil
		}
		if p.Exited() {
			return nil, fmt.Errorf("worker %s exited during start-up: %v\n%s", w.id, p.ExitErr(), p.LogTail(20))
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return nil, fmt.Errorf("worker %s not ready: %w\n%s", w.id, err, p.LogTail(20))
		}
	}
}

func (c *distCluster) close() {
	for _, w := range c.workers {
		_ = w.proc.Kill()
	}
}

type distStatus struct {
	Connector struct{ State, WorkerID string } `json:"connector"`
	Tasks     []struct {
		ID       int    `json:"id"`
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
	} `json:"tasks"`
}

func (w *distWorker) status(ctx context.Context, name string) (distStatus, error) {
	var s distStatus
	code, body, err := (&sluiceWorker{url: w.url}).call(ctx, http.MethodGet, "/connectors/"+name+"/status", nil)
	if err != nil {
		return s, err
	}
	if code != http.StatusOK {
		return s, fmt.Errorf("status of %s: %d %s", name, code, body)
	}
	return s, json.Unmarshal(body, &s)
}

// waitStatus polls every 20 ms until ok holds.
func (w *distWorker) waitStatus(ctx context.Context, name string, timeout time.Duration, ok func(distStatus) bool) (distStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		s, err := w.status(ctx, name)
		if err == nil && ok(s) {
			return s, nil
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return s, fmt.Errorf("connector %s: %w (last status %+v)", name, err, s)
		}
	}
}

func allRunning(tasks int) func(distStatus) bool {
	return func(s distStatus) bool {
		if s.Connector.State != "RUNNING" || len(s.Tasks) != tasks {
			return false
		}
		for _, t := range s.Tasks {
			if t.State != "RUNNING" {
				return false
			}
		}
		return true
	}
}

const distTasks = 6

// startCounter makes a three-worker cluster running a counter source with
// distTasks tasks, each writing a record every 10 ms.
func startCounter(ctx context.Context, env *BenchEnv, name string) (*distCluster, string, distStatus, error) {
	var st distStatus
	c, err := newDistCluster(env, name)
	if err != nil {
		return nil, "", st, err
	}
	for range 3 {
		if _, err := c.add(ctx); err != nil {
			c.close()
			return nil, "", st, err
		}
	}
	topic, err := env.NewTopic(ctx, name+"-counts", 3)
	if err != nil {
		c.close()
		return nil, "", st, err
	}
	cfg := map[string]string{
		"connector.class": "io.sluice.examples.CounterSource", "tasks.max": strconv.Itoa(distTasks),
		"topic": topic, "interval.ms": "10",
	}
	if err := (&sluiceWorker{url: c.workers[1].url}).createConnector(ctx, "counter", cfg); err != nil {
		c.close()
		return nil, "", st, err
	}
	st, err = c.workers[0].waitStatus(ctx, "counter", time.Minute, allRunning(distTasks))
	if err != nil {
		c.close()
		return nil, "", st, err
	}
	return c, topic, st, nil
}

func benchFailoverKill(ctx context.Context, env *BenchEnv) (Result, error) {
	c, _, st, err := startCounter(ctx, env, "failover-kill")
	if err != nil {
		return Result{}, err
	}
	defer c.close()
	if err := sleepCtx(ctx, 3*time.Second); err != nil {
		return Result{}, err
	}
	victim := st.Tasks[0].WorkerID
	var v *distWorker
	var survivor *distWorker
	for _, w := range c.workers {
		if w.id == victim {
			v = w
		} else {
			survivor = w
		}
	}
	if v == nil {
		return Result{}, fmt.Errorf("task 0 runs on %s, none of the workers", victim)
	}
	moved := 0
	for _, t := range st.Tasks {
		if t.WorkerID == victim {
			moved++
		}
	}
	start := time.Now()
	if err := v.proc.Kill(); err != nil {
		return Result{}, err
	}
	if _, err := survivor.waitStatus(ctx, "counter", 2*time.Minute, func(s distStatus) bool {
		if !allRunning(distTasks)(s) || s.Connector.WorkerID == victim {
			return false
		}
		for _, t := range s.Tasks {
			if t.WorkerID == victim {
				return false
			}
		}
		return true
	}); err != nil {
		return Result{}, err
	}
	return Result{Records: moved, Seconds: time.Since(start).Seconds()}, nil
}

func benchJoinPause(ctx context.Context, env *BenchEnv) (Result, error) {
	c, topic, before, err := startCounter(ctx, env, "join-pause")
	if err != nil {
		return Result{}, err
	}
	defer c.close()
	if err := sleepCtx(ctx, 3*time.Second); err != nil {
		return Result{}, err
	}
	from := time.Now().Add(-time.Second)
	w4, err := c.add(ctx)
	if err != nil {
		return Result{}, err
	}
	after, err := c.workers[0].waitStatus(ctx, "counter", time.Minute, func(s distStatus) bool {
		if !allRunning(distTasks)(s) {
			return false
		}
		for _, t := range s.Tasks {
			if t.WorkerID == w4.id {
				return true
			}
		}
		return false
	})
	if err != nil {
		return Result{}, err
	}
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return Result{}, err
	}
	to := time.Now()
	kept := map[int]bool{}
	for i := range distTasks {
		if before.Tasks[i].WorkerID == after.Tasks[i].WorkerID {
			kept[i] = true
		}
	}
	if len(kept) == 0 {
		return Result{}, errors.New("every task moved")
	}
	gap, err := counterGap(ctx, env, topic, kept, from, to)
	if err != nil {
		return Result{}, err
	}
	return Result{Records: len(kept), Seconds: gap.Seconds()}, nil
}

var benchCounterRe = regexp.MustCompile(`^Struct\{task=(\d+),seq=(\d+)\}$`)

// counterGap reads the counter topic to its end and returns the longest
// time between consecutive seqs of the tasks in kept among the records
// stamped in [from, to].
func counterGap(ctx context.Context, env *BenchEnv, topic string, kept map[int]bool, from, to time.Time) (time.Duration, error) {
	cl, err := env.NewClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	type rec struct {
		seq int64
		ts  time.Time
	}
	byTask := map[int][]rec{}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for len(left) > 0 {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			return 0, fmt.Errorf("read %s: %w", topic, rctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := left[r.Partition]; ok && r.Offset >= end-1 {
				delete(left, r.Partition)
			}
			m := benchCounterRe.FindStringSubmatch(string(r.Value))
			if m == nil || r.Timestamp.Before(from) || r.Timestamp.After(to) {
				return
			}
			task, _ := strconv.Atoi(m[1])
			seq, _ := strconv.ParseInt(m[2], 10, 64)
			if kept[task] {
				byTask[task] = append(byTask[task], rec{seq, r.Timestamp})
			}
		})
	}
	var gap time.Duration
	for task, rs := range byTask {
		if len(rs) < 2 {
			return 0, fmt.Errorf("task %d wrote %d records during the join", task, len(rs))
		}
		slices.SortFunc(rs, func(a, b rec) int { return int(a.seq - b.seq) })
		for i := 1; i < len(rs); i++ {
			gap = max(gap, rs[i].ts.Sub(rs[i-1].ts))
		}
	}
	return gap, nil
}

//go:build integration

package distributed

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKillWorkerSinkLosesNothing is the failover scenario: three workers, a
// file sink with tasks.max=3 on a 3-partition topic and a steady producer;
// one worker is SIGKILLed. Its tasks run on the other workers once
// scheduled.rebalance.max.delay.ms has passed, and the output file holds
// every record produced (duplicates are allowed: the killed task's last
// records may be delivered again).
func TestKillWorkerSinkLosesNothing(t *testing.T) {
	e := newEnv(t, map[string]string{"scheduled.rebalance.max.delay.ms": "2000"})
	ws := []*worker{e.addWorker(), e.addWorker(), e.addWorker()}
	topic := e.topic("steady", 3)
	name := e.name("sink")
	out := e.path("out.txt")
	ws[1].create(sinkConfig(name, out, topic, 3))
	st := ws[0].waitStatus(name, "RUNNING", stateTimeout, allIn("RUNNING", 3))

	// The victim runs task 0.
	var victim *worker
	var survivors []*worker
	for _, w := range ws {
		if w.id() == st.Tasks[0].WorkerID {
			victim = w
		} else {
			survivors = append(survivors, w)
		}
	}
	if victim == nil {
		t.Fatalf("task 0 runs on %s, none of the workers", st.Tasks[0].WorkerID)
	}
	victimTasks := 0
	for _, tk := range st.Tasks {
		if tk.WorkerID == victim.id() {
			victimTasks++
		}
	}

	p := startProducer(t, e, topic, 3)
	time.Sleep(2 * time.Second)
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	s := survivors[0].waitStatus(name, "running elsewhere", stateTimeout, func(s status) bool {
		if !allIn("RUNNING", 3)(s) {
			return false
		}
		for _, tk := range s.Tasks {
			if tk.WorkerID == victim.id() {
				return false
			}
		}
		return s.Connector.WorkerID != victim.id()
	})
	moved := time.Since(killed)
	t.Logf("SIGKILL of %s (%d of 3 tasks, connector %v): all tasks RUNNING elsewhere after %s: %s",
		victim.id(), victimTasks, st.Connector.WorkerID == victim.id(), moved.Round(time.Millisecond), s)
	if moved < 2*time.Second {
		t.Fatalf("tasks moved after %s, before scheduled.rebalance.max.delay.ms (2 s)", moved)
	}
	// The survivors agree.
	survivors[1].waitStatus(name, "running elsewhere", 10*time.Second, func(o status) bool { return o.String() == s.String() })

	time.Sleep(2 * time.Second)
	lines := p.stop()
	got := waitAll(t, out, lines, dataTimeout)
	t.Logf("%d records produced, %d lines in the sink file (%d redelivered)", len(lines), len(got), len(got)-len(lines))
}

// producer writes numbered lines round-robin over a topic's partitions
// until stopped.
type producer struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	lines  []string
	err    error
}

func startProducer(t *testing.T, e *env, topic string, partitions int32) *producer {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	p := &producer{cancel: cancel}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var recs []*kgo.Record
			var batch []string
			for range 10 {
				l := fmt.Sprintf("steady-%07d", n)
				recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(n) % partitions, Value: []byte(l)})
				batch = append(batch, l)
				n++
			}
			pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			err := e.cl.ProduceSync(pctx, recs...).FirstErr()
			pcancel()
			p.mu.Lock()
			if err != nil {
				p.err = err
			} else {
				p.lines = append(p.lines, batch...)
			}
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

// stop ends the producer and returns the lines Kafka acknowledged.
func (p *producer) stop() []string {
	p.cancel()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lines
}

// TestPauseSurvivesClusterRestart (Kafka's test_pause_state_persistent):
// a connector paused through one worker shows PAUSED on every worker; after
// all three workers are stopped and started again it comes back PAUSED, its
// tasks too; resumed, it runs.
func TestPauseSurvivesClusterRestart(t *testing.T) {
	e := newEnv(t, nil)
	ws := []*worker{e.addWorker(), e.addWorker(), e.addWorker()}
	topic := e.topic("paused", 3)
	name := e.name("sink")
	ws[0].create(sinkConfig(name, e.path("out.txt"), topic, 3))
	ws[1].waitStatus(name, "RUNNING", stateTimeout, allIn("RUNNING", 3))
	ws[2].do(http.MethodPut, "/connectors/"+name+"/pause", nil, http.StatusAccepted)
	for _, w := range ws {
		w.waitStatus(name, "PAUSED", stateTimeout, allIn("PAUSED", 3))
	}

	for _, w := range ws {
		w.stop()
	}
	// The last worker to stop reported everything UNASSIGNED, so the
	// PAUSED statuses below are written afresh by the restarted cluster.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	last := map[string]string{}
	for _, r := range readAll(ctx, t, e, e.props["status.storage.topic"]) {
		last[string(r.Key)] = string(r.Value)
	}
	for _, k := range []string{"status-connector-" + name, "status-task-" + name + "-0", "status-task-" + name + "-1", "status-task-" + name + "-2"} {
		if !strings.Contains(last[k], `"state":"UNASSIGNED"`) {
			t.Fatalf("after a clean stop of every worker %s = %s, want UNASSIGNED", k, last[k])
		}
	}
	for _, w := range ws {
		w.start()
	}
	for _, w := range ws {
		s := w.waitStatus(name, "PAUSED after the restart", 2*stateTimeout, allIn("PAUSED", 3))
		t.Logf("%s after the restart: %s", w.id(), s)
	}
	// Nothing runs while paused: lines produced now reach the file only
	// after resume.
	ws[1].do(http.MethodPut, "/connectors/"+name+"/resume", nil, http.StatusAccepted)
	for _, w := range ws {
		w.waitStatus(name, "RUNNING after resume", stateTimeout, allIn("RUNNING", 3))
	}
}

//go:build integration

package distributed

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/integration/itest"
)

// TestRollingBounces is Kafka's test_bounce: a counter source (three tasks)
// and a file sink reading its topic run on three workers, which are
// restarted one after the other, three rounds with SIGTERM and then three
// rounds with SIGKILL, each worker waited for until every connector and
// task runs again. After the clean rounds every task's seqs in the topic
// run from 0 with no gap and no duplicate (a stopped task commits its
// offsets); after the hard rounds still no gap, and duplicates only among
// the seqs written after the clean rounds (a killed task replays what it
// sent after its last offset commit). The sink file holds every record of
// the topic.
func TestRollingBounces(t *testing.T) {
	e := newEnv(t, map[string]string{"scheduled.rebalance.max.delay.ms": "2000"})
	e.withCounterSource()
	ws := []*worker{e.addWorker(), e.addWorker(), e.addWorker()}
	topic := e.topic("bounce", 3)
	src, sink := e.name("counter"), e.name("sink")
	out := e.path("sink.txt")
	ws[0].create(counterConfig(src, topic, 3, 10*time.Millisecond))
	ws[1].create(sinkConfig(sink, out, topic, 3))
	ws[2].waitStatus(src, "RUNNING", stateTimeout, allIn("RUNNING", 3))
	ws[2].waitStatus(sink, "RUNNING", stateTimeout, allIn("RUNNING", 3))
	sw := e.watchStatuses()
	keys := []string{"status-connector-" + src, "status-connector-" + sink}
	for i := range 3 {
		keys = append(keys, fmt.Sprintf("status-task-%s-%d", src, i), fmt.Sprintf("status-task-%s-%d", sink, i))
	}
	time.Sleep(2 * time.Second)

	bounce := func(clean bool) {
		for round := range 3 {
			for _, w := range ws {
				owned, gen := sw.ownedBy(keys, w.id())
				start := time.Now()
				if clean {
					w.stop()
				} else if err := w.Kill(); err != nil {
					t.Fatal(err)
				}
				w.start()
				sw.waitRecovered(t, keys, owned, gen, 2*stateTimeout)
				t.Logf("clean=%v round %d: %s back with its %d instances running elsewhere or again after %s",
					clean, round, w.id(), len(owned), time.Since(start).Round(time.Millisecond))
				time.Sleep(time.Second)
			}
		}
	}
	pause := func() []counterRec {
		ws[0].do(http.MethodPut, "/connectors/"+src+"/pause", nil, http.StatusAccepted)
		ws[1].waitStatus(src, "PAUSED", stateTimeout, allIn("PAUSED", 3))
		time.Sleep(2 * time.Second)
		return readCounters(t, e, topic)
	}

	bounce(true)
	recs := pause()
	cleanMax := map[int]int64{}
	for task, c := range checkSeqs(recs) {
		if c.nMiss > 0 || len(c.dups) > 0 {
			t.Errorf("after the clean bounces, task %d: %s", task, c)
		}
		cleanMax[task] = c.max
	}
	if len(cleanMax) != 3 {
		t.Fatalf("after the clean bounces, records of tasks %v, want 0, 1, 2", slices.Sorted(maps.Keys(cleanMax)))
	}
	t.Logf("after the clean bounces: %d records, max seq by task %v", len(recs), cleanMax)
	ws[2].do(http.MethodPut, "/connectors/"+src+"/resume", nil, http.StatusAccepted)
	ws[0].waitStatus(src, "RUNNING", stateTimeout, allIn("RUNNING", 3))

	bounce(false)
	recs = pause()
	dups := 0
	for task, c := range checkSeqs(recs) {
		if c.nMiss > 0 {
			t.Errorf("after the hard bounces, task %d: %s", task, c)
		}
		if c.max <= cleanMax[task] {
			t.Errorf("task %d wrote nothing during the hard bounces (max seq %d)", task, c.max)
		}
		for s := range c.dups {
			if s <= cleanMax[task] {
				t.Errorf("task %d: seq %d, written before the hard bounces, written again", task, s)
			}
		}
		dups += len(c.dups)
	}
	var want []string
	for _, r := range recs {
		want = append(want, r.raw)
	}
	got := waitAll(t, out, want, dataTimeout)
	t.Logf("after the hard bounces: %d records (%d seqs written twice), the sink file has all of them in %d lines", len(recs), dups, len(got))
}

// statusWatch follows the status topic and keeps the last record of each
// key.
type statusWatch struct {
	mu   sync.Mutex
	last map[string]statusRec
}

type statusRec struct {
	State      string `json:"state"`
	WorkerID   string `json:"worker_id"`
	Generation int    `json:"generation"`
}

// watchStatuses starts following the status topic from its start until
// the test ends.
func (e *env) watchStatuses() *statusWatch {
	e.t.Helper()
	cl := itest.NewClient(e.t, e.kafka.Bootstrap(), kgo.ConsumeTopics(e.props["status.storage.topic"]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	sw := &statusWatch{last: map[string]statusRec{}}
	ctx, cancel := context.WithCancel(e.t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				var st statusRec
				if r.Value != nil && json.Unmarshal(r.Value, &st) != nil {
					return
				}
				sw.mu.Lock()
				sw.last[string(r.Key)] = st
				sw.mu.Unlock()
			})
		}
	}()
	e.t.Cleanup(func() { cancel(); <-done })
	return sw
}

// ownedBy returns the keys whose last status names the worker, and the
// highest generation seen so far.
func (sw *statusWatch) ownedBy(keys []string, workerID string) (map[string]bool, int) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	owned := map[string]bool{}
	gen := 0
	for _, st := range sw.last {
		gen = max(gen, st.Generation)
	}
	for _, k := range keys {
		if sw.last[k].WorkerID == workerID {
			owned[k] = true
		}
	}
	return owned, gen
}

// waitRecovered waits until every key's last status is RUNNING and the
// owned ones were written in a generation after gen (by whoever runs them
// now: a status left by the bounced worker does not count).
func (sw *statusWatch) waitRecovered(t *testing.T, keys []string, owned map[string]bool, gen int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var bad []string
		sw.mu.Lock()
		for _, k := range keys {
			st := sw.last[k]
			if st.State != "RUNNING" || (owned[k] && st.Generation <= gen) {
				bad = append(bad, fmt.Sprintf("%s=%s@%s/%d", k, st.State, st.WorkerID, st.Generation))
			}
		}
		sw.mu.Unlock()
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not recovered within %s (owned %v, generation > %d wanted): %s", timeout, slices.Sorted(maps.Keys(owned)), gen, strings.Join(bad, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

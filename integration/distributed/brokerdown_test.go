//go:build integration

package distributed

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/integration/kafkatest"
)

// Group timings of the broker-down tests: a worker gives its membership up
// when the coordinator has not answered for the session timeout less one
// heartbeat interval (5 s here).
const (
	bdSession   = 6 * time.Second
	bdHeartbeat = time.Second
	bdShutdown  = 3 * time.Second // task.shutdown.graceful.timeout.ms
	bdFlush     = 2 * time.Second // offset.flush.timeout.ms
	bdREST      = 2 * time.Second // sluice.rest.request.timeout.ms
)

// newOwnBrokerEnv is newEnv on a broker of the test's own (kafkatest.ForTest)
// rather than the package's shared one: the test stops it, which must not
// disturb the other tests.
func newOwnBrokerEnv(t *testing.T, extra map[string]string) *env {
	t.Helper()
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	props := map[string]string{
		"offset.flush.timeout.ms":           ms(bdFlush),
		"task.shutdown.graceful.timeout.ms": ms(bdShutdown),
		"session.timeout.ms":                ms(bdSession),
		"heartbeat.interval.ms":             ms(bdHeartbeat),
		"rebalance.timeout.ms":              "10000",
		"sluice.rest.request.timeout.ms":    ms(bdREST),
	}
	maps.Copy(props, extra)
	return newEnvOn(t, kafkatest.ForTest(t, kafkatest.Options{}), props)
}

// logMatches counts the lines of the workers' logs that match re.
func logMatches(t *testing.T, re *regexp.Regexp, ws ...*worker) int {
	t.Helper()
	n := 0
	for _, w := range ws {
		b, err := os.ReadFile(w.LogPath())
		if err != nil {
			t.Fatal(err)
		}
		n += len(re.FindAll(b, -1))
	}
	return n
}

// timedCall is one REST call and how long it took.
func timedCall(t *testing.T, w *worker, method, path string, body any) (int, string, time.Duration) {
	t.Helper()
	start := time.Now()
	code, b, err := w.call(t.Context(), method, path, body)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s %s%s after %s: %v", method, w.url, path, took.Round(time.Millisecond), err)
	}
	return code, string(b), took
}

// errorMessage is the message of a {"error_code","message"} body.
func errorMessage(t *testing.T, body string) (int, string) {
	t.Helper()
	var m struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return m.Code, m.Message
}

// requireRESTUp checks what a worker must answer whatever the state of
// Kafka: GET / (from memory) and a connector's status (the statuses the
// worker read last), each promptly.
func requireRESTUp(t *testing.T, w *worker, name string, tasks int) status {
	t.Helper()
	code, body, took := timedCall(t, w, http.MethodGet, "/", nil)
	if code != http.StatusOK || !strings.Contains(body, `"kafka_cluster_id"`) || took > time.Second {
		t.Fatalf("GET %s/ = %d %s after %s, want 200 with the cluster id within 1 s", w.url, code, body, took)
	}
	code, body, took = timedCall(t, w, http.MethodGet, "/connectors/"+name+"/status", nil)
	if code != http.StatusOK || took > time.Second {
		t.Fatalf("GET %s/connectors/%s/status = %d %s after %s, want 200 within 1 s", w.url, name, code, body, took)
	}
	var s status
	mustJSON(t, []byte(body), &s)
	if s.Name != name || len(s.Tasks) != tasks {
		t.Fatalf("status of %s on %s: %s, want %d tasks", name, w.url, body, tasks)
	}
	return s
}

// TestBrokerCoordinator is Kafka's testBrokerCoordinator: a counter source
// with three tasks runs on two workers; the only broker (the group's
// coordinator) stops. Each worker gives its membership up once the
// coordinator has not answered for the session timeout less a heartbeat
// interval and stops its connector and tasks (their plugin processes
// exit) within the task shutdown timeout, while both keep answering REST:
// GET / and the connector's status, which still says RUNNING, as Kafka
// Connect's does (its status store shows what it last read from the status
// topic; the UNASSIGNED it writes on revocation cannot reach the topic).
// The broker starts again on the same port: the workers rejoin under their
// old member ids (the restarted coordinator still knows them), so the
// connector and every task run again in a newer generation within a
// session timeout of the broker's return, however long
// scheduled.rebalance.max.delay.ms (a minute here; a worker that came back
// as a new member would have its work held back for it), each task started
// exactly twice, and records flow again with every task's seqs
// contiguous from 0 (a restarted task resumes from its committed offset;
// duplicates are allowed, gaps are not), and no record stamped while the
// tasks were stopped.
func TestBrokerCoordinator(t *testing.T) {
	e := newOwnBrokerEnv(t, map[string]string{"scheduled.rebalance.max.delay.ms": "60000"})
	e.withCounterSource()
	ws := []*worker{e.addWorker(), e.addWorker()}
	topic := e.topic("counts", 1)
	src := e.name("counter")
	const tasks = 3
	ws[0].create(counterConfig(src, topic, tasks, 20*time.Millisecond))
	ws[1].waitStatus(src, "RUNNING", stateTimeout, allIn("RUNNING", tasks))
	sw := e.watchStatuses()
	keys := []string{"status-connector-" + src}
	for i := range tasks {
		keys = append(keys, fmt.Sprintf("status-task-%s-%d", src, i))
	}
	all := map[string]bool{}
	for _, k := range keys {
		all[k] = true
	}

	// Records flow; remember how far each task got.
	time.Sleep(2 * time.Second)
	before := readCounters(t, e, topic)
	maxBefore := map[int]int64{}
	for task, c := range checkSeqs(before) {
		maxBefore[task] = c.max
	}
	if len(maxBefore) != tasks {
		t.Fatalf("before the outage, records of tasks %v, want 0..%d", slices.Sorted(maps.Keys(maxBefore)), tasks-1)
	}
	_, gen := sw.ownedBy(keys, "")

	ctx := t.Context()
	if err := e.kafka.StopNode(ctx, 0); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	lost := regexp.MustCompile(`group membership lost; stopping all work`)
	taskExited := regexp.MustCompile(`sluice\.task\.` + regexp.QuoteMeta(src) + `-\d+: plugin process exited`)
	connExited := regexp.MustCompile(`sluice\.connector\.` + regexp.QuoteMeta(src) + `: plugin process exited`)
	// The member gives up at the session timeout less a heartbeat after
	// its last answered heartbeat; the tasks then drain for at most the
	// shutdown timeout and store their offsets for at most the flush
	// timeout before their plugins are killed.
	stopBy := bdSession + bdShutdown + bdFlush + 10*time.Second
	var stopped time.Duration
	var stoppedAt time.Time
	for {
		for _, w := range ws {
			if s := requireRESTUp(t, w, src, tasks); !allIn("RUNNING", tasks)(s) {
				t.Fatalf("status on %s during the outage: %s, want what the status topic last held (all RUNNING)", w.url, s)
			}
		}
		nl, nt, nc := logMatches(t, lost, ws...), logMatches(t, taskExited, ws...), logMatches(t, connExited, ws...)
		if nl == len(ws) && nt == tasks && nc == 1 {
			stopped = time.Since(down)
			stoppedAt = time.Now()
			break
		}
		if time.Since(down) > stopBy {
			t.Fatalf("%s after the broker stopped: %d of %d workers gave their membership up, %d of %d task plugins and %d of 1 connector plugin exited",
				stopBy, nl, len(ws), nt, tasks, nc)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("broker stopped; both workers left the group and stopped the connector and its %d tasks after %s", tasks, stopped.Round(time.Millisecond))
	// Nothing restarts while the broker is away, and REST still answers.
	time.Sleep(2 * time.Second)
	for _, w := range ws {
		requireRESTUp(t, w, src, tasks)
	}
	if n := logMatches(t, counterStartsRe, ws...); n != tasks {
		t.Fatalf("%d counter task starts while the broker is down, want the %d first ones only", n, tasks)
	}

	if err := e.kafka.StartNode(ctx, 0); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	sw.waitRecovered(t, keys, all, gen, stateTimeout)
	back := time.Since(up)
	if back > bdSession {
		t.Fatalf("connector and tasks RUNNING again %s after the broker's return, want within the %s session timeout", back.Round(time.Millisecond), bdSession)
	}
	s := ws[0].waitStatus(src, "RUNNING", stateTimeout, allIn("RUNNING", tasks))
	t.Logf("broker back; connector and tasks RUNNING in a newer generation than %d after %s: %s", gen, back.Round(time.Millisecond), s)

	// Data moves again: wait for a second's worth of records of every
	// task, then pause and read the topic whole.
	ends, err := endOffsets(ctx, e, topic)
	if err != nil {
		t.Fatal(err)
	}
	atRecovery := ends[0]
	deadline := time.Now().Add(dataTimeout)
	for {
		ends, err := endOffsets(ctx, e, topic)
		if err == nil && ends[0] >= atRecovery+tasks*50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the topic's end offsets %v (%v) did not grow past %d+%d within %s of the broker's return", ends, err, atRecovery, tasks*50, dataTimeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ws[1].do(http.MethodPut, "/connectors/"+src+"/pause", nil, http.StatusAccepted)
	ws[0].waitStatus(src, "PAUSED", stateTimeout, allIn("PAUSED", tasks))
	time.Sleep(2 * time.Second)
	after := readCounters(t, e, topic)
	dups := 0
	for task, c := range checkSeqs(after) {
		if c.nMiss > 0 {
			t.Errorf("task %d: %s", task, c)
		}
		if c.max <= maxBefore[task]+20 {
			t.Errorf("task %d: max seq %d after the broker's return, %d before it: no records moved", task, c.max, maxBefore[task])
		}
		dups += len(c.dups)
	}
	var stale []string
	for _, r := range after {
		if r.ts.After(stoppedAt) && r.ts.Before(up) {
			stale = append(stale, fmt.Sprintf("%s@%s", r.raw, r.ts.Format(time.RFC3339Nano)))
		}
	}
	if len(stale) > 0 {
		t.Errorf("%d records stamped while the tasks were stopped (%s to %s), first %v", len(stale), stoppedAt.Format(time.RFC3339Nano), up.Format(time.RFC3339Nano), stale[:min(3, len(stale))])
	}
	if got := counterStarts(t, ws[0].LogPath(), ws[1].LogPath()); len(got) != tasks || got[0] != 2 || got[1] != 2 || got[2] != 2 {
		t.Errorf("counter task starts by task %v, want each task started twice (before and after the outage)", got)
	}
	t.Logf("records: %d before the outage, %d after the broker's return (%d seqs written twice); max seq by task before %v", len(before), len(after), dups, maxBefore)
}

// TestBrokerDownRequestTimeouts is the broker-down half of Kafka's
// testRequestTimeouts, on one worker with a 2 s REST request timeout and a
// 10 s session. The broker stops. A reconfiguration asked for while the worker still holds
// its membership (and leads) is stuck writing to the config topic: 500 at
// the request timeout, "Request timed out. The worker is currently writing
// a config for connector ... to the config topic, which began at ...".
// Once the worker has given its membership up, a request for the leader
// (create a connector) waits for the group and times out too: 500 at the
// request timeout, "Request timed out. The worker is currently ensuring
// membership in the cluster, which began at ...".
// GET / and the status answer 200 throughout. When the broker is back the
// reconfiguration and a creation both succeed and run.
func TestBrokerDownRequestTimeouts(t *testing.T) {
	// A longer session than TestBrokerCoordinator's: the first request
	// must reach the worker while it still leads, however long the broker
	// takes to stop on a loaded machine.
	const session = 10 * time.Second
	e := newOwnBrokerEnv(t, map[string]string{"session.timeout.ms": strconv.FormatInt(session.Milliseconds(), 10)})
	e.withCounterSource()
	w := e.addWorker()
	topic := e.topic("counts", 1)
	src := e.name("counter")
	w.create(counterConfig(src, topic, 1, 100*time.Millisecond))
	w.waitStatus(src, "RUNNING", stateTimeout, allIn("RUNNING", 1))

	ctx := t.Context()
	if err := e.kafka.StopNode(ctx, 0); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	reconfig := counterConfig(src, topic, 2, 100*time.Millisecond)
	code, body, took := timedCall(t, w, http.MethodPut, "/connectors/"+src+"/config", reconfig)
	since := time.Since(down)
	_, msg := errorMessage(t, body)
	stage := regexp.MustCompile(`^Request timed out\. The worker is currently writing a config for connector ` + regexp.QuoteMeta(src) +
		` to the config topic, which began at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\.$`)
	if code != http.StatusInternalServerError || !stage.MatchString(msg) || took < bdREST || took > bdREST+2*time.Second {
		t.Fatalf("PUT config with the broker down %s: %d %s after %s, want 500 %q at the %s request timeout",
			since.Round(time.Millisecond), code, body, took.Round(time.Millisecond), stage, bdREST)
	}
	t.Logf("reconfigure with the broker down: %d %q after %s", code, msg, took.Round(time.Millisecond))
	requireRESTUp(t, w, src, 1)

	// Wait for the worker to give its membership up.
	lost := regexp.MustCompile(`group membership lost; stopping all work`)
	for logMatches(t, lost, w) == 0 {
		if time.Since(down) > session+10*time.Second {
			t.Fatalf("the worker kept its membership %s after the broker stopped", time.Since(down).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}
	requireNoLeaderAnswer(t, w, e.name("other"), topic)
	requireRESTUp(t, w, src, 1)

	if err := e.kafka.StartNode(ctx, 0); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	doRetrying(t, w, http.MethodPut, "/connectors/"+src+"/config", reconfig, http.StatusOK)
	w.waitStatus(src, "RUNNING with 2 tasks", stateTimeout, allIn("RUNNING", 2))
	other := e.name("other")
	doRetrying(t, w, http.MethodPost, "/connectors", map[string]any{"name": other, "config": counterConfig(other, topic, 1, 100*time.Millisecond)}, http.StatusCreated)
	w.waitStatus(other, "RUNNING", stateTimeout, allIn("RUNNING", 1))
	t.Logf("broker back: reconfiguration and creation done, both RUNNING after %s", time.Since(up).Round(time.Millisecond))
}

// requireNoLeaderAnswer checks the answer to a creation on a worker that
// has lost its membership while the broker is down. Nobody is known to
// lead; as Kafka Connect's herder thread, blocked rejoining, the worker
// makes the request wait for the group, and it times out: 500 "Request
// timed out. The worker is currently ensuring membership in the cluster,
// which began at ..." at the request timeout, not 409 at once.
func requireNoLeaderAnswer(t *testing.T, w *worker, name, topic string) {
	t.Helper()
	code, body, took := timedCall(t, w, http.MethodPost, "/connectors", map[string]any{"name": name, "config": counterConfig(name, topic, 1, time.Second)})
	ecode, msg := errorMessage(t, body)
	stage := regexp.MustCompile(`^Request timed out\. The worker is currently ensuring membership in the cluster, which began at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\.$`)
	if code != http.StatusInternalServerError || ecode != 500 || took < bdREST || took > bdREST+2*time.Second || !stage.MatchString(msg) {
		t.Fatalf("create with the membership lost: %d %s after %s; want 500 %q at the %s request timeout",
			code, body, took.Round(time.Millisecond), stage, bdREST)
	}
	t.Logf("create with the membership lost: %d %q after %s", code, msg, took.Round(time.Millisecond))
}

// doRetrying is worker.do for a worker whose broker just came back: a 409
// (rebalance under way) and a 500 "Request timed out" (the write to Kafka
// is slower than the short request timeout while the clients reconnect)
// are retried for a while.
func doRetrying(t *testing.T, w *worker, method, path string, body any, want int) {
	t.Helper()
	deadline := time.Now().Add(stateTimeout)
	for {
		code, b, err := w.call(t.Context(), method, path, body)
		if err != nil {
			t.Fatal(err)
		}
		if code == want {
			return
		}
		retry := code == http.StatusConflict || (code == http.StatusInternalServerError && strings.Contains(string(b), "Request timed out"))
		if !retry || time.Now().After(deadline) {
			t.Fatalf("%s %s%s = %d %s, want %d", method, w.url, path, code, b, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

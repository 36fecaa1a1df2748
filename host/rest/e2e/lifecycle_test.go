package e2e

import (
	"maps"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// counterSeqs reads the counter-source topic: the highest seq of each task
// (StringConverter writes its struct as Struct{task=N,seq=M}).
func (e *env) counterSeqs(topic string) map[int]int {
	e.t.Helper()
	re := regexp.MustCompile(`task=(\d+),seq=(\d+)`)
	out := map[int]int{}
	for _, v := range e.topicValues(topic) {
		m := re.FindStringSubmatch(v)
		if m == nil {
			e.t.Fatalf("record %q is not a counter", v)
		}
		task, _ := strconv.Atoi(m[1])
		seq, _ := strconv.Atoi(m[2])
		out[task] = max(out[task], seq)
	}
	return out
}

// restartPlan decodes a 202 answer of POST /connectors/{c}/restart.
func (e *env) restart(name, query string) status {
	e.t.Helper()
	var plan status
	strict(e.t, e.must("POST", "/connectors/"+name+"/restart"+query, nil, 202), &plan)
	return plan
}

// samePids fails unless the named processes kept their ids and the others
// changed.
func samePids(t *testing.T, what string, before, after map[string]int, kept ...string) {
	t.Helper()
	for n, pid := range before {
		keep := false
		for _, k := range kept {
			keep = keep || k == n
		}
		if keep != (after[n] == pid) {
			t.Fatalf("%s: %s ran in %d, now in %d (want kept: %v); before %v after %v", what, n, pid, after[n], keep, before, after)
		}
	}
}

// POST /connectors/{c}/restart (KIP-745) and /tasks/{t}/restart: exactly
// the instances the request names get new plugin processes.
func TestRestart(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	e.create("rs", map[string]string{"connector.class": "CounterSource", "topic": "rs", "tasks.max": "2", "interval.ms": "5"})
	e.waitStatus("rs", "RUNNING:RUNNING,RUNNING")
	all := []string{"connector", "task 0", "task 1"}
	p0 := e.waitPids("rs", all...)

	// Plain restart: 204, the connector instance only.
	if r := e.request("POST", "/connectors/rs/restart", nil); r.code != 204 || len(r.body) != 0 {
		t.Fatalf("plain restart: %s", r)
	}
	e.waitStatus("rs", "RUNNING:RUNNING,RUNNING")
	p1 := e.waitPids("rs", all...)
	samePids(t, "plain restart", p0, p1, "task 0", "task 1")
	e.must("POST", "/connectors/rs/restart?includeTasks=false&onlyFailed=false", nil, 204)
	e.waitStatus("rs", "RUNNING:RUNNING,RUNNING")
	p1 = e.waitPids("rs", all...)

	// includeTasks: everything, shown RESTARTING in the plan.
	plan := e.restart("rs", "?includeTasks=true")
	if plan.summary() != "RESTARTING:RESTARTING,RESTARTING" || plan.Name != "rs" || plan.Type != "source" || plan.Connector.WorkerID != e.workerID() {
		t.Fatalf("includeTasks plan %+v", plan)
	}
	e.waitStatus("rs", "RUNNING:RUNNING,RUNNING")
	p2 := e.waitPids("rs", all...)
	samePids(t, "includeTasks", p1, p2)

	// onlyFailed with nothing failed: a plan restarting nothing.
	for _, q := range []string{"?onlyFailed=true", "?onlyFailed=true&includeTasks=true"} {
		if plan := e.restart("rs", q); plan.summary() != "RUNNING:RUNNING,RUNNING" {
			t.Fatalf("%s with nothing failed: plan %+v", q, plan)
		}
	}
	time.Sleep(300 * time.Millisecond)
	samePids(t, "onlyFailed with nothing failed", p2, e.pids("rs"), all...)

	// A failed task: onlyFailed&includeTasks restarts it alone, and its
	// counter carries on from its committed offset.
	e.killTask("rs", 1)
	e.waitStatus("rs", "RUNNING:RUNNING,FAILED")
	before := e.counterSeqs("rs")
	plan = e.restart("rs", "?onlyFailed=true&includeTasks=true")
	if plan.summary() != "RUNNING:RUNNING,RESTARTING" {
		t.Fatalf("onlyFailed plan %+v", plan)
	}
	e.waitStatus("rs", "RUNNING:RUNNING,RUNNING")
	p3 := e.waitPids("rs", all...)
	delete(p2, "task 1")
	samePids(t, "onlyFailed", p2, p3, all...)
	waitUntil(t, "task 1 to count on", 20*time.Second, func() bool { return e.counterSeqs("rs")[1] > before[1]+20 })

	// A failed task: onlyFailed without includeTasks touches nothing (the
	// connector has not failed), the plain restart only the connector.
	e.killTask("rs", 0)
	e.waitStatus("rs", "RUNNING:FAILED,RUNNING")
	if plan := e.restart("rs", "?onlyFailed=true"); plan.summary() != "RUNNING:FAILED,RUNNING" {
		t.Fatalf("onlyFailed without includeTasks: plan %+v", plan)
	}
	p3 = e.pids("rs")
	e.must("POST", "/connectors/rs/restart", nil, 204)
	time.Sleep(300 * time.Millisecond)
	e.waitStatus("rs", "RUNNING:FAILED,RUNNING")
	samePids(t, "plain restart with a failed task", p3, e.pids("rs"), "task 1")
	e.must("POST", "/connectors/rs/tasks/0/restart", nil, 204)
	e.waitStatus("rs", "RUNNING:RUNNING,RUNNING")

	// A failed connector (its process killed): FAILED with a trace; the
	// onlyFailed restart restarts it alone.
	p4 := e.waitPids("rs", all...)
	if err := syscall.Kill(p4["connector"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st := e.waitStatus("rs", "FAILED:RUNNING,RUNNING")
	if st.Connector.Trace == "" || st.Connector.WorkerID != e.workerID() {
		t.Fatalf("failed connector status %+v", st)
	}
	if plan := e.restart("rs", "?onlyFailed=true&includeTasks=true"); plan.summary() != "RESTARTING:RUNNING,RUNNING" {
		t.Fatalf("plan for a failed connector %+v", plan)
	}
	st = e.waitStatus("rs", "RUNNING:RUNNING,RUNNING")
	if st.Connector.Trace != "" {
		t.Fatalf("trace kept after the restart: %+v", st)
	}
	samePids(t, "onlyFailed with a failed connector", p4, e.waitPids("rs", all...), "task 0", "task 1")

	// POST /tasks/{t}/restart: that task alone.
	p4 = e.waitPids("rs", all...)
	if r := e.request("POST", "/connectors/rs/tasks/1/restart", nil); r.code != 204 || len(r.body) != 0 {
		t.Fatalf("task restart: %s", r)
	}
	e.waitStatus("rs", "RUNNING:RUNNING,RUNNING")
	p5 := e.waitPids("rs", all...)
	samePids(t, "task restart", p4, p5, "connector", "task 0")

	e.mustFail("POST", "/connectors/rs/tasks/5/restart", nil, 404, "Unknown task: rs-5")
	e.mustFail("POST", "/connectors/nope/tasks/0/restart", nil, 404, "Unknown connector: nope")
	e.mustFail("POST", "/connectors/nope/restart", nil, 404, "Unknown connector: nope")
	e.mustFail("POST", "/connectors/nope/restart?includeTasks=true", nil, 404, "nope")
}

// PUT pause (202), resume (202) and stop (204): paused connectors move no
// records, source or sink; stopped ones have no tasks and no processes;
// both pick up where they were.
func TestPauseResumeStop(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	in, out := e.dir+"/in.txt", e.dir+"/out.txt"
	lines := writeLines(t, in, "p", 0, 20)
	e.create("src", map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "prs"})
	e.create("snk", map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "prs"})
	waitFile(t, out, lines)

	// Pause the sink: the topic grows, the file does not.
	if r := e.request("PUT", "/connectors/snk/pause", nil); r.code != 202 || len(r.body) != 0 {
		t.Fatalf("pause: %s", r)
	}
	e.waitStatusWithin("snk", "PAUSED:PAUSED", 5*time.Second)
	lines = append(lines, writeLines(t, in, "p", 20, 40)...)
	e.waitTopic("prs", lines)
	time.Sleep(700 * time.Millisecond)
	if got := fileLines(t, out); len(got) != 20 {
		t.Fatalf("a paused sink wrote: %d lines", len(got))
	}
	e.must("PUT", "/connectors/snk/pause", nil, 202) // idempotent
	if r := e.request("PUT", "/connectors/snk/resume", nil); r.code != 202 || len(r.body) != 0 {
		t.Fatalf("resume: %s", r)
	}
	e.waitStatus("snk", "RUNNING:RUNNING")
	waitFile(t, out, lines)

	// Pause the source: nothing is produced.
	e.must("PUT", "/connectors/src/pause", nil, 202)
	e.waitStatusWithin("src", "PAUSED:PAUSED", 5*time.Second)
	more := writeLines(t, in, "p", 40, 60)
	time.Sleep(time.Second)
	if n := e.endOffset("prs"); n != int64(len(lines)) {
		t.Fatalf("a paused source produced: %d records, want %d", n, len(lines))
	}
	e.must("PUT", "/connectors/src/resume", nil, 202)
	e.waitStatus("src", "RUNNING:RUNNING")
	lines = append(lines, more...)
	waitFile(t, out, lines)

	// Stop: no tasks, no processes, nothing produced; resume from there.
	pidsBefore := e.waitPids("src", "connector", "task 0")
	if r := e.request("PUT", "/connectors/src/stop", nil); r.code != 204 || len(r.body) != 0 {
		t.Fatalf("stop: %s", r)
	}
	st := e.waitStatusWithin("src", "STOPPED:", 10*time.Second)
	if st.Connector.WorkerID != e.workerID() {
		t.Fatalf("stopped status %+v", st)
	}
	e.waitPids("src")
	var tasks []taskInfo
	strict(t, e.must("GET", "/connectors/src/tasks", nil, 200), &tasks)
	var info connectorInfo
	strict(t, e.must("GET", "/connectors/src", nil, 200), &info)
	if len(tasks) != 0 || len(info.Tasks) != 0 {
		t.Fatalf("stopped connector has tasks %v / %v", tasks, info.Tasks)
	}
	e.must("PUT", "/connectors/src/stop", nil, 204) // idempotent
	more = writeLines(t, in, "p", 60, 70)
	time.Sleep(time.Second)
	if n := e.endOffset("prs"); n != int64(len(lines)) {
		t.Fatalf("a stopped source produced: %d records, want %d", n, len(lines))
	}
	// Pausing a stopped connector starts it paused, without tasks until
	// it is resumed (as in Kafka Connect's testPauseStopResume).
	e.must("PUT", "/connectors/src/pause", nil, 202)
	e.waitStatus("src", "PAUSED:")
	e.must("PUT", "/connectors/src/resume", nil, 202)
	e.waitStatus("src", "RUNNING:RUNNING")
	after := e.waitPids("src", "connector", "task 0")
	if maps.Equal(after, pidsBefore) {
		t.Fatalf("resumed from STOPPED in the same processes %v", after)
	}
	lines = append(lines, more...)
	waitFile(t, out, lines)
	e.waitTopic("prs", lines)

	for _, op := range []string{"pause", "resume", "stop"} {
		e.mustFail("PUT", "/connectors/nope/"+op, nil, 404, "Unknown connector nope")
	}
}

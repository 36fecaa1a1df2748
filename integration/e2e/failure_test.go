//go:build integration

package e2e

import (
	"net/http"
	"syscall"
	"testing"
	"time"
)

// pipe is one file → topic → file pipeline of a test.
type pipe struct {
	src, sink, topic, in, out string
}

func (e *env) pipe(base string) pipe {
	return pipe{
		src:   e.name(base + "-src"),
		sink:  e.name(base + "-sink"),
		topic: e.topic(base),
		in:    e.path(base + "-in.txt"),
		out:   e.path(base + "-out.txt"),
	}
}

func (p pipe) files(e *env) []string {
	return []string{
		e.connector(sourceConfig(p.src, p.in, p.topic)),
		e.connector(sinkConfig(p.sink, p.out, p.topic)),
	}
}

// TestTaskPluginKilled: SIGKILL the plugin process of one task. That task
// turns FAILED with a trace while its connector and every other task stay
// RUNNING and the other pipeline keeps moving data; a REST restart of the
// task starts a fresh process and brings it back to RUNNING; in the end
// nothing is lost, and the undisturbed pipeline delivered exactly once, in
// order. Done for a sink task and then for a source task.
func TestTaskPluginKilled(t *testing.T) {
	e := newEnv(t)
	a, b := e.pipe("a"), e.pipe("b")
	files := append(a.files(e), b.files(e)...)
	wr := startWriter(t, []string{a.in, b.in}, []string{"a", "b"}, 50, 20*time.Millisecond)
	w := e.startWorker(e.workerProps(nil), files...)
	waitLines(t, a.out, 1)
	waitLines(t, b.out, 1)

	for _, victim := range []struct {
		connector string
		// moving: data that must keep moving while the victim is down.
		moving func() int64
		// stalled: data that must not move while it is down.
		stalled func() int64
	}{
		{
			connector: a.sink,
			moving:    func() int64 { return e.endOffset(a.topic) + int64(len(readLines(t, b.out))) },
			stalled:   func() int64 { return int64(len(readLines(t, a.out))) },
		},
		{
			connector: a.src,
			moving:    func() int64 { return e.endOffset(b.topic) + int64(len(readLines(t, b.out))) },
			stalled:   func() int64 { return e.endOffset(a.topic) },
		},
	} {
		t.Logf("killing the plugin of task %s-0", victim.connector)
		{
			pid := w.taskPID(victim.connector, 0)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill plugin %d: %v", pid, err)
			}
			s := w.waitStatus(victim.connector, "task 0 FAILED", func(s status) bool { return s.task(0).State == "FAILED" })
			if s.task(0).Trace == "" {
				t.Fatalf("task %s-0 FAILED without a trace: %s", victim.connector, s)
			}
			if s.Connector.State != "RUNNING" {
				t.Fatalf("connector %s is %s after its task's plugin died, want RUNNING", victim.connector, s.Connector.State)
			}
			t.Logf("status after the kill: %s", s)
			for _, c := range []string{a.src, a.sink, b.src, b.sink} {
				if c != victim.connector {
					if got := w.status(c); got.Connector.State != "RUNNING" || got.task(0).State != "RUNNING" {
						t.Fatalf("connector %s: %s, want everything RUNNING", c, got)
					}
				}
			}

			// The others move on; the failed task's data does not.
			moving, stalled := victim.moving(), victim.stalled()
			deadline := time.Now().Add(stateTimeout)
			for victim.moving() < moving+500 {
				if time.Now().After(deadline) {
					t.Fatalf("data stopped moving in the other pipelines while %s-0 was FAILED", victim.connector)
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(time.Second)
			if now := victim.stalled(); now != stalled {
				t.Fatalf("data of the failed task %s-0 moved: %d, then %d", victim.connector, stalled, now)
			}

			w.do(http.MethodPost, "/connectors/"+victim.connector+"/tasks/0/restart", nil, http.StatusNoContent)
			w.waitState(victim.connector, "RUNNING", 1)
			if again := w.taskPID(victim.connector, 0); again == pid {
				t.Fatalf("task %s-0 RUNNING again in the killed process %d", victim.connector, pid)
			}
			if got := victim.stalled(); got == stalled {
				deadline := time.Now().Add(stateTimeout)
				for victim.stalled() == stalled {
					if time.Now().After(deadline) {
						t.Fatalf("data of %s-0 did not move again after its restart", victim.connector)
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}
	}

	written := wr.stop()
	// The restarted tasks resume from committed offsets: everything
	// arrives, possibly twice.
	waitCovered(t, a.out, written[a.in], 0)
	// Pipeline b was never disturbed: exactly its input, in order.
	waitLines(t, b.out, len(written[b.in]))
	time.Sleep(quiet)
	requireLines(t, "undisturbed pipeline b", written[b.in], readLines(t, b.out))
	t.Logf("pipeline a: %d lines in, %d out; pipeline b: %d lines", len(written[a.in]), len(readLines(t, a.out)), len(written[b.in]))
	w.stop()
}

// TestPauseResume: while a source connector is PAUSED (connector and
// task, per REST status) its topic does not grow although its input does;
// after resume it grows again. The same for a sink and its output file.
// Afterwards the output equals the input exactly: pausing loses and
// repeats nothing.
func TestPauseResume(t *testing.T) {
	e := newEnv(t)
	p := e.pipe("pause")
	wr := startWriter(t, []string{p.in}, []string{"p"}, 50, 20*time.Millisecond)
	w := e.startWorker(e.workerProps(nil), p.files(e)...)
	waitLines(t, p.out, 1)

	for _, c := range []struct {
		connector string
		measure   func() int64 // what must stand still while paused
		input     func() int64 // what keeps growing meanwhile
		// settle passes before measuring. The file sink buffers what it
		// was given before the pause and writes it at the next offset
		// commit, which pausing does not skip (nor does Kafka's
		// WorkerSinkTask): one flush interval later the file is final.
		settle time.Duration
	}{
		{p.src, func() int64 { return e.endOffset(p.topic) }, func() int64 { return int64(len(readLines(t, p.in))) }, 0},
		{p.sink, func() int64 { return int64(len(readLines(t, p.out))) }, func() int64 { return e.endOffset(p.topic) }, 1500 * time.Millisecond},
	} {
		t.Logf("pausing %s", c.connector)
		{
			w.do(http.MethodPut, "/connectors/"+c.connector+"/pause", nil, http.StatusAccepted)
			w.waitState(c.connector, "PAUSED", 1)
			time.Sleep(c.settle)
			before, inBefore := c.measure(), c.input()
			for i := range 6 {
				time.Sleep(500 * time.Millisecond)
				if now := c.measure(); now != before {
					t.Fatalf("%s PAUSED, yet data moved %d ms later: %d, then %d", c.connector, (i+1)*500, before, now)
				}
			}
			if in := c.input(); in <= inBefore {
				t.Fatalf("the input did not grow while %s was paused (%d, then %d): the check proves nothing", c.connector, inBefore, in)
			}
			w.do(http.MethodPut, "/connectors/"+c.connector+"/resume", nil, http.StatusAccepted)
			w.waitState(c.connector, "RUNNING", 1)
			deadline := time.Now().Add(stateTimeout)
			for c.measure() == before {
				if time.Now().After(deadline) {
					t.Fatalf("%s RUNNING again, yet no data moved", c.connector)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}

	want := wr.stop()[p.in]
	waitLines(t, p.out, len(want))
	time.Sleep(quiet)
	requireLines(t, "sink file after pause and resume", want, readLines(t, p.out))
	if end := e.endOffset(p.topic); end != int64(len(want)) {
		t.Fatalf("topic end offset %d, want %d", end, len(want))
	}
	w.stop()
}

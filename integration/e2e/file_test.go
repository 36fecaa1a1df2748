//go:build integration

package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/sluice-io/sluice/integration/itest"
)

// quiet is how long a finished pipeline is watched for records that should
// not come (redeliveries): more than one offset flush interval.
const quiet = 2500 * time.Millisecond

// TestFilePipeline100k: FileStreamSource → 1-partition topic →
// FileStreamSink with 100 000 lines; the topic and the output file both
// equal the input, line for line and in order, and nothing more arrives.
func TestFilePipeline100k(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("lines")
	in, out := e.path("in.txt"), e.path("out.txt")
	lines := makeLines("p", 0, 100_000)
	appendLines(t, in, lines)

	start := time.Now()
	w := e.startWorker(e.workerProps(nil),
		e.connector(sourceConfig(e.name("src"), in, topic)),
		e.connector(sinkConfig(e.name("sink"), out, topic)))
	waitLines(t, out, len(lines))
	t.Logf("%d lines through the pipeline in %s (worker start included)", len(lines), time.Since(start).Round(time.Millisecond))

	time.Sleep(quiet)
	requireLines(t, "sink file", lines, readLines(t, out))
	requireLines(t, "topic", lines, itest.Values(e.readTopic(topic, len(lines))))
	if end := e.endOffset(topic); end != int64(len(lines)) {
		t.Fatalf("topic end offset %d, want %d", end, len(lines))
	}
	w.waitState(e.name("src"), "RUNNING", 1)
	w.waitState(e.name("sink"), "RUNNING", 1)
}

// TestCleanRestartExactlyOnce: a SIGTERMed worker exits 0 with no plugin
// left behind; lines appended while it is down and after it is back arrive
// exactly once, and the lines from before are not delivered again (the
// source resumes from its stored position, the sink from its committed
// offsets).
func TestCleanRestartExactlyOnce(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("restart")
	in, out := e.path("in.txt"), e.path("out.txt")
	props := e.workerProps(nil)
	files := []string{
		e.connector(sourceConfig(e.name("src"), in, topic)),
		e.connector(sinkConfig(e.name("sink"), out, topic)),
	}

	first := makeLines("r", 0, 2000)
	appendLines(t, in, first)
	w := e.startWorker(props, files...)
	waitLines(t, out, len(first))
	ps := plugins(w.Pid())
	if len(ps) != 4 {
		t.Fatalf("plugin processes %v, want 4 (two connectors, two tasks)", ps)
	}
	w.stop()
	requireGone(t, ps)
	requireLines(t, "sink file before the restart", first, readLines(t, out))

	whileDown := makeLines("r", 2000, 1500)
	appendLines(t, in, whileDown)
	w = e.startWorker(props, files...)
	afterStart := makeLines("r", 3500, 1500)
	appendLines(t, in, afterStart)

	want := slices.Concat(first, whileDown, afterStart)
	waitLines(t, out, len(want))
	time.Sleep(quiet)
	requireLines(t, "sink file after the restart", want, readLines(t, out))
	requireLines(t, "topic", want, itest.Values(e.readTopic(topic, len(want))))
	if end := e.endOffset(topic); end != int64(len(want)) {
		t.Fatalf("topic end offset %d, want %d: lines were produced again", end, len(want))
	}
	w.stop()
}

// TestWorkerKilledLosesNothing: SIGKILL the worker while lines flow (and
// after a few offset flushes); its plugins die with it; a new worker on the
// same offsets file and consumer group delivers every line at least once
// (duplicates allowed), and its source resumes from the stored position
// rather than from the start of the file.
func TestWorkerKilledLosesNothing(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("kill")
	in, out := e.path("in.txt"), e.path("out.txt")
	// The killed worker's sink consumer stays in the group until its
	// session times out, and the new one waits for that rebalance: keep the
	// session short (the broker's minimum is 6 s), as the default 45 s
	// would dominate the test.
	props := e.workerProps(map[string]string{
		"consumer.session.timeout.ms":    "6000",
		"consumer.heartbeat.interval.ms": "1000",
	})
	files := []string{
		e.connector(sourceConfig(e.name("src"), in, topic)),
		e.connector(sinkConfig(e.name("sink"), out, topic)),
	}

	// About 10 000 lines a second until the end of the test.
	wr := startWriter(t, []string{in}, []string{"k"}, 200, 20*time.Millisecond)
	w := e.startWorker(props, files...)
	waitLines(t, out, 1)
	time.Sleep(2500 * time.Millisecond) // two offset flushes at least
	ps := plugins(w.Pid())
	if err := w.Kill(); err != nil {
		t.Fatal(err)
	}
	producedBeforeKill := e.endOffset(topic)
	t.Logf("killed the worker with %d lines on the topic and %d in the sink file", producedBeforeKill, len(readLines(t, out)))
	requireGone(t, ps)

	restart := time.Now()
	w = e.startWorker(props, files...)
	time.Sleep(time.Second)
	want := wr.stop()[in]
	final := waitCovered(t, out, want, 1)
	t.Logf("every line of %d delivered %s after the restart: %s", len(want), time.Since(restart).Round(time.Millisecond), itest.Compare(want, final))

	// Every line is on the topic too, at least once; what the source
	// produced twice is less than everything it produced before the kill.
	end := e.endOffset(topic)
	recs := e.readTopic(topic, int(end))
	if missing, _ := uncovered(want, itest.Values(recs)); len(missing) > 0 {
		t.Fatalf("%d lines never reached the topic, first %q", len(missing), missing[0])
	}
	again := end - int64(len(want))
	t.Logf("the source produced %d lines again after the restart", again)
	if again >= producedBeforeKill {
		t.Fatalf("the source produced %d lines again, all %d from before the kill: it did not resume from its stored offsets", again, producedBeforeKill)
	}
	w.stop()
}

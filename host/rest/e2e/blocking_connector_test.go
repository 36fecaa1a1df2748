package e2e

import (
	"testing"
	"time"
)

// Kafka's BlockingConnectorTest (testBlockInConnectorStart) with a real
// plugin process whose connector Start never returns, on a standalone
// worker: the create answers 500 at the REST timeout naming the start, a
// healthy source and sink are created and move data meanwhile, a restart
// of the blocked connector times out the same way, and the plugin call
// deadline (30 s) ends the hung process and fails the connector.
func TestBlockingConnectorStart(t *testing.T) {
	t.Parallel()
	const timeout = 3 * time.Second
	e := startWorker(t, workerOpts{restTimeout: timeout, props: map[string]string{"plugin.path": baseDir + "," + extraDir}})
	hung := map[string]string{"connector.class": "HangingStart", "topic": "t", "secret": "x", "tasks.max": "1"}

	start := time.Now()
	r := e.request("POST", "/connectors", map[string]any{"name": "hung", "config": hung})
	if d := time.Since(start); d < timeout || d > timeout+2*time.Second {
		t.Fatalf("the blocked create answered after %v, the timeout is %v", d, timeout)
	}
	checkError(t, "POST /connectors (blocked in start)", r, 500,
		"Request timed out. The worker is currently starting the connector hung, which began at ")
	if pids := e.pids("hung"); len(pids) != 1 {
		t.Fatalf("processes of the blocked connector: %v", pids)
	}

	in, out := e.dir+"/in.txt", e.dir+"/out.txt"
	lines := writeLines(t, in, "b", 0, 50)
	e.create("normal-src", map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "blocking"})
	e.create("normal-snk", map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "blocking"})
	waitFile(t, out, lines)

	e.mustFail("POST", "/connectors/hung/restart", nil, 500,
		"Request timed out. The worker is currently starting the connector hung, which began at ")
	e.must("GET", "/connectors/hung/status", nil, 200)
	e.must("GET", "/connectors", nil, 200)

	// The start's deadline ends the hung plugin; the connector fails and
	// leaves no process behind.
	st := e.waitStatusWithin("hung", "FAILED:", 60*time.Second)
	if st.Connector.Trace == "" {
		t.Fatalf("trace of the failed start: %q", st.Connector.Trace)
	}
	waitUntil(t, "the hung plugin process to end", 10*time.Second, func() bool { return len(e.pids("hung")) == 0 })
	t.Logf("blocked start failed after %v: %s", time.Since(start).Round(time.Second), firstLine(st.Connector.Trace))
	more := writeLines(t, in, "b", 50, 60)
	waitFile(t, out, append(lines, more...))
}

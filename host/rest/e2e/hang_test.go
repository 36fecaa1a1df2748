package e2e

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// hungValidations lists the live processes of the hanging plugin's binary.
func hungValidations() []int {
	bin := filepath.Join(hangDir, "hangplugin")
	var out []int
	for _, p := range plugins() {
		if p.exe == bin {
			out = append(out, p.pid)
		}
	}
	return out
}

// A connector whose plugin hangs in validate (as Kafka's BlockingConnector
// test does): the create call answers 500 with the stage at the (shortened)
// REST timeout, while a second, healthy connector is created and moves
// data meanwhile; the API keeps answering and the hung process is killed.
func TestHungValidation(t *testing.T) {
	t.Parallel()
	const timeout = 3 * time.Second
	e := startWorker(t, workerOpts{restTimeout: timeout, props: map[string]string{"plugin.path": baseDir + "," + hangDir}})
	hung := map[string]string{"connector.class": "HangingValidate", "topic": "t", "secret": "x"}

	type answer struct {
		r       resp
		elapsed time.Duration
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		r := e.request("POST", "/connectors", map[string]any{"name": "hung", "config": hung})
		done <- answer{r, time.Since(start)}
	}()
	waitUntil(t, "the hanging validation to start", timeout, func() bool { return len(hungValidations()) == 1 })

	// Meanwhile: a healthy source and sink are created, data moves, and the
	// rest of the API answers.
	in, out := e.dir+"/in.txt", e.dir+"/out.txt"
	lines := writeLines(t, in, "h", 0, 50)
	e.create("ok-src", map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "hang"})
	e.create("ok-snk", map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "hang"})
	e.must("GET", "/connectors", nil, 200)
	e.must("GET", "/health", nil, 200)
	e.must("GET", "/connector-plugins", nil, 200)
	if d := time.Since(start); d >= timeout {
		t.Fatalf("the healthy connectors took %v, past the timeout of the hung request", d)
	}
	select {
	case a := <-done:
		t.Fatalf("the hung create answered before its timeout, after %v: %s", a.elapsed, a.r)
	default:
	}

	a := <-done
	msg := checkError(t, "POST /connectors (hung)", a.r, 500,
		"Request timed out. The worker is currently performing multi-property validation for the connector, which began at ")
	if a.elapsed < timeout || a.elapsed > timeout+2*time.Second {
		t.Fatalf("the hung create answered after %v, want about %v", a.elapsed, timeout)
	}
	began := regexp.MustCompile(`which began at (\S+)\.$`).FindStringSubmatch(msg)
	if began == nil {
		t.Fatalf("no start time in %q", msg)
	}
	at, err := time.Parse("2006-01-02T15:04:05.000Z", began[1])
	if err != nil || at.Before(start.Add(-time.Second)) || at.After(start.Add(timeout)) {
		t.Fatalf("validation began at %q (%v), the request at %v", began[1], err, start.UTC())
	}
	t.Logf("hung create: %v: %s", a.elapsed.Round(time.Millisecond), msg)

	// No leak: the hung process is killed; nothing was created.
	waitUntil(t, "the hung plugin process to be killed", 10*time.Second, func() bool { return len(hungValidations()) == 0 })
	waitFile(t, out, lines)
	var names []string
	e.mustJSON("GET", "/connectors", nil, 200, &names)
	if strings.Join(names, ",") != "ok-snk,ok-src" {
		t.Fatalf("connectors %v", names)
	}
	e.mustFail("GET", "/connectors/hung", nil, 404)

	// The same through validate, and the worker is none the worse.
	e.mustFail("PUT", "/connector-plugins/HangingValidate/config/validate", hung, 500,
		"Request timed out. The worker is currently performing multi-property validation for the connector")
	waitUntil(t, "the second hung plugin process to be killed", 10*time.Second, func() bool { return len(hungValidations()) == 0 })
	e.waitStatus("ok-src", "RUNNING:RUNNING")
	more := writeLines(t, in, "h", 50, 60)
	waitFile(t, out, append(lines, more...))
}

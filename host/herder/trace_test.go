package herder_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluice-io/sluice/host/herder"
)

// A plugin may fail with a trace of megabytes. The FAILED status must still
// reach the status topic, whose records Kafka takes up to about 1 MB: the
// trace is cut, on a character boundary, and says so. The message comes
// first and survives the cut.
func TestDistributedHugeTraceIsCut(t *testing.T) {
	e := newDEnv(t)
	in := newFakeInstances()
	// 3 MB of multi-byte characters (3 bytes each) and newlines, so that
	// a cut at a byte count lands inside a character.
	trace := strings.Repeat("at ünïcödé.Frame(€)\n", 150_000)
	in.failNext("src-0", 1)
	in.failTrace["src-0"] = trace
	h := e.start("w1", in, false)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", restartConfig("sluice.task.restart.enable", "false"), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	recs := e.waitStatusTail("status-task-src-0", "FAILED")
	got := recs[len(recs)-1].Trace
	if !strings.HasPrefix(got, "start 1 of src-0 failed on purpose\nat ünïcödé") {
		t.Fatalf("trace starts %.80q", got)
	}
	if len(got) > 200<<10 || !strings.Contains(got, "more bytes of the trace cut)") {
		t.Fatalf("trace of %d bytes, ends %q", len(got), got[max(0, len(got)-80):])
	}
	if !utf8.ValidString(got) {
		t.Fatal("the cut trace is not valid UTF-8")
	}
	// The herder reads the status topic too: its view may be a moment
	// behind the record the test just saw.
	dStates(t, h, "src", "RUNNING:FAILED")
	st, err := h.TaskStatus(ctxT(t), herder.TaskID{Connector: "src", Task: 0})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "FAILED" || st.Trace != got {
		t.Fatalf("status %s with a trace of %d bytes, want FAILED and the topic's %d", st.State, len(st.Trace), len(got))
	}
}

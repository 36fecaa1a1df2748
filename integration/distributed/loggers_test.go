//go:build integration

package distributed

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-io/sluice/integration/itest"
)

// KIP-976 across real workers: a level set with scope=cluster through one
// worker is a logger-cluster-{namespace} record on the config topic, in
// Kafka's format, and every worker applies it; a level set with the
// default scope stays on its worker.
func TestClusterScopeLoggerLevel(t *testing.T) {
	e := newEnv(t, nil)
	w1, w2 := e.addWorker(), e.addWorker()
	ns := "org.example.kip976." + e.suffix
	level := func(w *worker) string {
		code, b, err := w.call(t.Context(), http.MethodGet, "/admin/loggers/"+ns, nil)
		if err != nil || code != http.StatusOK {
			return ""
		}
		var l struct{ Level string }
		if json.Unmarshal(b, &l) != nil {
			return ""
		}
		return l.Level
	}
	waitLevel := func(w *worker, want string) {
		t.Helper()
		deadline := time.Now().Add(stateTimeout)
		for level(w) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s is at %q, want %q:\n%s", w.url, ns, level(w), want, w.LogTail(20))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	w2.do(http.MethodPut, "/admin/loggers/"+ns+"?scope=cluster", map[string]string{"level": "DEBUG"}, http.StatusNoContent)
	waitLevel(w1, "DEBUG")
	waitLevel(w2, "DEBUG")

	recs, err := itest.ReadTopic(t.Context(), e.cl, e.name("connect-configs"), 0, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, r := range recs {
		if string(r.Key) == "logger-cluster-"+ns {
			found = append(found, string(r.Value))
		}
	}
	if len(found) != 1 || found[0] != `{"level":"DEBUG"}` {
		t.Fatalf("logger-cluster-%s records on the config topic: %q", ns, found)
	}

	w1.do(http.MethodPut, "/admin/loggers/"+ns, map[string]string{"level": "ERROR"}, http.StatusOK)
	waitLevel(w1, "ERROR")
	time.Sleep(time.Second)
	if got := level(w2); got != "DEBUG" {
		t.Fatalf("a worker-scope level reached the other worker: %q", got)
	}
}

//go:build integration

package distributed

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLifecycleThroughAnyWorker: restart (KIP-745), task restart, stop,
// resume, config update and delete, each sent to a different worker, take
// effect on the workers that own the work, and every worker sees the
// result.
func TestLifecycleThroughAnyWorker(t *testing.T) {
	e := newEnv(t, nil)
	ws := []*worker{e.addWorker(), e.addWorker(), e.addWorker()}
	topic := e.topic("life", 3)
	name := e.name("sink")
	ws[0].create(sinkConfig(name, e.path("out.txt"), topic, 3))
	ws[1].waitStatus(name, "RUNNING", stateTimeout, allIn("RUNNING", 3))

	// Restart with tasks: 202 and a plan with everything RESTARTING.
	var plan status
	mustJSON(t, ws[1].do(http.MethodPost, "/connectors/"+name+"/restart?includeTasks=true", nil, http.StatusAccepted), &plan)
	if !allIn("RESTARTING", 3)(plan) {
		t.Fatalf("restart plan %s, want everything RESTARTING", plan)
	}
	ws[2].waitStatus(name, "RUNNING after the restart", stateTimeout, allIn("RUNNING", 3))

	// A task restart sent to every worker in turn reaches the task's owner.
	for _, w := range ws {
		w.do(http.MethodPost, "/connectors/"+name+"/tasks/1/restart", nil, http.StatusNoContent)
	}
	ws[0].waitStatus(name, "RUNNING after the task restarts", stateTimeout, allIn("RUNNING", 3))

	// Stop through a worker, seen STOPPED with no tasks everywhere.
	ws[2].do(http.MethodPut, "/connectors/"+name+"/stop", nil, http.StatusNoContent)
	for _, w := range ws {
		w.waitStatus(name, "STOPPED", stateTimeout, allIn("STOPPED", 0))
		var tasks []json.RawMessage
		mustJSON(t, w.do(http.MethodGet, "/connectors/"+name+"/tasks", nil, http.StatusOK), &tasks)
		if len(tasks) != 0 {
			t.Fatalf("%s: %d tasks of a stopped connector", w.url, len(tasks))
		}
	}
	ws[1].do(http.MethodPut, "/connectors/"+name+"/resume", nil, http.StatusAccepted)
	ws[0].waitStatus(name, "RUNNING after resume", stateTimeout, allIn("RUNNING", 3))

	// A config update through a worker: two tasks from now on.
	cfg := sinkConfig(name, e.path("out.txt"), topic, 2)
	delete(cfg, "name")
	ws[1].do(http.MethodPut, "/connectors/"+name+"/config", cfg, http.StatusOK)
	for _, w := range ws {
		w.waitStatus(name, "RUNNING with 2 tasks", stateTimeout, allIn("RUNNING", 2))
	}

	// Delete through a worker: gone everywhere.
	ws[2].do(http.MethodDelete, "/connectors/"+name, nil, http.StatusNoContent)
	deadline := time.Now().Add(stateTimeout)
	for _, w := range ws {
		for {
			list := string(w.do(http.MethodGet, "/connectors", nil, http.StatusOK))
			code, _, err := w.call(t.Context(), http.MethodGet, "/connectors/"+name, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(list, name) && code == http.StatusNotFound {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still lists %s after delete: %s (GET %d)", w.url, name, list, code)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

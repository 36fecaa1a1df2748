//go:build integration

package distributed

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestFewerTasksStatusesRemoved is the lowering half of Kafka's
// testTaskStatuses (and KAFKA-9472): with tasks.max lowered from 3 to 1 the
// surplus tasks stop and, after the rebalance, their statuses are gone on
// every worker (404), not left RUNNING on the status topic.
func TestFewerTasksStatusesRemoved(t *testing.T) {
	e := newEnv(t, nil)
	ws := []*worker{e.addWorker(), e.addWorker()}
	topic := e.topic("fewer", 3)
	name := e.name("sink")
	ws[0].create(sinkConfig(name, e.path("out.txt"), topic, 3))
	ws[1].waitStatus(name, "RUNNING", stateTimeout, allIn("RUNNING", 3))

	cfg := sinkConfig(name, e.path("out.txt"), topic, 1)
	delete(cfg, "name")
	ws[1].do(http.MethodPut, "/connectors/"+name+"/config", cfg, http.StatusOK)
	deadline := time.Now().Add(stateTimeout)
	for _, w := range ws {
		w.waitStatus(name, "RUNNING with 1 task", stateTimeout, allIn("RUNNING", 1))
		for _, task := range []int{1, 2} {
			path := "/connectors/" + name + "/tasks/" + strconv.Itoa(task) + "/status"
			for {
				code, body, err := w.call(t.Context(), http.MethodGet, path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if code == http.StatusNotFound {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: GET %s answers %d %s after tasks.max went down to 1", w.url, path, code, body)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
}

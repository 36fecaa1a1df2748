package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"
)

// sinkTally compares the lines of a sink's file with what was produced:
// the produced lines missing from it, the lines in it never produced, and
// how many lines are extra copies of a produced one.
func sinkTally(got []string, produced []string) (missing, unknown []string, dups int) {
	count := map[string]int{}
	for _, l := range got {
		count[l]++
	}
	for _, l := range produced {
		switch n := count[l]; {
		case n == 0:
			missing = append(missing, l)
		case n > 1:
			dups += n - 1
		}
		delete(count, l)
	}
	for _, l := range slices.Sorted(maps.Keys(count)) {
		unknown = append(unknown, l)
	}
	return missing, unknown, dups
}

// Kafka's ConnectWorkerIntegrationTest.testTaskStatuses on a real worker:
// a FileStreamSink (whose connector returns tasks.max task configs, all
// appending to the one file) on a 4-partition topic goes from 1 task to 3
// and back to 2; the status and GET tasks list exactly those tasks, each
// in a process of its own, and every record produced throughout reaches
// the file. Records produced while the group is stable arrive exactly
// once; across a rebalance Kafka's at-least-once delivery would allow a
// copy, so there the test asserts no loss and reports the copies.
func TestTasksMaxUpAndDown(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	const topic, name, parts = "tmax", "tmax", 4
	out := e.dir + "/out.txt"
	e.createTopicPartitions(topic, parts)

	var produced []string
	ends := map[string]int64{}
	// produce writes n numbered lines, line i to partition i%parts.
	produce := func(n int) {
		t.Helper()
		batch := map[int32][]string{}
		for i := len(produced); i < len(produced)+n; i++ {
			v := fmt.Sprintf("tm-%05d", i)
			p := int32(i % parts)
			batch[p] = append(batch[p], v)
			ends[fmt.Sprintf("%s-%d", topic, p)]++
		}
		for range n {
			produced = append(produced, fmt.Sprintf("tm-%05d", len(produced)))
		}
		e.produceTo(topic, batch)
	}
	// settle waits until every produced line is in the file and the
	// committed offsets are the topic's ends; it returns the copies.
	settle := func(phase string) int {
		t.Helper()
		var missing, unknown []string
		var dups int
		waitUntil(t, phase+": every produced line in the file", 15*time.Second, func() bool {
			missing, unknown, dups = sinkTally(fileLines(t, out), produced)
			if len(unknown) > 0 {
				t.Fatalf("%s: file holds lines never produced %s", phase, abbrev(unknown))
			}
			return len(missing) == 0
		})
		e.waitSinkOffsets(name, ends)
		time.Sleep(300 * time.Millisecond) // a late copy would show by now
		missing, unknown, dups = sinkTally(fileLines(t, out), produced)
		if len(missing) > 0 || len(unknown) > 0 {
			t.Fatalf("%s: missing %s, unknown %s", phase, abbrev(missing), abbrev(unknown))
		}
		return dups
	}
	// checkTasks checks that the status, GET tasks and the plugin
	// processes show exactly tasks 0..n-1, each running in a process of
	// its own.
	checkTasks := func(n int) map[string]int {
		t.Helper()
		want := "RUNNING:RUNNING"
		for range n - 1 {
			want += ",RUNNING"
		}
		st := e.waitStatus(name, want)
		for i, ts := range st.Tasks {
			if ts.ID != i || ts.WorkerID != e.workerID() || ts.Trace != "" {
				t.Fatalf("task %d status %+v", i, ts)
			}
		}
		var tasks []taskInfo
		strict(t, e.must("GET", "/connectors/"+name+"/tasks", nil, 200), &tasks)
		var info connectorInfo
		strict(t, e.must("GET", "/connectors/"+name, nil, 200), &info)
		if len(tasks) != n || len(info.Tasks) != n {
			t.Fatalf("GET tasks %+v, connector tasks %+v; want %d", tasks, info.Tasks, n)
		}
		for i := range n {
			if tasks[i].ID != (taskID{name, i}) || info.Tasks[i] != (taskID{name, i}) {
				t.Fatalf("task %d: %+v / %+v", i, tasks[i].ID, info.Tasks[i])
			}
			var ts taskState
			strict(t, e.must("GET", "/connectors/"+name+"/tasks/"+strconv.Itoa(i)+"/status", nil, 200), &ts)
			if ts != (taskState{ID: i, State: "RUNNING", WorkerID: e.workerID()}) {
				t.Fatalf("task %d status %+v", i, ts)
			}
		}
		names := []string{"connector"}
		for i := range n {
			names = append(names, "task "+strconv.Itoa(i))
		}
		pids := e.waitPids(name, names...)
		seen := map[int]bool{}
		for _, p := range pids {
			if seen[p] {
				t.Fatalf("processes %v: one shared", pids)
			}
			seen[p] = true
		}
		return pids
	}

	cfg := map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": topic, "tasks.max": "1"}
	e.create(name, cfg)
	pids1 := checkTasks(1)
	produce(200)
	if d := settle("1 task"); d != 0 {
		t.Fatalf("1 task: %d copies with no rebalance", d)
	}

	// Up to 3, with records produced while the tasks change.
	cfg["tasks.max"] = "3"
	e.must("PUT", "/connectors/"+name+"/config", cfg, 200)
	produce(200)
	pids3 := checkTasks(3)
	produce(200)
	dupsUp := settle("3 tasks")
	// Stable again: new records arrive exactly once.
	produce(200)
	if d := settle("3 tasks, stable"); d != dupsUp {
		t.Fatalf("3 tasks, stable: %d copies, %d of them with no rebalance", d, d-dupsUp)
	}

	// Down to 2: task 2 is gone from the status, GET tasks and the
	// processes.
	cfg["tasks.max"] = "2"
	e.must("PUT", "/connectors/"+name+"/config", cfg, 200)
	produce(200)
	pids2 := checkTasks(2)
	e.mustFail("GET", "/connectors/"+name+"/tasks/2/status", nil, 404, "No status found for task "+name+"-2")
	produce(200)
	dupsDown := settle("2 tasks")
	produce(200)
	if d := settle("2 tasks, stable"); d != dupsDown {
		t.Fatalf("2 tasks, stable: %d copies, %d of them with no rebalance", d, d-dupsDown)
	}
	t.Logf("%d records delivered; copies across the rebalances: %d going 1→3, %d going 3→2; processes %v → %v → %v",
		len(produced), dupsUp, dupsDown-dupsUp, pids1, pids3, pids2)
}

//go:build integration

package distributed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/integration/itest"
)

const counterSource = "io.sluice.examples.CounterSource"

// withCounterSource builds examples/go/counter-source into a directory of
// the test and adds it to the workers' plugin.path (call before addWorker).
func (e *env) withCounterSource() {
	e.t.Helper()
	root, err := itest.RepoRoot()
	if err != nil {
		e.t.Fatal(err)
	}
	dir := e.path("example-plugins")
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "counter-source"), "./examples/go/counter-source")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("build counter-source: %v\n%s", err, out)
	}
	e.props["plugin.path"] += "," + dir
}

func counterConfig(name, topic string, tasks int, interval time.Duration) map[string]string {
	return map[string]string{
		"name": name, "connector.class": counterSource, "tasks.max": strconv.Itoa(tasks),
		"topic": topic, "interval.ms": strconv.FormatInt(interval.Milliseconds(), 10),
	}
}

// counterRe matches a counter record as StringConverter writes its struct.
var counterRe = regexp.MustCompile(`^Struct\{task=(\d+),seq=(\d+)\}$`)

// counterRec is one counter record read back from the topic.
type counterRec struct {
	task int
	seq  int64
	ts   time.Time
	raw  string
}

// readCounters reads the whole counter topic (up to its current end).
func readCounters(t *testing.T, e *env, topic string) []counterRec {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var out []counterRec
	for _, r := range readAll(ctx, t, e, topic) {
		out = append(out, parseCounter(t, r))
	}
	return out
}

func parseCounter(t *testing.T, r *kgo.Record) counterRec {
	t.Helper()
	m := counterRe.FindStringSubmatch(string(r.Value))
	if m == nil {
		t.Fatalf("record %q at %s/%d@%d is not a counter", r.Value, r.Topic, r.Partition, r.Offset)
	}
	task, _ := strconv.Atoi(m[1])
	seq, _ := strconv.ParseInt(m[2], 10, 64)
	return counterRec{task: task, seq: seq, ts: r.Timestamp, raw: string(r.Value)}
}

// seqCheck is what the records of one task show.
type seqCheck struct {
	max     int64
	missing []int64 // seqs in [0, max] never written (capped at 10)
	nMiss   int
	dups    map[int64]int // seq -> extra copies
}

func (c seqCheck) String() string {
	return fmt.Sprintf("max seq %d, %d missing (first %v), %d duplicated", c.max, c.nMiss, c.missing, len(c.dups))
}

// checkSeqs groups the records by task and checks each task's seqs against
// 0..max.
func checkSeqs(recs []counterRec) map[int]seqCheck {
	seen := map[int]map[int64]int{}
	for _, r := range recs {
		if seen[r.task] == nil {
			seen[r.task] = map[int64]int{}
		}
		seen[r.task][r.seq]++
	}
	out := map[int]seqCheck{}
	for task, seqs := range seen {
		c := seqCheck{max: -1, dups: map[int64]int{}}
		for s, n := range seqs {
			c.max = max(c.max, s)
			if n > 1 {
				c.dups[s] = n - 1
			}
		}
		for s := int64(0); s <= c.max; s++ {
			if seqs[s] == 0 {
				c.nMiss++
				if len(c.missing) < 10 {
					c.missing = append(c.missing, s)
				}
			}
		}
		out[task] = c
	}
	return out
}

// maxGap is the longest time between two consecutive seqs of a task, as
// the record timestamps (set when the worker hands the record to its
// producer) show, over the records with timestamps in [from, to].
func maxGap(recs []counterRec, task int, from, to time.Time) (time.Duration, int64) {
	var mine []counterRec
	for _, r := range recs {
		if r.task == task && !r.ts.Before(from) && !r.ts.After(to) {
			mine = append(mine, r)
		}
	}
	slices.SortFunc(mine, func(a, b counterRec) int {
		if a.seq != b.seq {
			return int(a.seq - b.seq)
		}
		return a.ts.Compare(b.ts)
	})
	var gap time.Duration
	var at int64
	for i := 1; i < len(mine); i++ {
		if d := mine[i].ts.Sub(mine[i-1].ts); d > gap {
			gap, at = d, mine[i].seq
		}
	}
	return gap, at
}

// taskStatusRec is one status-task- record of the status topic.
type taskStatusRec struct {
	task       int
	state      string
	workerID   string
	generation int
}

// taskStatusRecords reads the status topic's records for the tasks of
// connector name, in the order of the topic (one partition per key).
func taskStatusRecords(t *testing.T, e *env, name string) []taskStatusRec {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	prefix := "status-task-" + name + "-"
	var out []taskStatusRec
	for _, r := range readAll(ctx, t, e, e.props["status.storage.topic"]) {
		id, ok := strings.CutPrefix(string(r.Key), prefix)
		if !ok || r.Value == nil {
			continue
		}
		n, err := strconv.Atoi(id)
		if err != nil {
			t.Fatalf("status key %q", r.Key)
		}
		var st struct {
			State      string `json:"state"`
			WorkerID   string `json:"worker_id"`
			Generation int    `json:"generation"`
		}
		mustJSON(t, r.Value, &st)
		out = append(out, taskStatusRec{task: n, state: st.State, workerID: st.WorkerID, generation: st.Generation})
	}
	return out
}

// counterStartsRe matches the counter task's start log line, as the worker
// logs its plugins' output.
var counterStartsRe = regexp.MustCompile(`counter task started.*task=(\d+)`)

// counterStarts counts "counter task started" lines by task in a worker's
// log files.
func counterStarts(t *testing.T, logs ...string) map[int]int {
	t.Helper()
	out := map[int]int{}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range counterStartsRe.FindAllStringSubmatch(string(b), -1) {
			n, _ := strconv.Atoi(m[1])
			out[n]++
		}
	}
	return out
}

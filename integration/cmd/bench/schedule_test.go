//go:build integration

package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// names renders a schedule as "name" and "name again" entries.
func names(steps []step) []string {
	var out []string
	for _, s := range steps {
		n := s.b.Name
		if s.againFor != "" {
			n += " again(" + s.againFor + ")"
		}
		out = append(out, n)
	}
	return out
}

func TestScheduleAll(t *testing.T) {
	steps, err := schedule("")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"baseline/produce-p1", "sluice/datagen-p1", "baseline/produce-p1 again(sluice/datagen-p1)",
		"baseline/produce-p6", "sluice/datagen-p6", "baseline/produce-p6 again(sluice/datagen-p6)",
		"baseline/consume-p1", "baseline/consume-p6",
		"baseline/consume-group-p1", "sluice/noop-sink-p1", "baseline/consume-group-p1 again(sluice/noop-sink-p1)",
		"baseline/consume-group-p6", "sluice/noop-sink-p6", "baseline/consume-group-p6 again(sluice/noop-sink-p6)",
		"sluice/failover-kill", "sluice/join-pause",
	}
	if got := names(steps); !slices.Equal(got, want) {
		t.Fatalf("schedule:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestScheduleOnlyPullsInBaselines(t *testing.T) {
	steps, err := schedule("noop-sink-p6")
	if err != nil {
		t.Fatal(err)
	}
	// The bare consumer is compared with too (AlsoCompare) but not
	// bracketed; the group baseline brackets the sink.
	want := []string{
		"baseline/consume-p6",
		"baseline/consume-group-p6", "sluice/noop-sink-p6", "baseline/consume-group-p6 again(sluice/noop-sink-p6)",
	}
	if got := names(steps); !slices.Equal(got, want) {
		t.Fatalf("schedule:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	steps, err = schedule("^baseline/produce-p1$")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(steps); !slices.Equal(got, []string{"baseline/produce-p1"}) {
		t.Fatalf("a baseline alone is run once: %v", got)
	}
	if _, err := schedule("nothing-matches"); err == nil {
		t.Fatal("an empty selection is not an error")
	}
}

func TestBaselineRatio(t *testing.T) {
	r := Result{RecordsPerSec: 300e3, BaselineRecordsPerSec: []float64{400e3, 200e3}}
	if got := baselineRatio(r); got != 1 {
		t.Fatalf("ratio to the mean of 400k and 200k: %v, want 1", got)
	}
	if got := baselineRuns(r); got != "before 400k, after 200k rec/s" {
		t.Fatalf("runs text %q", got)
	}
	r.BaselineRecordsPerSec = r.BaselineRecordsPerSec[:1]
	if got := baselineRatio(r); got != 0.75 {
		t.Fatalf("ratio to one run of 400k: %v, want 0.75", got)
	}
}

func TestProcTimesSelf(t *testing.T) {
	before, ok := readProcTimes("self")
	if !ok {
		t.Fatal("no /proc/self/stat")
	}
	// Spin for 300 ms of CPU: the tick count must grow by about 30.
	x := 0.0
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		for i := range 10000 {
			x += math.Sqrt(float64(i))
		}
	}
	after, _ := readProcTimes("self")
	if d := after.own - before.own; d < 15 || d > 200 {
		t.Fatalf("300 ms of spinning took %d ticks (x=%v)", d, x)
	}
	m := cpuRoles(cpuSnapshot{self: before}, cpuSnapshot{self: after}, map[string]float64{"worker": 1.5})
	if m["worker"] != 1.5 || m["bench"] <= 0 || len(m) != 2 {
		t.Fatalf("roles %v: want bench and worker only (no broker read, no children of its own)", m)
	}
}

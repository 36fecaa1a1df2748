//go:build integration

package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// names renders a schedule as "name #round" and "name again(pipeline #round)"
// entries.
func names(steps []step) []string {
	var out []string
	for _, s := range steps {
		n := s.b.Name
		switch {
		case s.againFor != "":
			n += fmt.Sprintf(" again(%s #%d)", s.againFor, s.round)
		case s.round > 0:
			n += fmt.Sprintf(" #%d", s.round)
		}
		out = append(out, n)
	}
	return out
}

func TestScheduleOneRound(t *testing.T) {
	steps, err := schedule("", 1)
	if err != nil {
		t.Fatal(err)
	}
	// Each pipeline between two runs of its baseline, as before rounds.
	// The floors are registered before the pipelines and Sluice's before
	// Kafka Connect's (file name order), so they come in that order under
	// the baseline they share.
	want := []string{
		"baseline/produce-p1",
		"floor/source-handoff-p1 #1", "baseline/produce-p1 again(floor/source-handoff-p1 #1)",
		"sluice/datagen-p1 #1", "baseline/produce-p1 again(sluice/datagen-p1 #1)",
		"kafka-connect/datagen-p1 #1", "baseline/produce-p1 again(kafka-connect/datagen-p1 #1)",
		"baseline/produce-p6",
		"floor/source-handoff-p6 #1", "baseline/produce-p6 again(floor/source-handoff-p6 #1)",
		"sluice/datagen-p6 #1", "baseline/produce-p6 again(sluice/datagen-p6 #1)",
		"kafka-connect/datagen-p6 #1", "baseline/produce-p6 again(kafka-connect/datagen-p6 #1)",
		"baseline/consume-p1", "baseline/consume-p6",
		"baseline/consume-group-p1",
		"floor/sink-handoff-p1 #1", "baseline/consume-group-p1 again(floor/sink-handoff-p1 #1)",
		"sluice/noop-sink-p1 #1", "baseline/consume-group-p1 again(sluice/noop-sink-p1 #1)",
		"kafka-connect/noop-sink-p1 #1", "baseline/consume-group-p1 again(kafka-connect/noop-sink-p1 #1)",
		"baseline/consume-group-p6",
		"floor/sink-handoff-p6 #1", "baseline/consume-group-p6 again(floor/sink-handoff-p6 #1)",
		"sluice/noop-sink-p6 #1", "baseline/consume-group-p6 again(sluice/noop-sink-p6 #1)",
		"kafka-connect/noop-sink-p6 #1", "baseline/consume-group-p6 again(kafka-connect/noop-sink-p6 #1)",
		"sluice/failover-kill", "sluice/join-pause",
	}
	if got := names(steps); !slices.Equal(got, want) {
		t.Fatalf("schedule:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestScheduleThreeRounds(t *testing.T) {
	steps, err := schedule("", 3)
	if err != nil {
		t.Fatal(err)
	}
	bracket := func(base string, ps ...string) []string {
		out := []string{base}
		for _, p := range ps {
			out = append(out,
				p+" #1", base+" again("+p+" #1)",
				p+" #2", base+" again("+p+" #2)",
				p+" #3", base+" again("+p+" #3)")
		}
		return out
	}
	var want []string
	want = append(want, bracket("baseline/produce-p1", "floor/source-handoff-p1", "sluice/datagen-p1", "kafka-connect/datagen-p1")...)
	want = append(want, bracket("baseline/produce-p6", "floor/source-handoff-p6", "sluice/datagen-p6", "kafka-connect/datagen-p6")...)
	// The bare consumers (AlsoCompare only) and the failover benchmarks
	// (no baseline) run once.
	want = append(want, "baseline/consume-p1", "baseline/consume-p6")
	want = append(want, bracket("baseline/consume-group-p1", "floor/sink-handoff-p1", "sluice/noop-sink-p1", "kafka-connect/noop-sink-p1")...)
	want = append(want, bracket("baseline/consume-group-p6", "floor/sink-handoff-p6", "sluice/noop-sink-p6", "kafka-connect/noop-sink-p6")...)
	want = append(want, "sluice/failover-kill", "sluice/join-pause")
	if got := names(steps); !slices.Equal(got, want) {
		t.Fatalf("schedule:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	labels := []string{steps[0].label(3), steps[1].label(3), steps[2].label(3)}
	if want := []string{"baseline/produce-p1", "floor/source-handoff-p1 round 1/3", "baseline/produce-p1 again"}; !slices.Equal(labels, want) {
		t.Fatalf("labels %q, want %q", labels, want)
	}
	if got := steps[1].label(1); got != "floor/source-handoff-p1" {
		t.Fatalf("one round's label %q", got)
	}
	if _, err := schedule("", 0); err == nil {
		t.Fatal("zero rounds accepted")
	}
}

func TestScheduleOnlyPullsInBaselines(t *testing.T) {
	steps, err := schedule("sluice/noop-sink-p6", 2)
	if err != nil {
		t.Fatal(err)
	}
	// The bare consumer is compared with too (AlsoCompare) but runs once;
	// the group baseline brackets every round of the sink.
	want := []string{
		"baseline/consume-p6",
		"baseline/consume-group-p6",
		"sluice/noop-sink-p6 #1", "baseline/consume-group-p6 again(sluice/noop-sink-p6 #1)",
		"sluice/noop-sink-p6 #2", "baseline/consume-group-p6 again(sluice/noop-sink-p6 #2)",
	}
	if got := names(steps); !slices.Equal(got, want) {
		t.Fatalf("schedule:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	steps, err = schedule("^baseline/produce-p1$", 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(steps); !slices.Equal(got, []string{"baseline/produce-p1"}) {
		t.Fatalf("a baseline alone is run once: %v", got)
	}
	if _, err := schedule("nothing-matches", 3); err == nil {
		t.Fatal("an empty selection is not an error")
	}
}

func TestRoundsEnv(t *testing.T) {
	for _, c := range []struct {
		val  string
		want int
	}{{"", 3}, {"1", 1}, {"5", 5}} {
		t.Setenv("BENCH_ROUNDS", c.val)
		if got, err := positiveEnv("BENCH_ROUNDS", 3); err != nil || got != c.want {
			t.Fatalf("BENCH_ROUNDS=%q: %d, %v; want %d", c.val, got, err, c.want)
		}
	}
	for _, bad := range []string{"0", "-2", "three", "1.5"} {
		t.Setenv("BENCH_ROUNDS", bad)
		_, err := positiveEnv("BENCH_ROUNDS", 3)
		if err == nil || !strings.Contains(err.Error(), `BENCH_ROUNDS="`+bad+`"`) {
			t.Fatalf("BENCH_ROUNDS=%q: error %v does not name it", bad, err)
		}
	}
}

func TestRoundRatio(t *testing.T) {
	r := round{res: Result{RecordsPerSec: 300e3}, before: 400e3, after: 200e3}
	if got := r.ratio(); got != 1 {
		t.Fatalf("ratio to the mean of 400k and 200k: %v, want 1", got)
	}
	if got := baselineRuns(r.baselines()); got != "before 400k, after 200k rec/s" {
		t.Fatalf("runs text %q", got)
	}
	r.after = 0 // that run failed
	if got := r.ratio(); got != 0 {
		t.Fatalf("ratio with a failed baseline run: %v, want none", got)
	}
	if got := baselineRuns(r.baselines()); got != "one run, 400k rec/s" {
		t.Fatalf("runs text %q", got)
	}
}

func TestMedianIndex(t *testing.T) {
	for _, c := range []struct {
		ratios []float64
		want   int
	}{
		{[]float64{0.71, 0.65, 0.80}, 0},
		{[]float64{0.65, 0.80, 0.71}, 2},
		{[]float64{0.5}, 0},
		// A skipped round leaves an even count: the lower middle.
		{[]float64{0.80, 0, 0.60}, 2},
		{[]float64{0.9, 0.5, 0.7, 0.6}, 3},
		// Ties: the middle one in run order.
		{[]float64{0.7, 0.7, 0.7}, 1},
		{[]float64{0, 0, 0}, -1},
		{nil, -1},
	} {
		if got := medianIndex(c.ratios); got != c.want {
			t.Errorf("medianIndex(%v) = %d, want %d", c.ratios, got, c.want)
		}
	}
}

func TestPipelineResultIsTheMedianRound(t *testing.T) {
	rs := []round{
		{res: Result{Name: "p", RecordsPerSec: 700, Records: 1, CPUSeconds: map[string]float64{"worker": 1}}, before: 1000, after: 1000},
		{res: Result{Name: "p", RecordsPerSec: 500, Records: 2, CPUSeconds: map[string]float64{"worker": 2}}, before: 800, after: 1200},
		{res: Result{Name: "p", RecordsPerSec: 900, Records: 3, CPUSeconds: map[string]float64{"worker": 3}}, before: 1000, after: 1000},
	}
	got := pipelineResult(rs)
	if got.Records != 1 || got.CPUSeconds["worker"] != 1 || got.Ratio != 0.7 {
		t.Fatalf("reported round %d (cpu %v) with ratio %v, want the first (0.7)", got.Records, got.CPUSeconds, got.Ratio)
	}
	if !slices.Equal(got.RoundRatios, []float64{0.7, 0.5, 0.9}) || !slices.Equal(got.BaselineRecordsPerSec, []float64{1000, 1000}) {
		t.Fatalf("round ratios %v, baselines %v", got.RoundRatios, got.BaselineRecordsPerSec)
	}
	// The first round lost its "after" run: two ratios left, the lower
	// middle is 0.5, the second round's.
	rs[0].after = 0
	got = pipelineResult(rs)
	if got.Records != 2 || got.Ratio != 0.5 || !slices.Equal(got.RoundRatios, []float64{0, 0.5, 0.9}) {
		t.Fatalf("with a round skipped: round %d, ratio %v, rounds %v", got.Records, got.Ratio, got.RoundRatios)
	}
	if !slices.Equal(got.BaselineRecordsPerSec, []float64{800, 1200}) {
		t.Fatalf("baselines of the reported round: %v", got.BaselineRecordsPerSec)
	}
	for i := range rs {
		rs[i].before = 0
	}
	got = pipelineResult(rs)
	if got.Records != 1 || got.Ratio != 0 || got.RoundRatios[1] != 0 {
		t.Fatalf("no round with a ratio: round %d, ratio %v, rounds %v", got.Records, got.Ratio, got.RoundRatios)
	}
}

func TestRoundsNote(t *testing.T) {
	r := Result{
		BaselineName: "baseline/consume-group-p6", Ratio: 0.71, RoundRatios: []float64{0.71, 0.65, 0.80},
		BaselineRecordsPerSec: []float64{710e3, 828e3},
	}
	want := "rounds 0.71 0.65 0.80 (median 0.71); this round's baseline/consume-group-p6 before 710k, after 828k rec/s"
	if got := roundsNote(r); got != want {
		t.Fatalf("note %q\nwant %q", got, want)
	}
	r.RoundRatios, r.Ratio = []float64{0, 0}, 0
	r.BaselineRecordsPerSec = []float64{710e3}
	want = "rounds - - (no median); this round's baseline/consume-group-p6 one run, 710k rec/s"
	if got := roundsNote(r); got != want {
		t.Fatalf("note %q\nwant %q", got, want)
	}
	r = Result{BaselineName: "baseline/produce-p1", Ratio: 1, RoundRatios: []float64{1}, BaselineRecordsPerSec: []float64{400e3, 200e3}}
	want = "baseline/produce-p1 before 400k, after 200k rec/s (the ratio is to their mean)"
	if got := roundsNote(r); got != want {
		t.Fatalf("one round's note %q\nwant %q", got, want)
	}
}

// feed runs steps through a tally with the records/s rps gives each
// (negative: the step fails), as the harness does, and returns the progress
// lines and which steps ran.
func feed(tl *tally, steps []step, rps func(st step) float64) (lines, ran []string) {
	for k, st := range steps {
		if tl.skip(steps, k) {
			continue
		}
		ran = append(ran, names([]step{st})[0])
		res := Result{Name: st.b.Name, BaselineName: st.b.Baseline, RecordsPerSec: rps(st)}
		if res.RecordsPerSec < 0 {
			res = Result{Name: st.b.Name, BaselineName: st.b.Baseline, Error: "boom"}
		}
		if line := tl.add(st, res); line != "" {
			lines = append(lines, line)
		}
	}
	return lines, ran
}

func TestRoundTally(t *testing.T) {
	steps, err := schedule("sluice/noop-sink-p6", 3)
	if err != nil {
		t.Fatal(err)
	}
	// Baseline runs 1000, 800, 1200, 1000 (k/s); sink rounds 700, 500, 900.
	base := []float64{1000e3, 800e3, 1200e3, 1000e3}
	sink := []float64{630e3, 550e3, 990e3}
	nb, ns := 0, 0
	tl := newTally(3)
	lines, _ := feed(tl, steps, func(st step) float64 {
		switch st.b.Name {
		case "baseline/consume-p6":
			return 2000e3
		case "baseline/consume-group-p6":
			nb++
			return base[nb-1]
		}
		ns++
		return sink[ns-1]
	})
	wantLines := []string{
		"  sluice/noop-sink-p6 round 1/3: 0.70 of baseline/consume-group-p6 (before 1000k, after 800k rec/s)",
		"  sluice/noop-sink-p6 round 2/3: 0.55 of baseline/consume-group-p6 (before 800k, after 1200k rec/s)",
		"  sluice/noop-sink-p6 round 3/3: 0.90 of baseline/consume-group-p6 (before 1200k, after 1000k rec/s)",
	}
	if !slices.Equal(lines, wantLines) {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(wantLines, "\n"))
	}
	results, reruns := tl.finish()
	if len(results) != 3 || len(reruns) != 3 {
		t.Fatalf("%d results, %d reruns; want 3 (bare, group, sink) and 3", len(results), len(reruns))
	}
	p := results[2]
	if p.Name != "sluice/noop-sink-p6" || p.RecordsPerSec != 630e3 || math.Abs(p.Ratio-0.7) > 1e-9 {
		t.Fatalf("reported %s at %v rec/s, ratio %v; want the first round (0.70)", p.Name, p.RecordsPerSec, p.Ratio)
	}
	if len(p.RoundRatios) != 3 || math.Abs(p.RoundRatios[1]-0.55) > 1e-9 {
		t.Fatalf("round ratios %v", p.RoundRatios)
	}
	if got := p.AlsoRatios["baseline/consume-p6"]; math.Abs(got-0.315) > 1e-9 {
		t.Fatalf("ratio to the bare consumer %v, want the median round's 630k over 2000k", got)
	}

	// The baseline run between rounds 1 and 2 fails: both rounds lose
	// their ratio, round 3's is left.
	nb, ns = 0, 0
	base[1] = -1
	tl = newTally(3)
	lines, _ = feed(tl, steps, func(st step) float64 {
		switch st.b.Name {
		case "baseline/consume-p6":
			return 2000e3
		case "baseline/consume-group-p6":
			nb++
			return base[nb-1]
		}
		ns++
		return sink[ns-1]
	})
	if len(lines) != 3 || !strings.Contains(lines[0], "round 1/3: no ratio") || !strings.Contains(lines[1], "round 2/3: no ratio") {
		t.Fatalf("lines %q", lines)
	}
	results, reruns = tl.finish()
	if p := results[2]; p.RecordsPerSec != 990e3 || math.Abs(p.Ratio-0.9) > 1e-9 || p.RoundRatios[0] != 0 || p.RoundRatios[1] != 0 {
		t.Fatalf("after a failed baseline run: %v rec/s, ratio %v, rounds %v", p.RecordsPerSec, p.Ratio, p.RoundRatios)
	}
	if len(reruns) != 3 || reruns[0].Error == "" {
		t.Fatalf("reruns %v: the failed run is kept", reruns)
	}
}

func TestRoundFailureStopsThePipeline(t *testing.T) {
	// Two pipelines on one baseline: when P's second round fails, its
	// third round and the baseline run after it are skipped, but the run
	// after the failed round stays, as Q's "before".
	b := Benchmark{Name: "base"}
	p := Benchmark{Name: "p", Baseline: "base"}
	q := Benchmark{Name: "q", Baseline: "base"}
	var steps []step
	steps = append(steps, step{b: b})
	for _, x := range []Benchmark{p, q} {
		for i := 1; i <= 3; i++ {
			steps = append(steps, step{b: x, round: i}, step{b: b, round: i, againFor: x.Name})
		}
	}
	tl := newTally(3)
	_, ran := feed(tl, steps, func(st step) float64 {
		if st.b.Name == "p" && st.round == 2 {
			return -1
		}
		if st.b.Name == "base" {
			return 1000
		}
		return 500
	})
	want := []string{
		"base", "p #1", "base again(p #1)", "p #2", "base again(p #2)",
		"q #1", "base again(q #1)", "q #2", "base again(q #2)", "q #3", "base again(q #3)",
	}
	if !slices.Equal(ran, want) {
		t.Fatalf("ran:\n%s\nwant:\n%s", strings.Join(ran, "\n"), strings.Join(want, "\n"))
	}
	results, _ := tl.finish()
	if len(results) != 3 || results[1].Error != "round 2: boom" || results[1].RecordsPerSec != 0 {
		t.Fatalf("p reported as %+v, want its failure", results[1])
	}
	if q := results[2]; q.Ratio != 0.5 || !slices.Equal(q.RoundRatios, []float64{0.5, 0.5, 0.5}) {
		t.Fatalf("q: ratio %v, rounds %v", q.Ratio, q.RoundRatios)
	}

	// The last pipeline of a baseline failing in its last round: the run
	// after it has no one to serve.
	steps = steps[:7]
	tl = newTally(3)
	_, ran = feed(tl, steps, func(st step) float64 {
		if st.b.Name == "p" && st.round == 3 {
			return -1
		}
		return 1000
	})
	if want := []string{"base", "p #1", "base again(p #1)", "p #2", "base again(p #2)", "p #3"}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
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

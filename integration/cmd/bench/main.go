//go:build integration

// Command bench measures Sluice against raw franz-go on a real Kafka broker
// that it starts itself (see integration/kafkatest). It runs every
// registered benchmark (see Register), each pipeline BENCH_ROUNDS times
// alternating with runs of the baseline it is compared with (see
// schedule), reports the median of the rounds' ratios, prints a table with
// the CPU each process role used (see cpu.go) and, with BENCH_OUT=path,
// writes the results as JSON. Besides the baselines and Sluice's pipelines
// it runs the floors (floor_sink.go, floor_source.go): raw franz-go doing
// only what a process boundary adds, the bound a pipeline's ratio cannot
// pass on the same machine; and the same pipelines in Apache Kafka
// Connect's own worker (reference_connect.go).
//
//	make bench                                  # or:
//	BENCH_RECORDS=200000 BENCH_ONLY=produce go run -tags integration ./integration/cmd/bench
//
// Environment:
//
//	BENCH_RECORDS  records per benchmark (default 1000000; 1 KiB values)
//	BENCH_ROUNDS   runs of each pipeline, each between two runs of its
//	               baseline (default 5); the reported ratio is the median
//	               of the rounds' ratios. Baselines only compared via
//	               AlsoCompare and benchmarks without a baseline run once
//	BENCH_ONLY     regular expression selecting benchmarks by name; the
//	               baselines they compare with run too
//	BENCH_OUT      write JSON results to this file
//	BENCH_SLUICE_PROPS  k=v,k=v added to the pipelines' worker properties
//	BENCH_CONNECT_PROPS  the same for the Kafka Connect reference's worker
//	               (reference_connect.go)
//	BENCH_KAFKA_DIR  where the broker keeps its data (default: a directory
//	               in /dev/shm when it is there, see kafkaDir)
//	BENCH_KAFKA_JVM_OPTS  extra JVM flags for the broker, space-separated,
//	               after brokerJVMOpts (to try JIT or GC settings)
//	BENCH_KAFKA_KEEP  keep the broker's directory (its log: node-0.log) at
//	               the end and print where it is
//	SLUICE_CACHE   Kafka jar cache (default ~/.cache/sluice)
//
// Every run's line ends with a host probe: how long a fixed SHA-256 took
// right before it (see hostProbe), because the machine's speed drifts.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-io/sluice/integration/kafkatest"
)

// brokerJVMOpts are the heap and GC settings of Kafka's own start script
// (kafka-server-start.sh), with the full JIT: benchmarks measure a broker
// configured like a real one, not the quick-start test broker.
var brokerJVMOpts = []string{
	"-Xms1g", "-Xmx1g",
	"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
	"-XX:+ExplicitGCInvokesConcurrent", "-XX:-UsePerfData", "-Djava.awt.headless=true",
}

// defaultRounds is BENCH_ROUNDS unless set: five, because on this
// project's benchmark machines (Firecracker microVMs whose freed memory goes
// back to the host) a produce run's speed swings by up to 2x with the state
// of the memory the broker writes its log into (docs/benchmarks.md,
// 2026-12-02), and a median of three rounds moved with single outliers.
const defaultRounds = 5

// perBenchTimeout bounds one benchmark; 1M records take seconds when
// healthy.
const perBenchTimeout = 10 * time.Minute

// Report is the JSON document BENCH_OUT receives.
type Report struct {
	StartedAt    time.Time `json:"started_at"`
	KafkaVersion string    `json:"kafka_version"`
	GoVersion    string    `json:"go_version"`
	CPUs         int       `json:"cpus"`
	CPUModel     string    `json:"cpu_model"`
	LoadAvg      string    `json:"loadavg_at_start"`
	Records      int       `json:"records"`
	Rounds       int       `json:"rounds"`
	Results      []Result  `json:"results"`
	// BaselineReruns are the further runs of baselines, each right after a
	// round of a benchmark compared with it (see Result.RoundRatios).
	BaselineReruns []Result `json:"baseline_reruns,omitempty"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	records, err := positiveEnv("BENCH_RECORDS", 1_000_000)
	if err != nil {
		return err
	}
	rounds, err := positiveEnv("BENCH_ROUNDS", defaultRounds)
	if err != nil {
		return err
	}
	steps, err := schedule(os.Getenv("BENCH_ONLY"), rounds)
	if err != nil {
		return err
	}
	rep := Report{
		StartedAt: time.Now().UTC(), KafkaVersion: kafkatest.KafkaVersion, GoVersion: runtime.Version(),
		CPUs: runtime.NumCPU(), CPUModel: cpuModel(), LoadAvg: loadAvg(), Records: records, Rounds: rounds,
	}

	fmt.Fprintf(out, "preparing %d payload records and starting Kafka %s...\n", records, kafkatest.KafkaVersion)
	payload := NewPayload(records, 1)
	start := time.Now()
	kdir, err := kafkaDir()
	if err != nil {
		return err
	}
	if os.Getenv("BENCH_KAFKA_KEEP") != "" {
		defer fmt.Fprintf(out, "broker directory kept: %s\n", kdir)
	} else {
		defer os.RemoveAll(kdir)
	}
	jvmOpts := append(slices.Clone(brokerJVMOpts), strings.Fields(os.Getenv("BENCH_KAFKA_JVM_OPTS"))...)
	cluster, err := kafkatest.Start(ctx, kafkatest.Options{
		Dir:     kdir,
		JVMOpts: jvmOpts,
		BrokerConfig: map[string]string{
			// Kafka's defaults, rather than the trimmed test settings.
			"num.network.threads": "3",
			"num.io.threads":      "8",
			// The topics of produce benchmarks are deleted after them
			// (BenchEnv.Discard): their files go a second later rather
			// than Kafka's minute, so the data never piles up.
			"file.delete.delay.ms": "1000",
		},
	})
	if err != nil {
		return err
	}
	defer cluster.Close()
	fmt.Fprintf(out, "kafka ready at %s in %s (load average %s; %d CPUs: %s)\n", cluster.BootstrapString(), time.Since(start).Round(time.Millisecond), rep.LoadAvg, rep.CPUs, rep.CPUModel)
	fmt.Fprintln(out, "baselines produce uncompressed, as the worker does by default (compression.type=none)")

	dir, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		return fmt.Errorf("scratch dir: %w", err)
	}
	defer os.RemoveAll(dir)
	env := &BenchEnv{Cluster: cluster, Records: records, Payload: payload, Dir: dir}
	took, err := warmUp(ctx, env)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "broker warmed up with %d records produced and read back in %s\n", min(records, warmUpRecords), took.Round(time.Millisecond))

	var failed []string
	t := newTally(rounds)
	for k, st := range steps {
		if t.skip(steps, k) {
			continue
		}
		label := st.label(rounds)
		probe := hostProbe()
		res, err := runOne(ctx, env, st.b)
		if err != nil {
			failed = append(failed, label)
			res = Result{Name: st.b.Name, BaselineName: st.b.Baseline, Error: err.Error()}
			fmt.Fprintf(out, "%-34s FAILED: %v\n", label, err)
		} else {
			fmt.Fprintf(out, "%-34s %10.0f rec/s %8.1f MB/s  cpu s: %s  (host probe %.0f ms)\n", label, res.RecordsPerSec, res.MBPerSec, cpuText(res.CPUSeconds), probe)
		}
		res.HostProbeMs = probe
		if line := t.add(st, res); line != "" {
			fmt.Fprintln(out, line)
		}
		if ctx.Err() != nil {
			break
		}
	}
	rep.Results, rep.BaselineReruns = t.finish()

	fmt.Fprintln(out)
	printTable(out, rep.Results)
	if path := os.Getenv("BENCH_OUT"); path != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("encode results: %w", err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write BENCH_OUT: %w", err)
		}
		fmt.Fprintf(out, "results written to %s\n", path)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d benchmark(s) failed: %s", len(failed), strings.Join(failed, ", "))
	}
	return ctx.Err()
}

// positiveEnv is the positive integer in the environment variable name,
// or def if it is unset or empty.
func positiveEnv(name string, def int) (int, error) {
	s := os.Getenv(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", name, s)
	}
	return n, nil
}

// kafkaDir is a fresh directory for the broker's data: under
// BENCH_KAFKA_DIR if set, else in /dev/shm (memory) when it exists, else
// the default temporary directory. On the development machine the same
// produce baseline swung by 2× within one run once a few gigabytes had
// gone through the page cache to the virtual disk (the broker's CPU per
// record doubling with it); in memory, the disk's writeback is out of the
// comparison. Each produce benchmark's topic is deleted after it, so a run
// holds about three topics of Records records at a time.
func kafkaDir() (string, error) {
	parent := os.Getenv("BENCH_KAFKA_DIR")
	if parent == "" {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			parent = "/dev/shm"
		}
	}
	dir, err := os.MkdirTemp(parent, "sluice-bench-kafka-")
	if err != nil {
		return "", fmt.Errorf("broker data directory: %w", err)
	}
	return dir, nil
}

// step is one run of a benchmark.
type step struct {
	b Benchmark
	// round numbers a compared benchmark's runs from 1, and the baseline
	// run right after each of them; it is 0 on benchmarks that run once.
	round int
	// againFor is set on a baseline's further runs, each right after a
	// round of the benchmark of that name: its figure goes into that
	// round's ratio (and the next round's) and not into the table.
	againFor string
}

// schedule orders the registry and applies BENCH_ONLY, keeping the
// baselines that selected benchmarks compare with (Baseline and
// AlsoCompare). The benchmarks without a Baseline run in registration
// order, each followed by every benchmark compared with it, which runs
// rounds times, each round followed by the baseline again. With rounds=3:
//
//	baseline/produce-p1, sluice/datagen-p1 #1, baseline/produce-p1 again,
//	sluice/datagen-p1 #2, baseline/produce-p1 again, sluice/datagen-p1 #3,
//	baseline/produce-p1 again, baseline/produce-p6, ...
//
// On a small shared machine a baseline drifts by tens of percent between
// runs a minute apart; a round's ratio to the mean of the baseline runs
// right before and right after it drifts much less, and the median of the
// rounds' ratios shrugs off a round the broker or a neighbour disturbed.
// A baseline run between two rounds serves both. Baselines only named in
// AlsoCompare, and benchmarks without a baseline, run once. The order also
// keeps what pipelines depend on ahead of them: the group baselines, whose
// first group makes the broker create __consumer_offsets, run before the
// sinks.
func schedule(only string, rounds int) ([]step, error) {
	if rounds <= 0 {
		return nil, fmt.Errorf("schedule %d rounds: want at least one", rounds)
	}
	var re *regexp.Regexp
	if only != "" {
		var err error
		if re, err = regexp.Compile(only); err != nil {
			return nil, fmt.Errorf("BENCH_ONLY: %w", err)
		}
	}
	want := map[string]bool{}
	for _, b := range registry {
		refs := append([]string{b.Baseline}, b.AlsoCompare...)
		for _, name := range refs {
			if name == "" {
				continue
			}
			if base := benchmarkNamed(name); base.Name == "" || base.Baseline != "" {
				return nil, fmt.Errorf("benchmark %s compares with %q, which is not a registered baseline", b.Name, name)
			}
		}
		if re == nil || re.MatchString(b.Name) {
			for _, name := range append(refs, b.Name) {
				if name != "" {
					want[name] = true
				}
			}
		}
	}
	var out []step
	for _, b := range registry {
		if b.Baseline != "" || !want[b.Name] {
			continue
		}
		out = append(out, step{b: b})
		for _, p := range registry {
			if p.Baseline != b.Name || !want[p.Name] {
				continue
			}
			for i := 1; i <= rounds; i++ {
				out = append(out, step{b: p, round: i}, step{b: b, round: i, againFor: p.Name})
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("BENCH_ONLY=%q selects no benchmark", only)
	}
	return out, nil
}

// label names a step in the progress lines and the list of failures.
func (st step) label(rounds int) string {
	switch {
	case st.againFor != "":
		return st.b.Name + " again"
	case st.round > 0 && rounds > 1:
		return fmt.Sprintf("%s round %d/%d", st.b.Name, st.round, rounds)
	}
	return st.b.Name
}

// tally turns the outcomes of a schedule's steps, in run order, into the
// report's results.
type tally struct {
	rounds    int
	results   []Result           // in run order of each benchmark's first step
	reruns    []Result           // the baselines' runs after rounds
	index     map[string]int     // benchmark name -> position in results
	pipelines map[string][]round // a pipeline's successful rounds, in run order
	// stopped holds the failure of each pipeline one of whose rounds
	// failed; its remaining rounds are not run (see skip).
	stopped map[string]Result
	prev    Result // the previous step's outcome
}

func newTally(rounds int) *tally {
	return &tally{rounds: rounds, index: map[string]int{}, pipelines: map[string][]round{}, stopped: map[string]Result{}}
}

// skip reports whether steps[k] is not to run because a round of its
// pipeline failed: the benchmark has failed, and its remaining rounds could
// only cost time. The baseline run after the failed round still runs if
// the next step to run is another pipeline's round, which needs it as its
// "before" (only the run right after the failed round can be).
func (t *tally) skip(steps []step, k int) bool {
	st := steps[k]
	if st.againFor == "" {
		_, ok := t.stopped[st.b.Name]
		return ok && st.round > 0
	}
	if _, ok := t.stopped[st.againFor]; !ok {
		return false
	}
	if t.prev.Name != st.againFor {
		return true // not right after the failed round
	}
	for _, next := range steps[k+1:] {
		owner := next.b.Name
		if next.againFor != "" {
			owner = next.againFor
		}
		if _, ok := t.stopped[owner]; ok && next.round > 0 {
			continue // skipped too
		}
		return next.round == 0 || next.againFor != "" || next.b.Baseline != st.b.Name
	}
	return true
}

// add records the outcome of step st (res.Error set if it failed) and
// returns the progress line on a round's ratio, if the step completes one.
func (t *tally) add(st step, res Result) string {
	defer func() { t.prev = res }()
	switch {
	case st.againFor != "":
		t.reruns = append(t.reruns, res)
		rs := t.pipelines[st.againFor]
		if _, ok := t.stopped[st.againFor]; ok || len(rs) == 0 {
			return "" // run only as the next pipeline's "before"
		}
		r := &rs[len(rs)-1]
		if res.Error == "" {
			r.after = res.RecordsPerSec
		}
		name := r.res.Name
		if t.rounds > 1 {
			name += fmt.Sprintf(" round %d/%d", st.round, t.rounds)
		}
		if v := r.ratio(); v > 0 {
			return fmt.Sprintf("  %s: %.2f of %s (%s)", name, v, st.b.Name, baselineRuns(r.baselines()))
		}
		return fmt.Sprintf("  %s: no ratio, a run of %s failed", name, st.b.Name)
	case st.round > 0:
		if st.round == 1 {
			t.index[st.b.Name] = len(t.results)
			t.results = append(t.results, Result{Name: st.b.Name, BaselineName: st.b.Baseline})
		}
		if res.Error != "" {
			if t.rounds > 1 {
				res.Error = fmt.Sprintf("round %d: %s", st.round, res.Error)
			}
			t.stopped[st.b.Name] = res
			return ""
		}
		r := round{res: res}
		if t.prev.Name == st.b.Baseline && t.prev.Error == "" {
			r.before = t.prev.RecordsPerSec
		}
		t.pipelines[st.b.Name] = append(t.pipelines[st.b.Name], r)
	default:
		t.index[st.b.Name] = len(t.results)
		t.results = append(t.results, res)
	}
	return ""
}

// finish reports each pipeline by its median round (see pipelineResult)
// or its failure, and fills in the AlsoCompare ratios.
func (t *tally) finish() (results, reruns []Result) {
	for name, i := range t.index {
		if res, ok := t.stopped[name]; ok {
			t.results[i] = res
		} else if rs, ok := t.pipelines[name]; ok {
			t.results[i] = pipelineResult(rs)
		}
	}
	for i := range t.results {
		r := &t.results[i]
		if r.Error != "" {
			continue
		}
		// The median round's records/s over the bare consumer's one run.
		for _, name := range benchmarkNamed(r.Name).AlsoCompare {
			if j, ok := t.index[name]; ok && t.results[j].Error == "" && t.results[j].RecordsPerSec > 0 {
				if r.AlsoRatios == nil {
					r.AlsoRatios = map[string]float64{}
				}
				r.AlsoRatios[name] = r.RecordsPerSec / t.results[j].RecordsPerSec
			}
		}
	}
	return t.results, t.reruns
}

// benchmarkNamed is the registered benchmark of that name, or a zero one.
func benchmarkNamed(name string) Benchmark {
	for _, b := range registry {
		if b.Name == name {
			return b
		}
	}
	return Benchmark{}
}

// round is one run of a pipeline with its baseline's runs around it.
type round struct {
	res Result
	// before and after are the baseline's records/s right before and
	// right after res; 0 if that run failed.
	before, after float64
}

// ratio is the round's records/s over the mean of the baseline runs
// around it, or 0 if either failed: a one-sided ratio would carry the
// whole drift the pair is there to cancel.
func (r round) ratio() float64 {
	if r.before <= 0 || r.after <= 0 {
		return 0
	}
	return r.res.RecordsPerSec / ((r.before + r.after) / 2)
}

// baselines are the baseline's records/s before and after the round,
// leaving out failed runs.
func (r round) baselines() []float64 {
	var v []float64
	for _, x := range []float64{r.before, r.after} {
		if x > 0 {
			v = append(v, x)
		}
	}
	return v
}

// medianIndex is the index of the median of the positive ratios (0 means
// a round without a ratio, which does not count), or -1 if there is none.
// Of an even count it is the lower middle one: a real round's figures,
// never an average of two rounds, and the more conservative of the two.
// Equal ratios keep their run order.
func medianIndex(ratios []float64) int {
	var idx []int
	for i, v := range ratios {
		if v > 0 {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return -1
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ratios[a], ratios[b]) })
	return idx[(len(idx)-1)/2]
}

// pipelineResult is the Result reported for a pipeline's successful
// rounds: the median round's, with its baseline runs, the median ratio and
// every round's ratio. Without any ratio it is the first round's.
func pipelineResult(rounds []round) Result {
	ratios := make([]float64, len(rounds))
	for i, r := range rounds {
		ratios[i] = r.ratio()
	}
	m := medianIndex(ratios)
	chosen := max(m, 0)
	res := rounds[chosen].res
	res.BaselineRecordsPerSec = rounds[chosen].baselines()
	res.RoundRatios = ratios
	if m >= 0 {
		res.Ratio = ratios[m]
	}
	return res
}

// baselineRuns describes a round's baseline runs (see round.baselines).
func baselineRuns(v []float64) string {
	switch len(v) {
	case 2:
		return fmt.Sprintf("before %.0fk, after %.0fk rec/s", v[0]/1e3, v[1]/1e3)
	case 1:
		return fmt.Sprintf("one run, %.0fk rec/s", v[0]/1e3)
	}
	return "no run"
}

// roundsNote is the table's note on a pipeline's ratio.
func roundsNote(r Result) string {
	if len(r.RoundRatios) <= 1 {
		return fmt.Sprintf("%s %s (the ratio is to their mean)", r.BaselineName, baselineRuns(r.BaselineRecordsPerSec))
	}
	parts := []string{"rounds"}
	for _, v := range r.RoundRatios {
		if v > 0 {
			parts = append(parts, fmt.Sprintf("%.2f", v))
		} else {
			parts = append(parts, "-")
		}
	}
	median := "no median"
	if r.Ratio > 0 {
		median = fmt.Sprintf("median %.2f", r.Ratio)
	}
	return fmt.Sprintf("%s (%s); this round's %s %s", strings.Join(parts, " "), median, r.BaselineName, baselineRuns(r.BaselineRecordsPerSec))
}

func runOne(ctx context.Context, env *BenchEnv, b Benchmark) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, perBenchTimeout)
	defer cancel()
	if b.Prepare != nil {
		if err := b.Prepare(ctx, env); err != nil {
			return Result{}, fmt.Errorf("prepare %s: %w", b.Name, err)
		}
	}
	kafkaPid := strconv.Itoa(env.Cluster.Pid(0))
	// Peak RSS is best effort: a kernel without clear_refs still runs the
	// benchmark, it just reports lifetime peaks.
	_ = resetPeakRSS("self")
	_ = resetPeakRSS(kafkaPid)
	// The CPU window: exactly the Run call (see cpu.go).
	cpu0 := takeCPUSnapshot(kafkaPid)
	res, err := b.Run(ctx, env)
	cpu1 := takeCPUSnapshot(kafkaPid)
	if err != nil {
		return Result{}, err
	}
	if res.Records <= 0 || res.Seconds <= 0 {
		return Result{}, fmt.Errorf("benchmark %s reported %d records in %.3fs", b.Name, res.Records, res.Seconds)
	}
	res.Name = b.Name
	res.BaselineName = b.Baseline
	res.RecordsPerSec = float64(res.Records) / res.Seconds
	res.MBPerSec = float64(res.Bytes) / 1e6 / res.Seconds
	res.CPUSeconds = cpuRoles(cpu0, cpu1, res.CPUSeconds)
	if res.Bytes > 0 {
		var sum float64
		for _, v := range res.CPUSeconds {
			sum += v
		}
		res.CPUMicrosPerRecord = sum / float64(res.Records) * 1e6
	}
	if res.PeakRSSBytes == nil {
		res.PeakRSSBytes = map[string]int64{}
	}
	if v, err := peakRSS("self"); err == nil {
		res.PeakRSSBytes["bench"] = v
	}
	if v, err := peakRSS(kafkaPid); err == nil {
		res.PeakRSSBytes["kafka"] = v
	}
	return res, nil
}

func printTable(out io.Writer, results []Result) {
	rps := map[string]float64{}
	for _, r := range results {
		rps[r.Name] = r.RecordsPerSec
	}
	fmt.Fprintf(out, "%-28s %9s %8s %8s %10s %8s  %-33s %7s  %-50s %s\n",
		"benchmark", "records", "MB", "seconds", "rec/s", "MB/s", "ratio (baseline)", "µs/rec", "cpu s", "peak RSS MiB")
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(out, "%-28s FAILED: %s\n", r.Name, r.Error)
			continue
		}
		ratio := "-"
		switch {
		case r.BaselineName != "" && r.Ratio > 0:
			ratio = fmt.Sprintf("%.2f (%s)", r.Ratio, r.BaselineName)
		case r.BaselineName != "":
			ratio = fmt.Sprintf("- (%s)", r.BaselineName)
		}
		perRec := "-"
		if r.CPUMicrosPerRecord > 0 {
			perRec = fmt.Sprintf("%.1f", r.CPUMicrosPerRecord)
		}
		fmt.Fprintf(out, "%-28s %9d %8.1f %8.2f %10.0f %8.1f  %-33s %7s  %-50s %s\n",
			r.Name, r.Records, float64(r.Bytes)/1e6, r.Seconds, r.RecordsPerSec, r.MBPerSec, ratio, perRec,
			cpuText(r.CPUSeconds), rssText(r.PeakRSSBytes))
		var notes []string
		if r.BaselineName != "" {
			notes = append(notes, roundsNote(r))
		}
		for _, name := range slices.Sorted(maps.Keys(r.AlsoRatios)) {
			notes = append(notes, fmt.Sprintf("%.2f of %s (%.0fk rec/s, its one run)", r.AlsoRatios[name], name, rps[name]/1e3))
		}
		if len(notes) > 0 {
			fmt.Fprintf(out, "    %s\n", strings.Join(notes, "; "))
		}
	}
	fmt.Fprintln(out, "cpu s: user+system CPU seconds by process over the benchmark's run, start-up included; µs/rec: their sum per record")
}

// cpuText lists CPU seconds by role: bench, kafka, worker, plugins, then
// any other role.
func cpuText(m map[string]float64) string {
	order := []string{"bench", "kafka", "worker", "plugins"}
	var parts []string
	for _, k := range order {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, v))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(order, k) {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, m[k]))
		}
	}
	return strings.Join(parts, ", ")
}

func rssText(m map[string]int64) string {
	var parts []string
	for _, k := range []string{"bench", "kafka"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", k, v>>20))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != "bench" && k != "kafka" {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]>>20))
		}
	}
	return strings.Join(parts, ", ")
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// cpuModel is the processor's name as the kernel reports it: runs on
// different machines (of one cloud's "2 cores") are not comparable, and the
// report should say which one it was.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

//go:build integration

// Command bench measures Sluice against raw franz-go on a real Kafka broker
// that it starts itself (see integration/kafkatest). It runs every
// registered benchmark (see Register), each pipeline between two runs of
// the baseline it is compared with (see schedule), prints a table with the
// CPU each process role used (see cpu.go) and, with BENCH_OUT=path, writes
// the results as JSON.
//
//	make bench                                  # or:
//	BENCH_RECORDS=200000 BENCH_ONLY=produce go run -tags integration ./integration/cmd/bench
//
// Environment:
//
//	BENCH_RECORDS  records per benchmark (default 1000000; 1 KiB values)
//	BENCH_ONLY     regular expression selecting benchmarks by name; the
//	               baselines they compare with run too
//	BENCH_OUT      write JSON results to this file
//	BENCH_SLUICE_PROPS  k=v,k=v added to the pipelines' worker properties
//	SLUICE_CACHE   Kafka jar cache (default ~/.cache/sluice)
package main

import (
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

// perBenchTimeout bounds one benchmark; 1M records take seconds when
// healthy.
const perBenchTimeout = 10 * time.Minute

// Report is the JSON document BENCH_OUT receives.
type Report struct {
	StartedAt    time.Time `json:"started_at"`
	KafkaVersion string    `json:"kafka_version"`
	GoVersion    string    `json:"go_version"`
	CPUs         int       `json:"cpus"`
	LoadAvg      string    `json:"loadavg_at_start"`
	Records      int       `json:"records"`
	Results      []Result  `json:"results"`
	// BaselineReruns are the second runs of baselines, each right after a
	// benchmark compared with it (see Result.BaselineRecordsPerSec).
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
	records := 1_000_000
	if s := os.Getenv("BENCH_RECORDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return fmt.Errorf("BENCH_RECORDS=%q: want a positive integer", s)
		}
		records = n
	}
	steps, err := schedule(os.Getenv("BENCH_ONLY"))
	if err != nil {
		return err
	}
	rep := Report{
		StartedAt: time.Now().UTC(), KafkaVersion: kafkatest.KafkaVersion, GoVersion: runtime.Version(),
		CPUs: runtime.NumCPU(), LoadAvg: loadAvg(), Records: records,
	}

	fmt.Fprintf(out, "preparing %d payload records and starting Kafka %s...\n", records, kafkatest.KafkaVersion)
	payload := NewPayload(records, 1)
	start := time.Now()
	cluster, err := kafkatest.Start(ctx, kafkatest.Options{
		JVMOpts: brokerJVMOpts,
		BrokerConfig: map[string]string{
			// Kafka's defaults, rather than the trimmed test settings.
			"num.network.threads": "3",
			"num.io.threads":      "8",
		},
	})
	if err != nil {
		return err
	}
	defer cluster.Close()
	fmt.Fprintf(out, "kafka ready at %s in %s (load average %s)\n", cluster.BootstrapString(), time.Since(start).Round(time.Millisecond), rep.LoadAvg)
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
	index := map[string]int{} // position in rep.Results of each benchmark's first run
	var prev Result           // the previous step's outcome
	for _, st := range steps {
		label := st.b.Name
		if st.againFor != "" {
			if rep.Results[index[st.againFor]].Error != "" {
				continue // nothing to compare the second run with
			}
			label += " again"
		}
		res, err := runOne(ctx, env, st.b)
		if err != nil {
			failed = append(failed, label)
			res = Result{Name: st.b.Name, BaselineName: st.b.Baseline, Error: err.Error()}
			fmt.Fprintf(out, "%-34s FAILED: %v\n", label, err)
		} else {
			fmt.Fprintf(out, "%-34s %10.0f rec/s %8.1f MB/s  cpu s: %s\n", label, res.RecordsPerSec, res.MBPerSec, cpuText(res.CPUSeconds))
		}
		if st.againFor == "" {
			if err == nil && st.b.Baseline != "" && prev.Name == st.b.Baseline && prev.Error == "" {
				res.BaselineRecordsPerSec = []float64{prev.RecordsPerSec}
				res.Ratio = baselineRatio(res)
			}
			index[st.b.Name] = len(rep.Results)
			rep.Results = append(rep.Results, res)
		} else {
			rep.BaselineReruns = append(rep.BaselineReruns, res)
			if err == nil {
				p := &rep.Results[index[st.againFor]]
				p.BaselineRecordsPerSec = append(p.BaselineRecordsPerSec, res.RecordsPerSec)
				p.Ratio = baselineRatio(*p)
				fmt.Fprintf(out, "  %s: %.2f of %s (%s)\n", p.Name, p.Ratio, p.BaselineName, baselineRuns(*p))
			}
		}
		prev = res
		if ctx.Err() != nil {
			break
		}
	}
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Error != "" {
			continue
		}
		for _, name := range benchmarkNamed(r.Name).AlsoCompare {
			if j, ok := index[name]; ok && rep.Results[j].Error == "" && rep.Results[j].RecordsPerSec > 0 {
				if r.AlsoRatios == nil {
					r.AlsoRatios = map[string]float64{}
				}
				r.AlsoRatios[name] = r.RecordsPerSec / rep.Results[j].RecordsPerSec
			}
		}
	}

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

// step is one run of a benchmark.
type step struct {
	b Benchmark
	// againFor is set on a baseline's second run, right after the
	// benchmark of that name: its figure goes into that benchmark's ratio
	// and not into the table.
	againFor string
}

// schedule orders the registry and applies BENCH_ONLY, keeping the
// baselines that selected benchmarks compare with (Baseline and
// AlsoCompare). The benchmarks without a Baseline run in registration
// order, each followed by every benchmark compared with it and, after each
// of those, by itself again:
//
//	baseline/produce-p1, sluice/datagen-p1, baseline/produce-p1 again,
//	baseline/produce-p6, ...
//
// On a small shared machine a baseline drifts by tens of percent between
// runs a minute apart; a pipeline's ratio to the mean of runs right before
// and right after it drifts much less. The order also keeps what pipelines
// depend on ahead of them: the group baselines, whose first group makes the
// broker create __consumer_offsets, run before the sinks.
func schedule(only string) ([]step, error) {
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
			if p.Baseline == b.Name && want[p.Name] {
				out = append(out, step{b: p}, step{b: b, againFor: p.Name})
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("BENCH_ONLY=%q selects no benchmark", only)
	}
	return out, nil
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

// baselineRatio is r's records/s over the mean of its baseline's runs.
func baselineRatio(r Result) float64 {
	var sum float64
	for _, v := range r.BaselineRecordsPerSec {
		sum += v
	}
	if sum <= 0 {
		return 0
	}
	return r.RecordsPerSec / (sum / float64(len(r.BaselineRecordsPerSec)))
}

// baselineRuns describes the baseline runs r's ratio is to.
func baselineRuns(r Result) string {
	switch v := r.BaselineRecordsPerSec; len(v) {
	case 2:
		return fmt.Sprintf("before %.0fk, after %.0fk rec/s", v[0]/1e3, v[1]/1e3)
	case 1:
		return fmt.Sprintf("one run, %.0fk rec/s", v[0]/1e3)
	}
	return "no run"
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
		if r.BaselineName != "" {
			ratio = fmt.Sprintf("%.2f (%s)", r.Ratio, r.BaselineName)
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
			notes = append(notes, fmt.Sprintf("%s %s (the ratio is to their mean)", r.BaselineName, baselineRuns(r)))
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

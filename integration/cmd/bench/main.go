//go:build integration

// Command bench measures Sluice against raw franz-go on a real Kafka broker
// that it starts itself (see integration/kafkatest). It runs every
// registered benchmark (see Register), baselines first, prints a table and,
// with BENCH_OUT=path, writes the results as JSON.
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
	selected, err := selection(os.Getenv("BENCH_ONLY"))
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

	byName := map[string]Result{}
	var failed []string
	for _, b := range selected {
		res, err := runOne(ctx, env, b)
		if err != nil {
			failed = append(failed, b.Name)
			res = Result{Name: b.Name, BaselineName: b.Baseline, Error: err.Error()}
			fmt.Fprintf(out, "%-28s FAILED: %v\n", b.Name, err)
		} else {
			if base, ok := byName[b.Baseline]; ok && b.Baseline != "" && base.RecordsPerSec > 0 {
				res.Ratio = res.RecordsPerSec / base.RecordsPerSec
			}
			fmt.Fprintf(out, "%-28s %10.0f rec/s %8.1f MB/s\n", b.Name, res.RecordsPerSec, res.MBPerSec)
		}
		byName[b.Name] = res
		rep.Results = append(rep.Results, res)
		if ctx.Err() != nil {
			break
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

// selection orders the registry (baselines first) and applies BENCH_ONLY,
// keeping the baselines that selected benchmarks refer to.
func selection(only string) ([]Benchmark, error) {
	var re *regexp.Regexp
	if only != "" {
		var err error
		if re, err = regexp.Compile(only); err != nil {
			return nil, fmt.Errorf("BENCH_ONLY: %w", err)
		}
	}
	want := map[string]bool{}
	for _, b := range registry {
		if re == nil || re.MatchString(b.Name) {
			want[b.Name] = true
			if b.Baseline != "" {
				want[b.Baseline] = true
			}
		}
	}
	var out []Benchmark
	for _, baselines := range []bool{true, false} {
		for _, b := range registry {
			if want[b.Name] && (b.Baseline == "") == baselines {
				out = append(out, b)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("BENCH_ONLY=%q selects no benchmark", only)
	}
	return out, nil
}

func runOne(ctx context.Context, env *BenchEnv, b Benchmark) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, perBenchTimeout)
	defer cancel()
	kafkaPid := strconv.Itoa(env.Cluster.Pid(0))
	// Peak RSS is best effort: a kernel without clear_refs still runs the
	// benchmark, it just reports lifetime peaks.
	_ = resetPeakRSS("self")
	_ = resetPeakRSS(kafkaPid)
	res, err := b.Run(ctx, env)
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
	fmt.Fprintf(out, "%-28s %9s %8s %8s %10s %8s  %-26s %s\n", "benchmark", "records", "MB", "seconds", "rec/s", "MB/s", "ratio (baseline)", "peak RSS MiB")
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(out, "%-28s FAILED: %s\n", r.Name, r.Error)
			continue
		}
		ratio := "-"
		if r.BaselineName != "" {
			ratio = fmt.Sprintf("%.2f (%s)", r.Ratio, r.BaselineName)
		}
		fmt.Fprintf(out, "%-28s %9d %8.1f %8.2f %10.0f %8.1f  %-26s %s\n",
			r.Name, r.Records, float64(r.Bytes)/1e6, r.Seconds, r.RecordsPerSec, r.MBPerSec, ratio, rssText(r.PeakRSSBytes))
	}
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

//go:build integration

package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/integration/kafkatest"
)

// Result is one benchmark's outcome. Records and Bytes count what the
// benchmark moved (Bytes = key+value bytes); the harness derives the rates,
// the ratios to the baselines, the CPU and the peak RSS figures it can see,
// so a benchmark only has to fill Records, Bytes and Seconds, plus
// PeakRSSBytes and CPUSeconds entries for processes it started itself.
type Result struct {
	Name          string  `json:"name"`
	Records       int     `json:"records"`
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"` // 10^6 bytes of key+value per second
	// Ratio is how close a pipeline gets to raw franz-go: the median of
	// RoundRatios (see medianIndex; 0 for baselines and when no round has
	// a ratio). The other figures of a pipeline's Result are those of the
	// round whose ratio it is.
	Ratio        float64 `json:"ratio,omitempty"`
	BaselineName string  `json:"baseline,omitempty"`
	// BaselineRecordsPerSec are the records/s of BaselineName's runs right
	// before and right after the reported round (a failed one left out):
	// the broker's and the machine's drift between runs mostly cancels in
	// their mean.
	BaselineRecordsPerSec []float64 `json:"baseline_records_per_sec,omitempty"`
	// RoundRatios are the ratios of all of a pipeline's rounds (see
	// BENCH_ROUNDS), in run order: each round's records/s over the mean of
	// the baseline runs right before and after it; 0 for a round one of
	// whose baseline runs failed. Their spread shows how far one round
	// can be trusted.
	RoundRatios []float64 `json:"round_ratios,omitempty"`
	// AlsoRatios maps each of Benchmark.AlsoCompare to RecordsPerSec
	// divided by that benchmark's (single, earlier) run.
	AlsoRatios map[string]float64 `json:"also_ratios,omitempty"`
	// HostProbeMs is how long a fixed piece of CPU work took right before
	// the run (see hostProbe): the machine's speed at that moment.
	HostProbeMs float64 `json:"host_probe_ms,omitempty"`
	// CPUSeconds maps a process role to the user+system CPU seconds it
	// used during the benchmark (roles and window: see cpu.go).
	CPUSeconds map[string]float64 `json:"cpu_seconds,omitempty"`
	// CPUMicrosPerRecord is the sum of CPUSeconds per record moved, in µs
	// (0 for benchmarks that move no bytes).
	CPUMicrosPerRecord float64 `json:"cpu_us_per_record,omitempty"`
	// PreClockCPUSeconds is, for a pipeline, the CPU its worker process
	// (with the children it had reaped) had used when the clock started:
	// its start-up and the warm-up (see warmUpPipeline). It is part of
	// CPUSeconds["worker"].
	PreClockCPUSeconds float64 `json:"pre_clock_cpu_seconds,omitempty"`
	// PeakRSSBytes maps a process ("bench" = this harness, "kafka" = the
	// broker, or whatever a benchmark adds, e.g. "sluice") to its peak
	// resident set during the benchmark.
	PeakRSSBytes map[string]int64 `json:"peak_rss_bytes,omitempty"`
	Error        string           `json:"error,omitempty"`
}

// Benchmark is a named benchmark. The run order (see schedule): each
// benchmark without a Baseline in registration order (files' init
// functions run in file name order), each followed by the benchmarks
// compared with it, each of those run BENCH_ROUNDS times with another run
// of the baseline after every round.
type Benchmark struct {
	Name string
	// Baseline names the baseline this benchmark is compared with; it is
	// run even if BENCH_ONLY does not select it, right before this
	// benchmark's first round and again right after each round.
	Baseline string
	// AlsoCompare names further baselines that this benchmark's ratio is
	// reported to as well (against their one run); they are run too.
	AlsoCompare []string
	// Prepare, if set, runs before Run, outside what is measured (CPU and
	// peak RSS): producing the topic a consumer reads, building a plugin.
	Prepare func(ctx context.Context, env *BenchEnv) error
	Run     func(ctx context.Context, env *BenchEnv) (Result, error)
}

var registry []Benchmark

// Register adds a benchmark; call it from an init function in a file of
// this package (with the integration build tag).
func Register(b Benchmark) {
	for _, r := range registry {
		if r.Name == b.Name {
			panic("bench: duplicate benchmark " + b.Name)
		}
	}
	registry = append(registry, b)
}

// BenchEnv is what a benchmark gets: the broker, the workload size and
// shared payloads.
type BenchEnv struct {
	Cluster *kafkatest.Cluster
	// Records is the number of records each benchmark should move
	// (BENCH_RECORDS, default 1,000,000).
	Records int
	Payload *Payload
	// Dir is a scratch directory that lives as long as the run.
	Dir string

	mu     sync.Mutex
	filled map[int32]string // partitions -> topic holding Records payload records
	seq    int
}

// NewClient returns a franz-go client for the benchmark broker. The caller
// closes it.
func (e *BenchEnv) NewClient(opts ...kgo.Opt) (*kgo.Client, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.Cluster.Bootstrap()...)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("bench client: %w", err)
	}
	return cl, nil
}

// NewTopic creates a fresh, uniquely named topic (prefix plus a sequence
// number) with the given partition count.
func (e *BenchEnv) NewTopic(ctx context.Context, prefix string, partitions int32) (string, error) {
	e.mu.Lock()
	e.seq++
	name := fmt.Sprintf("%s-%d", prefix, e.seq)
	e.mu.Unlock()
	cl, err := e.NewClient()
	if err != nil {
		return "", err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, name, partitions); err != nil {
		return "", err
	}
	return name, nil
}

// FilledTopic returns a topic with the given partition count that holds
// exactly Records payload records (see Payload), producing them first
// (unmeasured) unless an earlier benchmark already did. Consumer and sink
// benchmarks read from it.
func (e *BenchEnv) FilledTopic(ctx context.Context, partitions int32) (string, error) {
	e.mu.Lock()
	t, ok := e.filled[partitions]
	e.mu.Unlock()
	if ok {
		return t, nil
	}
	topic, err := e.NewTopic(ctx, fmt.Sprintf("filled-p%d", partitions), partitions)
	if err != nil {
		return "", err
	}
	// Uncompressed, as the produce baselines write (see baseline.go).
	cl, err := e.NewClient(kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	if _, err := produceAll(ctx, cl, topic, e.Records, e.Payload); err != nil {
		return "", err
	}
	e.setFilled(partitions, topic)
	return topic, nil
}

// Discard deletes topic once a benchmark is done with it, unless it is a
// filled topic that later benchmarks read. Best effort: a topic left
// behind only costs space.
func (e *BenchEnv) Discard(ctx context.Context, topic string) {
	e.mu.Lock()
	for _, t := range e.filled {
		if t == topic {
			e.mu.Unlock()
			return
		}
	}
	e.mu.Unlock()
	cl, err := e.NewClient()
	if err != nil {
		return
	}
	defer cl.Close()
	_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topic)
}

// setFilled records that topic holds exactly Records payload records,
// unless another topic of that partition count already does: every
// consumer and sink of a run then reads the same topic, though the produce
// baselines run several times.
func (e *BenchEnv) setFilled(partitions int32, topic string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.filled == nil {
		e.filled = map[int32]string{}
	}
	if _, ok := e.filled[partitions]; !ok {
		e.filled[partitions] = topic
	}
}

// fillFirst is the Prepare of the benchmarks that read the filled topic
// of parts partitions.
func fillFirst(parts int32) func(context.Context, *BenchEnv) error {
	return func(ctx context.Context, env *BenchEnv) error {
		_, err := env.FilledTopic(ctx, parts)
		return err
	}
}

// topicRecords is how many records topic holds: the sum of its
// partitions' end offsets (the benchmarks' topics are never trimmed).
func topicRecords(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n, nil
}

// holdsExactly fails unless topic holds exactly n records.
func holdsExactly(ctx context.Context, adm *kadm.Client, topic string, n int) error {
	got, err := topicRecords(ctx, adm, topic)
	if err != nil {
		return err
	}
	if got != int64(n) {
		return fmt.Errorf("%s holds %d records, want exactly %d", topic, got, n)
	}
	return nil
}

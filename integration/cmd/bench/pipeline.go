//go:build integration

package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/integration/itest"
)

// The pipeline benchmarks: data moved by a standalone Sluice worker (the
// real bin/sluice and its plugin processes), each compared with the raw
// franz-go baseline that does the same work on the same partition count,
// run right before and right after it:
//
//   - sluice/datagen-pN: the datagen source (format=raw, 1 KiB values keyed
//     by page id, one task) writes Records records to an N-partition topic; timed from the
//     connector's creation until the topic's end offsets hold them all.
//     Baseline: baseline/produce-pN.
//   - sluice/noop-sink-pN: the noop sink (one task) reads the N-partition
//     topic the baselines filled with Records payload records; timed from
//     the connector's creation until its consumer group has committed the
//     end of every partition. Baseline: baseline/consume-group-pN, which
//     joins a group and commits every 50 ms as the worker does; the ratio
//     to the bare baseline/consume-pN is reported too.
//
// The worker is started before the clock starts and stopped after it
// stops; its start-up is not timed, but its CPU is counted (see cpu.go).
func init() { registerPipelines(sluiceRuntime) }

// pipelineRuntime is what the pipeline benchmarks run their connectors in:
// Sluice here, Apache Kafka Connect in reference_connect.go. The timing,
// the finish lines and the checks are the same for both.
type pipelineRuntime struct {
	// prefix names the benchmarks: prefix/datagen-pN, prefix/noop-sink-pN.
	prefix string
	// prepare, if not nil, runs before each benchmark, unmeasured.
	prepare func(ctx context.Context, env *BenchEnv) error
	// start starts a worker with no connectors and the pipeline worker
	// properties, in a new directory named after name, ready for REST
	// calls.
	start func(ctx context.Context, env *BenchEnv, name string) (*sluiceWorker, error)
	// sourceConfig is the source connector's configuration: records
	// records with a short key and a Payload.ValueSize value, to topic,
	// from one task.
	sourceConfig func(env *BenchEnv, topic string, records int) map[string]string
	// sinkConfig is the sink connector's: one task reads topic and drops
	// the records.
	sinkConfig func(topic string) map[string]string
	// sinkStopped finds the line the sink task logs when it stops: group
	// 1 is the number of records it was put; a "puts=N" on the same line
	// is the number of puts.
	sinkStopped *regexp.Regexp
}

var sluiceRuntime = pipelineRuntime{
	prefix: "sluice",
	start: func(ctx context.Context, env *BenchEnv, name string) (*sluiceWorker, error) {
		props, err := pipelineWorkerProps("BENCH_SLUICE_PROPS")
		if err != nil {
			return nil, err
		}
		return startSluice(ctx, env, name, props)
	},
	sourceConfig: func(env *BenchEnv, topic string, records int) map[string]string {
		return map[string]string{
			"connector.class": "io.sluice.connect.datagen.DatagenConnector",
			"tasks.max":       "1",
			"kafka.topic":     topic,
			"quickstart":      "pageviews",
			// Keyed, as the baseline's records are, so that records
			// spread over partitions by key hash rather than in sticky
			// batches.
			"key.field":   "pageid",
			"format":      "raw",
			"record.size": strconv.FormatInt(int64(env.Payload.ValueSize), 10),
			"max.records": strconv.Itoa(records),
			"random.seed": "1",
		}
	},
	sinkConfig: func(topic string) map[string]string {
		return map[string]string{
			"connector.class": "io.sluice.connect.datagen.NoopSinkConnector",
			"tasks.max":       "1",
			"topics":          topic,
		}
	},
	sinkStopped: noopCount,
}

// registerPipelines registers rt's source and sink benchmarks on 1 and 6
// partitions.
func registerPipelines(rt pipelineRuntime) {
	for _, parts := range []int32{1, 6} {
		Register(Benchmark{
			Name:     fmt.Sprintf("%s/datagen-p%d", rt.prefix, parts),
			Baseline: fmt.Sprintf("baseline/produce-p%d", parts),
			Prepare:  rt.prepare,
			Run: func(ctx context.Context, env *BenchEnv) (Result, error) {
				return datagenBench(ctx, env, rt, parts)
			},
		})
	}
	for _, parts := range []int32{1, 6} {
		ready := groupsReady(parts)
		Register(Benchmark{
			Name:        fmt.Sprintf("%s/noop-sink-p%d", rt.prefix, parts),
			Baseline:    fmt.Sprintf("baseline/consume-group-p%d", parts),
			AlsoCompare: []string{fmt.Sprintf("baseline/consume-p%d", parts)},
			Prepare: func(ctx context.Context, env *BenchEnv) error {
				if rt.prepare != nil {
					if err := rt.prepare(ctx, env); err != nil {
						return err
					}
				}
				return ready(ctx, env)
			},
			Run: func(ctx context.Context, env *BenchEnv) (Result, error) {
				return noopSinkBench(ctx, env, rt, parts)
			},
		})
	}
}

// pipelineWorkerProps are the worker settings of the pipeline benchmarks,
// for the runtime whose BENCH_*_PROPS variable is envVar: ByteArrayConverter
// passes bytes through, as the baselines do; commits every
// groupCommitEvery (50 ms) keep the sink's finish line (its committed
// offsets) within 50 ms of the moment its last record was put. Everything
// else is the worker's default, as a user would run it. envVar's value
// (k=v,k=v) adds or overrides worker settings, to try producer.*,
// consumer.* or other settings without editing this file.
func pipelineWorkerProps(envVar string) (map[string]string, error) {
	props := map[string]string{
		"key.converter":            "org.apache.kafka.connect.converters.ByteArrayConverter",
		"value.converter":          "org.apache.kafka.connect.converters.ByteArrayConverter",
		"offset.flush.interval.ms": strconv.FormatInt(groupCommitEvery.Milliseconds(), 10),
	}
	if extra := os.Getenv(envVar); extra != "" {
		for _, kv := range strings.Split(extra, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, fmt.Errorf("%s: %q is not key=value", envVar, kv)
			}
			props[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return props, nil
}

// pollEvery is how often the finish line is checked.
const pollEvery = 20 * time.Millisecond

func datagenBench(ctx context.Context, env *BenchEnv, rt pipelineRuntime, parts int32) (Result, error) {
	label := fmt.Sprintf("%s/datagen-p%d", rt.prefix, parts)
	topic, err := env.NewTopic(ctx, fmt.Sprintf("datagen-p%d", parts), parts)
	if err != nil {
		return Result{}, err
	}
	defer env.Discard(ctx, topic)
	cl, err := env.NewClient()
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	w, err := rt.start(ctx, env, fmt.Sprintf("datagen-p%d", parts))
	if err != nil {
		return Result{}, err
	}
	defer w.kill()
	name := "datagen-" + topic
	config := rt.sourceConfig(env, topic, env.Records)
	if err := warmUpPipeline(ctx, env, rt, w, adm); err != nil {
		return Result{}, err
	}
	start := time.Now()
	if err := w.createConnector(ctx, name, config); err != nil {
		return Result{}, err
	}
	var total int64
	var first phase
	for last := time.Now(); ; {
		if total, err = topicRecords(ctx, adm, topic); err != nil {
			return Result{}, err
		}
		first.see(total)
		if total >= int64(env.Records) {
			break
		}
		if time.Since(last) > time.Second {
			last = time.Now()
			if f := w.taskFailure(ctx, name); f != "" {
				return Result{}, fmt.Errorf("%s: %s", name, f)
			}
		}
		if err := sleepCtx(ctx, pollEvery); err != nil {
			return Result{}, fmt.Errorf("%s: %d of %d records on %s: %w", name, total, env.Records, topic, err)
		}
	}
	secs := time.Since(start).Seconds()
	first.report(label, "on the topic", start, total)
	w.reportStart(label)

	// The records must be what was asked for: exactly Records of them,
	// 1 KiB values that differ from each other.
	if err := sleepCtx(ctx, time.Second); err != nil {
		return Result{}, err
	}
	if err := holdsExactly(ctx, adm, topic, env.Records); err != nil {
		return Result{}, err
	}
	bytes, err := checkSample(ctx, cl, topic, env.Payload.ValueSize)
	if err != nil {
		return Result{}, err
	}
	if err := w.deleteConnector(ctx, name); err != nil {
		return Result{}, err
	}
	if err := w.stop(ctx); err != nil {
		return Result{}, err
	}
	return Result{Records: env.Records, Bytes: bytes * int64(env.Records), Seconds: secs,
		PeakRSSBytes: w.peakRSSByRole(), CPUSeconds: w.cpuByRole(), PreClockCPUSeconds: w.clockCPU}, nil
}

// checkSample reads the first records of topic and checks their values'
// size and variety; it returns the key+value bytes of one record.
func checkSample(ctx context.Context, cl *kgo.Client, topic string, size int) (int64, error) {
	const n = 2000
	recs, err := itest.ReadTopic(ctx, cl, topic, n, time.Minute)
	if err != nil {
		return 0, err
	}
	distinct := map[string]bool{}
	for _, r := range recs {
		if len(r.Value) != size {
			return 0, fmt.Errorf("%s: a value of %d bytes, want %d: %.80q", topic, len(r.Value), size, r.Value)
		}
		distinct[string(r.Value)] = true
	}
	if len(distinct) < len(recs) {
		return 0, fmt.Errorf("%s: %d distinct values among the first %d records", topic, len(distinct), len(recs))
	}
	return int64(len(recs[0].Key) + len(recs[0].Value)), nil
}

// noopCount finds the count the noop sink task logs when it stops. Plugin
// log fields reach the worker's log through JSON, so a count of a million
// may read records="1e+06".
var noopCount = regexp.MustCompile(`noop sink stopped:.* records="?([0-9.e+]+)"?.*`)

// noopPuts finds the number of Put calls in the same line.
var noopPuts = regexp.MustCompile(`puts="?([0-9.e+]+)"?`)

func noopSinkBench(ctx context.Context, env *BenchEnv, rt pipelineRuntime, parts int32) (Result, error) {
	label := fmt.Sprintf("%s/noop-sink-p%d", rt.prefix, parts)
	topic, err := env.FilledTopic(ctx, parts)
	if err != nil {
		return Result{}, err
	}
	cl, err := env.NewClient()
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := holdsExactly(ctx, adm, topic, env.Records); err != nil {
		return Result{}, err
	}
	end := int64(env.Records)

	w, err := rt.start(ctx, env, fmt.Sprintf("noop-sink-p%d", parts))
	if err != nil {
		return Result{}, err
	}
	defer w.kill()
	name := fmt.Sprintf("noop-%s-%d", topic, time.Now().UnixNano())
	group := "connect-" + name
	if err := warmUpPipeline(ctx, env, rt, w, adm); err != nil {
		return Result{}, err
	}
	start := time.Now()
	if err := w.createConnector(ctx, name, rt.sinkConfig(topic)); err != nil {
		return Result{}, err
	}
	var committed int64
	var first phase
	for last := time.Now(); ; {
		if committed, err = groupCommitted(ctx, adm, group, topic); err != nil {
			return Result{}, err
		}
		first.see(committed)
		if committed >= end {
			break
		}
		if time.Since(last) > time.Second {
			last = time.Now()
			if f := w.taskFailure(ctx, name); f != "" {
				return Result{}, fmt.Errorf("%s: %s", name, f)
			}
		}
		if err := sleepCtx(ctx, pollEvery); err != nil {
			return Result{}, fmt.Errorf("%s: committed %d of %d: %w", name, committed, end, err)
		}
	}
	secs := time.Since(start).Seconds()
	first.report(label, "committed", start, committed)
	w.reportStart(label)
	if committed != end {
		return Result{}, fmt.Errorf("%s committed %d, beyond the end %d", group, committed, end)
	}

	// The task must have been put every record exactly once: it logs its
	// count when it stops.
	if err := w.deleteConnector(ctx, name); err != nil {
		return Result{}, err
	}
	if err := w.stop(ctx); err != nil {
		return Result{}, err
	}
	// The last count in the log is this connector's: the warm-up's sink
	// was deleted before it was created.
	log, err := os.ReadFile(w.proc.LogPath())
	if err != nil {
		return Result{}, fmt.Errorf("%s: read the worker log: %w", name, err)
	}
	all := rt.sinkStopped.FindAllStringSubmatch(string(log), -1)
	if len(all) == 0 {
		return Result{}, fmt.Errorf("%s: the noop sink task logged no count when it stopped; worker log %s:\n%s", name, w.proc.LogPath(), w.proc.LogTail(15))
	}
	m := all[len(all)-1]
	if n, err := strconv.ParseFloat(m[1], 64); err != nil || int64(n) != end {
		return Result{}, fmt.Errorf("%s: the noop sink was put %s records, want %d", name, m[1], end)
	}
	if p := noopPuts.FindStringSubmatch(m[0]); p != nil {
		if puts, err := strconv.ParseFloat(p[1], 64); err == nil && puts > 0 {
			fmt.Printf("  %s: %.0f Puts, %.0f records a Put\n", label, puts, float64(end)/puts)
		}
	}
	return Result{Records: env.Records, Bytes: int64(env.Records) * env.Payload.RecordBytes(), Seconds: secs,
		PeakRSSBytes: w.peakRSSByRole(), CPUSeconds: w.cpuByRole(), PreClockCPUSeconds: w.clockCPU}, nil
}

// pipelineWarmUpRecords bounds the records a pipeline's warm-up moves each
// way.
const pipelineWarmUpRecords = 100_000

// warmUpPipeline runs, in w and before a pipeline's clock starts, the
// source connector writing pipelineWarmUpRecords (at most Records) to a
// scratch topic of six
// partitions and then the sink connector reading them back, each deleted
// once done. A worker in production has moved data before; a JVM worker
// that has not still compiles its data path (Kafka Connect's timed rounds
// were slowed by the JIT compiler running beside them), and the same
// warm-up for every runtime keeps the comparison even. It then notes the
// worker's CPU so far (w.clockCPU).
func warmUpPipeline(ctx context.Context, env *BenchEnv, rt pipelineRuntime, w *sluiceWorker, adm *kadm.Client) error {
	records := min(env.Records, pipelineWarmUpRecords)
	topic, err := env.NewTopic(ctx, "warm-up", 6)
	if err != nil {
		return err
	}
	defer env.Discard(ctx, topic)
	src := "warm-up-source-" + topic
	if err := w.createConnector(ctx, src, rt.sourceConfig(env, topic, records)); err != nil {
		return err
	}
	if err := w.awaitCount(ctx, src, int64(records), "records on "+topic, func() (int64, error) {
		return topicRecords(ctx, adm, topic)
	}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if err := w.deleteConnector(ctx, src); err != nil {
		return err
	}
	sink := "warm-up-sink-" + topic
	if err := w.createConnector(ctx, sink, rt.sinkConfig(topic)); err != nil {
		return err
	}
	if err := w.awaitCount(ctx, sink, int64(records), "committed", func() (int64, error) {
		return groupCommitted(ctx, adm, "connect-"+sink, topic)
	}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if err := w.deleteConnector(ctx, sink); err != nil {
		return err
	}
	w.clockCPU = w.cpuSoFar()
	return nil
}

// awaitCount polls count until it reaches want, failing early if
// connector name or one of its tasks FAILED; what says what is counted.
func (w *sluiceWorker) awaitCount(ctx context.Context, name string, want int64, what string, count func() (int64, error)) error {
	for {
		n, err := count()
		if err != nil {
			return err
		}
		if n >= want {
			return nil
		}
		if f := w.taskFailure(ctx, name); f != "" {
			return fmt.Errorf("%s: %s", name, f)
		}
		if err := sleepCtx(ctx, pollEvery); err != nil {
			return fmt.Errorf("%s: %d of %d %s: %w", name, n, want, what, err)
		}
	}
}

// groupCommitted is the sum of group's committed offsets on topic's
// partitions (a sink's progress: the benchmarks' topics start at offset
// 0). A retriable error counts as nothing committed yet: the coordinator
// of a new group (or the first group of a fresh broker) may not be ready.
func groupCommitted(ctx context.Context, adm *kadm.Client, group, topic string) (int64, error) {
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil && !kerr.IsRetriable(err) {
		return 0, fmt.Errorf("committed offsets of %s: %w", group, err)
	}
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			committed += o.At
		}
	})
	return committed, nil
}

// phase splits a pipeline's time into start-up (connector creation until
// the first records show at the finish line: plugin launch, and for a sink
// the consumer group join) and the steady rate after that, which the
// benchmark prints as a note under its result.
type phase struct {
	at    time.Time
	count int64
}

func (p *phase) see(n int64) {
	if p.at.IsZero() && n > 0 {
		p.at, p.count = time.Now(), n
	}
}

func (p *phase) report(name, what string, start time.Time, total int64) {
	if p.at.IsZero() {
		return
	}
	rest := time.Since(p.at).Seconds()
	rate := 0.0
	if rest > 0 {
		rate = float64(total-p.count) / rest
	}
	fmt.Printf("  %s: first records %s %.2fs after the connector's creation; then %.0f rec/s\n",
		name, what, p.at.Sub(start).Seconds(), rate)
}

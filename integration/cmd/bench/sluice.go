//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-io/sluice/integration/internal/childproc"
	"github.com/sluice-io/sluice/integration/itest"
)

// sluiceWorker is a `sluice standalone` process started for one benchmark
// (or Kafka Connect's standalone worker, see reference_connect.go), with a
// sampler that records the peak RSS of the worker and of its plugin
// processes while it runs.
type sluiceWorker struct {
	proc *childproc.Process
	url  string
	// rssName is the worker's key in peakRSSByRole: "sluice" or "connect".
	rssName string
	// readyCPU is the CPU seconds the worker (and the children it had
	// reaped) had used when it became ready: its start-up. clockCPU is
	// the same when a pipeline's clock started: start-up and warm-up.
	readyCPU, clockCPU float64

	stopSampler context.CancelFunc
	samplerDone chan struct{}
	mu          sync.Mutex
	peaks       map[int]rssPeak // by pid

	// childTicks0 is this process's reaped-children CPU time before the
	// worker started, and reapedTicks what it grew by once stop reaped the
	// worker (0 until then): the worker's and its reaped children's CPU.
	childTicks0, reapedTicks int64
}

type rssPeak struct {
	role  string // "worker", "connector" or "task"
	bytes int64
	// cpuTicks is the process's user+system CPU time, in clock ticks, when
	// last seen.
	cpuTicks int64
}

// workerStartTimeout bounds a worker's start until its REST API answers
// (awaitReady).
const workerStartTimeout = time.Minute

var restURLRe = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`)

// startSluice runs `sluice standalone` with the worker properties props
// (bootstrap.servers, listeners and the offsets file are filled in) and no
// connectors, in a new directory under env.Dir named after name, and waits
// until it is ready.
func startSluice(ctx context.Context, env *BenchEnv, name string, props map[string]string) (*sluiceWorker, error) {
	bin, err := itest.SluiceBin()
	if err != nil {
		return nil, err
	}
	// A fresh directory for every start: a pipeline runs once per round,
	// and a reused one would hand the next worker the last one's offsets
	// and, in its appended log, the last one's REST address.
	dir, err := os.MkdirTemp(env.Dir, name+"-")
	if err != nil {
		return nil, fmt.Errorf("worker dir: %w", err)
	}
	all := map[string]string{
		"bootstrap.servers":            env.Cluster.BootstrapString(),
		"listeners":                    "http://127.0.0.1:0",
		"offset.storage.file.filename": filepath.Join(dir, "connect.offsets"),
		"log.level":                    "INFO",
	}
	maps.Copy(all, props)
	propsPath, err := writeWorkerProps(dir, all)
	if err != nil {
		return nil, err
	}
	w, err := launchWorker(childproc.Spec{Path: bin, Args: []string{"standalone", propsPath}, LogPath: filepath.Join(dir, "sluice.log")}, "sluice")
	if err != nil {
		return nil, err
	}
	ctx, cancelStart := context.WithTimeout(ctx, workerStartTimeout)
	defer cancelStart()
	for w.url == "" {
		for _, line := range strings.Split(w.proc.LogTail(1000), "\n") {
			if strings.Contains(line, "worker started") {
				w.url = restURLRe.FindString(line)
			}
		}
		if w.url != "" {
			break
		}
		if w.proc.Exited() {
			return w.fail(fmt.Errorf("sluice exited during start-up: %v", w.proc.ExitErr()))
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return w.fail(fmt.Errorf("sluice did not start: %w", err))
		}
	}
	return w.awaitReady(ctx, "/health")
}

// writeWorkerProps writes props as dir/worker.properties and returns its
// path.
func writeWorkerProps(dir string, props map[string]string) (string, error) {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	path := filepath.Join(dir, "worker.properties")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("write worker properties: %w", err)
	}
	return path, nil
}

// launchWorker starts the worker process of spec and its sampler;
// rssName is sluiceWorker's.
func launchWorker(spec childproc.Spec, rssName string) (*sluiceWorker, error) {
	self0, _ := readProcTimes("self")
	p, err := childproc.Start(spec)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	w := &sluiceWorker{proc: p, rssName: rssName, stopSampler: cancel, samplerDone: make(chan struct{}), peaks: map[int]rssPeak{}, childTicks0: self0.children}
	go w.sample(sctx)
	return w, nil
}

// awaitReady waits until GET path answers 200 and returns w, or kills w
// and returns why not.
func (w *sluiceWorker) awaitReady(ctx context.Context, path string) (*sluiceWorker, error) {
	for {
		code, _, err := w.call(ctx, http.MethodGet, path, nil)
		if err == nil && code == http.StatusOK {
			w.readyCPU = w.cpuSoFar()
			return w, nil
		}
		if w.proc.Exited() {
			return w.fail(fmt.Errorf("the %s worker exited during start-up: %v", w.rssName, w.proc.ExitErr()))
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return w.fail(fmt.Errorf("the %s worker is not ready (GET %s): %w", w.rssName, path, err))
		}
	}
}

// cpuSoFar is the CPU seconds the worker process and the children it has
// reaped have used (the plugins still running are not in it).
func (w *sluiceWorker) cpuSoFar() float64 {
	t, _ := readProcTimes(strconv.Itoa(w.proc.Pid()))
	return ticksToSeconds(t.own + t.children)
}

// reportStart prints the CPU the worker's start-up and warm-up took, as a
// note under benchmark label's result: they are in the benchmark's CPU
// figures, though not in its time.
func (w *sluiceWorker) reportStart(label string) {
	fmt.Printf("  %s: before the clock the worker took %.2f CPU s to start and %.2f to warm up\n", label, w.readyCPU, w.clockCPU-w.readyCPU)
}

// fail kills a worker that did not start and returns err with its log's
// last lines.
func (w *sluiceWorker) fail(err error) (*sluiceWorker, error) {
	w.kill()
	return nil, fmt.Errorf("%w\n%s", err, w.proc.LogTail(20))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// call makes one REST request, body as JSON when not nil.
func (w *sluiceWorker) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	return itest.REST(ctx, w.url, method, path, body)
}

// createConnector POSTs a connector and requires 201.
func (w *sluiceWorker) createConnector(ctx context.Context, name string, config map[string]string) error {
	code, body, err := w.call(ctx, http.MethodPost, "/connectors", map[string]any{"name": name, "config": config})
	if err != nil {
		return fmt.Errorf("create connector %s: %w", name, err)
	}
	if code != http.StatusCreated {
		return fmt.Errorf("create connector %s: %d %s", name, code, body)
	}
	return nil
}

// deleteConnector DELETEs a connector (its tasks stop) and requires 204.
func (w *sluiceWorker) deleteConnector(ctx context.Context, name string) error {
	code, body, err := w.call(ctx, http.MethodDelete, "/connectors/"+name, nil)
	if err != nil {
		return fmt.Errorf("delete connector %s: %w", name, err)
	}
	if code != http.StatusNoContent {
		return fmt.Errorf("delete connector %s: %d %s", name, code, body)
	}
	return nil
}

// taskFailure returns the trace of a FAILED connector or task, or "".
func (w *sluiceWorker) taskFailure(ctx context.Context, name string) string {
	_, body, err := w.call(ctx, http.MethodGet, "/connectors/"+name+"/status", nil)
	if err != nil {
		return ""
	}
	var s struct {
		Connector struct{ State, Trace string }
		Tasks     []struct {
			ID           int
			State, Trace string
		}
	}
	if json.Unmarshal(body, &s) != nil {
		return ""
	}
	if s.Connector.State == "FAILED" {
		return "connector FAILED: " + s.Connector.Trace
	}
	for _, t := range s.Tasks {
		if t.State == "FAILED" {
			return fmt.Sprintf("task %d FAILED: %s", t.ID, t.Trace)
		}
	}
	return ""
}

// stop SIGTERMs the worker and waits for it; then the sampler stops.
func (w *sluiceWorker) stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := w.proc.Stop(ctx)
	w.stopSampler()
	<-w.samplerDone
	if err != nil {
		return fmt.Errorf("stop the %s worker: %w", w.rssName, err)
	}
	// Stop returns once the worker is reaped: its times are in ours now.
	if t, ok := readProcTimes("self"); ok {
		w.mu.Lock()
		w.reapedTicks = t.children - w.childTicks0
		w.mu.Unlock()
	}
	return nil
}

func (w *sluiceWorker) kill() {
	_ = w.proc.Kill()
	w.stopSampler()
	<-w.samplerDone
}

// sample reads VmHWM of the worker and of each plugin child every 100 ms:
// a plugin's own peak is lost once it exits, so it is read while it lives.
func (w *sluiceWorker) sample(ctx context.Context) {
	defer close(w.samplerDone)
	pid := w.proc.Pid()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		w.sampleOnce(pid)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (w *sluiceWorker) sampleOnce(pid int) {
	record := func(p int, role string) {
		v, err := peakRSS(strconv.Itoa(p))
		if err != nil {
			return
		}
		cpu := cpuTicks(p)
		w.mu.Lock()
		pk := w.peaks[p]
		pk.role, pk.bytes = role, max(pk.bytes, v)
		pk.cpuTicks = max(pk.cpuTicks, cpu)
		w.peaks[p] = pk
		w.mu.Unlock()
	}
	record(pid, "worker")
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil || ppid(child) != pid {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, []byte("SLUICE_CONNECTOR=")) {
			continue // plugin discovery (describe) processes, or gone
		}
		role := "connector"
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("SLUICE_TASK=")); ok && len(v) > 0 {
				role = "task"
			}
		}
		record(child, role)
	}
}

// cpuByRole is the CPU seconds of the worker ("worker") and of its
// connector and task processes ("plugins"), for Result.CPUSeconds.
//
// Plugins are sampled every 100 ms while they live (a process's times are
// gone once its parent has reaped it), so a plugin's last moments before it
// exits are missed. The total is exact instead: once stop has reaped the
// worker, its CPU together with that of every child it reaped (its
// plugins, and the short-lived plugin-discovery processes of its start-up)
// is in this process's children times, and the worker's share is that
// total less the plugins' sampled times. So "worker" also holds plugin
// discovery and the plugins' unsampled last moments (together 0.07-0.08 s
// per pipeline, measured), and worker + plugins is exactly what the worker
// and its children cost. If the worker was not reaped by stop, its last
// sample stands.
func (w *sluiceWorker) cpuByRole() map[string]float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var worker, plugins int64
	for _, p := range w.peaks {
		if p.role == "worker" {
			worker += p.cpuTicks
		} else {
			plugins += p.cpuTicks
		}
	}
	if w.reapedTicks > 0 {
		worker = max(worker, w.reapedTicks-plugins)
	}
	m := map[string]float64{"worker": ticksToSeconds(worker)}
	for _, p := range w.peaks {
		if p.role != "worker" { // a worker with plugin processes
			m["plugins"] = ticksToSeconds(plugins)
			break
		}
	}
	return m
}

// ppid is the parent of pid, or -1.
func ppid(pid int) int {
	f := statFields(strconv.Itoa(pid))
	if len(f) < 2 {
		return -1
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return n
}

// peakRSSByRole is the largest peak seen per role: "sluice" (the worker),
// "plugin-task" and "plugin-connector" (the largest single process of each
// kind).
func (w *sluiceWorker) peakRSSByRole() map[string]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int64{}
	for _, p := range w.peaks {
		key := "plugin-" + p.role
		if p.role == "worker" {
			key = w.rssName
		}
		out[key] = max(out[key], p.bytes)
	}
	return out
}

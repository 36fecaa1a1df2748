package herder

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-io/sluice/host/cluster"
	"github.com/sluice-io/sluice/host/storage"
)

// Defaults of Sluice's automatic task restart settings.
const (
	DefaultTaskRestartMaxAttempts    = 10
	DefaultTaskRestartBackoffInitial = time.Second
	DefaultTaskRestartBackoffMax     = time.Minute
)

// restartPolicy is a connector's sluice.task.restart.* settings.
type restartPolicy struct {
	enable      bool
	maxAttempts int // -1: no limit
	initial     time.Duration
	max         time.Duration
}

// parseRestartPolicy reads the settings of a validated config; what cannot
// be read takes the default.
func parseRestartPolicy(cfg map[string]string) restartPolicy {
	p := restartPolicy{maxAttempts: DefaultTaskRestartMaxAttempts, initial: DefaultTaskRestartBackoffInitial, max: DefaultTaskRestartBackoffMax}
	p.enable = strings.EqualFold(strings.TrimSpace(cfg[KeyTaskRestartEnable]), "true")
	if n, err := strconv.Atoi(strings.TrimSpace(cfg[KeyTaskRestartMaxAttempts])); err == nil && n >= -1 {
		p.maxAttempts = n
	}
	ms := func(key string, d *time.Duration) {
		if n, err := strconv.ParseInt(strings.TrimSpace(cfg[key]), 10, 64); err == nil && n >= 0 {
			*d = time.Duration(n) * time.Millisecond
		}
	}
	ms(KeyTaskRestartBackoffInitial, &p.initial)
	ms(KeyTaskRestartBackoffMax, &p.max)
	return p
}

// delay is the wait before automatic restart number attempt (from 1): the
// initial backoff doubled for each restart before it, at most max.
func (p restartPolicy) delay(attempt int) time.Duration {
	d := p.initial
	for i := 1; i < attempt && d < p.max; i++ {
		d *= 2
	}
	return min(d, p.max)
}

// next decides the automatic restart after a failure of a task that was
// started by restart number prev (0: not an automatic restart) at started:
// the number of this restart and its backoff, or ok false when the policy
// allows no more restarts in a row. A task that ran for at least the maximum
// backoff counts as a first failure again.
func (p restartPolicy) next(prev int, started time.Time) (attempt int, delay time.Duration, ok bool) {
	attempt = prev + 1
	if time.Since(started) >= p.max {
		attempt = 1
	}
	if p.maxAttempts >= 0 && attempt > p.maxAttempts {
		return attempt, 0, false
	}
	return attempt, p.delay(attempt), true
}

// afterBackoff calls fn after delay on a goroutine counted by wg, unless
// ctx ends first (the herder closes). Both herders' automatic restarts wait
// this way.
func afterBackoff(ctx context.Context, wg *sync.WaitGroup, delay time.Duration, fn func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		timer := time.NewTimer(delay)
		defer timer.Stop()
		select {
		case <-timer.C:
			fn()
		case <-ctx.Done():
		}
	}()
}

// scheduleRestart restarts a task that failed, after the backoff, when the
// connector asks for automatic restarts (sluice.task.restart.*). The
// restart is dropped if by then the task is no longer the connector's
// task of that number or no longer FAILED (restarted by hand, connector
// reconfigured, stopped or deleted), or when the herder closes.
func (h *Standalone) scheduleRestart(c *conn, t *task) {
	c.mu.Lock()
	p := parseRestartPolicy(c.config)
	c.mu.Unlock()
	if !p.enable {
		return
	}
	id := t.id.String()
	attempt, delay, ok := p.next(t.attempt, t.started)
	if !ok {
		h.log.Error("task failed again; automatic restarts exhausted, it stays FAILED", "task", id, "restarts", attempt-1, KeyTaskRestartMaxAttempts, p.maxAttempts)
		return
	}
	h.log.Warn("task failed; restarting it automatically", "task", id, "attempt", attempt, "backoff", delay)
	afterBackoff(h.ctx, &h.wg, delay, func() {
		h.async(c, "restarting the failed task "+id, func(ctx context.Context) {
			n := t.id.Task
			c.mu.Lock()
			current := n < len(c.tasks) && c.tasks[n] == t && t.state == StateFailed && !t.stopping.Load()
			if current {
				t.state, t.trace = StateRestarting, ""
			}
			c.mu.Unlock()
			if current {
				h.restartTasksAttempt(ctx, c, []int{n}, attempt)
			}
		})
	})
}

// scheduleTaskRestart is scheduleRestart for a task that failed on this
// worker in distributed mode: the owner restarts it here after the
// backoff, under the policy of its connector's current config.
func (d *Distributed) scheduleTaskRestart(dt *dtask) {
	p := parseRestartPolicy(d.config.Snapshot().ConnectorConfig(dt.id.Connector))
	if !p.enable {
		return
	}
	id := dt.id.String()
	attempt, delay, ok := p.next(dt.attempt, dt.started)
	if !ok {
		d.log.Error("task failed again; automatic restarts exhausted, it stays FAILED", "task", id, "restarts", attempt-1, KeyTaskRestartMaxAttempts, p.maxAttempts)
		return
	}
	d.log.Warn("task failed; restarting it automatically", "task", id, "attempt", attempt, "backoff", delay)
	afterBackoff(d.ctx, &d.wg, delay, func() { d.autoRestartTask(dt, attempt) })
}

// autoRestartTask replaces the failed task dt by a fresh one (RESTARTING,
// then what its runner reports), unless dt is no longer this worker's
// current task of that id (revoked, restarted by hand, reconfigured, its
// connector deleted, the herder closing), its connector is no longer
// STARTED or no longer asks for automatic restarts.
func (d *Distributed) autoRestartTask(dt *dtask, attempt int) {
	w := &d.work
	w.mu.Lock()
	defer w.mu.Unlock()
	id := dt.id
	snap := d.config.Snapshot()
	ccfg, tcfg := snap.ConnectorConfig(id.Connector), snap.TaskConfig(id)
	gen, _ := snap.TaskConfigGeneration(id.Connector)
	if d.ctx.Err() != nil || w.tasks[id] != dt || !dt.failed.Load() || dt.stopping.Load() || dt.held.Load() ||
		!w.owned.HasTask(cluster.TaskID{Connector: id.Connector, Task: int32(id.Task)}) ||
		ccfg == nil || tcfg == nil || gen != dt.gen || targetOf(snap, id.Connector) != storage.TargetStarted ||
		!parseRestartPolicy(ccfg).enable {
		d.log.Debug("automatic restart dropped: the failed task was replaced or its connector changed", "task", id.String())
		return
	}
	d.log.Info("restarting the failed task", "task", id.String(), "attempt", attempt)
	d.putTaskStatus(id, storage.StateRestarting, "", false)
	delete(w.tasks, id)
	d.stopTasks([]*dtask{dt}, false)
	w.tasks[id] = d.startTask(d.ctx, id, ccfg, tcfg, gen, false, attempt)
}

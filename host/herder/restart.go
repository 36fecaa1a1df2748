package herder

import (
	"context"
	"strconv"
	"strings"
	"time"
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

// scheduleRestart restarts a task that failed, after the backoff, when the
// connector asks for automatic restarts (sluice.task.restart.*). The
// restart is dropped if by then the task is no longer the connector's
// task of that number or no longer FAILED (restarted by hand, connector
// reconfigured, stopped or deleted), or when the herder closes. A task
// that ran for at least the maximum backoff before failing counts as a
// first failure again.
func (h *Standalone) scheduleRestart(c *conn, t *task) {
	c.mu.Lock()
	p := parseRestartPolicy(c.config)
	c.mu.Unlock()
	if !p.enable {
		return
	}
	attempt := t.attempt + 1
	if time.Since(t.started) >= p.max {
		attempt = 1
	}
	id := t.id.String()
	if p.maxAttempts >= 0 && attempt > p.maxAttempts {
		h.log.Error("task failed again; automatic restarts exhausted, it stays FAILED", "task", id, "restarts", attempt-1, KeyTaskRestartMaxAttempts, p.maxAttempts)
		return
	}
	delay := p.delay(attempt)
	h.log.Warn("task failed; restarting it automatically", "task", id, "attempt", attempt, "backoff", delay)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		timer := time.NewTimer(delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-h.ctx.Done():
			return
		}
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
	}()
}

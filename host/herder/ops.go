package herder

import (
	"context"
	"maps"
)

// ConnectorStatus implements Herder.
func (h *Standalone) ConnectorStatus(_ context.Context, name string) (*ConnectorStateInfo, error) {
	c := h.lookup(name)
	if c == nil {
		return nil, Errorf(ErrNotFound, "No status found for connector %s", name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return h.statusLocked(c), nil
}

// statusLocked builds c's status; c.mu held.
func (h *Standalone) statusLocked(c *conn) *ConnectorStateInfo {
	st := &ConnectorStateInfo{
		Name:      c.name,
		Connector: ConnectorState{State: c.state, WorkerID: h.workerIDString(), Trace: c.trace},
		Type:      c.typ(),
		Tasks:     []TaskState{},
	}
	for i, t := range c.tasks {
		if t == nil {
			continue
		}
		st.Tasks = append(st.Tasks, TaskState{ID: i, State: t.state, WorkerID: h.workerIDString(), Trace: t.trace})
	}
	return st
}

// TaskStatus implements Herder.
func (h *Standalone) TaskStatus(_ context.Context, id TaskID) (*TaskState, error) {
	c := h.lookup(id.Connector)
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if id.Task >= 0 && id.Task < len(c.tasks) && c.tasks[id.Task] != nil {
			t := c.tasks[id.Task]
			return &TaskState{ID: id.Task, State: t.state, WorkerID: h.workerIDString(), Trace: t.trace}, nil
		}
	}
	return nil, Errorf(ErrNotFound, "No status found for task %s", id)
}

// PauseConnector implements Herder: the connector and its tasks stay, idle
// (no record moves); a STOPPED connector starts, paused.
func (h *Standalone) PauseConnector(ctx context.Context, name string) error {
	return h.setTarget(ctx, name, TargetPaused)
}

// ResumeConnector implements Herder: a PAUSED connector and its tasks run
// again; a STOPPED connector starts and regenerates its tasks.
func (h *Standalone) ResumeConnector(ctx context.Context, name string) error {
	return h.setTarget(ctx, name, TargetStarted)
}

// StopConnector implements Herder (KIP-875): tasks and connector stop, the
// task configs are dropped; status shows the connector STOPPED, no tasks.
func (h *Standalone) StopConnector(ctx context.Context, name string) error {
	return h.setTarget(ctx, name, TargetStopped)
}

func (h *Standalone) setTarget(ctx context.Context, name string, target TargetState) error {
	c := h.lookup(name)
	if c == nil {
		return Errorf(ErrNotFound, "Unknown connector %s", name)
	}
	return h.run(ctx, c, "changing the target state of the connector "+name+" to "+string(target), func(ctx context.Context) error {
		c.mu.Lock()
		prev := c.target
		c.target = target
		c.mu.Unlock()
		switch {
		case target == TargetStopped:
			if prev != TargetStopped {
				h.stopAll(c, "stopping")
			}
			// Nothing runs to restart; resumed, it reads the values
			// again (and schedules anew).
			h.reloads.cancel(name)
			c.mu.Lock()
			c.state, c.trace = StateStopped, ""
			c.taskCfgs, c.tasks = nil, nil
			c.mu.Unlock()
		case prev == TargetStopped:
			h.startConnector(ctx, c, true)
		default:
			c.mu.Lock()
			if c.inst != nil && c.state != StateFailed {
				c.state = runningState(target)
			}
			tasks := append([]*task(nil), c.tasks...)
			c.mu.Unlock()
			for _, t := range tasks {
				if t == nil || t.runner == nil {
					continue
				}
				if target == TargetPaused {
					t.runner.Pause()
				} else {
					t.runner.Resume()
				}
			}
			// A connector created PAUSED gets its tasks once resumed.
			c.mu.Lock()
			first := target == TargetStarted && c.inst != nil && c.state != StateFailed && c.taskCfgs == nil
			c.mu.Unlock()
			if first {
				h.reconfigureTasks(ctx, c, true)
			}
		}
		h.log.Info("connector target state changed", "connector", name, "from", prev, "to", target)
		return nil
	})
}

// RestartConnector implements Herder with KIP-745's semantics.
func (h *Standalone) RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (*ConnectorStateInfo, error) {
	c := h.lookup(name)
	if c == nil {
		return nil, Errorf(ErrNotFound, "Unknown connector: %s", name)
	}
	if !includeTasks && !onlyFailed {
		// The legacy restart: the connector instance only; its tasks are
		// replaced only if their configs come out different.
		err := h.run(ctx, c, "restarting the connector "+name, func(ctx context.Context) error {
			c.mu.Lock()
			c.state = StateRestarting
			c.mu.Unlock()
			h.stopConnector(c)
			h.startConnector(ctx, c, false)
			return nil
		})
		return nil, err
	}
	var plan *ConnectorStateInfo
	err := h.run(ctx, c, "restarting the connector "+name+" and its tasks", func(ctx context.Context) error {
		c.mu.Lock()
		restartConn := !onlyFailed || c.state == StateFailed
		var restartTasks []int
		for i, t := range c.tasks {
			if t != nil && includeTasks && (!onlyFailed || t.state == StateFailed) {
				restartTasks = append(restartTasks, i)
			}
		}
		if restartConn {
			c.state = StateRestarting
		}
		for _, i := range restartTasks {
			c.tasks[i].state = StateRestarting
		}
		// The plan shows each instance's last trace, as Kafka's
		// buildRestartPlan copies it; the status itself has none from
		// here on (Kafka's RESTARTING status carries none).
		plan = h.statusLocked(c)
		if restartConn {
			c.trace = ""
		}
		for _, i := range restartTasks {
			c.tasks[i].trace = ""
		}
		c.mu.Unlock()

		if restartConn && includeTasks && !onlyFailed {
			// All of it reads the values again: a pending config reload
			// restart is covered (the starts schedule the next one).
			h.reloads.cancel(name)
		}
		if restartConn {
			h.stopConnector(c)
		}
		h.restartTasks(ctx, c, restartTasks)
		if restartConn {
			h.startConnector(ctx, c, false)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return plan, nil
}

// RestartTask implements Herder: the task's runner stops and a fresh one
// (a fresh plugin process) starts with the same config, resuming from the
// committed offsets.
func (h *Standalone) RestartTask(ctx context.Context, id TaskID) error {
	c := h.lookup(id.Connector)
	if c == nil {
		return Errorf(ErrNotFound, "Unknown connector: %s", id.Connector)
	}
	return h.run(ctx, c, "restarting the task "+id.String(), func(ctx context.Context) error {
		c.mu.Lock()
		known := id.Task >= 0 && id.Task < len(c.taskCfgs)
		if known && id.Task < len(c.tasks) && c.tasks[id.Task] != nil {
			c.tasks[id.Task].state, c.tasks[id.Task].trace = StateRestarting, ""
		}
		c.mu.Unlock()
		if !known {
			return Errorf(ErrNotFound, "Unknown task: %s", id)
		}
		h.restartTasks(ctx, c, []int{id.Task})
		return nil
	})
}

// restartTasks replaces the runners of the numbered tasks: all are stopped
// together, then started afresh. Their entries stay visible (RESTARTING)
// meanwhile.
func (h *Standalone) restartTasks(ctx context.Context, c *conn, nums []int) {
	h.restartTasksAttempt(ctx, c, nums, 0)
}

// restartTasksAttempt is restartTasks for automatic restart number attempt
// (0: not automatic).
func (h *Standalone) restartTasksAttempt(ctx context.Context, c *conn, nums []int, attempt int) {
	if len(nums) == 0 {
		return
	}
	c.mu.Lock()
	old := make([]*task, 0, len(nums))
	for _, n := range nums {
		if n < len(c.tasks) {
			old = append(old, c.tasks[n])
		}
	}
	c.mu.Unlock()
	h.stopTasks(c, old, "restarting")
	for _, n := range nums {
		c.mu.Lock()
		if n >= len(c.taskCfgs) {
			c.mu.Unlock()
			continue
		}
		cfg := maps.Clone(c.taskCfgs[n])
		paused := c.target == TargetPaused
		c.mu.Unlock()
		t := h.startTask(ctx, c, n, cfg, paused, StateRestarting, attempt)
		c.mu.Lock()
		for len(c.tasks) <= n {
			c.tasks = append(c.tasks, nil)
		}
		c.tasks[n] = t
		c.mu.Unlock()
	}
}

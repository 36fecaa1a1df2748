package herder

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/sluice-io/sluice/host/configprovider"
	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// Everything in this file runs with the connector's operation slot held.

// startConnector starts c's connector instance as its target state says and
// then its tasks: anew when forceTasks is set, else only when the
// connector's task configs changed. Its connector instance must not be
// running; its tasks may be (a config update keeps them, see
// PutConnectorConfig), and a connector that fails to start leaves them
// as they are, as in Kafka. A failure leaves the
// connector FAILED with the error as trace; it is not an error of the
// request, as in Kafka, where a connector that fails to start is still
// created.
func (h *Standalone) startConnector(ctx context.Context, c *conn, forceTasks bool) {
	c.mu.Lock()
	target, cfg, class := c.target, maps.Clone(c.config), c.class
	c.gen++
	gen := c.gen
	if target == TargetStopped {
		c.state, c.trace = StateStopped, ""
		c.taskCfgs, c.tasks = nil, nil
		c.mu.Unlock()
		return
	}
	if c.state != StateRestarting {
		c.state = StateUnassigned
	}
	c.trace = ""
	c.mu.Unlock()

	cfg, err := h.opts.Resolver.Resolve(ctx, cfg)
	var inst ConnectorInstance
	if err == nil {
		end := h.stages.begin("starting the connector " + c.name)
		sctx, cancel := context.WithCancel(ctx)
		unhook := context.AfterFunc(h.closing, cancel)
		inst, err = h.in.StartConnector(sctx, c.name, class, cfg, &connCallbacks{h: h, c: c, gen: gen})
		unhook()
		cancel()
		end()
	}
	if err != nil {
		h.log.Error("connector failed to start", "connector", c.name, "error", err)
		c.mu.Lock()
		c.state, c.trace = StateFailed, traceOf(err)
		c.mu.Unlock()
		return
	}
	stop := make(chan struct{})
	c.mu.Lock()
	c.inst, c.instStop = inst, stop
	// The connector may have raised an error while it started.
	failed := c.state == StateFailed
	if !failed {
		c.state = runningState(c.target)
	}
	c.mu.Unlock()
	h.watch(c, inst, gen, stop)
	if failed {
		h.stopConnector(c)
		return
	}
	h.log.Info("connector started", "connector", c.name, "class", class.Name, "target", target)
	c.mu.Lock()
	noTasksYet := c.taskCfgs == nil
	c.mu.Unlock()
	if target == TargetPaused && noTasksYet {
		// Kafka Connect generates task configs only for a connector whose
		// target is STARTED: one created PAUSED has none until resumed.
		return
	}
	h.reconfigureTasks(ctx, c, forceTasks)
}

func runningState(t TargetState) string {
	if t == TargetPaused {
		return StatePaused
	}
	return StateRunning
}

// watch turns the unplanned end of a connector's process into FAILED.
func (h *Standalone) watch(c *conn, inst ConnectorInstance, gen uint64, stop <-chan struct{}) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		select {
		case <-stop:
			return
		case <-inst.Done():
		}
		msg, trace := inst.Err()
		if msg == "" {
			msg = "the connector's plugin process ended"
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.gen != gen || c.inst != inst {
			return
		}
		c.inst = nil
		c.state, c.trace = StateFailed, joinTrace(msg, trace)
		h.log.Error("connector plugin process ended", "connector", c.name, "error", msg)
	}()
}

// stopConnector stops c's connector instance, if one runs. The connector's
// state is left to the caller.
func (h *Standalone) stopConnector(c *conn) {
	c.mu.Lock()
	inst, stop := c.inst, c.instStop
	c.inst, c.instStop = nil, nil
	c.gen++
	c.mu.Unlock()
	if inst == nil {
		return
	}
	if stop != nil {
		close(stop)
	}
	end := h.stages.begin("stopping the connector " + c.name)
	defer end()
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.ConnectorStopTimeout)
	defer cancel()
	if err := inst.Stop(ctx); err != nil {
		h.log.Warn("connector did not stop cleanly", "connector", c.name, "error", err)
	}
}

// stopAll stops c's tasks (with their drain) and then its connector.
func (h *Standalone) stopAll(c *conn, why string) {
	c.mu.Lock()
	tasks := c.tasks
	c.tasks = nil
	c.mu.Unlock()
	h.stopTasks(c, tasks, why)
	h.stopConnector(c)
}

// tasksMax reads tasks.max and tasks.max.enforce (validated before, so
// defaults stand in for anything unreadable).
func tasksMax(cfg map[string]string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(cfg[KeyTasksMax]))
	if err != nil || n < 1 {
		n = 1
	}
	enforce := !strings.EqualFold(strings.TrimSpace(cfg[KeyTasksMaxEnforce]), "false")
	return n, enforce
}

// tooManyTasks is Kafka Connect's TooManyTasksException message (KIP-1004),
// the status trace of a connector that generated, or of a task of a
// connector that has, more tasks than tasks.max.
func tooManyTasks(connector string, tasks, maxTasks int) string {
	return fmt.Sprintf("The connector %s has generated %d tasks, which is greater than %d, "+
		"the maximum number of tasks it is configured to create. "+
		"This behaviour should be considered a bug and is disallowed. "+
		"If necessary, it can be permitted by reconfiguring the connector with '%s' set to false; "+
		"however, this option will be removed in a future release of Kafka Connect.",
		connector, tasks, maxTasks, KeyTasksMaxEnforce)
}

// reconfigureTasks asks the running connector for its task configs and,
// when they changed (or force), replaces the tasks.
func (h *Standalone) reconfigureTasks(ctx context.Context, c *conn, force bool) {
	c.mu.Lock()
	inst, gen, cfg, class, state := c.inst, c.gen, c.config, c.class, c.state
	c.mu.Unlock()
	if inst == nil || state == StateFailed {
		return
	}
	maxTasks, enforce := tasksMax(resolvedOrRaw(ctx, h.opts.Resolver, cfg))
	end := h.stages.begin("generating task configurations for the connector " + c.name)
	raw, err := inst.TaskConfigs(ctx, maxTasks)
	end()
	fail := func(msg, trace string) {
		h.log.Error("connector failed", "connector", c.name, "error", msg)
		c.mu.Lock()
		if c.gen == gen {
			c.state, c.trace = StateFailed, joinTrace(msg, trace)
		}
		c.mu.Unlock()
	}
	if err != nil {
		fail("generate task configurations: "+err.Error(), wireTrace(err))
		return
	}
	if len(raw) > maxTasks {
		if enforce {
			fail(tooManyTasks(c.name, len(raw), maxTasks), "")
			return
		}
		h.log.Warn("connector generated more tasks than tasks.max; allowed by tasks.max.enforce=false", "connector", c.name, "tasks", len(raw), "tasks.max", maxTasks)
	}
	cfgs := make([]map[string]string, len(raw))
	for i, tc := range raw {
		cfgs[i] = taskConfig(tc, class, cfg)
	}
	c.mu.Lock()
	same := !force && equalTaskConfigs(c.taskCfgs, cfgs) && len(c.tasks) == len(cfgs)
	old := c.tasks
	if !same {
		c.tasks = nil
	}
	c.mu.Unlock()
	if same {
		return
	}
	h.stopTasks(c, old, "reconfiguring")
	c.mu.Lock()
	c.taskCfgs = cfgs
	paused := c.target == TargetPaused
	c.mu.Unlock()
	tasks := make([]*task, len(cfgs))
	for i, tc := range cfgs {
		tasks[i] = h.startTask(ctx, c, i, tc, paused, StateUnassigned, 0)
	}
	c.mu.Lock()
	c.tasks = tasks
	c.mu.Unlock()
	h.log.Info("tasks started", "connector", c.name, "tasks", len(tasks))
}

// taskConfig is what a task is stored and started with: the connector's
// answer plus task.class (the class's task class, else the connector class)
// and, for sinks, the connector's topics / topics.regex, as Kafka's Worker
// adds them. connCfg is the connector's
// config as submitted: a key whose submitted value holds a variable gets it
// back (Kafka's reverse transform), so the resolved secrets a connector
// copies into its task configs are neither stored nor shown; the task's
// start resolves them again.
func taskConfig(raw map[string]string, class Class, connCfg map[string]string) map[string]string {
	out := configprovider.Unresolve(connCfg, raw)
	if out == nil {
		out = map[string]string{}
	}
	out[KeyTaskClass] = class.TaskClassName()
	if class.Type == TypeSink {
		if v, ok := connCfg[KeyTopics]; ok {
			out[KeyTopics] = v
		}
		if v, ok := connCfg[KeyTopicsRegex]; ok {
			out[KeyTopicsRegex] = v
		}
	}
	return out
}

func equalTaskConfigs(a, b []map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !maps.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// task is one task runner of a connector.
type task struct {
	id       TaskID
	runner   TaskRunner
	cancel   context.CancelFunc
	done     chan struct{} // closed when Run has returned
	stopping atomic.Bool   // the herder stopped it: its events no longer count
	state    string        // guarded by the connector's mu
	trace    string
	// attempt counts the automatic restarts in a row that led to this
	// task (0: started by the herder or by hand); started is when.
	attempt int
	started time.Time
}

// startTask builds and runs a task runner; state is its status until the
// runner reports. attempt counts the automatic restarts that led to it. A
// task that fails is restarted automatically when the connector asks for
// it (scheduleRestart).
func (h *Standalone) startTask(ctx context.Context, c *conn, n int, cfg map[string]string, paused bool, state string, attempt int) *task {
	c.mu.Lock()
	spec := TaskSpec{ID: TaskID{Connector: c.name, Task: n}, Class: c.class, ConnectorConfig: maps.Clone(c.config), TaskConfig: maps.Clone(cfg)}
	c.mu.Unlock()
	t := &task{id: spec.ID, done: make(chan struct{}), state: state, attempt: attempt, started: time.Now()}
	var runner TaskRunner
	spec, err := resolveSpec(ctx, h.opts.Resolver, spec)
	if err == nil {
		var topics []string
		if spec.Class.Type == TypeSink && !h.opts.TopicTrackingDisabled {
			topics = splitList(spec.TaskConfig[KeyTopics])
		}
		runner, err = h.in.NewTask(ctx, spec, &taskListener{c: c, t: t, topics: topics})
	}
	if err != nil {
		h.log.Error("task failed to start", "task", t.id.String(), "error", err)
		t.state, t.trace = StateFailed, traceOf(err)
		close(t.done)
		h.scheduleRestart(c, t)
		return t
	}
	if paused {
		runner.Pause()
	}
	runCtx, cancel := context.WithCancel(h.ctx)
	t.runner, t.cancel = runner, cancel
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer close(t.done)
		defer cancel()
		err := runner.Run(runCtx)
		if t.stopping.Load() {
			return
		}
		c.mu.Lock()
		if t.state != StateFailed {
			if err == nil {
				err = errors.New("the task stopped on its own")
			}
			t.state, t.trace = StateFailed, traceOf(err)
			h.log.Error("task failed", "task", t.id.String(), "error", err)
		}
		c.mu.Unlock()
		h.scheduleRestart(c, t)
	}()
	return t
}

// stopTasks stops tasks together: each gets Stop, then all of them share
// the task shutdown timeout to drain; those still running are cancelled,
// which kills their plugins.
func (h *Standalone) stopTasks(c *conn, tasks []*task, why string) {
	var live []*task
	for _, t := range tasks {
		if t == nil {
			continue
		}
		t.stopping.Store(true)
		if t.runner != nil {
			t.runner.Stop()
		}
		live = append(live, t)
	}
	if len(live) == 0 {
		return
	}
	end := h.stages.begin("stopping the tasks of the connector " + c.name)
	defer end()
	// The runners enforce the timeout themselves (drain, then kill); the
	// margin lets them finish that before the herder cancels them.
	drain := time.NewTimer(h.opts.TaskShutdownTimeout + taskDrainMargin)
	defer drain.Stop()
	var late []*task
	for _, t := range live {
		select {
		case <-t.done:
			continue
		case <-drain.C:
			// Every task still running is now late; the timer fired once.
			drain.Reset(0)
		}
		late = append(late, t)
	}
	if len(late) == 0 {
		return
	}
	for _, t := range late {
		h.log.Warn("task did not stop within the shutdown timeout; cancelling it", "task", t.id.String(), "why", why, "timeout", h.opts.TaskShutdownTimeout)
		t.cancel()
	}
	kill := time.NewTimer(taskKillWait)
	defer kill.Stop()
	for _, t := range late {
		select {
		case <-t.done:
		case <-kill.C:
			h.log.Error("task runner did not end after it was cancelled", "task", t.id.String())
			return
		}
	}
}

// taskListener turns a runner's reports into the task's status. Reports of
// a task the herder is stopping, or replaced, are ignored; FAILED stays
// until the task is restarted (a new task entry).
type taskListener struct {
	c *conn
	t *task
	// topics are a sink task's configured topics, active once it runs.
	topics []string
}

func (l *taskListener) OnRunning() {
	l.set(StateRunning, "")
	if len(l.topics) > 0 {
		l.c.mu.Lock()
		for _, tp := range l.topics {
			l.c.topics[tp] = struct{}{}
		}
		l.c.mu.Unlock()
	}
}
func (l *taskListener) OnPaused()  { l.set(StatePaused, "") }
func (l *taskListener) OnStopped() { l.set(StateUnassigned, "") }
func (l *taskListener) OnFailed(err error, trace string) {
	msg := "task failed"
	if err != nil {
		msg = err.Error()
		if trace == "" {
			trace = wireTrace(err)
		}
	}
	l.set(StateFailed, joinTrace(msg, trace))
}

func (l *taskListener) set(state, trace string) {
	if l.t.stopping.Load() {
		return
	}
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	if l.t.state == StateFailed {
		return
	}
	l.t.state, l.t.trace = state, trace
}

// connCallbacks receives a connector instance's requests. gen ties them to
// the instance: requests of an instance that was since stopped are ignored.
type connCallbacks struct {
	h   *Standalone
	c   *conn
	gen uint64
}

func (cb *connCallbacks) current() bool {
	cb.c.mu.Lock()
	defer cb.c.mu.Unlock()
	return cb.c.gen == cb.gen && !cb.c.gone
}

// RequestTaskReconfiguration implements ConnectorCallbacks: it queues a
// reconfiguration; requests arriving while one is queued join it.
func (cb *connCallbacks) RequestTaskReconfiguration() {
	if !cb.current() || !cb.c.reconfig.CompareAndSwap(false, true) {
		return
	}
	c := cb.c
	cb.h.async(c, "reconfiguring the tasks of the connector "+c.name, func(ctx context.Context) {
		c.reconfig.Store(false)
		if !cb.current() {
			return
		}
		cb.h.reconfigureTasks(ctx, c, false)
	})
}

// RaiseError implements ConnectorCallbacks: the connector becomes FAILED at
// once and its instance is stopped when the connector is free.
func (cb *connCallbacks) RaiseError(message, trace string) {
	c := cb.c
	c.mu.Lock()
	if c.gen != cb.gen || c.gone {
		c.mu.Unlock()
		return
	}
	c.state, c.trace = StateFailed, joinTrace(message, trace)
	c.mu.Unlock()
	cb.h.log.Error("connector raised an error", "connector", c.name, "error", message)
	cb.h.async(c, "stopping the failed connector "+c.name, func(context.Context) {
		if cb.current() {
			cb.h.stopConnector(c)
		}
	})
}

// traceOf is the status trace of an error: its message and, for a plugin
// error, the plugin's trace (its stack or its last output lines).
func traceOf(err error) string { return joinTrace(err.Error(), wireTrace(err)) }

func wireTrace(err error) string {
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Trace
	}
	return ""
}

// joinTrace is the trace a FAILED status carries: the error's message and
// the plugin's trace, cut to maxTraceBytes.
func joinTrace(msg, trace string) string {
	if trace != "" && !strings.Contains(msg, trace) {
		msg += "\n" + trace
	}
	return capTrace(msg)
}

// maxTraceBytes bounds a status trace. Both come from the plugin, which may
// send megabytes; a status record is written to the status topic, whose
// records Kafka takes up to about 1 MB (message.max.bytes), and a record it
// refuses would leave the FAILED status unwritten. JSON escaping can make a
// trace up to six times longer (control characters), so a sixth of that.
const maxTraceBytes = 160 << 10

// capTrace cuts s to maxTraceBytes on a character boundary and says how
// much was cut.
func capTrace(s string) string {
	if len(s) <= maxTraceBytes {
		return s
	}
	cut := maxTraceBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n... (%d more bytes of the trace cut)", len(s)-cut)
}

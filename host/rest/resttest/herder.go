package resttest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/sluice-io/sluice/host/herder"
)

// WorkerID is the worker_id the fake reports.
const WorkerID = "127.0.0.1:8083"

// Herder is an in-memory herder.Herder. The zero value is not usable; call
// New.
type Herder struct {
	// Before, when set, runs first in every method with the method's name
	// ("PutConnectorConfig", "ValidateConfig", ...) and the connector it
	// concerns ("" when none); an error it returns is the method's. It runs
	// without the herder's lock, so a Before that blocks hangs that call
	// only. PutConnectorConfig and PatchConnectorConfig validate, so they
	// also pass through Before("ValidateConfig", name).
	Before func(ctx context.Context, method, connector string) error

	mu            sync.Mutex
	info          herder.ServerInfo
	starting      bool
	tracking      bool
	trackingReset bool
	stages        []*stage // in progress, oldest first
	lastStage     *stage   // last completed
	now           func() time.Time
	conns         map[string]*connector
	restarts      map[string]int // connector name or task id → restarts
}

type connector struct {
	config  map[string]string
	class   plugin
	target  herder.TargetState
	state   herder.ConnectorState
	tasks   []herder.TaskState
	offsets []herder.ConnectorOffset
	topics  []string
}

type stage struct {
	desc       string
	began, end time.Time
}

// New returns a fake herder with no connectors, ready, topic tracking on.
func New() *Herder {
	return &Herder{
		info:          herder.ServerInfo{Version: "4.0.0", Commit: "0123456789abcdef", KafkaClusterID: "fake-cluster"},
		tracking:      true,
		trackingReset: true,
		now:           time.Now,
		conns:         map[string]*connector{},
		restarts:      map[string]int{},
	}
}

var _ herder.Herder = (*Herder)(nil)

func (h *Herder) before(ctx context.Context, method, name string) error {
	if h.Before == nil {
		return nil
	}
	return h.Before(ctx, method, name)
}

// begin records a stage the herder works in, as Kafka's herder tick thread
// does; the returned func marks it complete.
func (h *Herder) begin(desc string) func() {
	st := &stage{desc: desc, began: h.now()}
	h.mu.Lock()
	h.stages = append(h.stages, st)
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		st.end = h.now()
		h.stages = slices.DeleteFunc(h.stages, func(s *stage) bool { return s == st })
		h.lastStage = st
	}
}

// Stage is Kafka's stage summary (rest.StageReporter): the oldest stage in
// progress, else the last one completed. Kafka's herder does one thing at
// a time; the fake serves calls concurrently, and the oldest unfinished one
// is what a hung call waits behind.
func (h *Herder) Stage() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var st stage
	switch {
	case len(h.stages) > 0:
		st = *h.stages[0]
	case h.lastStage != nil:
		st = *h.lastStage
	default:
		return ""
	}
	if st.end.IsZero() {
		return fmt.Sprintf("The worker is currently %s, which began at %s.", st.desc, instant(st.began))
	}
	return fmt.Sprintf("The last operation the worker completed was %s, which began at %s and completed at %s.", st.desc, instant(st.began), instant(st.end))
}

// instant formats t as Java's Instant.toString.
func instant(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.999999999Z")
}

// SetStarting makes Health answer ErrStarting.
func (h *Herder) SetStarting(starting bool) {
	h.mu.Lock()
	h.starting = starting
	h.mu.Unlock()
}

// SetTopicTracking sets topic.tracking.enable and topic.tracking.allow.reset.
func (h *Herder) SetTopicTracking(enabled, allowReset bool) {
	h.mu.Lock()
	h.tracking, h.trackingReset = enabled, allowReset
	h.mu.Unlock()
}

// SetConnectorState sets a connector's status, e.g. FAILED with a trace.
func (h *Herder) SetConnectorState(name, state, trace string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.conns[name]; ok {
		c.state.State, c.state.Trace = state, trace
	}
}

// SetTaskState sets one task's status.
func (h *Herder) SetTaskState(name string, task int, state, trace string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.conns[name]; ok && task < len(c.tasks) {
		c.tasks[task].State, c.tasks[task].Trace = state, trace
	}
}

// SetActiveTopics records topics the connector used.
func (h *Herder) SetActiveTopics(name string, topics ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.conns[name]; ok {
		c.topics = append([]string(nil), topics...)
	}
}

// Restarts counts restarts of a connector (by name) or a task (by
// "<name>-<n>").
func (h *Herder) Restarts(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.restarts[id]
}

func connectorNotFound(name string) error {
	return herder.Errorf(herder.ErrNotFound, "Connector %s not found", name)
}

// ServerInfo implements herder.Herder.
func (h *Herder) ServerInfo(ctx context.Context) (herder.ServerInfo, error) {
	if err := h.before(ctx, "ServerInfo", ""); err != nil {
		return herder.ServerInfo{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.info, nil
}

// Health implements herder.Herder.
func (h *Herder) Health(ctx context.Context) error {
	if err := h.before(ctx, "Health", ""); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.starting {
		return herder.Errorf(herder.ErrStarting, "Worker is still starting up.")
	}
	return nil
}

// Connectors implements herder.Herder; names are sorted.
func (h *Herder) Connectors(ctx context.Context) ([]string, error) {
	if err := h.before(ctx, "Connectors", ""); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Sorted(maps.Keys(h.conns)), nil
}

func (c *connector) info(name string) *herder.ConnectorInfo {
	ids := make([]herder.TaskID, len(c.tasks))
	for i := range c.tasks {
		ids[i] = herder.TaskID{Connector: name, Task: i}
	}
	return &herder.ConnectorInfo{Name: name, Config: maps.Clone(c.config), Tasks: ids, Type: c.class.typ}
}

// ConnectorInfo implements herder.Herder.
func (h *Herder) ConnectorInfo(ctx context.Context, name string) (*herder.ConnectorInfo, error) {
	if err := h.before(ctx, "ConnectorInfo", name); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[name]
	if !ok {
		return nil, connectorNotFound(name)
	}
	return c.info(name), nil
}

// ConnectorConfig implements herder.Herder.
func (h *Herder) ConnectorConfig(ctx context.Context, name string) (map[string]string, error) {
	if err := h.before(ctx, "ConnectorConfig", name); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[name]
	if !ok {
		return nil, connectorNotFound(name)
	}
	return maps.Clone(c.config), nil
}

// validated checks config as a create or update would and answers Kafka's
// 400 for an invalid one; it resolves the class.
func (h *Herder) validated(ctx context.Context, name string, config map[string]string) (plugin, error) {
	if _, ok := config["connector.class"]; !ok {
		return plugin{}, herder.Errorf(herder.ErrBadRequest, "Connector config %s contains no connector type", javaMap(config))
	}
	done := h.begin("performing multi-property validation for the connector")
	err := h.before(ctx, "ValidateConfig", name)
	done()
	if err != nil {
		return plugin{}, err
	}
	p, errs := validate(config)
	if len(errs) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "Connector configuration is invalid and contains the following %d error(s):", len(errs))
		for _, e := range errs {
			b.WriteString("\n" + e)
		}
		b.WriteString("\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`")
		return plugin{}, herder.Errorf(herder.ErrBadRequest, "%s", b.String())
	}
	return p, nil
}

// PutConnectorConfig implements herder.Herder.
func (h *Herder) PutConnectorConfig(ctx context.Context, name string, config map[string]string, allowReplace bool, initial herder.TargetState) (*herder.ConnectorInfo, bool, error) {
	if err := h.before(ctx, "PutConnectorConfig", name); err != nil {
		return nil, false, err
	}
	p, err := h.validated(ctx, name, config)
	if err != nil {
		return nil, false, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, exists := h.conns[name]
	if exists && !allowReplace {
		return nil, false, herder.Errorf(herder.ErrAlreadyExists, "Connector %s already exists", name)
	}
	if !exists {
		if initial == "" {
			initial = herder.TargetStarted
		}
		c = &connector{target: initial}
		h.conns[name] = c
	}
	c.config, c.class = maps.Clone(config), p
	c.apply()
	return c.info(name), !exists, nil
}

// apply sets statuses and tasks from the target state, as a worker that
// started everything successfully would.
func (c *connector) apply() {
	c.state = herder.ConnectorState{State: herder.StateRunning, WorkerID: WorkerID}
	taskState := herder.StateRunning
	switch c.target {
	case herder.TargetPaused:
		c.state.State, taskState = herder.StatePaused, herder.StatePaused
	case herder.TargetStopped:
		c.state.State = herder.StateStopped
		c.tasks = nil
		return
	}
	n, _ := strconv.Atoi(c.config["tasks.max"])
	if n < 1 {
		n = 1
	}
	c.tasks = make([]herder.TaskState, n)
	for i := range c.tasks {
		c.tasks[i] = herder.TaskState{ID: i, State: taskState, WorkerID: WorkerID}
	}
}

// PatchConnectorConfig implements herder.Herder.
func (h *Herder) PatchConnectorConfig(ctx context.Context, name string, patch map[string]*string) (*herder.ConnectorInfo, error) {
	if err := h.before(ctx, "PatchConnectorConfig", name); err != nil {
		return nil, err
	}
	h.mu.Lock()
	c, ok := h.conns[name]
	var merged map[string]string
	if ok {
		merged = maps.Clone(c.config)
	}
	h.mu.Unlock()
	if !ok {
		return nil, connectorNotFound(name)
	}
	for k, v := range patch {
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = *v
		}
	}
	p, err := h.validated(ctx, name, merged)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok = h.conns[name]; !ok {
		return nil, connectorNotFound(name)
	}
	c.config, c.class = merged, p
	c.apply()
	return c.info(name), nil
}

// DeleteConnector implements herder.Herder.
func (h *Herder) DeleteConnector(ctx context.Context, name string) error {
	if err := h.before(ctx, "DeleteConnector", name); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.conns[name]; !ok {
		return connectorNotFound(name)
	}
	delete(h.conns, name)
	return nil
}

func (c *connector) status(name string) *herder.ConnectorStateInfo {
	return &herder.ConnectorStateInfo{Name: name, Connector: c.state, Tasks: slices.Clone(c.tasks), Type: c.class.typ}
}

// ConnectorStatus implements herder.Herder.
func (h *Herder) ConnectorStatus(ctx context.Context, name string) (*herder.ConnectorStateInfo, error) {
	if err := h.before(ctx, "ConnectorStatus", name); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[name]
	if !ok {
		return nil, herder.Errorf(herder.ErrNotFound, "No status found for connector %s", name)
	}
	return c.status(name), nil
}

// TaskStatus implements herder.Herder.
func (h *Herder) TaskStatus(ctx context.Context, id herder.TaskID) (*herder.TaskState, error) {
	if err := h.before(ctx, "TaskStatus", id.Connector); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[id.Connector]
	if !ok || id.Task < 0 || id.Task >= len(c.tasks) {
		return nil, herder.Errorf(herder.ErrNotFound, "No status found for task %s", id)
	}
	st := c.tasks[id.Task]
	return &st, nil
}

// TaskConfigs implements herder.Herder: each task gets the connector's
// config plus task.class.
func (h *Herder) TaskConfigs(ctx context.Context, name string) ([]herder.TaskInfo, error) {
	if err := h.before(ctx, "TaskConfigs", name); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[name]
	if !ok {
		return nil, connectorNotFound(name)
	}
	out := make([]herder.TaskInfo, len(c.tasks))
	for i := range c.tasks {
		cfg := maps.Clone(c.config)
		cfg["task.class"] = c.class.taskClass
		out[i] = herder.TaskInfo{ID: herder.TaskID{Connector: name, Task: i}, Config: cfg}
	}
	return out, nil
}

// RestartConnector implements herder.Herder with KIP-745's plan: the
// connector restarts unless onlyFailed and it is not FAILED; a task
// restarts when includeTasks and (not onlyFailed or it is FAILED).
// Restarted instances come back RUNNING.
func (h *Herder) RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (*herder.ConnectorStateInfo, error) {
	if err := h.before(ctx, "RestartConnector", name); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[name]
	if !ok {
		return nil, herder.Errorf(herder.ErrNotFound, "Unknown connector: %s", name)
	}
	if !includeTasks && !onlyFailed {
		h.restarts[name]++
		if c.target != herder.TargetStopped {
			c.state.State, c.state.Trace = runningOrPaused(c.target), ""
		}
		return nil, nil
	}
	plan := c.status(name)
	if !onlyFailed || c.state.State == herder.StateFailed {
		plan.Connector.State = herder.StateRestarting
		h.restarts[name]++
		c.state.State, c.state.Trace = runningOrPaused(c.target), ""
	}
	for i, t := range c.tasks {
		if includeTasks && (!onlyFailed || t.State == herder.StateFailed) {
			plan.Tasks[i].State = herder.StateRestarting
			h.restarts[herder.TaskID{Connector: name, Task: i}.String()]++
			c.tasks[i].State, c.tasks[i].Trace = runningOrPaused(c.target), ""
		}
	}
	return plan, nil
}

func runningOrPaused(t herder.TargetState) string {
	switch t {
	case herder.TargetPaused:
		return herder.StatePaused
	case herder.TargetStopped:
		return herder.StateStopped
	}
	return herder.StateRunning
}

// RestartTask implements herder.Herder.
func (h *Herder) RestartTask(ctx context.Context, id herder.TaskID) error {
	if err := h.before(ctx, "RestartTask", id.Connector); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[id.Connector]
	if !ok {
		return herder.Errorf(herder.ErrNotFound, "Unknown connector: %s", id.Connector)
	}
	if id.Task < 0 || id.Task >= len(c.tasks) {
		return herder.Errorf(herder.ErrNotFound, "Unknown task: %s", id)
	}
	h.restarts[id.String()]++
	c.tasks[id.Task].State, c.tasks[id.Task].Trace = runningOrPaused(c.target), ""
	return nil
}

func (h *Herder) setTarget(ctx context.Context, method, name string, t herder.TargetState) error {
	if err := h.before(ctx, method, name); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[name]
	if !ok {
		return herder.Errorf(herder.ErrNotFound, "Unknown connector %s", name)
	}
	c.target = t
	c.apply()
	return nil
}

// PauseConnector implements herder.Herder.
func (h *Herder) PauseConnector(ctx context.Context, name string) error {
	return h.setTarget(ctx, "PauseConnector", name, herder.TargetPaused)
}

// ResumeConnector implements herder.Herder.
func (h *Herder) ResumeConnector(ctx context.Context, name string) error {
	return h.setTarget(ctx, "ResumeConnector", name, herder.TargetStarted)
}

// StopConnector implements herder.Herder.
func (h *Herder) StopConnector(ctx context.Context, name string) error {
	return h.setTarget(ctx, "StopConnector", name, herder.TargetStopped)
}

// ConnectorOffsets implements herder.Herder.
func (h *Herder) ConnectorOffsets(ctx context.Context, name string) (*herder.ConnectorOffsets, error) {
	if err := h.before(ctx, "ConnectorOffsets", name); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[name]
	if !ok {
		return nil, connectorNotFound(name)
	}
	return &herder.ConnectorOffsets{Offsets: slices.Clone(c.offsets)}, nil
}

// stopped is KIP-875's precondition; h.mu held.
func (h *Herder) stopped(name string) (*connector, error) {
	c, ok := h.conns[name]
	if !ok {
		return nil, connectorNotFound(name)
	}
	if c.target != herder.TargetStopped || len(c.tasks) != 0 {
		return nil, herder.Errorf(herder.ErrBadRequest, "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", name)
	}
	return c, nil
}

// AlterConnectorOffsets implements herder.Herder: null offsets remove a
// partition, others replace it.
func (h *Herder) AlterConnectorOffsets(ctx context.Context, name string, offsets *herder.ConnectorOffsets) (string, error) {
	if err := h.before(ctx, "AlterConnectorOffsets", name); err != nil {
		return "", err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.stopped(name)
	if err != nil {
		return "", err
	}
	if c.class.typ == typeSink {
		if _, err := herder.ParseSinkOffsets(offsets); err != nil {
			return "", err
		}
	} else {
		for _, o := range offsets.Offsets {
			if o.Partition == nil {
				return "", herder.Errorf(herder.ErrBadRequest, "Source partitions may not be null")
			}
		}
	}
	for _, o := range offsets.Offsets {
		key := fmt.Sprint(o.Partition)
		c.offsets = slices.DeleteFunc(c.offsets, func(e herder.ConnectorOffset) bool { return fmt.Sprint(e.Partition) == key })
		if o.Offset != nil {
			c.offsets = append(c.offsets, o)
		}
	}
	return "The Connect framework-managed offsets for this connector have been altered successfully. However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses.", nil
}

// ResetConnectorOffsets implements herder.Herder.
func (h *Herder) ResetConnectorOffsets(ctx context.Context, name string) (string, error) {
	if err := h.before(ctx, "ResetConnectorOffsets", name); err != nil {
		return "", err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.stopped(name)
	if err != nil {
		return "", err
	}
	c.offsets = nil
	return "The Connect framework-managed offsets for this connector have been reset successfully. However, if this connector manages offsets externally, they will need to be manually reset in the system that the connector uses.", nil
}

// ConnectorActiveTopics implements herder.Herder.
func (h *Herder) ConnectorActiveTopics(ctx context.Context, name string) ([]string, error) {
	if err := h.before(ctx, "ConnectorActiveTopics", name); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.tracking {
		return nil, herder.Errorf(herder.ErrForbidden, "Topic tracking is disabled.")
	}
	c, ok := h.conns[name]
	if !ok {
		return nil, connectorNotFound(name)
	}
	return slices.Clone(c.topics), nil
}

// ResetConnectorActiveTopics implements herder.Herder.
func (h *Herder) ResetConnectorActiveTopics(ctx context.Context, name string) error {
	if err := h.before(ctx, "ResetConnectorActiveTopics", name); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.tracking {
		return herder.Errorf(herder.ErrForbidden, "Topic tracking is disabled.")
	}
	if !h.trackingReset {
		return herder.Errorf(herder.ErrForbidden, "Topic tracking reset is disabled.")
	}
	c, ok := h.conns[name]
	if !ok {
		return connectorNotFound(name)
	}
	c.topics = nil
	return nil
}

// ValidateConfig implements herder.Herder.
func (h *Herder) ValidateConfig(ctx context.Context, config map[string]string) (*herder.ConfigInfos, error) {
	if _, ok := config["connector.class"]; !ok {
		return nil, herder.Errorf(herder.ErrBadRequest, "Connector config %s contains no connector type", javaMap(config))
	}
	done := h.begin("performing multi-property validation for the connector")
	err := h.before(ctx, "ValidateConfig", config["name"])
	done()
	if err != nil {
		return nil, err
	}
	return validationResult(config), nil
}

// Plugins implements herder.Herder: sinks, then sources, then (unless
// connectorsOnly) the other kinds.
func (h *Herder) Plugins(ctx context.Context, connectorsOnly bool) ([]herder.PluginInfo, error) {
	if err := h.before(ctx, "Plugins", ""); err != nil {
		return nil, err
	}
	var out []herder.PluginInfo
	for _, p := range plugins {
		if connectorsOnly && p.typ != typeSource && p.typ != typeSink {
			continue
		}
		out = append(out, herder.PluginInfo{Class: p.class, Type: p.typ, Version: p.version})
	}
	return out, nil
}

// PluginConfig implements herder.Herder.
func (h *Herder) PluginConfig(ctx context.Context, name string) ([]herder.ConfigKeyInfo, error) {
	if err := h.before(ctx, "PluginConfig", ""); err != nil {
		return nil, err
	}
	p, ok := lookup(name)
	if !ok {
		return nil, herder.Errorf(herder.ErrNotFound, "Unknown plugin %s.", name)
	}
	return slices.Clone(p.defs), nil
}

// javaMap writes a config as Java's Map.toString, keys sorted.
func javaMap(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

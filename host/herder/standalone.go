package herder

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluice-io/sluice/host/configprovider"
	"github.com/sluice-io/sluice/host/storage"
)

// Defaults of StandaloneOptions.
const (
	DefaultTaskShutdownTimeout = 5 * time.Second
	// DefaultConnectorStopTimeout bounds a connector's Stop call and the end
	// of its process.
	DefaultConnectorStopTimeout = 5 * time.Second
	// taskDrainMargin is added to the task shutdown timeout before the
	// herder cancels a runner that has not ended.
	taskDrainMargin = 3 * time.Second
	// taskKillWait bounds the wait for a task runner after its context was
	// cancelled (the runner then kills its plugin).
	taskKillWait = 10 * time.Second
)

// StandaloneOptions configure a Standalone herder.
type StandaloneOptions struct {
	// WorkerID is the worker_id shown in statuses: host:port of the
	// advertised REST URL.
	WorkerID string
	// Version, Commit and KafkaClusterID answer GET /.
	Version, Commit, KafkaClusterID string

	Instances Instances
	// Offsets holds source connectors' offsets.
	Offsets storage.OffsetStore
	// Groups reads and alters sink connectors' consumer group offsets; nil
	// makes those requests fail.
	Groups ConsumerGroups
	// Converters checks a connector's key.converter, value.converter and
	// header.converter settings; nil accepts any class.
	Converters ConverterChecker
	// OverridePolicy is connector.client.config.override.policy: All
	// (default), None or Principal.
	OverridePolicy string
	// Transforms knows the transformation and predicate classes; nil: none.
	Transforms TransformCatalog
	// OtherPlugins are the non-connector plugins GET /connector-plugins
	// lists with connectorsOnly=false (converters, transforms, predicates).
	OtherPlugins func() []PluginInfo
	// OtherPluginConfig answers GET /connector-plugins/{plugin}/config for
	// those non-connector plugins (KIP-769); nil or false: not known.
	OtherPluginConfig func(plugin string) ([]ConfigKeyInfo, bool)

	// TopicTrackingDisabled is topic.tracking.enable=false: the active
	// topics endpoints answer 403.
	TopicTrackingDisabled bool
	// TopicResetDisabled is topic.tracking.allow.reset=false.
	TopicResetDisabled bool
	// TopicCreation is topic.creation.enable: a source connector's
	// topic.creation.* settings are validated (and used by its tasks).
	TopicCreation bool

	// TaskShutdownTimeout is task.shutdown.graceful.timeout.ms: how long all
	// the tasks being stopped together get to drain before they are killed.
	TaskShutdownTimeout time.Duration
	// ConnectorStopTimeout bounds the stop of a connector instance.
	ConnectorStopTimeout time.Duration

	// Resolver replaces ${provider:path:key} variables (config.providers)
	// in the configs connectors and tasks start with and in validation;
	// stored and returned configs keep them as written. Nil resolves
	// nothing. Values a provider gives a TTL (configprovider.TTLProvider)
	// restart their connector when it runs out, unless the connector sets
	// config.action.reload=none.
	Resolver *configprovider.Resolver

	Logger hclog.Logger
}

// ConverterChecker validates a converter setting of a connector config:
// prop is key.converter, value.converter or header.converter, class its
// value, config the whole connector config (for the prefixed settings). The
// error message is shown to users as the setting's validation error.
type ConverterChecker func(prop, class string, config map[string]string) error

// Standalone is the standalone herder (Kafka Connect's StandaloneHerder):
// connector configs, target states and statuses live in memory, each
// connector instance and each task in its own plugin process.
//
// Locking: h.mu guards only the connector map. Each connector has an
// operation slot (conn.op) that serializes its lifecycle changes and is held
// across calls into its plugins, and a mutex (conn.mu) for its fields that
// is never held across a call. So a connector whose plugin hangs delays
// only requests that must change that connector; reads, validation and every
// other connector go on.
type Standalone struct {
	opts StandaloneOptions
	in   Instances
	log  hclog.Logger

	// ctx is the herder's lifetime: operations and task runners run under
	// it, detached from the request that started them, so a request that
	// times out never leaves a connector half-changed.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// closing ends when Close begins: connector starts in flight are
	// abandoned then, so that a plugin hung in start does not hold the
	// connector (and Close, which waits for it) until the call deadline.
	closing     context.Context
	stopClosing context.CancelFunc

	stages   stages
	workerID atomic.Pointer[string]

	// reloads restarts connectors whose config-provider values expire
	// (config.action.reload=restart); ctx carries its reporter.
	reloads *reloads

	mu     sync.Mutex
	conns  map[string]*conn
	ready  bool
	closed bool
}

var _ Herder = (*Standalone)(nil)

// NewStandalone builds a standalone herder. It is not ready (Health answers
// ErrStarting) until MarkReady.
func NewStandalone(opts StandaloneOptions) (*Standalone, error) {
	var errs []error
	if opts.Instances == nil {
		errs = append(errs, errors.New("no Instances"))
	}
	if opts.Offsets == nil {
		errs = append(errs, errors.New("no offset store"))
	}
	switch opts.OverridePolicy {
	case "":
		opts.OverridePolicy = PolicyAll
	case PolicyAll, PolicyNone, PolicyPrincipal:
	default:
		errs = append(errs, fmt.Errorf("override policy %q: want All, None or Principal", opts.OverridePolicy))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("standalone herder: %w", err)
	}
	if opts.TaskShutdownTimeout <= 0 {
		opts.TaskShutdownTimeout = DefaultTaskShutdownTimeout
	}
	if opts.ConnectorStopTimeout <= 0 {
		opts.ConnectorStopTimeout = DefaultConnectorStopTimeout
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Standalone{
		opts:   opts,
		in:     opts.Instances,
		log:    opts.Logger,
		cancel: cancel,
		conns:  map[string]*conn{},
	}
	h.closing, h.stopClosing = context.WithCancel(context.Background())
	h.reloads = newReloads(opts.Logger, h.reloadConfig, h.reloadConnector)
	// Everything the herder resolves under its own context (starting
	// connectors and tasks) reports expiring values; validation, under
	// the request's context, does not.
	h.ctx = h.reloads.attach(ctx)
	h.SetWorkerID(opts.WorkerID)
	return h, nil
}

// SetWorkerID changes the worker_id shown in statuses: the worker learns
// its REST port only once the server listens (listeners with port 0).
func (h *Standalone) SetWorkerID(id string) { h.workerID.Store(&id) }

func (h *Standalone) workerIDString() string { return *h.workerID.Load() }

// MarkReady ends the start-up: Health answers healthy from now on. The
// worker calls it once the connectors given on the command line exist.
func (h *Standalone) MarkReady() {
	h.mu.Lock()
	h.ready = true
	h.mu.Unlock()
}

// Close stops every task and connector (tasks drain for at most the task
// shutdown timeout, all together) and waits for the herder's goroutines,
// bounded by ctx. The herder answers nothing useful afterwards.
func (h *Standalone) Close(ctx context.Context) error {
	// First, so that no restart is queued while connectors stop (their
	// stops and any start in flight would schedule more).
	h.reloads.close()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	conns := slices.Collect(maps.Values(h.conns))
	h.mu.Unlock()
	h.stopClosing()

	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !c.acquire(ctx) {
				h.log.Warn("connector busy at shutdown; its plugins are killed with the worker", "connector", c.name)
				return
			}
			defer c.release()
			h.stopAll(c, "stopping")
		}()
	}
	wg.Wait()
	h.cancel()
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close herder: %w", ctx.Err())
	}
}

// lookup returns the connector named name or nil.
func (h *Standalone) lookup(name string) *conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns[name]
}

// ServerInfo implements Herder.
func (h *Standalone) ServerInfo(context.Context) (ServerInfo, error) {
	return ServerInfo{Version: h.opts.Version, Commit: h.opts.Commit, KafkaClusterID: h.opts.KafkaClusterID}, nil
}

// Health implements Herder: ErrStarting until MarkReady.
func (h *Standalone) Health(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.ready {
		return Errorf(ErrStarting, "Worker is still starting up.")
	}
	return nil
}

// Connectors implements Herder: the names, sorted.
func (h *Standalone) Connectors(context.Context) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := slices.Collect(maps.Keys(h.conns))
	sort.Strings(names)
	return names, nil
}

// ConnectorInfo implements Herder.
func (h *Standalone) ConnectorInfo(_ context.Context, name string) (*ConnectorInfo, error) {
	c := h.lookup(name)
	if c == nil {
		return nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	return c.info(), nil
}

// ConnectorConfig implements Herder: the config exactly as submitted.
func (h *Standalone) ConnectorConfig(_ context.Context, name string) (map[string]string, error) {
	c := h.lookup(name)
	if c == nil {
		return nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.config), nil
}

// PutConnectorConfig implements Herder. The config is validated first
// (validation errors win over ErrAlreadyExists, as in Kafka); a new
// connector starts in initial (STARTED when empty), a replaced one keeps its
// target state and restarts with its tasks.
func (h *Standalone) PutConnectorConfig(ctx context.Context, name string, config map[string]string, allowReplace bool, initial TargetState) (*ConnectorInfo, bool, error) {
	if n, ok := config["name"]; ok && n != name {
		return nil, false, Errorf(ErrBadRequest, "Connector name configuration (%s) doesn't match connector name in the URL (%s)", n, name)
	}
	target, err := parseTarget(initial)
	if err != nil {
		return nil, false, err
	}
	cfg := maps.Clone(config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	cfg["name"] = name

	infos, class, err := h.validate(ctx, cfg)
	if err != nil {
		return nil, false, err
	}
	if err := ConfigErrors(infos); err != nil {
		return nil, false, err
	}

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, false, errClosed
	}
	c, exists := h.conns[name]
	if exists && !allowReplace {
		h.mu.Unlock()
		return nil, false, Errorf(ErrAlreadyExists, "Connector %s already exists", name)
	}
	if !exists {
		c = newConn(name, target)
		c.acquireFree() // nobody else can see c yet
		h.conns[name] = c
		h.mu.Unlock()
		err := h.runHeld(ctx, c, "creating connector "+name, func(ctx context.Context) error {
			// One left by an earlier connector of that name.
			h.reloads.cancel(name)
			c.mu.Lock()
			c.config, c.class, c.classOK = cfg, class, true
			c.mu.Unlock()
			h.startConnector(ctx, c, true)
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		return c.info(), true, nil
	}
	h.mu.Unlock()
	err = h.run(ctx, c, "updating connector "+name, func(ctx context.Context) error {
		// The start below schedules anew if the new config's values
		// expire and its config.action.reload says restart.
		h.reloads.cancel(name)
		// As Kafka Connect's standalone herder: the connector restarts
		// with the new config, and its tasks keep running through it
		// unless they must change, which they must when the connector's
		// config changed (KAFKA-9228: converters and client overrides
		// reach tasks through it, not through their task configs) or
		// the new task configs differ. A PUT of the same config leaves
		// the tasks as they were, failed ones included.
		c.mu.Lock()
		changed := !maps.Equal(c.config, cfg) || c.class.Name != class.Name
		c.mu.Unlock()
		h.stopConnector(c)
		c.mu.Lock()
		c.config, c.class, c.classOK = cfg, class, true
		c.mu.Unlock()
		h.startConnector(ctx, c, changed)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return c.info(), false, nil
}

// PatchConnectorConfig implements Herder: the merged config is validated
// and applied as PUT would.
func (h *Standalone) PatchConnectorConfig(ctx context.Context, name string, patch map[string]*string) (*ConnectorInfo, error) {
	c := h.lookup(name)
	if c == nil {
		return nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	c.mu.Lock()
	merged := maps.Clone(c.config)
	c.mu.Unlock()
	for k, v := range patch {
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = *v
		}
	}
	info, _, err := h.PutConnectorConfig(ctx, name, merged, true, TargetStarted)
	return info, err
}

// DeleteConnector implements Herder: tasks and connector stop, then the
// connector is forgotten. Its offsets stay, as in Kafka.
func (h *Standalone) DeleteConnector(ctx context.Context, name string) error {
	c := h.lookup(name)
	if c == nil {
		return Errorf(ErrNotFound, "Connector %s not found", name)
	}
	return h.run(ctx, c, "deleting connector "+name, func(context.Context) error {
		h.stopAll(c, "deleting")
		h.mu.Lock()
		if h.conns[name] == c {
			delete(h.conns, name)
		}
		h.mu.Unlock()
		c.mu.Lock()
		c.gone = true
		c.mu.Unlock()
		h.reloads.cancel(name)
		return nil
	})
}

// TaskConfigs implements Herder.
func (h *Standalone) TaskConfigs(_ context.Context, name string) ([]TaskInfo, error) {
	c := h.lookup(name)
	if c == nil {
		return nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]TaskInfo, len(c.taskCfgs))
	for i, cfg := range c.taskCfgs {
		out[i] = TaskInfo{ID: TaskID{Connector: name, Task: i}, Config: maps.Clone(cfg)}
	}
	return out, nil
}

// ConnectorActiveTopics implements Herder (KIP-558): the topics the
// connector's tasks produced to or consumed from since the last reset.
func (h *Standalone) ConnectorActiveTopics(_ context.Context, name string) ([]string, error) {
	if h.opts.TopicTrackingDisabled {
		return nil, Errorf(ErrForbidden, "Topic tracking is disabled.")
	}
	c := h.lookup(name)
	if c == nil {
		return nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Collect(maps.Keys(c.topics))
	sort.Strings(out)
	return out, nil
}

// ResetConnectorActiveTopics implements Herder.
func (h *Standalone) ResetConnectorActiveTopics(_ context.Context, name string) error {
	if h.opts.TopicTrackingDisabled {
		return Errorf(ErrForbidden, "Topic tracking is disabled.")
	}
	if h.opts.TopicResetDisabled {
		return Errorf(ErrForbidden, "Topic tracking reset is disabled.")
	}
	c := h.lookup(name)
	if c == nil {
		return Errorf(ErrNotFound, "Connector %s not found", name)
	}
	c.mu.Lock()
	clear(c.topics)
	c.mu.Unlock()
	return nil
}

// RecordActiveTopic notes that a task of the connector used topic. The
// herder itself records a sink task's configured topics when the task
// runs; task runners that see the topics records go to may add more.
func (h *Standalone) RecordActiveTopic(connector, topic string) {
	if h.opts.TopicTrackingDisabled {
		return
	}
	c := h.lookup(connector)
	if c == nil {
		return
	}
	c.mu.Lock()
	c.topics[topic] = struct{}{}
	c.mu.Unlock()
}

// parseTarget accepts the herder's target states and KIP-980's spelling
// (RUNNING for STARTED).
func parseTarget(t TargetState) (TargetState, error) {
	switch t {
	case "", TargetStarted, "RUNNING":
		return TargetStarted, nil
	case TargetPaused, TargetStopped:
		return t, nil
	}
	return "", Errorf(ErrBadRequest, "Invalid initial state %s: must be one of RUNNING, PAUSED, STOPPED", t)
}

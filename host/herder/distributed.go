package herder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluice-io/sluice/host/cluster"
	"github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/storage"
)

// DistributedOptions configure a Distributed herder. The fields shared with
// standalone mode (instances, validation, offsets, plugins) mean what they
// mean there.
type DistributedOptions struct {
	StandaloneOptions

	// URL is the REST URL this worker advertises (http://host:port/);
	// followers forward to the leader's.
	URL string
	// Group configures the group membership; its Client, URL, Handler and
	// Logger are filled by the herder when empty (Client from GroupClient).
	// Its InterWorker settings configure request signing (KIP-507), on
	// while the group runs the sessioned protocol.
	Group cluster.Config
	// ConfigLog and StatusLog are the config and status topics' logs; the
	// herder builds and starts the stores on them. Offsets (in
	// StandaloneOptions) is the offsets store, started by the caller.
	ConfigLog, StatusLog storage.LogConfig
	// SyncTimeout is worker.sync.timeout.ms: how long a worker behind the
	// leader's config offset reads before it gives up and rejoins.
	SyncTimeout time.Duration
	// UnsyncBackoff is worker.unsync.backoff.ms: the longest a worker that
	// failed to catch up several rounds in a row waits before it rejoins
	// (see unsyncBackoff). Zero: it rejoins at once, every time.
	UnsyncBackoff time.Duration
	// ForwardTimeout bounds a request forwarded to another worker when the
	// caller's context has no earlier deadline.
	ForwardTimeout time.Duration
	// SetLoggerLevel applies a cluster-wide log level (KIP-976) on this
	// worker when its logger-cluster-{namespace} record is read; nil:
	// such records are read and ignored.
	SetLoggerLevel func(namespace, level string) error
}

// Distributed is the distributed herder (Kafka Connect's DistributedHerder):
// connector configs, task configs and target states live on the config
// topic, statuses on the status topic, source offsets on the offsets topic;
// the group (host/cluster) decides which worker runs which connector and
// task. Any worker answers reads from its copy of the topics; writes that
// need one writer go to the leader; pause, resume and restart requests are
// records on the config topic that the owners act upon.
type Distributed struct {
	opts   DistributedOptions
	base   *Standalone // validation, plugins and offsets; holds no connectors
	in     Instances
	log    hclog.Logger
	config *storage.ConfigStore
	status *storage.StatusStore
	// reloads schedules the restarts of connectors this worker runs whose
	// config-provider values expire (reload.go).
	reloads *reloads
	// member is set by Start; before, the worker is in no group.
	member atomic.Pointer[cluster.Member]
	fwd    forwarder
	// signer signs and checks internal requests; protocol is the group's
	// sub-protocol as of the last round (the configured one before):
	// requests are signed only under Sessioned.
	signer   *Signer
	protocol atomic.Pointer[cluster.Protocol]
	// keyKick wakes the session key loop (sessionkey.go).
	keyKick chan struct{}
	// leaderWrite makes each of the leader's check-then-write steps on the
	// config topic (create or replace a config, delete, stop, write task
	// configs) one step, as on Kafka Connect's single herder thread: two
	// creates of one name cannot both succeed, and task configs are never
	// written after the STOPPED state. Held across Kafka writes only, never
	// across a plugin call.
	leaderWrite sync.Mutex

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	workerID atomic.Pointer[string]
	url      atomic.Pointer[string]
	kick     chan struct{}
	statusQ  statusQueue

	mu             sync.Mutex // guards the fields below
	ready          bool
	closed         bool
	assigned       bool   // a first assignment completed
	needsRebalance bool   // a config change waits for the next rebalance
	assignRounds   uint64 // OnAssigned calls so far
	unsyncRounds   int    // rounds in a row this worker could not catch up in
	known          map[string]bool
	restarts       []storage.RestartRequest
	bounce         map[string]bool            // connectors whose config record was read again
	activeTopics   map[string]map[string]bool // connector → topics recorded
	// rejoined is open while the membership is lost (from OnLost to the
	// next OnAssigned), and rejoining ends the stage "ensuring membership
	// in the cluster" begun at OnLost; both nil while a member.
	rejoined  chan struct{}
	rejoining func()

	work work // the instances this worker runs; see distributed_work.go
}

var _ Herder = (*Distributed)(nil)
var _ cluster.Handler = (*Distributed)(nil)

// NewDistributed builds a distributed herder; nothing is contacted before
// Start.
func NewDistributed(opts DistributedOptions) (*Distributed, error) {
	base, err := NewStandalone(opts.StandaloneOptions)
	if err != nil {
		return nil, fmt.Errorf("distributed herder: %w", err)
	}
	opts.StandaloneOptions = base.opts
	if opts.Group.Client == nil {
		return nil, errors.New("distributed herder: no Kafka client for the group")
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = 3 * time.Second
	}
	if opts.ForwardTimeout <= 0 {
		opts.ForwardTimeout = 90 * time.Second
	}
	iw := config.DefaultInterWorker()
	if opts.Group.InterWorker != nil {
		iw = *opts.Group.InterWorker
	}
	signer, err := NewSigner(iw)
	if err != nil {
		return nil, fmt.Errorf("distributed herder: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Distributed{
		opts:         opts,
		base:         base,
		in:           opts.Instances,
		log:          opts.Logger,
		fwd:          forwarder{client: &http.Client{}},
		signer:       signer,
		keyKick:      make(chan struct{}, 1),
		ctx:          ctx,
		cancel:       cancel,
		kick:         make(chan struct{}, 1),
		known:        map[string]bool{},
		bounce:       map[string]bool{},
		activeTopics: map[string]map[string]bool{},
	}
	proto := opts.Group.Protocol
	if proto == "" {
		proto = cluster.Sessioned
	}
	d.protocol.Store(&proto)
	d.work.init()
	d.statusQ.init()
	d.SetWorkerID(opts.WorkerID)
	opts.ConfigLog.Logger = orLogger(opts.ConfigLog.Logger, d.log)
	opts.StatusLog.Logger = orLogger(opts.StatusLog.Logger, d.log)
	d.config = storage.NewConfigStore(opts.ConfigLog, configListener{d})
	d.status = storage.NewStatusStore(opts.StatusLog)
	d.reloads = d.newReloads()
	d.url.Store(&opts.URL)
	return d, nil
}

// SetURL changes the advertised REST URL before Start (the worker learns
// its port once the REST server listens).
func (d *Distributed) SetURL(u string) { d.url.Store(&u) }

// memberStatus is the group member's state; a zero Status before Start.
func (d *Distributed) memberStatus() cluster.Status {
	if m := d.member.Load(); m != nil {
		return m.Status()
	}
	return cluster.Status{Generation: -1}
}

func (d *Distributed) rejoin(reason string) {
	if m := d.member.Load(); m != nil {
		m.Rejoin(reason)
	}
}

func orLogger(l, def hclog.Logger) hclog.Logger {
	if l != nil {
		return l
	}
	return def
}

// SetWorkerID changes the worker_id written in statuses (host:port of the
// advertised URL, known once the REST server listens).
func (d *Distributed) SetWorkerID(id string) {
	d.workerID.Store(&id)
	d.base.SetWorkerID(id)
}

func (d *Distributed) workerIDString() string { return *d.workerID.Load() }

// Start reads the status and config topics to their ends, then joins the
// group and starts the herder's goroutines. The caller has started the
// offsets store. Health answers ErrStarting until the first assignment.
func (d *Distributed) Start(ctx context.Context) error {
	end := d.base.stages.begin("initializing and reading to the end of internal topics")
	defer end()
	g := d.opts.Group
	g.Handler = d
	if g.URL == "" {
		g.URL = *d.url.Load()
	}
	if g.Logger == nil {
		g.Logger = d.log
	}
	m, err := cluster.New(g)
	if err != nil {
		return fmt.Errorf("distributed herder: %w", err)
	}
	if err := d.status.Start(ctx); err != nil {
		return err
	}
	if err := d.config.Start(ctx); err != nil {
		d.status.Close()
		return err
	}
	snap := d.config.Snapshot()
	d.mu.Lock()
	for _, c := range snap.Connectors() {
		d.known[c] = true
	}
	d.mu.Unlock()

	d.member.Store(m)
	d.wg.Add(4)
	go func() {
		defer d.wg.Done()
		d.runMember()
	}()
	go func() {
		defer d.wg.Done()
		d.keyLoop()
	}()
	go func() {
		defer d.wg.Done()
		d.reconcileLoop()
	}()
	go func() {
		defer d.wg.Done()
		d.statusQ.run(d.ctx, d)
	}()
	return nil
}

// runMember keeps the worker in the group until the herder closes.
func (d *Distributed) runMember() {
	backoff := time.Second
	for d.ctx.Err() == nil {
		err := d.member.Load().Run(d.ctx)
		if d.ctx.Err() != nil || err == nil {
			return
		}
		d.log.Error("group membership ended; rejoining", "error", err, "backoff", backoff)
		select {
		case <-d.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// Close stops the work of this worker (tasks drain together for the task
// shutdown timeout), reports it UNASSIGNED, leaves the group so the others
// take it over at once, and stops the stores.
func (d *Distributed) Close(ctx context.Context) error {
	// First, before d.mu: no reload restart may join d.wg once Close waits
	// for it.
	d.reloads.close()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()

	d.stopAllWork(true)
	// Flush the UNASSIGNED statuses before leaving.
	fctx, cancel := context.WithTimeout(ctx, statusFlushTimeout)
	d.statusQ.flush(fctx)
	cancel()
	var errs []error
	if m := d.member.Load(); m != nil {
		if err := m.Leave(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	d.cancel()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("close herder: %w", ctx.Err()))
	}
	_ = d.base.Close(ctx)
	d.config.Close()
	d.status.Close()
	return errors.Join(errs...)
}

// Stage implements rest.StageReporter.
func (d *Distributed) Stage() string { return d.base.Stage() }

// ServerInfo implements Herder.
func (d *Distributed) ServerInfo(ctx context.Context) (ServerInfo, error) {
	return d.base.ServerInfo(ctx)
}

// Health implements Herder: healthy once the first assignment completed.
func (d *Distributed) Health(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.assigned {
		return Errorf(ErrStarting, "Worker is still starting up.")
	}
	return nil
}

// ValidateConfig implements Herder.
func (d *Distributed) ValidateConfig(ctx context.Context, cfg map[string]string) (*ConfigInfos, error) {
	return d.base.ValidateConfig(ctx, cfg)
}

// Plugins implements Herder.
func (d *Distributed) Plugins(ctx context.Context, connectorsOnly bool) ([]PluginInfo, error) {
	return d.base.Plugins(ctx, connectorsOnly)
}

// PluginConfig implements Herder.
func (d *Distributed) PluginConfig(ctx context.Context, plugin string) ([]ConfigKeyInfo, error) {
	return d.base.PluginConfig(ctx, plugin)
}

// checkStale answers 409 while a config change waits for a rebalance.
func (d *Distributed) checkStale() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.needsRebalance {
		return Errorf(ErrConflict, msgStale)
	}
	return nil
}

// leader decides where a leader-only request goes: local true means here;
// otherwise the leader's URL and the forward parameter to send.
func (d *Distributed) leader(ctx context.Context) (local bool, base, forward string, err error) {
	if err := d.awaitMembership(ctx); err != nil {
		return false, "", "", err
	}
	st := d.memberStatus()
	if st.IsLeader {
		return true, "", "", nil
	}
	next, ok := nextForward(ctx)
	if !ok {
		return false, "", "", Errorf(ErrConflict, msgConflicting)
	}
	if st.LeaderURL == "" {
		return false, "", "", Errorf(ErrConflict, msgNoLeader)
	}
	return false, st.LeaderURL, next, nil
}

// awaitMembership waits, while the membership is lost, for the next
// assignment. Nobody is known to lead meanwhile; Kafka Connect's herder
// thread is blocked rejoining then, so a request for the leader waits and,
// should the group not be back by its deadline, times out (REST answers 500
// naming the stage "ensuring membership in the cluster") rather than
// answering 409 at once. It returns ctx's error, or errClosed when the
// herder closes.
func (d *Distributed) awaitMembership(ctx context.Context) error {
	d.mu.Lock()
	rejoined := d.rejoined
	d.mu.Unlock()
	if rejoined == nil {
		return nil
	}
	select {
	case <-rejoined:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-d.ctx.Done():
		return errClosed
	}
}

func (d *Distributed) forwardCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d.opts.ForwardTimeout)
}

// Connectors implements Herder: the connectors of the config topic, sorted.
func (d *Distributed) Connectors(context.Context) ([]string, error) {
	return d.config.Snapshot().Connectors(), nil
}

// typeOf is the connector type of a config ("unknown" when its class is not
// known here).
func (d *Distributed) typeOf(ctx context.Context, cfg map[string]string) string {
	cls, err := d.in.Lookup(ctx, cfg[KeyConnectorClass])
	if err != nil || cls.Type == "" {
		return TypeUnknown
	}
	return cls.Type
}

// ConnectorInfo implements Herder.
func (d *Distributed) ConnectorInfo(ctx context.Context, name string) (*ConnectorInfo, error) {
	if err := d.checkStale(); err != nil {
		return nil, err
	}
	snap := d.config.Snapshot()
	if !snap.Contains(name) {
		return nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	return d.infoFrom(ctx, snap, name), nil
}

func (d *Distributed) infoFrom(ctx context.Context, snap *storage.ConfigSnapshot, name string) *ConnectorInfo {
	cfg := snap.ConnectorConfig(name)
	var ids []TaskID
	for _, t := range snap.Tasks(name) {
		ids = append(ids, TaskID{Connector: name, Task: t.Task})
	}
	return &ConnectorInfo{Name: name, Config: cfg, Tasks: ids, Type: d.typeOf(ctx, cfg)}
}

// ConnectorConfig implements Herder.
func (d *Distributed) ConnectorConfig(_ context.Context, name string) (map[string]string, error) {
	if err := d.checkStale(); err != nil {
		return nil, err
	}
	snap := d.config.Snapshot()
	if !snap.Contains(name) {
		return nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	return snap.ConnectorConfig(name), nil
}

// PutConnectorConfig implements Herder: the leader validates and writes the
// config (with the initial target state of a new connector); a follower
// forwards the request to it.
func (d *Distributed) PutConnectorConfig(ctx context.Context, name string, config map[string]string, allowReplace bool, initial TargetState) (*ConnectorInfo, bool, error) {
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
	infos, _, err := d.base.validate(ctx, cfg)
	if err != nil {
		return nil, false, err
	}
	if err := ConfigErrors(infos); err != nil {
		return nil, false, err
	}
	local, base, fwd, err := d.leader(ctx)
	if err != nil {
		return nil, false, err
	}
	if !local {
		fctx, cancel := d.forwardCtx(ctx)
		defer cancel()
		var info ConnectorInfo
		var code int
		if allowReplace {
			code, err = d.fwd.do(fctx, base, http.MethodPut, connectorPath(name, "config"), nil, fwd, config, &info)
		} else {
			body := map[string]any{"name": name, "config": config}
			// KIP-980 spells STARTED as RUNNING; STARTED is the default.
			if target != TargetStarted {
				body["initial_state"] = string(target)
			}
			code, err = d.fwd.do(fctx, base, http.MethodPost, "/connectors", nil, fwd, body, &info)
		}
		if err != nil {
			return nil, false, err
		}
		return &info, code == http.StatusCreated, nil
	}
	d.leaderWrite.Lock()
	snap := d.config.Snapshot()
	exists := snap.Contains(name)
	if exists && !allowReplace {
		d.leaderWrite.Unlock()
		return nil, false, Errorf(ErrAlreadyExists, "Connector %s already exists", name)
	}
	var ts *storage.TargetState
	// host/rest passes STARTED when the request names no initial state:
	// only another state is written, before the config.
	if !exists && target != TargetStarted {
		t := storage.TargetState(target)
		ts = &t
	}
	end := d.base.stages.begin("writing a config for connector " + name + " to the config topic")
	err = d.config.PutConnectorConfig(ctx, name, cfg, ts)
	end()
	d.leaderWrite.Unlock()
	if err != nil {
		return nil, false, err
	}
	d.log.Info("connector config written", "connector", name, "created", !exists)
	return d.infoFrom(ctx, d.config.Snapshot(), name), !exists, nil
}

// PatchConnectorConfig implements Herder: merged on the leader.
func (d *Distributed) PatchConnectorConfig(ctx context.Context, name string, patch map[string]*string) (*ConnectorInfo, error) {
	local, base, fwd, err := d.leader(ctx)
	if err != nil {
		return nil, err
	}
	if !local {
		fctx, cancel := d.forwardCtx(ctx)
		defer cancel()
		var info ConnectorInfo
		if _, err := d.fwd.do(fctx, base, http.MethodPatch, connectorPath(name, "config"), nil, fwd, patch, &info); err != nil {
			return nil, err
		}
		return &info, nil
	}
	snap := d.config.Snapshot()
	if !snap.Contains(name) {
		return nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	merged := snap.ConnectorConfig(name)
	for k, v := range patch {
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = *v
		}
	}
	info, _, err := d.PutConnectorConfig(ctx, name, merged, true, TargetStarted)
	return info, err
}

// DeleteConnector implements Herder: the leader writes the tombstones; the
// owners stop the connector and its tasks as they read them.
func (d *Distributed) DeleteConnector(ctx context.Context, name string) error {
	local, base, fwd, err := d.leader(ctx)
	if err != nil {
		return err
	}
	if !local {
		fctx, cancel := d.forwardCtx(ctx)
		defer cancel()
		_, err := d.fwd.do(fctx, base, http.MethodDelete, connectorPath(name), nil, fwd, nil, nil)
		return err
	}
	d.leaderWrite.Lock()
	defer d.leaderWrite.Unlock()
	if !d.config.Snapshot().Contains(name) {
		return Errorf(ErrNotFound, "Connector %s not found", name)
	}
	end := d.base.stages.begin("removing the config for connector " + name + " from the config topic")
	defer end()
	return d.config.RemoveConnector(ctx, name)
}

// ConnectorStatus implements Herder from the status topic: every worker
// answers the same.
func (d *Distributed) ConnectorStatus(ctx context.Context, name string) (*ConnectorStateInfo, error) {
	st, ok := d.status.Connector(name)
	if !ok {
		return nil, Errorf(ErrNotFound, "No status found for connector %s", name)
	}
	snap := d.config.Snapshot()
	typ := TypeUnknown
	if snap.Contains(name) {
		typ = d.typeOf(ctx, snap.ConnectorConfig(name))
	}
	out := &ConnectorStateInfo{
		Name:      name,
		Connector: ConnectorState{State: st.State, WorkerID: st.WorkerID, Trace: st.Trace},
		Type:      typ,
		Tasks:     []TaskState{},
	}
	n := snap.TaskCount(name)
	for _, ts := range d.status.Tasks(name) {
		// Statuses of tasks beyond the current count belong to an older
		// set of task configs.
		if ts.ID.Task >= n {
			continue
		}
		out.Tasks = append(out.Tasks, TaskState{ID: ts.ID.Task, State: ts.Status.State, WorkerID: ts.Status.WorkerID, Trace: ts.Status.Trace})
	}
	return out, nil
}

// TaskStatus implements Herder.
func (d *Distributed) TaskStatus(_ context.Context, id TaskID) (*TaskState, error) {
	st, ok := d.status.Task(storage.TaskID{Connector: id.Connector, Task: id.Task})
	if !ok {
		return nil, Errorf(ErrNotFound, "No status found for task %s", id)
	}
	return &TaskState{ID: id.Task, State: st.State, WorkerID: st.WorkerID, Trace: st.Trace}, nil
}

// TaskConfigs implements Herder.
func (d *Distributed) TaskConfigs(_ context.Context, name string) ([]TaskInfo, error) {
	if err := d.checkStale(); err != nil {
		return nil, err
	}
	snap := d.config.Snapshot()
	if !snap.Contains(name) {
		return nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	cfgs := snap.TaskConfigs(name)
	out := make([]TaskInfo, len(cfgs))
	for i, c := range cfgs {
		out[i] = TaskInfo{ID: TaskID{Connector: name, Task: i}, Config: c}
	}
	return out, nil
}

// PutTaskConfigs is the internal POST /connectors/{c}/tasks: a worker
// that runs a connector sends the task configs it generated to the leader,
// which writes them. configs is req.Body decoded. While the group runs the
// sessioned protocol the request's signature is checked first, before the
// leader is looked for or the connector is (KIP-507); a worker that is not
// the leader then forwards req.Body and the signature headers unchanged.
func (d *Distributed) PutTaskConfigs(ctx context.Context, name string, configs []map[string]string, req InternalRequest) error {
	if d.signing() {
		if err := d.signer.Verify(d.config.Snapshot().SessionKey(), req); err != nil {
			return err
		}
	}
	local, base, fwd, err := d.leader(ctx)
	if err != nil {
		return err
	}
	if !local {
		return d.sendTaskConfigs(ctx, base, fwd, name, req)
	}
	return d.writeTaskConfigs(ctx, name, configs)
}

// publishConfigs hands task configs this worker's connector generated to
// the leader: written here when this worker leads, otherwise sent to the
// leader, signed under the sessioned protocol. With no session key read yet
// nothing is sent unsigned: the error makes the caller retry.
func (d *Distributed) publishConfigs(ctx context.Context, name string, configs []map[string]string) error {
	local, base, fwd, err := d.leader(ctx)
	if err != nil {
		return err
	}
	if local {
		return d.writeTaskConfigs(ctx, name, configs)
	}
	body, err := json.Marshal(configs)
	if err != nil {
		return fmt.Errorf("encode task configs of %s: %w", name, err)
	}
	req := InternalRequest{Body: body}
	if d.signing() {
		if req, err = d.signer.Sign(d.config.Snapshot().SessionKey(), body); err != nil {
			return err
		}
	}
	return d.sendTaskConfigs(ctx, base, fwd, name, req)
}

func (d *Distributed) sendTaskConfigs(ctx context.Context, base, fwd, name string, req InternalRequest) error {
	var h http.Header
	if req.Signature != "" || req.Algorithm != "" {
		h = http.Header{}
		h.Set(HeaderSignature, req.Signature)
		h.Set(HeaderSignatureAlgorithm, req.Algorithm)
	}
	body := req.Body
	if body == nil {
		body = []byte{}
	}
	fctx, cancel := d.forwardCtx(ctx)
	defer cancel()
	_, err := d.fwd.send(fctx, base, http.MethodPost, connectorPath(name, "tasks"), nil, fwd, body, h, nil)
	return err
}

// writeTaskConfigs writes task configs on the leader; a STOPPED connector
// takes only the empty set (its owner may have generated configs just
// before it heard of the stop).
func (d *Distributed) writeTaskConfigs(ctx context.Context, name string, configs []map[string]string) error {
	d.leaderWrite.Lock()
	defer d.leaderWrite.Unlock()
	snap := d.config.Snapshot()
	if !snap.Contains(name) {
		return Errorf(ErrNotFound, "Connector %s not found", name)
	}
	if ts, _ := snap.TargetState(name); ts == storage.TargetStopped && len(configs) > 0 {
		return Errorf(ErrBadRequest, "Cannot submit non-empty set of task configs for stopped connector %s", name)
	}
	end := d.base.stages.begin("writing task configs for connector " + name + " to the config topic")
	defer end()
	return d.config.PutTaskConfigs(ctx, name, configs)
}

// RestartConnector implements Herder (KIP-745): a restart request record
// goes on the config topic; the owners of the connector and its tasks act on
// it as they read it.
func (d *Distributed) RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (*ConnectorStateInfo, error) {
	if err := d.checkStale(); err != nil {
		return nil, err
	}
	if !d.config.Snapshot().Contains(name) {
		return nil, Errorf(ErrNotFound, "Unknown connector: %s", name)
	}
	var plan *ConnectorStateInfo
	if includeTasks || onlyFailed {
		st, err := d.ConnectorStatus(ctx, name)
		if err != nil {
			return nil, Errorf(ErrNotFound, "Status for connector %s not found", name)
		}
		// Each instance to restart is shown RESTARTING with its last
		// trace, as Kafka's buildRestartPlan shows it.
		if !onlyFailed || st.Connector.State == StateFailed {
			st.Connector.State = StateRestarting
		}
		for i := range st.Tasks {
			if includeTasks && (!onlyFailed || st.Tasks[i].State == StateFailed) {
				st.Tasks[i].State = StateRestarting
			}
		}
		plan = st
	}
	// A legacy restart asked of the worker running the connector answers
	// once the new instance has started, as Kafka Connect's owner does: a
	// connector hung in start makes it time out in "starting the
	// connector". (Asked of another worker, it answers at once.)
	legacy := !includeTasks && !onlyFailed
	var oldGen uint64
	running := false
	if legacy {
		d.work.mu.Lock()
		if dc := d.work.conns[name]; dc != nil {
			oldGen, running = dc.gen, true
		}
		d.work.mu.Unlock()
	}
	req := storage.RestartRequest{Connector: name, IncludeTasks: includeTasks, OnlyFailed: onlyFailed}
	if err := d.config.PutRestartRequest(ctx, req); err != nil {
		return nil, err
	}
	if legacy && running {
		if err := d.awaitConnRestart(ctx, name, oldGen); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// awaitConnRestart waits until the instance of generation oldGen of
// connector name was replaced by one that has started (or failed to), or
// this worker no longer runs the connector.
func (d *Distributed) awaitConnRestart(ctx context.Context, name string, oldGen uint64) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		w := &d.work
		w.mu.Lock()
		dc := w.conns[name]
		done := !w.owned.HasConnector(name) || (dc != nil && dc.gen != oldGen && !dc.starting)
		w.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart connector %s: %w", name, ctx.Err())
		case <-d.ctx.Done():
			return errClosed
		case <-tick.C:
		}
	}
}

// RestartTask implements Herder: done by the task's owner; the request goes
// there through the leader, which knows every owner.
func (d *Distributed) RestartTask(ctx context.Context, id TaskID) error {
	if err := d.checkStale(); err != nil {
		return err
	}
	snap := d.config.Snapshot()
	if !snap.Contains(id.Connector) {
		return Errorf(ErrNotFound, "Unknown connector: %s", id.Connector)
	}
	if snap.TaskConfig(storage.TaskID{Connector: id.Connector, Task: id.Task}) == nil {
		return Errorf(ErrNotFound, "Unknown task: %s", id)
	}
	if d.restartOwnedTask(id) {
		return nil
	}
	path := connectorPath(id.Connector, "tasks", strconv.Itoa(id.Task), "restart")
	// The request goes through the leader: wait for one, as leader() does.
	if err := d.awaitMembership(ctx); err != nil {
		return err
	}
	st := d.memberStatus()
	var base string
	if st.IsLeader {
		plan, ok := d.member.Load().LeaderPlan()
		if ok {
			if m, ok := plan.TaskOwner(cluster.TaskID{Connector: id.Connector, Task: int32(id.Task)}); ok {
				base = plan.Members[m].URL
			}
		}
		if base == "" {
			return Errorf(ErrConflict, msgConflicting)
		}
	} else {
		base = st.LeaderURL
		if base == "" {
			return Errorf(ErrConflict, msgNoLeader)
		}
	}
	next, ok := nextForward(ctx)
	if !ok {
		return Errorf(ErrConflict, msgConflicting)
	}
	fctx, cancel := d.forwardCtx(ctx)
	defer cancel()
	_, err := d.fwd.do(fctx, base, http.MethodPost, path, nil, next, nil, nil)
	return err
}

// PauseConnector implements Herder: any worker writes the target state.
func (d *Distributed) PauseConnector(ctx context.Context, name string) error {
	return d.putTarget(ctx, name, storage.TargetPaused)
}

// ResumeConnector implements Herder.
func (d *Distributed) ResumeConnector(ctx context.Context, name string) error {
	return d.putTarget(ctx, name, storage.TargetStarted)
}

func (d *Distributed) putTarget(ctx context.Context, name string, t storage.TargetState) error {
	if !d.config.Snapshot().Contains(name) {
		return Errorf(ErrNotFound, "Unknown connector %s", name)
	}
	return d.config.PutTargetState(ctx, name, t)
}

// StopConnector implements Herder (KIP-875): the leader writes an empty set
// of task configs, then the STOPPED target state.
func (d *Distributed) StopConnector(ctx context.Context, name string) error {
	local, base, fwd, err := d.leader(ctx)
	if err != nil {
		return err
	}
	if !local {
		fctx, cancel := d.forwardCtx(ctx)
		defer cancel()
		_, err := d.fwd.do(fctx, base, http.MethodPut, connectorPath(name, "stop"), nil, fwd, nil, nil)
		return err
	}
	d.leaderWrite.Lock()
	defer d.leaderWrite.Unlock()
	if !d.config.Snapshot().Contains(name) {
		return Errorf(ErrNotFound, "Unknown connector %s", name)
	}
	if err := d.config.PutTaskConfigs(ctx, name, nil); err != nil {
		return err
	}
	if err := d.config.PutTargetState(ctx, name, storage.TargetStopped); err != nil {
		return err
	}
	return d.config.Refresh(ctx)
}

// ConnectorOffsets implements Herder: any worker reads them.
func (d *Distributed) ConnectorOffsets(ctx context.Context, name string) (*ConnectorOffsets, error) {
	snap := d.config.Snapshot()
	if !snap.Contains(name) {
		return nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	cfg := snap.ConnectorConfig(name)
	cls, err := d.in.Lookup(ctx, cfg[KeyConnectorClass])
	if err != nil {
		return nil, fmt.Errorf("offsets of connector %s: %w", name, err)
	}
	return d.base.offsetsOf(ctx, name, cls, cfg)
}

// stoppedClass checks KIP-875's precondition on the leader's snapshot.
func (d *Distributed) stoppedClass(ctx context.Context, name string) (Class, map[string]string, error) {
	if err := d.checkStale(); err != nil {
		return Class{}, nil, err
	}
	snap := d.config.Snapshot()
	if !snap.Contains(name) {
		return Class{}, nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	if ts, _ := snap.TargetState(name); ts != storage.TargetStopped || snap.TaskCount(name) > 0 {
		return Class{}, nil, Errorf(ErrBadRequest, "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", name)
	}
	cfg := snap.ConnectorConfig(name)
	cls, err := d.in.Lookup(ctx, cfg[KeyConnectorClass])
	if err != nil {
		return Class{}, nil, fmt.Errorf("offsets of connector %s: %w", name, err)
	}
	return cls, cfg, nil
}

// AlterConnectorOffsets implements Herder, on the leader.
func (d *Distributed) AlterConnectorOffsets(ctx context.Context, name string, offsets *ConnectorOffsets) (string, error) {
	if offsets == nil || len(offsets.Offsets) == 0 {
		return "", Errorf(ErrBadRequest, "Partitions / offsets need to be provided for an alter offsets request")
	}
	local, base, fwd, err := d.leader(ctx)
	if err != nil {
		return "", err
	}
	if !local {
		return d.forwardMessage(ctx, base, http.MethodPatch, connectorPath(name, "offsets"), fwd, offsets)
	}
	cls, cfg, err := d.stoppedClass(ctx, name)
	if err != nil {
		return "", err
	}
	return d.base.alterOffsets(ctx, name, cls, cfg, offsets)
}

// ResetConnectorOffsets implements Herder, on the leader.
func (d *Distributed) ResetConnectorOffsets(ctx context.Context, name string) (string, error) {
	local, base, fwd, err := d.leader(ctx)
	if err != nil {
		return "", err
	}
	if !local {
		return d.forwardMessage(ctx, base, http.MethodDelete, connectorPath(name, "offsets"), fwd, nil)
	}
	cls, cfg, err := d.stoppedClass(ctx, name)
	if err != nil {
		return "", err
	}
	return d.base.resetOffsets(ctx, name, cls, cfg)
}

func (d *Distributed) forwardMessage(ctx context.Context, base, method, path, fwd string, body any) (string, error) {
	fctx, cancel := d.forwardCtx(ctx)
	defer cancel()
	var m struct {
		Message string `json:"message"`
	}
	if _, err := d.fwd.do(fctx, base, method, path, url.Values{}, fwd, body, &m); err != nil {
		return "", err
	}
	return m.Message, nil
}

// ConnectorActiveTopics implements Herder (KIP-558) from the status topic.
func (d *Distributed) ConnectorActiveTopics(_ context.Context, name string) ([]string, error) {
	if d.opts.TopicTrackingDisabled {
		return nil, Errorf(ErrForbidden, "Topic tracking is disabled.")
	}
	if !d.config.Snapshot().Contains(name) {
		return nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	out := []string{}
	for _, ts := range d.status.Topics(name) {
		out = append(out, ts.Topic)
	}
	return out, nil
}

// ResetConnectorActiveTopics implements Herder: tombstones for the
// connector's topic records.
func (d *Distributed) ResetConnectorActiveTopics(ctx context.Context, name string) error {
	if d.opts.TopicTrackingDisabled {
		return Errorf(ErrForbidden, "Topic tracking is disabled.")
	}
	if d.opts.TopicResetDisabled {
		return Errorf(ErrForbidden, "Topic tracking reset is disabled.")
	}
	if !d.config.Snapshot().Contains(name) {
		return Errorf(ErrNotFound, "Connector %s not found", name)
	}
	for _, ts := range d.status.Topics(name) {
		if err := d.status.DeleteTopic(ctx, name, ts.Topic); err != nil {
			return err
		}
	}
	d.mu.Lock()
	delete(d.activeTopics, name)
	d.mu.Unlock()
	return nil
}

// RecordActiveTopic notes that a task of the connector used topic; the
// first use since the last reset is written to the status topic.
func (d *Distributed) RecordActiveTopic(connector, topic string) {
	d.recordActiveTopic(connector, topic, 0)
}

func (d *Distributed) recordActiveTopic(connector, topic string, task int) {
	if d.opts.TopicTrackingDisabled {
		return
	}
	d.mu.Lock()
	m := d.activeTopics[connector]
	if m == nil {
		m = map[string]bool{}
		d.activeTopics[connector] = m
	}
	seen := m[topic]
	m[topic] = true
	d.mu.Unlock()
	if seen {
		return
	}
	if _, ok := d.status.Topic(connector, topic); ok {
		return
	}
	d.statusQ.push(statusWrite{topic: &storage.TopicStatus{Topic: topic, Connector: connector, Task: int32(task), DiscoverTimestamp: time.Now().UnixMilli()}})
}

// statusWrite is one status record to write.
type statusWrite struct {
	connector string
	task      *storage.TaskID
	st        storage.Status
	safe      bool
	topic     *storage.TopicStatus
	dropTopic bool // tombstone topic's record
}

// statusQueue writes statuses in order on one goroutine, so that callers
// (task listeners among them) never block on Kafka.
type statusQueue struct {
	mu      sync.Mutex
	q       []statusWrite
	busy    bool
	signal  chan struct{}
	drained chan struct{} // closed and replaced whenever the queue empties
}

func (q *statusQueue) init() {
	q.signal = make(chan struct{}, 1)
	q.drained = make(chan struct{})
}

func (q *statusQueue) push(w statusWrite) {
	q.mu.Lock()
	q.q = append(q.q, w)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// flush waits until everything pushed before has been written.
func (q *statusQueue) flush(ctx context.Context) {
	q.mu.Lock()
	if len(q.q) == 0 && !q.busy {
		q.mu.Unlock()
		return
	}
	ch := q.drained
	q.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

func (q *statusQueue) run(ctx context.Context, d *Distributed) {
	for {
		q.mu.Lock()
		if len(q.q) == 0 {
			q.busy = false
			close(q.drained)
			q.drained = make(chan struct{})
			q.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-q.signal:
			}
			continue
		}
		w := q.q[0]
		q.q = q.q[1:]
		q.busy = true
		q.mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		var err error
		switch {
		case w.topic != nil && w.dropTopic:
			err = d.status.DeleteTopic(wctx, w.topic.Connector, w.topic.Topic)
		case w.topic != nil:
			err = d.status.PutTopic(wctx, *w.topic)
		case w.task != nil && w.safe:
			err = d.status.PutTaskSafe(wctx, *w.task, w.st)
		case w.task != nil:
			err = d.status.PutTask(wctx, *w.task, w.st)
		case w.safe:
			err = d.status.PutConnectorSafe(wctx, w.connector, w.st)
		default:
			err = d.status.PutConnector(wctx, w.connector, w.st)
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			d.log.Warn("status write failed", "error", err)
		}
	}
}

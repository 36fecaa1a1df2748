package herder

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-io/sluice/host/cluster"
	"github.com/sluice-io/sluice/host/storage"
)

// What this worker runs. The group assigns connector instances and tasks
// separately, so a connector instance may run here while its tasks run
// elsewhere. One mutex (work.mu) serializes every change of what runs here:
// the reconcile loop, the group callbacks and restarts. Reconcile compares
// three things and makes the instances match: what the group assigned
// (owned), what the config topic says (snapshot) and what runs.
//
//	connector instance  runs when owned, configured and not STOPPED; a
//	                    config record (even an unchanged config) restarts
//	                    it; once started (and when it asks) it generates
//	                    task configs, which the leader writes (a follower
//	                    sends them to the leader).
//	task                runs when owned and committed; a new commit of its
//	                    connector's task configs stops it, and it starts
//	                    again after the rebalance that commit asks for, if
//	                    still owned; paused and resumed with its
//	                    connector's target state.
//
// Statuses are written to the status topic with the group generation.

type work struct {
	mu         sync.Mutex
	owned      cluster.Work
	generation int32
	// assignedGens are the connectors' task config generations as of the
	// last round taken on. Tasks of a newer commit wait for the rebalance
	// the commit asks for: only then is it known who runs them (Kafka
	// Connect stops reconfigured tasks at once and restarts them after the
	// rebalance, if still assigned).
	assignedGens map[string]int
	conns        map[string]*dconn
	// starts holds, by connector, a channel closed when its latest
	// instance start has ended: handed its instance over, or stopped the
	// one it got too late. A new start of the connector waits for it, so
	// that an abandoned start that completes late never runs beside the
	// next instance on this worker.
	starts map[string]chan struct{}
	tasks  map[storage.TaskID]*dtask
	// live lets OnLost cancel task runners without waiting for mu.
	live sync.Map // storage.TaskID → *dtask
}

func (w *work) init() {
	w.conns = map[string]*dconn{}
	w.starts = map[string]chan struct{}{}
	w.tasks = map[storage.TaskID]*dtask{}
	w.assignedGens = map[string]int{}
}

// dconn is a connector instance this worker runs (or failed to run).
type dconn struct {
	name   string
	cfg    map[string]string
	class  Class
	target storage.TargetState
	inst   ConnectorInstance
	stop   chan struct{}
	gen    uint64
	state  string
	// needTasks asks the next reconcile to generate task configs.
	needTasks atomic.Bool
	// starting is set while the instance starts, off the work lock (a
	// plugin hung in start must not hold up the rest of the worker);
	// cancelStart abandons that start. Both guarded by work.mu.
	starting    bool
	cancelStart context.CancelFunc
}

// dtask is a task this worker runs (or that failed here).
type dtask struct {
	id       storage.TaskID
	cfg      map[string]string
	gen      int // the connector's task config generation it started with
	runner   TaskRunner
	cancel   context.CancelFunc
	done     chan struct{}
	stopping atomic.Bool
	failed   atomic.Bool
	paused   bool
	// attempt counts the automatic restarts in a row that led to this
	// task (0: started by a pass or by hand); started is when.
	attempt int
	started time.Time
	// held drops a pending automatic restart: the connector was paused or
	// stopped while the task waited FAILED.
	held atomic.Bool
}

var connGen atomic.Uint64

// ConfigSnapshot implements cluster.Handler.
func (d *Distributed) ConfigSnapshot() cluster.ConfigSnapshot {
	snap := d.config.Snapshot()
	tasks := map[string]int{}
	for _, c := range snap.Connectors() {
		tasks[c] = len(snap.Tasks(c))
	}
	return cluster.ConfigSnapshot{Offset: snap.Offset(), Tasks: tasks}
}

// OnRevoked implements cluster.Handler: the revoked work is stopped (tasks
// drain together) before the call returns.
func (d *Distributed) OnRevoked(ctx context.Context, a cluster.Assignment) {
	w := &d.work
	w.mu.Lock()
	defer w.mu.Unlock()
	// Only the revocation applies here: the work the round added is taken
	// on by OnAssigned, once the config topic is read to its offset.
	w.owned = withoutWork(w.owned, a.Revoked)
	var stop []*dtask
	for _, t := range a.Revoked.Tasks {
		id := storage.TaskID{Connector: t.Connector, Task: int(t.Task)}
		if dt := w.tasks[id]; dt != nil {
			stop = append(stop, dt)
			delete(w.tasks, id)
		}
	}
	d.stopTasks(stop, true)
	// The connectors stop together, each within ConnectorStopTimeout and
	// all before the round's deadline (ctx: the rebalance timeout less a
	// margin), as Kafka Connect stops and awaits revoked connectors in
	// parallel: stopped one after another, a few hung connectors would
	// outlast the rebalance.
	var stopping sync.WaitGroup
	var gone []string
	for _, c := range a.Revoked.Connectors {
		if dc := w.conns[c]; dc != nil {
			delete(w.conns, c)
			gone = append(gone, c)
			stopping.Go(func() { d.stopConnWithin(ctx, dc) })
		}
	}
	stopping.Wait()
	for _, c := range gone {
		d.putConnStatus(c, storage.StateUnassigned, "", true)
	}
	// The statuses go out before the worker rejoins (Kafka Connect
	// flushes its status store here): written later, an UNASSIGNED could
	// land after the new owner's RUNNING.
	fctx, cancel := context.WithTimeout(d.ctx, statusFlushTimeout)
	d.statusQ.flush(fctx)
	cancel()
	d.log.Info("work revoked", "revoked", a.Revoked.String())
}

// statusFlushTimeout bounds the wait for queued statuses to be written
// before the worker rejoins or leaves.
const statusFlushTimeout = 5 * time.Second

// OnAssigned implements cluster.Handler.
func (d *Distributed) OnAssigned(ctx context.Context, a cluster.Assignment) {
	d.setProtocol(a.Protocol)
	d.mu.Lock()
	if d.rejoined != nil {
		// A member again: requests waiting for a leader go on.
		d.rejoining()
		close(d.rejoined)
		d.rejoined, d.rejoining = nil, nil
	}
	d.assignRounds++
	round := d.assignRounds
	d.mu.Unlock()
	if a.Error != 0 {
		d.setNeedsRebalance()
		d.log.Info("config offsets differ in the group; reading the config topic to the end", "leader_offset", a.ConfigOffset)
		if a.Protocol == cluster.Eager {
			// Nothing runs in the group until a round succeeds, and
			// that takes every member's JoinGroup: as Kafka Connect's
			// herder does, a worker that cannot read the topic within
			// worker.sync.timeout.ms leaves rather than hold the next
			// round up for the rebalance timeout. A follower already
			// at the round's offset has nothing to catch up on and
			// just rejoins, as Kafka Connect's does too: a read that
			// failed would make it leave, and the group might then be
			// empty.
			if !a.IsLeader && d.config.Snapshot().Offset() >= a.ConfigOffset {
				return
			}
			sctx, cancel := context.WithTimeout(ctx, d.opts.SyncTimeout)
			err := d.config.Refresh(sctx)
			cancel()
			if err != nil {
				d.leaveBehind(d.countUnsync(), err, a.ConfigOffset)
			}
			return
		}
		if err := d.config.Refresh(ctx); err != nil {
			d.log.Warn("read the config topic", "error", err)
		}
		return
	}
	if d.config.Snapshot().Offset() < a.ConfigOffset {
		sctx, cancel := context.WithTimeout(ctx, d.opts.SyncTimeout)
		err := d.config.Refresh(sctx)
		cancel()
		if err != nil || d.config.Snapshot().Offset() < a.ConfigOffset {
			// Not resolved: what needs a current config answers 409
			// until a round succeeds.
			rounds := d.countUnsync()
			if a.Protocol == cluster.Eager {
				// Under eager this worker stopped everything before
				// the round and the whole assignment is held back:
				// staying in the group would leave all of it running
				// nowhere. Leaving makes the others take it over at
				// once (Kafka Connect's herder leaves too).
				d.leaveBehind(rounds, err, a.ConfigOffset)
				return
			}
			wait := unsyncBackoff(rounds, d.opts.UnsyncBackoff)
			d.log.Warn("behind the leader's config offset; rejoining", "error", err, "leader_offset", a.ConfigOffset, "after", wait)
			d.rejoinAfter(wait, round, "config topic behind the leader")
			return
		}
	}
	d.mu.Lock()
	d.unsyncRounds = 0
	d.mu.Unlock()
	if off := d.config.Snapshot().Offset(); off != a.ConfigOffset {
		// This worker has read config records the leader had not when it
		// assigned (written between the join and the assignment, or read
		// while catching up): the assignment may miss a connector or run
		// tasks of a superseded commit. As Kafka Connect's herder does,
		// nothing of the round is taken on and the worker rejoins at once,
		// so that the leader assigns from the newer snapshot; what needs a
		// current config answers 409 meanwhile.
		d.setNeedsRebalance()
		d.log.Info("config topic read past the assignment's offset; rejoining", "offset", off, "leader_offset", a.ConfigOffset)
		d.rejoin("config topic ahead of the assignment")
		return
	}
	w := &d.work
	w.mu.Lock()
	w.owned, w.generation = a.Owned, a.Generation
	snap := d.config.Snapshot()
	clear(w.assignedGens)
	for _, c := range snap.Connectors() {
		if g, ok := snap.TaskConfigGeneration(c); ok {
			w.assignedGens[c] = g
		}
	}
	w.mu.Unlock()
	d.mu.Lock()
	d.assigned = true
	d.needsRebalance = false
	d.mu.Unlock()
	d.log.Info("assignment", "generation", a.Generation, "leader", a.IsLeader, "leader_url", a.LeaderURL,
		"owned", a.Owned.String(), "added", a.Added.String(), "delay", a.Delay)
	if a.IsLeader {
		d.cleanDeletedStatuses(a.Generation)
	}
	// A new leader writes a session key if there is none or it is stale.
	d.kickKeys()
	d.reconcileNow()
}

// unsyncBackoff is how long a worker waits before it rejoins after its
// rounds-th round in a row in which it could not read the config topic up
// to the assignment's offset: not at all after the first (a slow read
// passes), then one second, doubling up to worker.unsync.backoff.ms, so
// that a worker that cannot catch up does not make the group rebalance
// every few seconds. Under the cooperative protocols (compatible,
// sessioned) the worker stays in the group meanwhile: it keeps running
// what it ran and only holds back the work the round added, answering 409.
// Under eager it has stopped everything before the round, so it leaves
// the group instead and waits out eagerUnsyncBackoff.
func unsyncBackoff(rounds int, limit time.Duration) time.Duration {
	if rounds <= 1 || limit <= 0 {
		return 0
	}
	wait := time.Second
	for i := 2; i < rounds && wait < limit; i++ {
		wait *= 2
	}
	return min(wait, limit)
}

// eagerUnsyncBackoff is how long an eager worker stays out of the group
// after its rounds-th round in a row in which it could not read the config
// topic up to the assignment's offset: the unsyncBackoff schedule one step
// on, so one second the first time, doubling up to
// worker.unsync.backoff.ms (zero: rejoin at once).
//
// Kafka Connect waits the whole worker.unsync.backoff.ms (five minutes by
// default) every time. Sluice doubles instead: a read that failed once (a
// broker restart, a slow fetch) costs the worker a few seconds out of the
// group rather than five minutes of the group running on one worker fewer,
// while a worker that keeps failing reaches the full backoff after ten
// rounds (some eight and a half minutes with the default five-minute
// limit). Between waits it tries to read the topic and joins only once it
// can (readyToRejoin), so a worker that keeps failing costs the group no
// rebalance after its first leave, as in Kafka Connect. Even the first
// wait is not zero: leaving and rejoining at once would make two
// stop-the-world rebalances back to back with no time for the read to
// recover.
func eagerUnsyncBackoff(rounds int, limit time.Duration) time.Duration {
	if limit <= 0 {
		return 0
	}
	return unsyncBackoff(rounds+1, limit)
}

// countUnsync counts a round this worker could not read the config topic
// for, and returns how many in a row; what needs a current config answers
// 409 until a round succeeds.
func (d *Distributed) countUnsync() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.needsRebalance = true
	d.unsyncRounds++
	return d.unsyncRounds
}

// leaveBehind has the group member stop this worker's work (it calls
// OnRevoked with all of it), leave the group and join it again as a new
// member after eagerUnsyncBackoff: an eager worker that cannot read the
// config topic. The work it would have run meanwhile runs on the others.
func (d *Distributed) leaveBehind(rounds int, err error, leaderOffset int64) {
	wait := eagerUnsyncBackoff(rounds, d.opts.UnsyncBackoff)
	d.log.Warn("cannot read the config topic; leaving the group so that the others run the work", "error", err,
		"offset", d.config.Snapshot().Offset(), "leader_offset", leaderOffset, "rejoin_after", wait)
	if m := d.member.Load(); m != nil {
		m.LeaveAndRejoinWhen(wait, "taking too long to read the config topic", d.readyToRejoin)
	}
}

// readyToRejoin is asked when a wait out of the group (leaveBehind) ends.
// As Kafka Connect's herder does, the worker joins again only once it has
// read the config topic to its end within worker.sync.timeout.ms: joining
// while it still cannot read would only have it leave again, and cost the
// whole group two stop-the-world rebalances each time. A failed read
// counts as one more round behind, for the next wait.
func (d *Distributed) readyToRejoin(ctx context.Context) (time.Duration, bool) {
	sctx, cancel := context.WithTimeout(ctx, d.opts.SyncTimeout)
	err := d.config.Refresh(sctx)
	cancel()
	if err == nil || ctx.Err() != nil {
		return 0, true
	}
	wait := eagerUnsyncBackoff(d.countUnsync(), d.opts.UnsyncBackoff)
	d.log.Warn("still cannot read the config topic; staying out of the group", "error", err,
		"offset", d.config.Snapshot().Offset(), "retry_after", wait)
	return wait, false
}

// rejoinAfter asks for a rebalance after wait, unless another round was
// assigned meanwhile (which tried again already) or the herder stops.
func (d *Distributed) rejoinAfter(wait time.Duration, round uint64, reason string) {
	if wait <= 0 {
		d.rejoin(reason)
		return
	}
	d.wg.Go(func() {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-d.ctx.Done():
			return
		case <-t.C:
		}
		d.mu.Lock()
		current := d.assignRounds == round
		d.mu.Unlock()
		if current {
			d.rejoin(reason)
		}
	})
}

func (d *Distributed) setNeedsRebalance() {
	d.mu.Lock()
	d.needsRebalance = true
	d.mu.Unlock()
}

// withoutWork is w less the connectors and tasks of sub.
func withoutWork(w, sub cluster.Work) cluster.Work {
	out := cluster.Work{}
	for _, c := range w.Connectors {
		if !sub.HasConnector(c) {
			out.Connectors = append(out.Connectors, c)
		}
	}
	for _, t := range w.Tasks {
		if !sub.HasTask(t) {
			out.Tasks = append(out.Tasks, t)
		}
	}
	return out
}

// OnLost implements cluster.Handler: everything stops at once (task runners
// are cancelled, which kills their plugins) and no status is written: the
// worker is no longer a member and others may own the work already.
func (d *Distributed) OnLost(_ context.Context, lost cluster.Work, cause error) {
	d.log.Warn("group membership lost; stopping all work", "cause", cause)
	d.mu.Lock()
	if d.rejoined == nil {
		d.rejoining = d.base.stages.begin("ensuring membership in the cluster")
		d.rejoined = make(chan struct{})
	}
	d.mu.Unlock()
	d.work.live.Range(func(_, v any) bool {
		dt := v.(*dtask)
		dt.stopping.Store(true)
		if dt.cancel != nil {
			dt.cancel()
		}
		return true
	})
	d.stopAllWork(false)
}

// stopAllWork stops every instance of this worker; report writes
// UNASSIGNED statuses (a clean shutdown).
func (d *Distributed) stopAllWork(report bool) {
	w := &d.work
	w.mu.Lock()
	defer w.mu.Unlock()
	w.owned = cluster.Work{}
	tasks := slices.Collect(maps.Values(w.tasks))
	clear(w.tasks)
	d.stopTasks(tasks, report)
	for name, dc := range w.conns {
		d.stopConn(dc)
		if report {
			d.putConnStatus(name, storage.StateUnassigned, "", true)
		}
	}
	clear(w.conns)
}

// cleanDeletedStatuses writes tombstones for the statuses (and topic
// records) of connectors that no longer exist and for the statuses of tasks
// their connector no longer has (tasks.max lowered, or STOPPED): the leader
// does it after a rebalance, as Kafka Connect's, once the previous owners
// have stopped them.
func (d *Distributed) cleanDeletedStatuses(gen int32) {
	snap := d.config.Snapshot()
	gone := storage.Status{State: storage.StateDestroyed, WorkerID: d.workerIDString(), Generation: gen}
	for _, c := range d.status.Connectors() {
		exists := snap.Contains(c)
		for _, t := range d.status.Tasks(c) {
			if exists && snap.TaskConfig(t.ID) != nil {
				continue
			}
			id := t.ID
			d.statusQ.push(statusWrite{task: &id, st: gone})
		}
		if !exists {
			d.statusQ.push(statusWrite{connector: c, st: gone})
			// KIP-558: a deleted connector's active topics are reset.
			if !d.opts.TopicTrackingDisabled {
				for _, ts := range d.status.Topics(c) {
					d.statusQ.push(statusWrite{topic: &ts, dropTopic: true})
				}
			}
		}
	}
}

// configListener hears the config topic for the herder.
type configListener struct{ d *Distributed }

func (l configListener) ConnectorConfigUpdated(c string) {
	d := l.d
	d.mu.Lock()
	isNew := !d.known[c]
	d.known[c] = true
	if isNew {
		d.needsRebalance = true
	} else {
		// Every config record restarts the connector on its owner,
		// the same config included, as in Kafka Connect.
		d.bounce[c] = true
	}
	d.mu.Unlock()
	if isNew {
		d.rejoin("connector " + c + " created")
	}
	d.reconcileNow()
}

func (l configListener) ConnectorConfigRemoved(c string) {
	d := l.d
	d.mu.Lock()
	delete(d.known, c)
	d.needsRebalance = true
	delete(d.activeTopics, c)
	d.mu.Unlock()
	d.rejoin("connector " + c + " deleted")
	d.reconcileNow()
}

func (l configListener) TaskConfigsCommitted(c string, _ []storage.TaskID) {
	d := l.d
	d.mu.Lock()
	d.needsRebalance = true
	d.mu.Unlock()
	d.rejoin("task configs of " + c + " committed")
	d.reconcileNow()
}

func (l configListener) TargetStateChanged(string) { l.d.reconcileNow() }

func (l configListener) RestartRequested(req storage.RestartRequest) {
	d := l.d
	d.mu.Lock()
	d.restarts = append(d.restarts, req)
	d.mu.Unlock()
	d.reconcileNow()
}

// SessionKeyUpdated: requests are signed and checked with the new key from
// now on (it is read from the snapshot when needed). The leader's key loop
// reschedules its rotation; a connector waiting for a key to send its task
// configs tries again.
func (l configListener) SessionKeyUpdated(k storage.SessionKey) {
	d := l.d
	d.log.Debug("session key read", "algorithm", k.Algorithm, "created", time.UnixMilli(k.CreationTimestamp).UTC())
	d.kickKeys()
	d.reconcileNow()
}

// LoggerLevelChanged applies a cluster-wide log level written after this
// worker started (the store passes on no earlier one, so a restarted worker
// keeps its configured levels, as in Kafka), whichever worker wrote it.
func (l configListener) LoggerLevelChanged(namespace, level string) {
	d := l.d
	if d.opts.SetLoggerLevel == nil {
		return
	}
	if err := d.opts.SetLoggerLevel(namespace, level); err != nil {
		d.log.Warn("cluster log level not applied", "namespace", namespace, "level", level, "error", err)
		return
	}
	d.log.Info("cluster log level applied", "namespace", namespace, "level", level)
}

// SetClusterLoggerLevel implements rest.ClusterLoggers (PUT
// /admin/loggers/{name}?scope=cluster): the level is written to the config
// topic from this worker, leader or not, as Kafka's are; every worker,
// this one too, applies it once it reads the record.
func (d *Distributed) SetClusterLoggerLevel(ctx context.Context, namespace, level string) error {
	return d.config.PutLoggerLevel(ctx, namespace, level)
}

// reconcileNow asks the reconcile loop for a pass.
func (d *Distributed) reconcileNow() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// retryTasksAfter is the wait before a connector's task configs are
// generated again after they could not be written.
const retryTasksAfter = time.Second

func (d *Distributed) reconcileLoop() {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-d.kick:
		case <-tick.C:
		}
		if d.reconcile() {
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				select {
				case <-d.ctx.Done():
				case <-time.After(retryTasksAfter):
					d.reconcileNow()
				}
			}()
		}
	}
}

// reconcile makes what runs here match the assignment and the config
// topic; it reports whether something must be retried.
func (d *Distributed) reconcile() (retry bool) {
	d.mu.Lock()
	if d.closed || !d.assigned {
		d.mu.Unlock()
		return false
	}
	restarts := d.restarts
	d.restarts = nil
	bounce := d.bounce
	d.bounce = map[string]bool{}
	d.mu.Unlock()

	w := &d.work
	w.mu.Lock()
	defer w.mu.Unlock()
	ctx := d.ctx
	snap := d.config.Snapshot()
	owned := w.owned

	for _, r := range restarts {
		d.applyRestart(r)
	}

	// Stop what is no longer ours or no longer configured.
	var stop []*dtask
	for id, dt := range w.tasks {
		ownedTask := owned.HasTask(cluster.TaskID{Connector: id.Connector, Task: int32(id.Task)})
		gen, _ := snap.TaskConfigGeneration(id.Connector)
		if !ownedTask || snap.TaskConfig(id) == nil || gen != dt.gen {
			stop = append(stop, dt)
			delete(w.tasks, id)
		}
	}
	d.stopTasks(stop, false)
	for name, dc := range w.conns {
		cfg := snap.ConnectorConfig(name)
		target := targetOf(snap, name)
		if !owned.HasConnector(name) || cfg == nil || !maps.Equal(cfg, dc.cfg) || bounce[name] || target == storage.TargetStopped {
			d.stopConn(dc)
			delete(w.conns, name)
			if cfg != nil && owned.HasConnector(name) && target == storage.TargetStopped {
				d.putConnStatus(name, storage.StateStopped, "", false)
			}
		}
	}

	// Start what is ours.
	for _, name := range owned.Connectors {
		cfg := snap.ConnectorConfig(name)
		if cfg == nil {
			continue
		}
		target := targetOf(snap, name)
		dc := w.conns[name]
		if target == storage.TargetStopped {
			if st, ok := d.status.Connector(name); !ok || st.State != storage.StateStopped || st.WorkerID != d.workerIDString() {
				d.putConnStatus(name, storage.StateStopped, "", false)
			}
			continue
		}
		if dc == nil {
			// Started off the lock; the start kicks a new pass when done.
			w.conns[name] = d.startConn(name, cfg, target)
			continue
		}
		if dc.starting {
			continue
		}
		if dc.target != target && dc.inst != nil {
			dc.target = target
			d.putConnStatus(name, runningState(TargetState(target)), "", false)
			if target == storage.TargetStarted {
				dc.needTasks.Store(true)
			}
		}
		if dc.inst != nil && target == storage.TargetStarted && dc.needTasks.Swap(false) {
			if err := d.publishTaskConfigs(ctx, dc, snap); err != nil {
				d.log.Warn("task configs not written; will retry", "connector", name, "error", err)
				dc.needTasks.Store(true)
				retry = true
			}
		}
	}
	for _, t := range owned.Tasks {
		id := storage.TaskID{Connector: t.Connector, Task: int(t.Task)}
		tcfg := snap.TaskConfig(id)
		ccfg := snap.ConnectorConfig(id.Connector)
		if tcfg == nil || ccfg == nil {
			continue
		}
		target := targetOf(snap, id.Connector)
		if target == storage.TargetStopped {
			continue
		}
		gen, _ := snap.TaskConfigGeneration(id.Connector)
		dt := w.tasks[id]
		if dt == nil {
			if ag, ok := w.assignedGens[id.Connector]; !ok || ag != gen {
				continue // committed after the last round: wait for the next
			}
			dt = d.startTask(ctx, id, ccfg, tcfg, gen, target == storage.TargetPaused, 0)
			w.tasks[id] = dt
			continue
		}
		if dt.runner == nil || dt.failed.Load() {
			if target != storage.TargetStarted {
				dt.held.Store(true)
			}
			continue
		}
		if paused := target == storage.TargetPaused; paused != dt.paused {
			dt.paused = paused
			if paused {
				dt.runner.Pause()
			} else {
				dt.runner.Resume()
			}
		}
	}
	return retry
}

func targetOf(snap *storage.ConfigSnapshot, name string) storage.TargetState {
	if t, ok := snap.TargetState(name); ok {
		return t
	}
	return storage.TargetStarted
}

// applyRestart carries out a restart request for what this worker owns:
// the instances to restart are stopped and forgotten (their status shows
// RESTARTING); the rest of the pass starts them afresh. work.mu held.
func (d *Distributed) applyRestart(r storage.RestartRequest) {
	w := &d.work
	if dc := w.conns[r.Connector]; dc != nil {
		st, _ := d.status.Connector(r.Connector)
		if !r.OnlyFailed || st.State == storage.StateFailed || dc.state == storage.StateFailed {
			d.putConnStatus(r.Connector, storage.StateRestarting, "", false)
			d.stopConn(dc)
			delete(w.conns, r.Connector)
			d.log.Info("restarting connector", "connector", r.Connector)
		}
	}
	if !r.IncludeTasks {
		return
	}
	var stop []*dtask
	for id, dt := range w.tasks {
		if id.Connector != r.Connector {
			continue
		}
		if r.OnlyFailed && !dt.failed.Load() {
			continue
		}
		d.putTaskStatus(id, storage.StateRestarting, "", false)
		stop = append(stop, dt)
		delete(w.tasks, id)
	}
	d.stopTasks(stop, false)
}

// restartOwnedTask restarts a task this worker runs; false when it does
// not run it.
func (d *Distributed) restartOwnedTask(id TaskID) bool {
	w := &d.work
	sid := storage.TaskID{Connector: id.Connector, Task: id.Task}
	w.mu.Lock()
	if !w.owned.HasTask(cluster.TaskID{Connector: id.Connector, Task: int32(id.Task)}) {
		w.mu.Unlock()
		return false
	}
	if dt := w.tasks[sid]; dt != nil {
		d.putTaskStatus(sid, storage.StateRestarting, "", false)
		delete(w.tasks, sid)
		d.stopTasks([]*dtask{dt}, false)
	}
	w.mu.Unlock()
	d.reconcileNow()
	return true
}

// startConn starts a connector instance in the background and returns its
// entry, marked starting; a failure is a FAILED status. Kafka Connect starts
// connectors off its herder thread too: a connector blocked in start holds
// up its own requests only. The start is abandoned, and an instance it
// still gets stopped, when the entry is stopped or replaced meanwhile.
func (d *Distributed) startConn(name string, cfg map[string]string, target storage.TargetState) *dconn {
	dc := &dconn{name: name, cfg: cfg, target: target, gen: connGen.Add(1), starting: true}
	ctx, cancel := context.WithCancel(d.ctx)
	dc.cancelStart = cancel
	// work.mu is held: the previous start of the connector, if any, and
	// this one's end.
	w := &d.work
	prev, done := w.starts[name], make(chan struct{})
	w.starts[name] = done
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel()
		defer func() {
			w.mu.Lock()
			if w.starts[name] == done {
				delete(w.starts, name)
			}
			w.mu.Unlock()
			close(done)
		}()
		if prev != nil {
			// An abandoned start still stopping what it got late.
			select {
			case <-prev:
			case <-ctx.Done():
			}
		}
		cls, inst, exp, err := d.launchConn(ctx, dc)
		w.mu.Lock()
		if w.conns[name] != dc || !dc.starting || ctx.Err() != nil {
			// Its values expire with it: no reload is scheduled.
			w.mu.Unlock()
			if inst != nil {
				sctx, scancel := context.WithTimeout(context.Background(), d.opts.ConnectorStopTimeout)
				defer scancel()
				if err := inst.Stop(sctx); err != nil {
					d.log.Warn("connector started after it was abandoned did not stop cleanly", "connector", name, "error", err)
				}
			}
			return
		}
		dc.starting, dc.cancelStart = false, nil
		dc.class = cls
		// The start is this worker's instance (running, or failed with
		// values read): its values' TTL schedules the reload restart.
		// Here, under the work lock, where a stop of the entry cancels it.
		exp.schedule(d.reloads, dc.cfg)
		if err != nil {
			d.log.Error("connector failed to start", "connector", name, "error", err)
			dc.state = storage.StateFailed
			d.putConnStatus(name, storage.StateFailed, traceOf(err), true)
			w.mu.Unlock()
			return
		}
		dc.inst, dc.stop = inst, make(chan struct{})
		dc.state = runningState(TargetState(dc.target))
		d.putConnStatus(name, dc.state, "", false)
		d.watchConn(dc)
		dc.needTasks.Store(true)
		w.mu.Unlock()
		d.log.Info("connector started", "connector", name, "class", cls.Name, "target", target)
		d.reconcileNow()
	}()
	return dc
}

// launchConn looks the connector's class up, resolves its config and starts
// its instance, without the work lock. It returns when the values read
// expire, for the caller to schedule the reload once it knows the start
// still counts: the owner of the connector instance, and only it,
// schedules the reload restart (the workers running its tasks resolve
// without a reporter; Kafka's would fail with NotLeader), and a start
// abandoned meanwhile (the connector stopped, revoked, reconfigured)
// schedules nothing.
func (d *Distributed) launchConn(ctx context.Context, dc *dconn) (Class, ConnectorInstance, expiry, error) {
	cls, err := d.in.Lookup(ctx, dc.cfg[KeyConnectorClass])
	if err != nil {
		return Class{}, nil, expiry{}, err
	}
	rcfg, ttl, err := d.opts.Resolver.ResolveTTL(ctx, dc.cfg)
	if err != nil {
		return cls, nil, expiry{}, err
	}
	exp := expiry{at: time.Now().Add(ttl), ttl: ttl}
	end := d.base.stages.begin("starting the connector " + dc.name)
	defer end()
	inst, err := d.in.StartConnector(ctx, dc.name, cls, rcfg, &dconnCallbacks{d: d, name: dc.name, gen: dc.gen})
	return cls, inst, exp, err
}

// watchConn turns the unplanned end of a connector's process into FAILED.
func (d *Distributed) watchConn(dc *dconn) {
	inst, stop, gen := dc.inst, dc.stop, dc.gen
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		select {
		case <-stop:
			return
		case <-d.ctx.Done():
			return
		case <-inst.Done():
		}
		msg, trace := inst.Err()
		if msg == "" {
			msg = "the connector's plugin process ended"
		}
		d.failConn(dc.name, gen, joinTrace(msg, trace))
	}()
}

// failConn marks the connector instance of generation gen FAILED.
func (d *Distributed) failConn(name string, gen uint64, trace string) {
	w := &d.work
	w.mu.Lock()
	defer w.mu.Unlock()
	dc := w.conns[name]
	if dc == nil || dc.gen != gen || dc.state == storage.StateFailed {
		return
	}
	dc.state = storage.StateFailed
	d.putConnStatus(name, storage.StateFailed, trace, true)
	d.log.Error("connector failed", "connector", name, "error", trace)
	d.haltConn(dc)
}

// stopConn stops a connector instance, if it runs. Its pending reload
// restart goes with it: deleted, revoked, reconfigured or STOPPED, the
// next start (here or on its new owner) reads the values again.
func (d *Distributed) stopConn(dc *dconn) {
	d.stopConnWithin(context.Background(), dc)
}

// stopConnWithin is stopConn giving the instance's Stop at most until
// ctx ends (and never more than ConnectorStopTimeout).
func (d *Distributed) stopConnWithin(ctx context.Context, dc *dconn) {
	d.reloads.cancel(dc.name)
	d.haltConnWithin(ctx, dc)
}

// haltConn is stopConn keeping the pending reload restart: a connector
// that failed is restarted when its values expire, as in Kafka Connect,
// which may well be what it failed for (an expired credential).
func (d *Distributed) haltConn(dc *dconn) {
	d.haltConnWithin(context.Background(), dc)
}

func (d *Distributed) haltConnWithin(parent context.Context, dc *dconn) {
	if dc.cancelStart != nil {
		dc.cancelStart()
		dc.starting, dc.cancelStart = false, nil
	}
	inst, stop := dc.inst, dc.stop
	dc.inst, dc.stop = nil, nil
	if inst == nil {
		return
	}
	close(stop)
	end := d.base.stages.begin("stopping the connector " + dc.name)
	defer end()
	// parent's deadline, if any, shortens the budget; its cancellation
	// does not: a stop that was asked for is still worth its time.
	budget := d.opts.ConnectorStopTimeout
	if dl, ok := parent.Deadline(); ok {
		budget = max(min(budget, time.Until(dl)), 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	if err := inst.Stop(ctx); err != nil {
		d.log.Warn("connector did not stop cleanly", "connector", dc.name, "error", err)
	}
}

// publishTaskConfigs asks the connector for its task configs and, when
// they differ from the committed ones or the connector config changed since
// the last commit, has the leader write them.
func (d *Distributed) publishTaskConfigs(ctx context.Context, dc *dconn, snap *storage.ConfigSnapshot) error {
	maxTasks, enforce := tasksMax(resolvedOrRaw(d.reloads.attach(ctx), d.opts.Resolver, dc.cfg))
	end := d.base.stages.begin("generating task configurations for the connector " + dc.name)
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	raw, err := dc.inst.TaskConfigs(tctx, maxTasks)
	cancel()
	end()
	if err != nil {
		dc.state = storage.StateFailed
		d.putConnStatus(dc.name, storage.StateFailed, joinTrace("generate task configurations: "+err.Error(), wireTrace(err)), true)
		return nil
	}
	if len(raw) > maxTasks && enforce {
		dc.state = storage.StateFailed
		d.putConnStatus(dc.name, storage.StateFailed, tooManyTasks(dc.name, len(raw), maxTasks), true)
		return nil
	}
	cfgs := make([]map[string]string, len(raw))
	for i, tc := range raw {
		cfgs[i] = taskConfig(tc, dc.class, dc.cfg)
	}
	if equalTaskConfigs(snap.TaskConfigs(dc.name), cfgs) && maps.Equal(snap.AppliedConnectorConfig(dc.name), dc.cfg) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := d.publishConfigs(wctx, dc.name, cfgs); err != nil {
		return fmt.Errorf("write task configs of %s: %w", dc.name, err)
	}
	d.log.Info("task configs written", "connector", dc.name, "tasks", len(cfgs))
	return nil
}

// startTask builds and runs a task runner; attempt counts the automatic
// restarts in a row that led to it. A task that fails is restarted
// automatically when its connector asks for it (scheduleTaskRestart).
func (d *Distributed) startTask(ctx context.Context, id storage.TaskID, ccfg, tcfg map[string]string, gen int, paused bool, attempt int) *dtask {
	dt := &dtask{id: id, cfg: tcfg, gen: gen, done: make(chan struct{}), paused: paused, attempt: attempt, started: time.Now()}
	cls, err := d.in.Lookup(ctx, ccfg[KeyConnectorClass])
	if err != nil {
		dt.failed.Store(true)
		close(dt.done)
		d.putTaskStatus(id, storage.StateFailed, traceOf(err), true)
		d.scheduleTaskRestart(dt)
		return dt
	}
	// As Kafka Connect's worker does (KIP-1004): task configs committed
	// before tasks.max was lowered, or by a connector that ignored it, fail
	// their tasks when they (re)start while the limit is enforced.
	if maxTasks, enforce := tasksMax(resolvedOrRaw(ctx, d.opts.Resolver, ccfg)); enforce {
		if n := len(d.config.Snapshot().TaskConfigs(id.Connector)); n > maxTasks {
			err = errors.New(tooManyTasks(id.Connector, n, maxTasks))
		}
	}
	spec := TaskSpec{ID: TaskID{Connector: id.Connector, Task: id.Task}, Class: cls, ConnectorConfig: maps.Clone(ccfg), TaskConfig: maps.Clone(tcfg)}
	var runner TaskRunner
	if err == nil {
		spec, err = resolveSpec(ctx, d.opts.Resolver, spec)
	}
	if err == nil {
		var topics []string
		if cls.Type == TypeSink && !d.opts.TopicTrackingDisabled {
			topics = splitList(spec.TaskConfig[KeyTopics])
		}
		runner, err = d.in.NewTask(ctx, spec, &dtaskListener{d: d, t: dt, topics: topics})
	}
	if err != nil {
		d.log.Error("task failed to start", "task", id.String(), "error", err)
		dt.failed.Store(true)
		close(dt.done)
		d.putTaskStatus(id, storage.StateFailed, traceOf(err), true)
		d.scheduleTaskRestart(dt)
		return dt
	}
	if paused {
		runner.Pause()
	}
	runCtx, cancel := context.WithCancel(d.ctx)
	dt.runner, dt.cancel = runner, cancel
	d.work.live.Store(id, dt)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer close(dt.done)
		defer cancel()
		defer d.work.live.CompareAndDelete(id, dt)
		err := runner.Run(runCtx)
		// The listener's OnFailed may have reported the failure first;
		// whichever sets failed reports it and schedules the restart.
		if dt.stopping.Load() || !dt.failed.CompareAndSwap(false, true) {
			return
		}
		if err == nil {
			err = errors.New("the task stopped on its own")
		}
		d.putTaskStatus(id, storage.StateFailed, traceOf(err), true)
		d.log.Error("task failed", "task", id.String(), "error", err)
		d.scheduleTaskRestart(dt)
	}()
	return dt
}

// stopTasks stops tasks together, as the standalone herder does: Stop, a
// shared drain of the task shutdown timeout, then cancellation. report
// writes UNASSIGNED for them (a clean hand-over).
func (d *Distributed) stopTasks(tasks []*dtask, report bool) {
	var live []*dtask
	for _, t := range tasks {
		if t == nil {
			continue
		}
		t.stopping.Store(true)
		if t.runner != nil {
			t.runner.Stop()
			live = append(live, t)
		}
	}
	defer func() {
		if report {
			for _, t := range tasks {
				if t != nil && !t.failed.Load() {
					d.putTaskStatus(t.id, storage.StateUnassigned, "", true)
				}
			}
		}
	}()
	if len(live) == 0 {
		return
	}
	end := d.base.stages.begin("stopping tasks")
	defer end()
	drain := time.NewTimer(d.opts.TaskShutdownTimeout + taskDrainMargin)
	defer drain.Stop()
	var late []*dtask
	for _, t := range live {
		select {
		case <-t.done:
			continue
		case <-drain.C:
			drain.Reset(0)
		}
		late = append(late, t)
	}
	for _, t := range late {
		d.log.Warn("task did not stop within the shutdown timeout; cancelling it", "task", t.id.String())
		t.cancel()
	}
	kill := time.NewTimer(taskKillWait)
	defer kill.Stop()
	for _, t := range late {
		select {
		case <-t.done:
		case <-kill.C:
			d.log.Error("task runner did not end after it was cancelled", "task", t.id.String())
			return
		}
	}
}

func (d *Distributed) generation() int32 {
	// work.mu may be held by the caller; the generation is read without it
	// from the member, which is what the group knows now.
	return d.memberStatus().Generation
}

func (d *Distributed) putConnStatus(name, state, trace string, safe bool) {
	d.statusQ.push(statusWrite{connector: name, st: storage.Status{State: state, Trace: trace, WorkerID: d.workerIDString(), Generation: d.generation()}, safe: safe})
}

func (d *Distributed) putTaskStatus(id storage.TaskID, state, trace string, safe bool) {
	d.statusQ.push(statusWrite{task: &id, st: storage.Status{State: state, Trace: trace, WorkerID: d.workerIDString(), Generation: d.generation()}, safe: safe})
}

// dtaskListener turns a runner's reports into task statuses.
type dtaskListener struct {
	d      *Distributed
	t      *dtask
	topics []string
}

func (l *dtaskListener) OnRunning() {
	l.set(storage.StateRunning, "")
	for _, tp := range l.topics {
		l.d.recordActiveTopic(l.t.id.Connector, tp, l.t.id.Task)
	}
}
func (l *dtaskListener) OnPaused()  { l.set(storage.StatePaused, "") }
func (l *dtaskListener) OnStopped() {}
func (l *dtaskListener) OnFailed(err error, trace string) {
	msg := "task failed"
	if err != nil {
		msg = err.Error()
		if trace == "" {
			trace = wireTrace(err)
		}
	}
	if l.t.stopping.Load() || !l.t.failed.CompareAndSwap(false, true) {
		return
	}
	l.d.putTaskStatus(l.t.id, storage.StateFailed, joinTrace(msg, trace), true)
	l.d.scheduleTaskRestart(l.t)
}

func (l *dtaskListener) set(state, trace string) {
	if l.t.stopping.Load() || l.t.failed.Load() {
		return
	}
	l.d.putTaskStatus(l.t.id, state, trace, false)
}

// dconnCallbacks receives a connector instance's requests.
type dconnCallbacks struct {
	d    *Distributed
	name string
	gen  uint64
}

// RequestTaskReconfiguration implements ConnectorCallbacks: the next pass
// generates the task configs again.
func (cb *dconnCallbacks) RequestTaskReconfiguration() {
	d := cb.d
	// Not under work.mu: the herder may be inside a call to this very
	// connector. The flag is read by the next reconcile pass.
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		w := &d.work
		w.mu.Lock()
		if dc := w.conns[cb.name]; dc != nil && dc.gen == cb.gen {
			dc.needTasks.Store(true)
		}
		w.mu.Unlock()
		d.reconcileNow()
	}()
}

// RaiseError implements ConnectorCallbacks: the connector fails.
func (cb *dconnCallbacks) RaiseError(message, trace string) {
	d := cb.d
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.failConn(cb.name, cb.gen, joinTrace(message, trace))
	}()
}

package herder

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluice-io/sluice/host/configprovider"
)

// reloadRestarts reports whether a connector config's config.action.reload
// asks for restarts: anything but none does, absent included (restart is
// the default). Kafka compares without regard to case, after trimming.
func reloadRestarts(cfg map[string]string) bool {
	return !strings.EqualFold(strings.TrimSpace(cfg[KeyConfigReloadAction]), ReloadNone)
}

// reloads schedules the restarts of connectors whose config-provider
// values expire (KIP-297's TTLs, Kafka's WorkerConfigTransformer): at most
// one pending restart per connector, each a timer owned by the herder.
//
// Resolutions made under the context attach returns report their
// smallest TTL; a report for a connector of the herder whose
// config.action.reload is restart schedules its restart after that TTL,
// unless one is pending that comes sooner. A later resolution does not
// postpone a pending restart: it refreshes only what it was made for (one
// task restarted, tasks.max read for new task configs), while the
// connector instance and the other tasks keep the values they read, which
// expire when first reported. What restarts everything (the reload
// itself, a reconfiguration, a restart of the connector and all its
// tasks) cancels the pending restart first, and its own starts schedule
// the next one. Kafka keeps one pending restart per connector and path,
// each replaced by the latest report; one restart reads every path again,
// so one per connector is enough.
type reloads struct {
	log hclog.Logger
	// config returns the current config of the connector named, or false
	// when the herder has no such connector (deleted, never created, or
	// not this worker's).
	config func(name string) (map[string]string, bool)
	// restart restarts the connector; it is called with mu held, from the
	// timer's goroutine, so it must only queue the work (and must not
	// call back into reloads).
	restart func(name string)

	mu      sync.Mutex
	pending map[string]*pendingReload
	closed  bool
}

// pendingReload is one scheduled restart; its identity tells a timer that
// fires after it was replaced that it is stale.
type pendingReload struct {
	timer *time.Timer
	at    time.Time
}

func newReloads(log hclog.Logger, config func(string) (map[string]string, bool), restart func(string)) *reloads {
	return &reloads{log: log, config: config, restart: restart, pending: map[string]*pendingReload{}}
}

// attach returns ctx carrying the reporter: the herder's own work
// resolves under it.
func (r *reloads) attach(ctx context.Context) context.Context {
	return configprovider.WithTTLReporter(ctx, r.observe)
}

// observe is the TTLReporter. cfg names the connector (a connector config,
// or a task config that copies the name); the reload action is read from
// the connector's current config, not from cfg: a task config that lacks
// the key would otherwise count as restart (Kafka reads it from whatever
// config it transforms, so there it does).
func (r *reloads) observe(cfg map[string]string, ttl time.Duration) {
	name := cfg[KeyName]
	if name == "" || ttl <= 0 {
		return
	}
	current, ok := r.config(name)
	if !ok || !reloadRestarts(current) {
		return
	}
	r.schedule(name, ttl)
}

// expiry is when values read for a connector expire, kept to schedule
// the reload later than they were read (ttl 0: they do not).
type expiry struct {
	at  time.Time
	ttl time.Duration
}

// schedule reports the expiry of cfg's values to r, as a resolution under
// attach would have when they were read: the time since counts.
func (e expiry) schedule(r *reloads, cfg map[string]string) {
	if e.ttl <= 0 {
		return
	}
	r.observe(cfg, max(time.Until(e.at), time.Millisecond))
}

// schedule has name restart after ttl, unless a restart is pending that
// comes sooner.
func (r *reloads) schedule(name string, ttl time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	at := time.Now().Add(ttl)
	if old := r.pending[name]; old != nil {
		if !old.at.After(at) {
			r.log.Debug("config reload restart already pending sooner", "connector", name, "ttl_ms", ttl.Milliseconds(), "in_ms", time.Until(old.at).Milliseconds())
			return
		}
		old.timer.Stop()
	}
	p := &pendingReload{at: at}
	r.pending[name] = p
	// Kafka's words, at INFO, on every schedule.
	r.log.Info("Scheduling a restart of connector "+name+" in "+strconv.FormatInt(ttl.Milliseconds(), 10)+" ms", "connector", name, "ttl_ms", ttl.Milliseconds())
	p.timer = time.AfterFunc(ttl, func() { r.fire(name, p) })
}

// fire runs when p's timer ends: unless p was replaced or cancelled
// meanwhile, or the herder is closing, the connector restarts.
func (r *reloads) fire(name string, p *pendingReload) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.pending[name] != p {
		return
	}
	delete(r.pending, name)
	// Under mu, so that close (which takes mu) happens after the restart
	// is queued: the herder waits for the queued work when it closes.
	r.restart(name)
}

// cancel drops the pending restart of name: the connector was deleted, or
// is being reconfigured (its start schedules anew if its values expire).
func (r *reloads) cancel(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pending[name]; p != nil {
		p.timer.Stop()
		delete(r.pending, name)
		r.log.Debug("pending config reload restart cancelled", "connector", name)
	}
}

// close stops every pending restart; later reports schedule nothing.
func (r *reloads) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for name, p := range r.pending {
		p.timer.Stop()
		delete(r.pending, name)
	}
}

// reloadConnector is the standalone herder's restart for reloads: the
// connector and all its tasks restart (RESTARTING meanwhile), as POST
// /connectors/{name}/restart?includeTasks=true does, so that every plugin
// process starts with values read anew. Kafka restarts the connector
// instance only, and its tasks only if the task configs it generates come
// out different; but tasks read the values when they start, and the task
// configs hold the variables, not the values, so a task would keep an
// expired secret. Dropped when the connector was started or stopped again
// since the timer fired (that start read the values), deleted, STOPPED,
// or the herder is closing.
func (h *Standalone) reloadConnector(name string) {
	c := h.lookup(name)
	if c == nil {
		return
	}
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	h.async(c, "restarting the connector "+name+" to reload its config", func(ctx context.Context) {
		h.mu.Lock()
		closed := h.closed
		h.mu.Unlock()
		c.mu.Lock()
		if closed || c.gen != gen || c.target == TargetStopped {
			c.mu.Unlock()
			h.log.Debug("config reload restart dropped: the connector changed meanwhile", "connector", name)
			return
		}
		c.state, c.trace = StateRestarting, ""
		var nums []int
		for i, t := range c.tasks {
			if t != nil {
				t.state, t.trace = StateRestarting, ""
				nums = append(nums, i)
			}
		}
		c.mu.Unlock()
		// Everything restarts: a restart reported meanwhile (a task
		// restarted since the timer fired) is covered, and the starts
		// below schedule the next one.
		h.reloads.cancel(name)
		h.log.Info("restarting the connector and its tasks: values from config providers expired", "connector", name, KeyConfigReloadAction, ReloadRestart, "tasks", len(nums))
		h.stopConnector(c)
		h.restartTasks(ctx, c, nums)
		h.startConnector(ctx, c, false)
	})
}

// reloadConfig is the reloads' view of a standalone connector's config.
func (h *Standalone) reloadConfig(name string) (map[string]string, bool) {
	c := h.lookup(name)
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A STOPPED connector runs nothing that holds values: what resolves
	// its config meanwhile (an offsets change) schedules no restart.
	if c.gone || c.target == TargetStopped {
		return nil, false
	}
	return maps.Clone(c.config), true
}

// reloadRequestTimeout bounds the restart request a distributed worker
// writes when a connector's values expire.
const reloadRequestTimeout = 30 * time.Second

// reloadRetryDelay is how long a distributed worker waits to write again a
// reload restart request that failed (a rebalance under way, the config
// topic unwritable). A variable for tests.
var reloadRetryDelay = 5 * time.Second

// newReloads builds the reloads of a distributed herder: the worker that
// runs a connector instance reports the expiry of the values it started it
// with (launchConn, once the start is known to count) and resolves under
// attach for tasks.max next to TaskConfigs, and cancels the pending restart
// when it stops it; the workers running only its tasks never schedule one.
func (d *Distributed) newReloads() *reloads {
	return newReloads(d.log, func(name string) (map[string]string, bool) {
		cfg := d.config.Snapshot().ConnectorConfig(name)
		return cfg, cfg != nil
	}, d.reloadConnector)
}

// reloadConnector asks, as POST /connectors/{name}/restart?includeTasks=true
// does, for a restart of the connector and all its tasks: a restart
// request on the config topic that each owner acts upon. Called with the
// reloads' lock held: the request is written on a goroutine of d.wg.
//
// Only while this worker still runs the connector instance that scheduled
// it: once revoked, stopped or restarted, whoever starts it next reads the
// values again. A request that cannot be written is tried again after
// reloadRetryDelay, on the same conditions, rather than dropped: Kafka
// Connect logs the failure and keeps the connector running with the
// expired values until something else restarts it.
func (d *Distributed) reloadConnector(name string) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		gen, ok := d.connGeneration(name)
		if !ok {
			d.log.Debug("config reload restart dropped: this worker no longer runs the connector", "connector", name)
			return
		}
		ctx, cancel := context.WithTimeout(d.ctx, reloadRequestTimeout)
		defer cancel()
		d.log.Info("restarting the connector and its tasks: values from config providers expired", "connector", name, KeyConfigReloadAction, ReloadRestart)
		_, err := d.RestartConnector(ctx, name, true, false)
		if err == nil {
			return
		}
		d.log.Error("Unexpected error during connector restart", "connector", name, "error", err)
		if d.ctx.Err() != nil {
			return
		}
		// Whatever failed (a rebalance under way, the config topic, even a
		// status not found), this worker tries again as long as it runs
		// the same instance: a connector deleted, revoked or stopped
		// meanwhile is no longer in w.conns. Under the work lock, so that
		// such a stop (which cancels the pending restart under the same
		// lock) comes either before, and nothing is scheduled, or after,
		// and cancels this.
		w := &d.work
		w.mu.Lock()
		defer w.mu.Unlock()
		if dc := w.conns[name]; dc != nil && dc.gen == gen {
			d.reloads.schedule(name, reloadRetryDelay)
		}
	}()
}

// connGeneration is the generation of the connector instance this worker
// runs for name, false when it runs none.
func (d *Distributed) connGeneration(name string) (uint64, bool) {
	w := &d.work
	w.mu.Lock()
	defer w.mu.Unlock()
	dc := w.conns[name]
	if dc == nil || dc.starting {
		// None, or one starting anew, which reads the values again.
		return 0, false
	}
	return dc.gen, true
}

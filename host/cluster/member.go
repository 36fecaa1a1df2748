package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/config"
)

// Handler is the member's owner: the distributed herder. The member calls it
// from the goroutine running Run, one call at a time; heartbeats go on
// meanwhile, so a callback may take as long as stopping or starting work
// takes (but see the rebalance timeout in the package doc).
type Handler interface {
	// ConfigSnapshot is the config topic as this worker has read it so
	// far, from memory (no I/O). Its offset goes into every JoinGroup; the
	// leader assigns from it.
	ConfigSnapshot() ConfigSnapshot
	// OnRevoked asks to stop a.Revoked; it must be stopped when the call
	// returns, because the member then rejoins and the leader hands it to
	// someone else. a.Owned is what stays. Under the eager protocol it is
	// called before every JoinGroup with everything the worker runs
	// (a.Protocol is Eager, a.Owned empty), and ctx then ends when the
	// member must answer the group to stay in the round (the rebalance
	// timeout, less a margin): by then kill what has not stopped, or the
	// coordinator completes the round without this worker and others start
	// what it still runs.
	OnRevoked(ctx context.Context, a Assignment)
	// OnAssigned reports a completed rebalance: start a.Added, keep the
	// rest of a.Owned (under eager, a.Added is all of a.Owned). With a.Error == ConfigMismatch nothing changed:
	// catch up on the config topic before returning, the member rejoins
	// right after. A worker behind a.ConfigOffset reads up to it before
	// starting anything; one that cannot may call LeaveAndRejoinAfter.
	OnAssigned(ctx context.Context, a Assignment)
	// OnLost reports that the worker is no longer a member (evicted, or
	// out of touch with the coordinator for a session timeout): everything
	// in lost must stop now, others may already be taking it over. The
	// member rejoins, under its old member id unless the coordinator
	// refused it (see the package doc).
	OnLost(ctx context.Context, lost Work, cause error)
}

// Assignment is one completed rebalance as the member's owner sees it.
type Assignment struct {
	Generation int32
	MemberID   string
	Protocol   Protocol
	Leader     string
	LeaderURL  string
	IsLeader   bool
	// ConfigOffset is the config topic offset the leader assigned from.
	ConfigOffset int64
	// Error is NoError or ConfigMismatch.
	Error int16
	// Owned is everything this worker runs from now on.
	Owned Work
	// Added is new this round (start it); Revoked left this round.
	Added   Work
	Revoked Work
	// Delay is how long until the member rejoins on the leader's request
	// (a departed worker's share is waiting); zero when none.
	Delay time.Duration
}

// Status is the member's state for callers outside the callbacks.
type Status struct {
	MemberID   string
	Generation int32
	Leader     string
	LeaderURL  string
	IsLeader   bool
	Owned      Work
	// Rebalancing is true from the moment the member decides to rejoin
	// until the round's callbacks have returned.
	Rebalancing bool
}

// Config configures a Member.
type Config struct {
	// Client reaches the brokers; group requests go to the group's
	// coordinator through it. Required.
	Client  *kgo.Client
	GroupID string
	// URL is this worker's advertised REST URL, what others forward to.
	URL      string
	Protocol Protocol
	// Timeouts as Kafka Connect's session.timeout.ms,
	// heartbeat.interval.ms and rebalance.timeout.ms.
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	RebalanceTimeout  time.Duration
	// MaxDelay is scheduled.rebalance.max.delay.ms: how long a departed
	// worker's share waits. Zero gives it away at once.
	MaxDelay time.Duration
	Handler  Handler
	Logger   hclog.Logger
	// Now is the leader's clock for the assignor; time.Now when nil.
	Now func() time.Time
	// InterWorker is the worker's inter.worker.* settings (KIP-507). The
	// member does not use them: signing is on exactly when the group runs
	// the sessioned protocol, so they travel with the group settings to the
	// distributed herder, which signs and checks requests. Nil: Kafka
	// Connect's defaults.
	InterWorker *config.InterWorker
}

// FromWorker fills the group settings of a distributed worker config:
// group.id, connect.protocol, the three timeouts,
// scheduled.rebalance.max.delay.ms and the inter.worker.* settings. Client,
// URL, Handler and Logger are the caller's.
func FromWorker(w *config.Worker) Config {
	iw := w.InterWorker()
	return Config{
		InterWorker:       &iw,
		GroupID:           w.String(config.GroupID),
		Protocol:          Protocol(strings.ToLower(w.String(config.ConnectProtocol))),
		SessionTimeout:    w.Millis(config.SessionTimeoutMs),
		HeartbeatInterval: w.Millis(config.HeartbeatIntervalMs),
		RebalanceTimeout:  w.Millis(config.RebalanceTimeoutMs),
		MaxDelay:          w.Millis(config.ScheduledRebalanceMaxDelayMs),
	}
}

// Errors of the member.
var (
	// ErrRunning: Run was called while the member already runs.
	ErrRunning = errors.New("group member already running")
	// ErrFatal wraps a group error rejoining cannot cure (bad protocol,
	// authorization, group full, bad session timeout).
	ErrFatal = errors.New("group membership failed")
)

func (c *Config) validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("no Kafka client"))
	}
	if c.GroupID == "" {
		errs = append(errs, errors.New("no group.id"))
	}
	if c.Handler == nil {
		errs = append(errs, errors.New("no handler"))
	}
	switch c.Protocol {
	case "":
		c.Protocol = Sessioned
	case Sessioned, Compatible, Eager:
	default:
		errs = append(errs, fmt.Errorf("unknown connect.protocol %q", c.Protocol))
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 3 * time.Second
	}
	if c.RebalanceTimeout <= 0 {
		c.RebalanceTimeout = time.Minute
	}
	if c.HeartbeatInterval >= c.SessionTimeout {
		errs = append(errs, fmt.Errorf("heartbeat.interval.ms (%v) must be below session.timeout.ms (%v)", c.HeartbeatInterval, c.SessionTimeout))
	}
	if c.MaxDelay < 0 {
		errs = append(errs, fmt.Errorf("negative scheduled.rebalance.max.delay.ms %v", c.MaxDelay))
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return errors.Join(errs...)
}

// Member is one worker's membership in the Connect group. Run drives it;
// Leave ends it cleanly; Rejoin asks for a rebalance.
type Member struct {
	cfg      Config
	log      hclog.Logger
	assignor *Assignor
	rejoinCh chan string
	leaveCh  chan leaveRequest

	mu      sync.Mutex
	running bool
	leaving bool
	cancel  context.CancelFunc
	done    chan struct{}
	status  Status
	plan    *Plan // the last plan made as leader
	// keptID is the member id a member that lost its membership keeps
	// to rejoin under while Status shows none: the coordinator may still
	// know it, and Leave tells it the member is gone.
	keptID string
}

// New checks cfg and returns a member that has not joined yet.
func New(cfg Config) (*Member, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("group member: %w", err)
	}
	return &Member{
		cfg:      cfg,
		log:      cfg.Logger.Named("group"),
		assignor: NewAssignor(cfg.MaxDelay),
		rejoinCh: make(chan string, 1),
		leaveCh:  make(chan leaveRequest, 1),
		status:   Status{Generation: -1},
	}, nil
}

// Run joins the group and stays in it until ctx ends (it returns ctx's
// error without leaving: the coordinator notices after the session timeout,
// as after a crash) or Leave is called (it returns nil). It returns an error
// wrapping ErrFatal when the group refuses the member for good. Run may be
// called again after it returned; the member then joins afresh.
func (m *Member) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.running {
		m.mu.Unlock()
		return ErrRunning
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.running, m.leaving, m.cancel, m.done = true, false, cancel, make(chan struct{})
	done := m.done
	m.mu.Unlock()

	err := m.loop(ctx)

	m.mu.Lock()
	leaving := m.leaving
	m.running = false
	m.status.Rebalancing = false
	m.mu.Unlock()
	close(done)
	if leaving && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Leave stops Run and leaves the group (LeaveGroup), so the rest of the group
// rebalances at once instead of after the session timeout. Stop the work the
// member owns before calling it: the leader may hand it out as soon as the
// member is gone. Leave must not be called from a Handler callback.
func (m *Member) Leave(ctx context.Context) error {
	m.mu.Lock()
	running, cancel, done := m.running, m.cancel, m.done
	if running {
		m.leaving = true
	}
	m.mu.Unlock()
	if running {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("leave group %s: %w", m.cfg.GroupID, ctx.Err())
		}
	}
	m.mu.Lock()
	id, kept := m.status.MemberID, m.keptID
	m.mu.Unlock()
	if id == "" && kept != "" {
		// Out after a loss, under an id the coordinator may still
		// hold for its whole session: tell it, or the others wait that
		// long. The coordinator may be the silent one, so the try is
		// bounded, and a failure only costs that wait.
		lctx, cancel := context.WithTimeout(ctx, m.cfg.SessionTimeout)
		err := m.sendLeave(lctx, kept, "the worker is leaving")
		cancel()
		if err != nil {
			m.log.Warn("could not leave the group after losing the membership; the coordinator drops this member after its session timeout", "error", err)
		}
		m.mu.Lock()
		m.keptID = ""
		m.mu.Unlock()
		return nil
	}
	if id == "" {
		return nil
	}
	err := m.sendLeave(ctx, id, "the worker is leaving")
	m.mu.Lock()
	m.status = Status{Generation: -1}
	m.plan = nil
	m.keptID = ""
	m.mu.Unlock()
	return err
}

// Rejoin asks for a rebalance (a connector was created or deleted, task
// configs were committed, the worker caught up). It does not block; requests
// made before a JoinGroup is sent are served by that JoinGroup.
func (m *Member) Rejoin(reason string) {
	select {
	case m.rejoinCh <- reason:
	default:
	}
}

// leaveRequest is a LeaveAndRejoinAfter call waiting for the Run loop.
type leaveRequest struct {
	wait   time.Duration
	reason string
	ready  ReadyToRejoin
}

// ReadyToRejoin is asked, on the goroutine running Run, when a wait out of
// the group (LeaveAndRejoinWhen) ends: ok joins now; otherwise the member
// waits again for again and asks once more. ctx ends with Run (Leave,
// shutdown).
type ReadyToRejoin func(ctx context.Context) (again time.Duration, ok bool)

// LeaveAndRejoinAfter asks the member to leave the group for wait and then
// join it again as a new member: Kafka Connect's herder does so when it
// cannot read the config topic up to an assignment's offset (it leaves and
// backs off worker.unsync.backoff.ms), so that the others rebalance at once
// and run the work instead of waiting for this worker. It does not block;
// call it from OnAssigned. Once the round's callbacks have returned, the
// member calls OnRevoked with everything it owns (a.Owned empty; stop it
// all, the others may start it as soon as the member is gone; ctx ends as
// before an eager JoinGroup, should the group rebalance meanwhile), sends
// LeaveGroup, forgets its member id and generation, stops heartbeating and
// waits; Status shows no member id, no leader and Rebalancing meanwhile.
// Rejoin requests made during the wait are served by the JoinGroup that
// ends it. Leave, or the end of Run's context, during the wait returns at
// once. A request made between rounds is served at once; one made while a
// round is under way, after that round. Only the first of several requests
// made before the member acts counts.
func (m *Member) LeaveAndRejoinAfter(wait time.Duration, reason string) {
	m.LeaveAndRejoinWhen(wait, reason, nil)
}

// LeaveAndRejoinWhen is LeaveAndRejoinAfter, joining again only once ready
// (nil: always) says so when a wait ends: Kafka Connect's herder, out of
// the group for its config reads, joins only once it can read the config
// topic, rather than join to leave again at once.
func (m *Member) LeaveAndRejoinWhen(wait time.Duration, reason string, ready ReadyToRejoin) {
	select {
	case m.leaveCh <- leaveRequest{wait: max(wait, 0), reason: reason, ready: ready}:
	default:
	}
}

// Status returns the member's current state.
func (m *Member) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.status
	return s
}

// LeaderPlan returns the last plan this member made as leader, and whether
// it leads the current generation: who runs what, and their URLs (Kafka
// Connect's leader state, used to forward requests to a task's owner).
func (m *Member) LeaderPlan() (Plan, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.plan == nil || !m.status.IsLeader {
		return Plan{}, false
	}
	return *m.plan, true
}

func (m *Member) setStatus(f func(*Status)) {
	m.mu.Lock()
	f(&m.status)
	m.mu.Unlock()
}

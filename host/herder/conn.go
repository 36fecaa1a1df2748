package herder

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one connector of the standalone herder.
type conn struct {
	name string
	// op is the connector's operation slot: whoever holds it may change the
	// connector's instances. It is a channel so that waiting for it can be
	// abandoned when a request's context ends.
	op chan struct{}
	// reconfig is set while a task reconfiguration is queued, so that a
	// chatty connector's requests coalesce.
	reconfig atomic.Bool

	mu      sync.Mutex // guards the fields below; never held across a plugin call
	config  map[string]string
	class   Class
	classOK bool
	target  TargetState
	state   string // connector status
	trace   string
	// inst is the running connector instance, nil when none runs. gen
	// counts instances: callbacks and watchers of an older instance see a
	// different gen and do nothing.
	inst     ConnectorInstance
	instStop chan struct{} // closed when the herder stops inst on purpose
	gen      uint64
	taskCfgs []map[string]string
	tasks    []*task // by task number; nil entries for tasks not running
	topics   map[string]struct{}
	gone     bool // deleted
}

func newConn(name string, target TargetState) *conn {
	return &conn{
		name:   name,
		op:     make(chan struct{}, 1),
		target: target,
		state:  StateUnassigned,
		topics: map[string]struct{}{},
	}
}

// acquire takes the operation slot, or gives up when ctx ends.
func (c *conn) acquire(ctx context.Context) bool {
	select {
	case c.op <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// acquireFree takes the slot of a connector nobody else can see yet.
func (c *conn) acquireFree() { c.op <- struct{}{} }

func (c *conn) release() { <-c.op }

// typ is the connector's type for ConnectorInfo and statuses; c.mu held.
func (c *conn) typ() string {
	if !c.classOK || c.class.Type == "" {
		return TypeUnknown
	}
	return c.class.Type
}

// info is the connector's ConnectorInfo.
func (c *conn) info() *ConnectorInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]TaskID, len(c.taskCfgs))
	for i := range c.taskCfgs {
		ids[i] = TaskID{Connector: c.name, Task: i}
	}
	return &ConnectorInfo{Name: c.name, Config: maps.Clone(c.config), Tasks: ids, Type: c.typ()}
}

// run performs op on c while holding its operation slot. The operation runs
// under the herder's context, not the request's: when ctx ends first, run
// returns a timeout error and the operation completes on its own, so the
// connector is never left half-changed.
func (h *Standalone) run(ctx context.Context, c *conn, stage string, op func(context.Context) error) error {
	if h.ctx.Err() != nil {
		return errClosed
	}
	if !c.acquire(ctx) {
		return fmt.Errorf("wait for connector %s to be free: %w", c.name, ctx.Err())
	}
	c.mu.Lock()
	gone := c.gone
	c.mu.Unlock()
	if gone {
		c.release()
		return Errorf(ErrNotFound, "Connector %s not found", c.name)
	}
	return h.runHeld(ctx, c, stage, op)
}

// runHeld is run for a caller that already holds c's slot; it releases it.
func (h *Standalone) runHeld(ctx context.Context, c *conn, stage string, op func(context.Context) error) error {
	done := make(chan error, 1)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer c.release()
		end := h.stages.begin(stage)
		defer end()
		done <- op(h.ctx)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", stage, ctx.Err())
	}
}

// async queues op on c for when its slot is free: for the connector's own
// requests (reconfigure tasks, raise error), which arrive while the herder
// may be inside a call to that connector.
func (h *Standalone) async(c *conn, stage string, op func(context.Context)) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if !c.acquire(h.ctx) {
			return
		}
		c.mu.Lock()
		gone := c.gone
		c.mu.Unlock()
		if gone {
			c.release()
			return
		}
		defer c.release()
		end := h.stages.begin(stage)
		defer end()
		op(h.ctx)
	}()
}

// stages remembers what the herder is doing, for the message of a request
// that times out (Kafka's "The worker is currently ...").
type stages struct {
	mu     sync.Mutex
	seq    uint64
	active map[uint64]stageRec
	last   *stageRec
}

type stageRec struct {
	what       string
	begin, end time.Time
}

func (s *stages) begin(what string) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil {
		s.active = map[uint64]stageRec{}
	}
	s.seq++
	id := s.seq
	s.active[id] = stageRec{what: what, begin: time.Now()}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		r := s.active[id]
		delete(s.active, id)
		r.end = time.Now()
		s.last = &r
	}
}

// Stage describes the newest (most specific) operation in progress, or else the last one
// completed, in Kafka Connect's words; "" when there was none. host/rest
// adds it to the message of a request that timed out.
func (h *Standalone) Stage() string {
	s := &h.stages
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.active) > 0 {
		var newest uint64
		for id := range s.active {
			newest = max(newest, id)
		}
		r := s.active[newest]
		return fmt.Sprintf("The worker is currently %s, which began at %s.", r.what, isoInstant(r.begin))
	}
	if s.last != nil {
		return fmt.Sprintf("The last operation the worker completed was %s, which began at %s and completed at %s.",
			s.last.what, isoInstant(s.last.begin), isoInstant(s.last.end))
	}
	return ""
}

// isoInstant formats t as Java's Instant.toString does (UTC, 'Z').
func isoInstant(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// errClosed is returned by operations after Close.
var errClosed = errors.New("the worker is shutting down")

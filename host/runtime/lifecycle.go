package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// errStopped is what interrupted waits see when the task is stopping; it
// never reaches the Listener.
var errStopped = errors.New("task stopping")

// killTimeout bounds Kill and the wait for the process to be gone. Kill is
// graceful then SIGKILL, so this is generous.
const killTimeout = 10 * time.Second

// control is the state Pause, Resume, Stop and failures share with the
// goroutine that runs the task. Everything else about a task belongs to that
// goroutine.
type control struct {
	id       TaskID
	listener Listener
	shutdown time.Duration

	mu        sync.Mutex
	paused    bool // desired by Pause/Resume
	stopping  bool
	ran       bool // Run was called
	failure   error
	genericOK bool // failure is the generic crash, which a call's error may replace
	// cancelWork ends everything of the run: set by Run, fired by the
	// drain timer and by failures of a dead process.
	cancelWork context.CancelFunc
	drain      *time.Timer
	// cancelCall interrupts the blocking call the task is in. A failure
	// interrupts any call; Pause, Resume, Stop and queued requests
	// interrupt only an idle wait (a consumer poll), not work in progress
	// such as a source Poll, whose records and acknowledgements must not
	// be lost in a cancelled call.
	cancelCall context.CancelFunc
	idleCall   bool

	// gen counts the changes above, so an idle wait that starts after a
	// change it has not seen returns at once instead of missing it.
	gen uint64
	// wake tells the task goroutine that something above changed.
	wake chan struct{}

	// lastState is the last state reported to the listener (task goroutine only).
	lastState taskState
}

type taskState int8

const (
	stateNew taskState = iota
	stateRunning
	statePaused
	stateEnded
)

func newControl(id TaskID, l Listener, shutdown time.Duration) *control {
	if l == nil {
		l = nopListener{}
	}
	return &control{id: id, listener: l, shutdown: shutdown, wake: make(chan struct{}, 1)}
}

type nopListener struct{}

func (nopListener) OnRunning(TaskID)               {}
func (nopListener) OnPaused(TaskID)                {}
func (nopListener) OnFailed(TaskID, error, string) {}
func (nopListener) OnStopped(TaskID)               {}

// signal wakes the task goroutine. The caller has counted the change in
// gen (under mu).
func (c *control) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// begin is Run's start: it records the run's cancel function. It fails when
// Run was called before; a task stopped before Run still runs (and ends at
// once) so the Listener hears OnStopped.
func (c *control) begin(cancel context.CancelFunc) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ran {
		return fmt.Errorf("task %s: Run called twice", c.id)
	}
	c.ran = true
	c.cancelWork = cancel
	if c.stopping {
		c.armDrainLocked()
	}
	return nil
}

// finish disarms the drain timer; the run is over.
func (c *control) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drain != nil {
		c.drain.Stop()
	}
	c.cancelCall = nil
}

func (c *control) Pause() {
	c.mu.Lock()
	c.paused = true
	c.gen++
	if c.cancelCall != nil && c.idleCall {
		c.cancelCall()
	}
	c.mu.Unlock()
	c.signal()
}

func (c *control) Resume() {
	c.mu.Lock()
	c.paused = false
	c.gen++
	if c.cancelCall != nil && c.idleCall {
		c.cancelCall()
	}
	c.mu.Unlock()
	c.signal()
}

// Stop asks for the drain and arms its deadline: when it passes, every
// call of the run is abandoned and the process is killed.
func (c *control) Stop() {
	c.mu.Lock()
	if !c.stopping {
		c.stopping = true
		c.gen++
		if c.cancelCall != nil && c.idleCall {
			c.cancelCall()
		}
		if c.ran {
			c.armDrainLocked()
		}
	}
	c.mu.Unlock()
	c.signal()
}

func (c *control) armDrainLocked() {
	if c.drain == nil && c.cancelWork != nil {
		c.drain = time.AfterFunc(c.shutdown, c.cancelWork)
	}
}

// fail records the task's failure (the first one wins, except that the
// generic "process exited" is replaced by a call's crash or timeout error,
// which says more) and interrupts the task.
func (c *control) fail(err error) {
	c.failWith(err, false)
}

func (c *control) failWith(err error, generic bool) {
	c.mu.Lock()
	switch {
	case c.failure == nil:
		c.failure, c.genericOK = err, generic
	case c.genericOK && !generic && isDeadProcess(err):
		c.failure, c.genericOK = err, false
	}
	c.gen++
	if c.cancelCall != nil {
		c.cancelCall()
	}
	c.mu.Unlock()
	c.signal()
}

// failUnlessAbandoned fails the task with err, unless ctx is done: then
// the run is being abandoned (drain deadline, hard stop) and err is only
// the cancelled call's echo of that.
func (c *control) failUnlessAbandoned(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	c.fail(err)
}

func (c *control) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failure
}

// snapshot returns what the task goroutine acts on.
func (c *control) snapshot() (paused, stopping bool, failure error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused, c.stopping, c.failure
}

// generation returns the count of changes so far, for interruptible.
func (c *control) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// interruptible derives the context of a blocking call that failures (and,
// for an idle wait, any change after generation seen) interrupt. The
// returned function must be called when the call returns.
func (c *control) interruptible(ctx context.Context, idle bool, seen uint64) (context.Context, func()) {
	cctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	if c.failure != nil || idle && c.gen != seen {
		cancel()
	}
	c.cancelCall, c.idleCall = cancel, idle
	c.mu.Unlock()
	return cctx, func() {
		c.mu.Lock()
		c.cancelCall = nil
		c.mu.Unlock()
		cancel()
	}
}

// report tells the listener about a state change (task goroutine only).
func (c *control) report(s taskState) {
	if s == c.lastState || c.lastState == stateEnded {
		return
	}
	c.lastState = s
	switch s {
	case stateRunning:
		c.listener.OnRunning(c.id)
	case statePaused:
		c.listener.OnPaused(c.id)
	}
}

// end reports the final state: OnFailed with the plugin's trace when err is
// not nil, OnStopped otherwise.
func (c *control) end(err error) {
	if c.lastState == stateEnded {
		return
	}
	c.lastState = stateEnded
	if err == nil {
		c.listener.OnStopped(c.id)
		return
	}
	c.listener.OnFailed(c.id, err, traceOf(err))
}

// traceOf is the plugin's trace when the error carries one, the error's
// text otherwise.
func traceOf(err error) string {
	var we *wire.Error
	if errors.As(err, &we) && we.Trace != "" {
		return we.Trace
	}
	return err.Error()
}

// watchProcess fails the task when the plugin process exits while the task
// still uses it. It returns when the process exits or quit is closed.
func (c *control) watchProcess(done <-chan struct{}, crash func() error, quit <-chan struct{}) {
	select {
	case <-done:
		c.failWith(crash(), true)
	case <-quit:
	}
}

// crashError builds the failure of a process that exited under the task.
func crashError(p any) func() error {
	return func() error {
		if cr, ok := p.(CrashReporter); ok {
			if err := cr.CrashError(); err != nil {
				return err
			}
		}
		return &wire.Error{Kind: wire.KindCrashed, Message: "plugin process exited unexpectedly"}
	}
}

// isDeadProcess says whether err means the plugin can no longer be talked to
// (crash or hang): such a plugin is killed at once, without Stop.
func isDeadProcess(err error) bool {
	switch wire.KindOf(err) {
	case wire.KindCrashed, wire.KindTimeout:
		return true
	}
	return false
}

// killPlugin ends the process and waits, bounded, for it to be gone.
func killPlugin(kill func(context.Context) error, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	err := kill(ctx)
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("plugin process still alive %s after kill", killTimeout)
		}
	}
	return err
}

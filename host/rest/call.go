package rest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// StageReporter is implemented by a herder that can say what it is busy
// with, for the message of a timed-out request. Stage returns Kafka's
// sentence ("The worker is currently <stage>, which began at <time>." or
// "The last operation the worker completed was <stage>, which began at <t1>
// and completed at <t2>.") or "" when there is nothing to report.
type StageReporter interface {
	Stage() string
}

// ClusterLoggers is implemented by a herder that can set a logger level on
// every worker of the cluster (PUT /admin/loggers/{name}?scope=cluster,
// KIP-976). Without it, cluster scope applies to this worker alone, which is
// the whole cluster of a standalone worker.
type ClusterLoggers interface {
	SetClusterLoggerLevel(ctx context.Context, namespace, level string) error
}

type result[T any] struct {
	v   T
	err error
}

// call runs one herder call under the request timeout. It answers at the
// deadline even when the herder has not returned: the herder's stage is
// read, the call's context is cancelled, and the request is answered 500
// "Request timed out. <stage>"; the call goes on in its goroutine until it
// notices. No lock is held here, so other requests are served meanwhile;
// the goroutine is counted and Shutdown waits for it.
func call[T any](s *Server, c echo.Context, fn func(context.Context) (T, error)) (T, error) {
	return callWithin(s, c, s.cfg.timeout, fn)
}

func callWithin[T any](s *Server, c echo.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if !s.track() {
		return zero, errShuttingDown
	}
	ctx := newCallCtx(c.Request().Context(), time.Now().Add(timeout))
	defer ctx.cancel(context.Canceled)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	done := make(chan result[T], 1)
	go func() {
		defer s.calls.Done()
		v, err := fn(ctx)
		done <- result[T]{v, err}
	}()
	select {
	case r := <-done:
		if r.err != nil && errors.Is(r.err, context.DeadlineExceeded) && ctx.Err() != nil {
			return zero, s.timedOut()
		}
		return r.v, r.err
	case <-timer.C:
		// Read the stage before the herder can see its context end, or a
		// herder that honours it would report the stage as completed.
		err := s.timedOut()
		ctx.cancel(context.DeadlineExceeded)
		return zero, err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// call0 is call for herder methods that return only an error.
func call0(s *Server, c echo.Context, fn func(context.Context) error) error {
	_, err := call(s, c, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

func (s *Server) timedOut() error {
	return &timeoutError{stage: s.stage()}
}

// callCtx is the context of one herder call. It reports the request
// deadline, but callWithin ends it, so that the stage can be read first;
// it also ends with its parent (the request, and the server's life).
// Contexts derived from it see its error: DeadlineExceeded at the timeout.
type callCtx struct {
	parent   context.Context
	deadline time.Time
	done     chan struct{}
	stop     func() bool // stops watching parent

	mu  sync.Mutex
	err error
}

func newCallCtx(parent context.Context, deadline time.Time) *callCtx {
	c := &callCtx{parent: parent, deadline: deadline, done: make(chan struct{})}
	c.stop = context.AfterFunc(parent, func() { c.cancel(parent.Err()) })
	return c
}

func (c *callCtx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	close(c.done)
	c.stop()
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *callCtx) Done() <-chan struct{}       { return c.done }
func (c *callCtx) Value(key any) any           { return c.parent.Value(key) }

func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

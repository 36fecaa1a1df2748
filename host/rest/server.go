package rest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/logging"
)

// Server is the worker's REST API.
type Server struct {
	h       herder.Herder
	loggers *logging.Registry
	cfg     *config
	api     *echo.Echo // regular listeners
	admin   *echo.Echo // admin listeners; nil when admin shares api or is off

	callMu  sync.Mutex
	closing bool           // Shutdown began: no new herder calls
	calls   sync.WaitGroup // herder calls, which may outlive their request

	mu      sync.Mutex
	started bool
	stop    context.CancelFunc // cancels every request's context
	servers []*http.Server
	serving sync.WaitGroup // one per Serve loop
	addrs   []string
	admAddr []string
}

// New builds the server; it validates opts once and reports every problem.
// loggers serves /admin/loggers and may be nil only when admin endpoints are
// disabled.
func New(h herder.Herder, loggers *logging.Registry, opts Options) (*Server, error) {
	if h == nil {
		return nil, errors.New("rest: nil herder")
	}
	cfg, err := opts.validate()
	if err != nil {
		return nil, err
	}
	if cfg.adminOn && loggers == nil {
		return nil, errors.New("rest: admin endpoints are on but there is no logger registry")
	}
	s := &Server{h: h, loggers: loggers, cfg: cfg}
	s.api = s.newEcho()
	s.connectorRoutes(s.api)
	switch {
	case cfg.adminOwn:
		s.admin = s.newEcho()
		s.adminRoutes(s.admin)
	case cfg.adminOn:
		s.adminRoutes(s.api)
	}
	return s, nil
}

func (s *Server) newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	// Jersey serves /connectors/ as /connectors.
	e.Pre(trimTrailingSlash)
	e.Use(s.recoverPanics, s.accessLog, withForward)
	if len(s.cfg.allowOrigins) > 0 {
		// Pre, so that a preflight is answered whatever the route's methods.
		e.Pre(newCORS(s.cfg.allowOrigins, s.cfg.allowMethods).middleware)
	}
	if len(s.cfg.headers) > 0 {
		e.Pre(responseHeaders(s.cfg.headers))
	}
	return e
}

// Handler is the API as an http.Handler, for tests and embedding; it serves
// the admin endpoints too unless they have listeners of their own or are off.
func (s *Server) Handler() http.Handler { return s.api }

// AdminHandler serves the admin endpoints when they have their own
// listeners; nil otherwise.
func (s *Server) AdminHandler() http.Handler {
	if s.admin == nil {
		return nil
	}
	return s.admin
}

// Start binds every listener and serves until Shutdown. ctx is the parent
// of every request's context: cancelling it aborts the herder calls in
// flight. If a listener cannot be bound, none is kept.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("rest: server already started")
	}
	base, cancel := context.WithCancel(ctx)
	var lns []net.Listener
	var hs []*http.Server
	var addrs, admAddrs []string
	bind := func(l listener, handler http.Handler) error {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return fmt.Errorf("rest: listen on %s://%s: %w", l.scheme, l.addr, err)
		}
		if l.scheme == "https" {
			ln = tls.NewListener(ln, s.cfg.tls.Clone())
		}
		lns = append(lns, ln)
		hs = append(hs, &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 30 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return base },
			ErrorLog:          s.cfg.log.StandardLogger(nil),
		})
		return nil
	}
	var err error
	for _, l := range s.cfg.main {
		if err = bind(l, s.api); err != nil {
			break
		}
		addrs = append(addrs, l.scheme+"://"+lns[len(lns)-1].Addr().String())
	}
	if err == nil && s.admin != nil {
		for _, l := range s.cfg.admin {
			if err = bind(l, s.admin); err != nil {
				break
			}
			admAddrs = append(admAddrs, l.scheme+"://"+lns[len(lns)-1].Addr().String())
		}
	}
	if err != nil {
		for _, ln := range lns {
			ln.Close()
		}
		cancel()
		return err
	}
	s.started, s.stop, s.servers, s.addrs, s.admAddr = true, cancel, hs, addrs, admAddrs
	for i, srv := range hs {
		s.serving.Add(1)
		go func(srv *http.Server, ln net.Listener) {
			defer s.serving.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.cfg.log.Error("REST listener stopped", "addr", ln.Addr().String(), "error", err)
			}
		}(srv, lns[i])
	}
	s.cfg.log.Info("REST server listening", "listeners", addrs, "admin_listeners", admAddrs)
	return nil
}

// Addrs are the URLs of the bound regular listeners (the real port where 0
// was asked), in the order configured; nil before Start.
func (s *Server) Addrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.addrs...)
}

// AdminAddrs are the URLs of the bound admin listeners, when they have
// their own.
func (s *Server) AdminAddrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.admAddr...)
}

// callGrace is how long Shutdown waits for herder calls after cancelling
// them; a herder that ignores cancellation longer is left behind.
const callGrace = 2 * time.Second

// Shutdown stops accepting requests and lets those in flight finish until
// ctx ends; then it closes what is left, cancels the herder calls still
// running (including those of requests that already timed out) and waits
// for them to return, at most callGrace.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	servers, stop := s.servers, s.stop
	s.servers = nil
	s.mu.Unlock()
	var errs []error
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if stop != nil {
		stop()
	}
	for _, srv := range servers {
		srv.Close()
	}
	s.serving.Wait()
	// A handler still running after Close must not start a call while
	// Wait runs.
	s.callMu.Lock()
	s.closing = true
	s.callMu.Unlock()
	done := make(chan struct{})
	go func() { s.calls.Wait(); close(done) }()
	grace := time.NewTimer(callGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		errs = append(errs, errors.New("herder calls still running after cancellation"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rest: shutdown: %w", err)
	}
	return nil
}

// track counts a new herder call; false once Shutdown began.
func (s *Server) track() bool {
	s.callMu.Lock()
	defer s.callMu.Unlock()
	if s.closing {
		return false
	}
	s.calls.Add(1)
	return true
}

// writeJSON answers v as Kafka's Jackson would write it: compact, and with
// <, > and & left as they are (encoding/json escapes them by default).
func writeJSON(c echo.Context, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	return c.Blob(status, echo.MIMEApplicationJSON, bytes.TrimRight(buf.Bytes(), "\n"))
}

// param is a path parameter, unescaped: echo leaves it escaped when the
// path had escapes that matter (a "/" written %2F in a connector name).
func param(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, nil
	}
	u, err := url.PathUnescape(v)
	if err != nil {
		return "", notFound("HTTP 404 Not Found")
	}
	return u, nil
}

func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				s.cfg.log.Error("panic serving request", "method", c.Request().Method, "path", c.Request().URL.Path, "panic", r)
				err = fmt.Errorf("internal error: %v", r)
			}
		}()
		return next(c)
	}
}

func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		status := c.Response().Status
		if err != nil {
			status, _ = statusOf(err)
		}
		s.cfg.log.Info("request", "remote", c.RealIP(), "method", c.Request().Method, "uri", c.Request().RequestURI,
			"status", status, "ms", time.Since(start).Milliseconds())
		return err
	}
}

package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/logging"
)

// errorBody is Kafka Connect's ErrorMessage, the body of every error answer.
type errorBody struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

// apiError is an answer decided in this package: a status and Kafka's
// message for it.
type apiError struct {
	status  int
	message string
}

func (e *apiError) Error() string { return e.message }

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &apiError{status: http.StatusNotFound, message: fmt.Sprintf(format, args...)}
}

// errRouteNotFound is what an unknown route answers, in Jersey's words.
var errRouteNotFound = echo.ErrNotFound

// errShuttingDown answers requests that arrive while the server stops.
var errShuttingDown = &apiError{status: http.StatusServiceUnavailable, message: "The worker is shutting down."}

// timeoutError is a herder call that outlived the request timeout.
type timeoutError struct{ stage string }

func (e *timeoutError) Error() string {
	if e.stage == "" {
		return "Request timed out"
	}
	return "Request timed out. " + e.stage
}

// statusOf is the one place errors become HTTP answers: the status and the
// message of the {"error_code","message"} body.
func statusOf(err error) (int, string) {
	var (
		ae *apiError
		te *timeoutError
		he *echo.HTTPError
		re *herder.Error
	)
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.message
	case errors.As(err, &te):
		return http.StatusInternalServerError, te.Error()
	case errors.As(err, &he):
		// echo's router and middleware: answer as Jersey does for its own
		// WebApplicationExceptions ("HTTP 404 Not Found").
		return he.Code, fmt.Sprintf("HTTP %d %s", he.Code, http.StatusText(he.Code))
	case errors.As(err, &re):
		return kindStatus(re.Kind), re.Message
	case errors.Is(err, logging.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusInternalServerError, "Request timed out"
	}
	return kindStatus(err), err.Error()
}

// kindStatus maps the herder's error sentinels (bare or wrapped) to statuses;
// anything else is a 500, as Kafka's ConnectExceptionMapper does.
func kindStatus(err error) int {
	switch {
	case err == nil:
		return http.StatusInternalServerError
	case errors.Is(err, herder.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, herder.ErrAlreadyExists), errors.Is(err, herder.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, herder.ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, herder.ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, herder.ErrStarting), errors.Is(err, herder.ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// handleError is echo's HTTPErrorHandler: every error of every route and
// middleware is answered here.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, msg := statusOf(err)
	if status >= 500 {
		s.cfg.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "status", status, "error", err)
	}
	if werr := writeJSON(c, status, errorBody{ErrorCode: status, Message: msg}); werr != nil {
		s.cfg.log.Debug("write error answer", "error", werr)
	}
}

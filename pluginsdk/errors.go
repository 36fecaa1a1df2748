package pluginsdk

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// Error is a classified error; Retriable, Invalid and Unsupported build one.
// Wrapping it (fmt.Errorf("...: %w", err)) keeps its kind.
type Error = wire.Error

// ErrUnsupported reports an operation the connector does not support
// (UnsupportedOperationException). Wrap it to add detail.
var ErrUnsupported error = &wire.Error{Kind: wire.KindUnsupported, Message: "operation not supported"}

// ErrNoWorker is returned by context methods of an instance started without
// a worker callback target (e.g. by a test harness that serves none).
var ErrNoWorker error = &wire.Error{Kind: wire.KindFatal, Message: "pluginsdk: no worker callback target: the instance was started without worker_target"}

// Retriable returns an error that asks the worker to retry the same call after
// a backoff (RetriableException): Put gets the same records again.
func Retriable(format string, args ...any) error { return wire.Retriable(format, args...) }

// Invalid returns an error for bad configuration or data (ConfigException,
// DataException).
func Invalid(format string, args ...any) error { return wire.Invalid(format, args...) }

// Unsupported returns an error for an unsupported operation, with detail.
func Unsupported(format string, args ...any) error { return wire.Unsupported(format, args...) }

// IsRetriable reports whether err, or an error it wraps, is retriable.
func IsRetriable(err error) bool { return err != nil && wire.KindOf(err) == wire.KindRetriable }

// panicError is a recovered panic: fatal, with the stack as its trace.
// Handlers tell it apart from returned errors where those are only logged.
type panicError struct{ err *wire.Error }

func (p *panicError) Error() string { return p.err.Message }
func (p *panicError) Unwrap() error { return p.err }

func newPanicError(what string, v any, stack []byte) error {
	return &panicError{&wire.Error{
		Kind:    wire.KindFatal,
		Message: fmt.Sprintf("%s: panic: %v", what, v),
		Trace:   string(stack),
	}}
}

// toStatus is wire.ToStatus, except that a configuration error
// (*config.Error, e.g. from Def.Parse in Start) is INVALID_ARGUMENT, as
// ConfigException is, unless a classified error says otherwise.
func toStatus(ctx context.Context, err error) error {
	var we *wire.Error
	var ce *config.Error
	if err != nil && !errors.As(err, &we) && errors.As(err, &ce) {
		return wire.ToStatus(ctx, &wire.Error{Kind: wire.KindInvalid, Message: err.Error()})
	}
	return wire.ToStatus(ctx, err)
}

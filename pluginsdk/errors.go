package pluginsdk

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

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

// toStatus is wire.ToStatus with the trace made safe for gRPC metadata.
// HTTP/2 header values cannot hold newlines, which every stack trace has, and
// grpc-go fails the whole call ("invalid header field value") when a trailer
// holds one, so the trace is percent-encoded (bytes outside printable ASCII,
// and '%'), as gRPC encodes grpc-message; url.PathUnescape reverses it.
//
// A configuration error (*config.Error, e.g. from Def.Parse in Start) is
// INVALID_ARGUMENT, as ConfigException is, unless a classified error says
// otherwise.
func toStatus(ctx context.Context, err error) error {
	var we *wire.Error
	var ce *config.Error
	if err != nil && !errors.As(err, &we) && errors.As(err, &ce) {
		return wire.ToStatus(ctx, &wire.Error{Kind: wire.KindInvalid, Message: err.Error()})
	}
	if err == nil || we == nil || we.Trace == "" {
		return wire.ToStatus(ctx, err)
	}
	_ = grpc.SetTrailer(ctx, metadata.Pairs(wire.TraceMetadataKey, escapeTrace(we.Trace)))
	return wire.ToStatus(ctx, &wire.Error{Kind: we.Kind, Message: err.Error()})
}

func escapeTrace(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c <= 0x7e && c != '%' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

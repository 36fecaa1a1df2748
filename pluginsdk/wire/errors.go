package wire

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Kind classifies a plugin failure; plugin.proto maps each kind to a gRPC code.
type Kind int

// Error kinds.
const (
	// KindFatal fails the instance (ConnectException).
	KindFatal Kind = iota
	// KindRetriable asks for the same call again after a backoff (RetriableException).
	KindRetriable
	// KindInvalid is bad configuration or data (ConfigException, DataException).
	KindInvalid
	// KindUnsupported is an operation the plugin does not implement.
	KindUnsupported
	// KindCrashed means the plugin process died or the connection broke.
	KindCrashed
	// KindTimeout means the call missed its deadline.
	KindTimeout
)

var kindNames = [...]string{"fatal", "retriable", "invalid", "unsupported", "crashed", "timeout"}

// Java exception classes Kafka Connect reports errors of these kinds under
// (a dead letter queue's __connect.errors.exception.class.name).
const (
	DataExceptionClass      = "org.apache.kafka.connect.errors.DataException"
	RetriableExceptionClass = "org.apache.kafka.connect.errors.RetriableException"
)

// ExceptionClass is the Java exception class an error of kind k is
// reported under: DataException for KindInvalid, RetriableException for
// KindRetriable; "" for the others, which the reporter names itself.
func (k Kind) ExceptionClass() string {
	switch k {
	case KindInvalid:
		return DataExceptionClass
	case KindRetriable:
		return RetriableExceptionClass
	}
	return ""
}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// Error is a classified plugin error. Plugins return it (or any error, which
// is fatal); the worker gets it back from FromStatus.
type Error struct {
	Kind    Kind
	Message string
	// Trace is the plugin's stack trace or, after a crash, its last stderr lines.
	Trace string
}

func (e *Error) Error() string { return e.Message }

// Retriable, Invalid and Unsupported build classified errors.
func Retriable(format string, args ...any) error {
	return &Error{Kind: KindRetriable, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns a KindInvalid error.
func Invalid(format string, args ...any) error {
	return &Error{Kind: KindInvalid, Message: fmt.Sprintf(format, args...)}
}

// Unsupported returns a KindUnsupported error.
func Unsupported(format string, args ...any) error {
	return &Error{Kind: KindUnsupported, Message: fmt.Sprintf(format, args...)}
}

// KindOf returns the kind of err: the kind of the first *Error in its chain,
// KindTimeout for context deadlines, KindFatal otherwise.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return KindTimeout
	}
	return KindFatal
}

// ToStatus turns a plugin-side error into the gRPC status the contract
// prescribes, setting the trace trailer when there is one. Plugins call it
// in their handlers (the SDK does).
func ToStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	code := codes.Unknown
	if errors.As(err, &e) {
		switch e.Kind {
		case KindRetriable:
			code = codes.Aborted
		case KindInvalid:
			code = codes.InvalidArgument
		case KindUnsupported:
			code = codes.Unimplemented
		}
		if e.Trace != "" {
			_ = grpc.SetTrailer(ctx, metadata.Pairs(TraceMetadataKey, e.Trace))
		}
	}
	return status.Error(code, err.Error())
}

// FromStatus turns an error returned by a gRPC call into an *Error. trailer
// is the call's trailing metadata (grpc.Trailer option), or nil.
func FromStatus(err error, trailer metadata.MD) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.DeadlineExceeded) {
			return &Error{Kind: KindTimeout, Message: err.Error()}
		}
		return &Error{Kind: KindFatal, Message: err.Error()}
	}
	out := &Error{Message: st.Message()}
	switch st.Code() {
	case codes.Aborted:
		out.Kind = KindRetriable
	case codes.InvalidArgument:
		out.Kind = KindInvalid
	case codes.Unimplemented:
		out.Kind = KindUnsupported
	case codes.Unavailable:
		out.Kind = KindCrashed
	case codes.DeadlineExceeded:
		out.Kind = KindTimeout
	case codes.Canceled:
		out.Kind = KindTimeout
	default:
		out.Kind = KindFatal
	}
	if t := trailer.Get(TraceMetadataKey); len(t) > 0 {
		out.Trace = t[0]
	}
	return out
}

package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// crashWait bounds how long a failed call waits for the process to be seen
// dead before deciding. A dying plugin breaks the connection slightly before
// its exit is reaped, and the crash report wants the exit status and the
// complete stderr.
const crashWait = 2 * time.Second

// sluiceMethodPrefix selects the contract's services; go-plugin's own calls
// (controller shutdown, health) pass through untouched.
const sluiceMethodPrefix = "/sluice.plugin.v1."

// callContext gives ctx the default call timeout when it has no deadline.
func (in *Instance) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, in.m.opts.CallTimeout)
}

// intercept wraps every contract call of the instance: it applies the
// deadline, collects the trace trailer, and turns every failure into a
// *wire.Error, wrapped with the method's name. A missed deadline kills the
// plugin (KindTimeout); a dead process gives KindCrashed with its last
// output and exit status.
func (in *Instance) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !strings.HasPrefix(method, sluiceMethodPrefix) {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	what := strings.ReplaceAll(strings.TrimPrefix(method, sluiceMethodPrefix), "/", ".")
	if in.p.hasExited() || in.killRequested() {
		return fmt.Errorf("%s: %w", what, in.goneError())
	}
	callCtx, cancel := in.callContext(ctx)
	defer cancel()
	deadline, _ := callCtx.Deadline()
	budget := time.Until(deadline)

	var trailer metadata.MD
	err := invoker(callCtx, method, req, reply, cc, append(opts, grpc.Trailer(&trailer))...)
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, in.classify(ctx, callCtx, err, trailer, budget))
}

// deadlineSlop: a call failing this close to its deadline with CANCELLED
// or DEADLINE_EXCEEDED missed it. The plugin's gRPC server enforces the
// same deadline and resets the stream (CANCELLED) when it expires; on a
// busy machine that can arrive before the worker's own timer has fired.
const deadlineSlop = 50 * time.Millisecond

// missedDeadline reports whether a call failed because its deadline passed
// (and not because the caller cancelled it).
func missedDeadline(ctx, callCtx context.Context, code codes.Code) bool {
	if code != codes.DeadlineExceeded && code != codes.Canceled {
		return false
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return false
	}
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return true
	}
	dl, _ := callCtx.Deadline()
	return time.Until(dl) <= deadlineSlop
}

// deadlineWait bounds how long awaitDeadline waits past the deadline for
// the caller's context to end.
const deadlineWait = time.Second

// awaitDeadline returns once callCtx has ended, or deadlineWait after its
// deadline. The plugin's reset can come a little before the deadline; a
// caller that answers on its own timer (the REST layer reads the herder's
// stage when its request times out) must see that timer fire while the call
// is still in progress, not a timeout error that beat it.
func awaitDeadline(callCtx context.Context) {
	dl, _ := callCtx.Deadline() // callContext always sets one
	t := time.NewTimer(time.Until(dl) + deadlineWait)
	defer t.Stop()
	select {
	case <-callCtx.Done():
	case <-t.C:
	}
}

func (in *Instance) classify(ctx, callCtx context.Context, err error, trailer metadata.MD, budget time.Duration) *wire.Error {
	// The process died under the call (or just before it).
	if in.p.hasExited() {
		return in.goneError()
	}
	code := status.Code(err)
	switch {
	case missedDeadline(ctx, callCtx, code):
		// A plugin that misses its deadline is hung, and dead to us:
		// nothing it does afterwards can be trusted to fit the call order.
		in.killNow(fmt.Sprintf("killed: no answer within %s", budget.Round(time.Millisecond)))
		awaitDeadline(callCtx)
		return &wire.Error{
			Kind:    wire.KindTimeout,
			Message: fmt.Sprintf("plugin did not answer within %s; process killed", budget.Round(time.Millisecond)),
			Trace:   in.tail.String(),
		}
	case ctx.Err() != nil:
		// The caller gave up (cancellation); the plugin is not at fault.
		return &wire.Error{Kind: wire.KindTimeout, Message: "call abandoned: " + ctx.Err().Error()}
	case code == codes.Unavailable:
		t := time.NewTimer(crashWait)
		defer t.Stop()
		select {
		case <-in.p.exited:
			return in.goneError()
		case <-t.C:
		}
		// The connection is gone but the process lives on: it cannot be
		// spoken to any more, so end it and report it like a crash.
		in.killNow("killed: connection lost: " + status.Convert(err).Message())
		return in.goneError()
	}
	return wire.FromStatus(err, trailer)
}

// goneError describes an instance whose process has ended (or is being
// ended): KindCrashed, with the last output lines and the exit status as
// the trace.
func (in *Instance) goneError() *wire.Error {
	st := in.p.exitStatus()
	var msg string
	switch r := in.killReason(); {
	case r != "" && st != "":
		msg = fmt.Sprintf("plugin process %s (%s)", r, st)
	case r != "":
		msg = "plugin process is being stopped: " + r
	case st != "":
		msg = fmt.Sprintf("plugin process exited unexpectedly (%s)", st)
	default:
		msg = "plugin process exited unexpectedly"
	}
	trace := in.tail.String()
	if st != "" {
		if trace != "" {
			trace += "\n"
		}
		trace += fmt.Sprintf("plugin process %d: %s", in.Pid(), st)
	}
	return &wire.Error{Kind: wire.KindCrashed, Message: msg, Trace: trace}
}

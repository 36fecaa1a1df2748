package plugin

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// hardKillWait bounds the wait for a SIGKILLed process to be reaped when the
// caller gave no deadline. SIGKILL cannot be caught; only a process stuck in
// the kernel (uninterruptible I/O) outlives it for long.
const hardKillWait = 5 * time.Second

// Instance is one running plugin process. Its gRPC clients apply the
// deadline, crash and hang rules of the package (see doc.go).
type Instance struct {
	m      *Manager
	spec   Spec
	log    hclog.Logger
	tail   *tail
	client *goplugin.Client

	// Set while launching (go-plugin calls the RunnerFunc inside its Start),
	// read by Launch's cancellation path.
	startMu     sync.Mutex
	startProc   *process
	perProcDir  string
	clients     *wire.Clients
	p           *process // = startProc once Launch succeeded; read-only
	releaseOnce sync.Once

	// shared is the task's shared memory region, if it has one; unmapped
	// when the instance is released.
	shared *wire.SharedRegion

	worker       *grpc.Server
	workerTarget string
	workerServed chan struct{}

	killOnce sync.Once
	killReq  chan struct{}
	reasonMu sync.Mutex
	reason   string // why the worker ended the process, if it did

	// watched is closed when the memory watcher (memory.go) has returned;
	// nil when there is none. Set before the reaper starts.
	watched chan struct{}

	done chan struct{}
}

func (in *Instance) setStarting(p *process, dir string) {
	in.startMu.Lock()
	in.startProc, in.perProcDir = p, dir
	in.startMu.Unlock()
}

func (in *Instance) starting() *process {
	in.startMu.Lock()
	defer in.startMu.Unlock()
	return in.startProc
}

// Spec is what the instance was launched with (Path made absolute).
func (in *Instance) Spec() Spec { return in.spec }

// Pid is the plugin's process id.
func (in *Instance) Pid() int { return in.p.getPid() }

// WorkerTarget is the gRPC target of this instance's Worker callback
// service ("unix:///..."), or "" when Spec.Worker was nil.
func (in *Instance) WorkerTarget() string { return in.workerTarget }

// Done is closed when the process has exited and the instance's sockets
// are released.
func (in *Instance) Done() <-chan struct{} { return in.done }

// Exited reports whether the process has exited.
func (in *Instance) Exited() bool { return in.p.hasExited() }

// ExitErr is the process's exit error (*exec.ExitError: "exit status 3",
// "signal: killed"), or nil while it runs or after a clean exit.
func (in *Instance) ExitErr() error { return in.p.exitErr() }

// Tail returns the plugin's last output lines, oldest first.
func (in *Instance) Tail() string { return in.tail.String() }

// Plugin, Connector, SourceTask and SinkTask are the plugin's services.
// Which ones answer depends on the process's role (plugin.proto). Every call
// gets the instance's deadline and error rules.
func (in *Instance) Plugin() pluginv1.PluginClient         { return in.clients.Plugin }
func (in *Instance) Connector() pluginv1.ConnectorClient   { return in.clients.Connector }
func (in *Instance) SourceTask() pluginv1.SourceTaskClient { return in.clients.SourceTask }
func (in *Instance) SinkTask() pluginv1.SinkTaskClient     { return in.clients.SinkTask }

// Describe asks the plugin which connector classes it serves.
func (in *Instance) Describe(ctx context.Context) (*pluginv1.DescribeResponse, error) {
	return in.clients.Plugin.Describe(ctx, &pluginv1.DescribeRequest{})
}

// Ping runs go-plugin's health check (grpc.health.v1 service "plugin").
// Unlike go-plugin's own Ping it honours ctx, or the default call timeout.
func (in *Instance) Ping(ctx context.Context) error {
	if in.p.hasExited() {
		return fmt.Errorf("ping plugin: %w", in.goneError())
	}
	ctx, cancel := in.callContext(ctx)
	defer cancel()
	resp, err := healthpb.NewHealthClient(in.clients.Conn).Check(ctx, &healthpb.HealthCheckRequest{Service: goplugin.GRPCServiceName})
	if err != nil {
		return fmt.Errorf("ping plugin: %w", err)
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("ping plugin: health %s", s)
	}
	return nil
}

// Kill ends the process: go-plugin's graceful shutdown first (the plugin's
// gRPC server stops and its Serve returns), SIGKILL to its process group
// after the manager's kill grace. It returns nil once the process is gone,
// never blocks past ctx's deadline (it then returns an error while the
// SIGKILLed process is still being reaped), and may be called any number
// of times from any goroutine.
func (in *Instance) Kill(ctx context.Context) error {
	select {
	case <-in.done:
		return nil
	default:
	}
	in.requestKill("stopped by the worker")

	hardAt := in.m.opts.KillGrace
	if dl, ok := ctx.Deadline(); ok {
		rem := time.Until(dl)
		// Keep a little of the caller's time for SIGKILL and the reap.
		reserve := min(200*time.Millisecond, rem/2)
		hardAt = max(min(hardAt, rem-reserve), 0)
	}
	grace := time.NewTimer(hardAt)
	defer grace.Stop()
	select {
	case <-in.done:
		return nil
	case <-grace.C:
	case <-ctx.Done():
	}
	_ = in.p.Kill(context.Background())

	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, hardKillWait)
		defer cancel()
	}
	select {
	case <-in.done:
		return nil
	case <-ctx.Done():
		select {
		case <-in.done:
			return nil
		default:
		}
		return fmt.Errorf("kill plugin %s (pid %d): SIGKILL sent, exit not observed yet: %w", in.spec.Path, in.Pid(), ctx.Err())
	}
}

// killNow SIGKILLs a plugin the worker gave up on and waits briefly for the
// reap, so that callers see Exited once the failing call returns.
func (in *Instance) killNow(reason string) {
	in.requestKill(reason)
	_ = in.p.Kill(context.Background())
	t := time.NewTimer(hardKillWait)
	defer t.Stop()
	select {
	case <-in.p.exited:
	case <-t.C:
	}
}

func (in *Instance) requestKill(reason string) {
	in.killOnce.Do(func() {
		in.reasonMu.Lock()
		in.reason = reason
		in.reasonMu.Unlock()
		close(in.killReq)
	})
}

// KillReason says why the worker ended the process ("killed: its resident
// memory ... exceeded ..."), or is empty when it did not.
func (in *Instance) KillReason() string { return in.killReason() }

func (in *Instance) killReason() string {
	in.reasonMu.Lock()
	defer in.reasonMu.Unlock()
	return in.reason
}

func (in *Instance) killRequested() bool {
	select {
	case <-in.killReq:
		return true
	default:
		return false
	}
}

// reap owns the instance's end: it waits for the process to exit or for a
// kill request, lets go-plugin shut down and clean up, and closes Done.
func (in *Instance) reap() {
	select {
	case <-in.p.exited:
	case <-in.killReq:
	}
	in.release()
	if in.watched != nil {
		// It returns on the exit or the kill request that woke this
		// reaper, within a /proc read or killNow's bounded wait.
		<-in.watched
	}
	if r := in.killReason(); r != "" {
		in.log.Debug("plugin process ended", "pid", in.Pid(), "reason", r, "status", in.p.exitStatus())
	}
	// Forget before Done closes, so that a caller woken by Done sees the
	// manager without this instance; the reaper count drops last.
	in.m.forget(in)
	close(in.done)
	in.m.reapers.Done()
}

// release frees what the instance holds: go-plugin's client (graceful
// shutdown if the process still runs, SIGKILL after go-plugin's own 2 s),
// the Worker callback service and the per-process socket directory.
func (in *Instance) release() {
	in.releaseOnce.Do(func() {
		if in.client != nil {
			in.client.Kill()
		}
		if in.worker != nil {
			in.worker.Stop()
			<-in.workerServed
		}
		if in.shared != nil {
			_ = in.shared.Close()
		}
		in.startMu.Lock()
		dir := in.perProcDir
		in.startMu.Unlock()
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	})
}

// tailNote appends the plugin's last output to a launch error, where it
// usually says why (a panic in main, a missing library, a usage message).
func (in *Instance) tailNote() string {
	if t := in.tail.String(); t != "" {
		return "; plugin output:\n" + t
	}
	return ""
}

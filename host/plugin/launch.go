package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"

	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// Spec says what process to launch.
type Spec struct {
	// Path is the plugin binary.
	Path string
	// Connector is the connector name (SLUICE_CONNECTOR); empty for a
	// describe or validate process.
	Connector string
	// Task is the task number (SLUICE_TASK), or -1 for a connector, describe
	// or validate process.
	Task int
	// LogLevel overrides the manager's default SLUICE_LOG_LEVEL.
	LogLevel string
	// Worker, if not nil, is served for this instance on a unix socket at
	// Instance.WorkerTarget until the instance ends.
	Worker pluginv1.WorkerServer
	// SharedMemoryBytes, when positive, gives the process a shared memory
	// region of that size (Instance.SharedMemory) for a task's batches. If
	// the system cannot make one, the instance has none and batches go
	// inline, as they do for a plugin that declines it.
	SharedMemoryBytes int64
	// Logger, if not nil, receives the plugin's log lines and this
	// instance's lifecycle messages instead of the manager's "plugin" logger,
	// so a connector's or task's log namespace (and its run-time level)
	// applies to what its process prints.
	Logger hclog.Logger
}

// Launch starts a plugin process and connects to it. It returns when the
// plugin has completed go-plugin's handshake, or fails after the start
// timeout or when ctx ends, with nothing left running.
func (m *Manager) Launch(ctx context.Context, spec Spec) (*Instance, error) {
	in, err := m.launch(ctx, spec, m.opts.StartTimeout)
	if err != nil {
		return nil, fmt.Errorf("launch plugin %s: %w", spec.Path, err)
	}
	return in, nil
}

func (m *Manager) launch(ctx context.Context, spec Spec, startTimeout time.Duration) (*Instance, error) {
	if spec.Task < -1 {
		return nil, fmt.Errorf("task %d: want -1 or a task number", spec.Task)
	}
	if spec.LogLevel == "" {
		spec.LogLevel = m.opts.LogLevel
	}
	if !validLogLevel(spec.LogLevel) {
		return nil, fmt.Errorf("log level %q: want one of trace, debug, info, warn, error", spec.LogLevel)
	}
	path, err := filepath.Abs(spec.Path)
	if err != nil {
		return nil, err
	}
	spec.Path = path
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}

	seq := m.seq.Add(1)
	log := spec.Logger
	if log == nil {
		log = m.log.Named("plugin")
	}
	if spec.Connector != "" {
		log = log.With("connector", spec.Connector)
	}
	if spec.Task >= 0 {
		log = log.With("task", spec.Task)
	}
	in := &Instance{
		m:       m,
		spec:    spec,
		log:     log,
		tail:    newTail(m.opts.TailLines),
		killReq: make(chan struct{}),
		done:    make(chan struct{}),
	}
	if !m.reserve() {
		return nil, ErrClosed
	}
	fail := func(err error) (*Instance, error) {
		in.release()
		m.reapers.Done()
		return nil, err
	}
	if spec.Worker != nil {
		if err := in.serveWorker(seq); err != nil {
			return fail(fmt.Errorf("serve worker callbacks: %w", err))
		}
	}

	var sharedFile *os.File
	if spec.SharedMemoryBytes > 0 {
		f, r, err := newShared(strconv.FormatUint(seq, 10), spec.SharedMemoryBytes)
		if err != nil {
			log.Warn("no shared memory for this task; batches go through gRPC", "error", err)
		} else {
			sharedFile, in.shared = f, r
			// The plugin process has its own descriptor once started; the
			// worker keeps only its mapping.
			defer func() { _ = f.Close() }()
		}
	}

	env := m.env(spec)
	// go-plugin names its stderr logger after the binary; the synced
	// streams get the same name.
	outLog := log.Named(filepath.Base(spec.Path))
	in.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.VersionedPlugins(wire.Servers{}),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		SkipHostEnv:      true,
		// go-plugin creates a per-process directory under TempDir and passes
		// it to the plugin as PLUGIN_UNIX_SOCKET_DIR (only when a RunnerFunc
		// is used; with ClientConfig.Cmd it would not set the variable).
		UnixSocketConfig: &goplugin.UnixSocketConfig{TempDir: m.socketDir},
		RunnerFunc: func(_ hclog.Logger, cmd *exec.Cmd, socketDir string) (runner.Runner, error) {
			// cmd carries go-plugin's variables: magic cookie, protocol
			// versions, port range and PLUGIN_UNIX_SOCKET_DIR.
			p, err := newProcess(spec.Path, append(env, cmd.Env...), sharedFile)
			in.setStarting(p, socketDir)
			if err != nil {
				return nil, err
			}
			return p, nil
		},
		StartTimeout:    startTimeout,
		Stderr:          rawStderr(in.tail),
		SyncStdout:      syncedOutput(in.tail, outLog, "stdout"),
		SyncStderr:      syncedOutput(in.tail, outLog, "stderr"),
		Logger:          log,
		GRPCDialOptions: append(wire.DialOptions(), grpc.WithChainUnaryInterceptor(in.intercept), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxReceiveBytes))),
	})

	// go-plugin's Start has no context: run it aside and kill the process
	// if ctx ends or the manager closes first. The goroutine ends with
	// Start, which returns soon after the process dies.
	type started struct {
		cp  goplugin.ClientProtocol
		err error
	}
	ch := make(chan started, 1)
	go func() {
		cp, err := in.client.Client()
		ch <- started{cp, err}
	}()
	var r started
	var abort error
	select {
	case r = <-ch:
	case <-ctx.Done():
		abort = ctx.Err()
	case <-m.closing:
		abort = ErrClosed
	}
	if abort != nil {
		// Kill until Start gives up; it may not have exec'd the process yet.
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if p := in.starting(); p != nil {
				_ = p.Kill(context.Background())
			}
			select {
			case <-ch:
				return fail(fmt.Errorf("start: %w", abort))
			case <-tick.C:
			}
		}
	}
	if r.err != nil {
		in.release() // reaps the process, so startError can tell how it ended
		return fail(in.startError(r.err, startTimeout))
	}
	raw, err := r.cp.Dispense(wire.PluginName)
	if err != nil {
		return fail(fmt.Errorf("dispense: %w", err))
	}
	clients, ok := raw.(*wire.Clients)
	if !ok {
		return fail(fmt.Errorf("dispense: unexpected %T", raw))
	}
	in.clients = clients
	in.p = in.starting()
	if !m.adopt(in) {
		return fail(ErrClosed)
	}
	log.Debug("plugin launched", "path", spec.Path, "pid", in.p.getPid())
	if limit := m.opts.MemoryLimit; limit > 0 {
		in.watched = make(chan struct{})
		go in.watchMemory(limit, m.opts.MemoryCheckInterval, in.watched)
	}
	go in.reap()
	return in, nil
}

// env is the plugin's whole environment apart from go-plugin's variables:
// PATH and the variables documented in pluginsdk/wire. Nothing else of the
// worker's environment (credentials, Kafka settings) reaches a plugin.
func (m *Manager) env(spec Spec) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	task := ""
	if spec.Task >= 0 {
		task = strconv.Itoa(spec.Task)
	}
	env := []string{
		"PATH=" + path,
		wire.EnvConnector + "=" + spec.Connector,
		wire.EnvTask + "=" + task,
		wire.EnvLogLevel + "=" + spec.LogLevel,
		wire.EnvWorkerID + "=" + *m.workerID.Load(),
	}
	if limit := m.opts.MemoryLimit; limit > 0 {
		// The Go runtime's soft limit, below the hard one (memory.go).
		env = append(env, "GOMEMLIMIT="+strconv.FormatInt(limit/10*9, 10))
	}
	for _, name := range []string{wire.EnvProfileDir, wire.EnvTrace} {
		if v := os.Getenv(name); v != "" {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// maxReceiveBytes bounds what the worker receives from a plugin in one
// message (answers, and go-plugin's stream of a Go plugin's output): the
// contract's bound, which go-plugin's own default (2 GiB) would lift.
// Tests lower it.
var maxReceiveBytes = wire.MaxMessageBytes

// serveWorker starts the Worker callback service on its own unix socket.
// It must exist before the plugin's Start call names its target.
func (in *Instance) serveWorker(seq uint64) error {
	sock := filepath.Join(in.m.socketDir, fmt.Sprintf("%s%d.sock", workerSockPrefix, seq))
	_ = os.Remove(sock)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(wire.MaxMessageBytes))
	pluginv1.RegisterWorkerServer(srv, in.spec.Worker)
	in.worker = srv
	in.workerTarget = "unix://" + sock
	in.workerServed = make(chan struct{})
	plis := &peerListener{Listener: lis, allow: in.ownPeer, refuse: func(why string) {
		in.log.Warn("refused a connection to the task's worker callback service", "reason", why)
	}}
	go func() {
		defer close(in.workerServed)
		if err := srv.Serve(plis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			in.log.Error("worker callback service stopped", "error", err)
		}
	}()
	return nil
}

// ownPeer admits a connection to the Worker callback service only from the
// instance's plugin process or a process it started (see peerListener).
// Before the process has started, nothing is admitted.
func (in *Instance) ownPeer(c net.Conn) (bool, string) {
	pid, err := peerPid(c)
	if errors.Is(err, errNoPeerCredentials) {
		return true, ""
	}
	if err != nil {
		return false, fmt.Sprintf("peer credentials: %v", err)
	}
	p := in.starting()
	if p == nil || p.getPid() == 0 {
		return false, fmt.Sprintf("process %d connected before the plugin process started", pid)
	}
	if root := p.getPid(); !descendsFrom(pid, root) {
		return false, fmt.Sprintf("process %d is not the plugin process %d or one it started", pid, root)
	}
	return true, ""
}

// startError turns go-plugin's start failures into messages that say what
// happened to the process, with its last output.
func (in *Instance) startError(err error, startTimeout time.Duration) error {
	p := in.starting()
	switch {
	case p == nil || p.getPid() == 0:
		return fmt.Errorf("start: %w", err) // exec failed: not executable, bad format, ...
	}
	status := p.exitStatus()
	switch msg := err.Error(); {
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("start: no go-plugin handshake on stdout within %s (not a Sluice plugin?)%s", startTimeout, in.tailNote())
	case status != "" && status != "signal: killed" &&
		(strings.Contains(msg, "plugin exited before we could connect") || strings.Contains(msg, "Failed to read any lines from plugin's stdout")):
		return fmt.Errorf("start: the process exited before the go-plugin handshake (%s; not a Sluice plugin?)%s", status, in.tailNote())
	}
	return fmt.Errorf("start: %w%s", err, in.tailNote())
}

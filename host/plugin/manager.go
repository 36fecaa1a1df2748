package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// ErrClosed is returned by Launch and Scan after Close.
var ErrClosed = errors.New("plugin manager closed")

// Names the manager creates in its socket directory. Only these are ever
// removed from a configured directory, so a misconfigured socket.dir
// pointing at a directory with other contents loses nothing else.
const (
	pluginDirPrefix  = "plugin-dir" // go-plugin's per-process directory (MkdirTemp pattern)
	workerSockPrefix = "worker-"    // Worker callback services: worker-<seq>.sock
	pidFileName      = "worker.pid" // marks a default directory with its owner's pid
	defaultDirPrefix = "sluice-"
)

// Manager launches plugin processes and discovers the connector classes in
// plugin.path. It is safe for concurrent use.
type Manager struct {
	opts      Options
	log       hclog.Logger
	socketDir string
	ownDir    bool // created by New, removed by Close
	seq       atomic.Uint64
	workerID  atomic.Pointer[string] // SLUICE_WORKER_ID of later launches

	mu        sync.Mutex
	closed    bool
	instances map[*Instance]struct{}
	reapers   sync.WaitGroup // one per launch in progress or instance not yet reaped
	closing   chan struct{}  // closed by Close: launches in progress give up

	catalog
}

// New validates opts and prepares the socket directory.
func New(opts Options) (*Manager, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	m := &Manager{
		opts:      opts,
		log:       opts.Logger,
		instances: make(map[*Instance]struct{}),
		closing:   make(chan struct{}),
		catalog:   newCatalog(),
	}
	m.workerID.Store(&opts.WorkerID)
	if opts.SocketDir != "" {
		if err := os.MkdirAll(opts.SocketDir, 0o700); err != nil {
			return nil, fmt.Errorf("create socket dir: %w", err)
		}
		if err := wipeSockets(opts.SocketDir); err != nil {
			return nil, fmt.Errorf("clean socket dir: %w", err)
		}
		m.socketDir = opts.SocketDir
	} else {
		sweepDeadWorkerDirs(os.TempDir(), m.log)
		dir, err := os.MkdirTemp(os.TempDir(), defaultDirPrefix+dirSafe(opts.WorkerID)+"-")
		if err != nil {
			return nil, fmt.Errorf("create socket dir: %w", err)
		}
		if len(dir) > maxSocketDirLen {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("socket dir %q under os.TempDir is longer than %d bytes; set a shorter TMPDIR or a socket dir", dir, maxSocketDirLen)
		}
		if err := os.WriteFile(filepath.Join(dir, pidFileName), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("write socket dir owner: %w", err)
		}
		m.socketDir, m.ownDir = dir, true
	}
	return m, nil
}

// SetWorkerID changes the SLUICE_WORKER_ID given to plugins launched from
// now on: a worker listening on port 0 learns its id (host and bound port)
// only once the REST server runs, after the manager is made, and a plugin
// must see the id its statuses carry. An id with NUL or newline is ignored,
// as Options refuses it.
func (m *Manager) SetWorkerID(id string) {
	if err := checkWorkerID(id); err != nil {
		m.log.Warn("worker id not passed to plugins", "error", err)
		return
	}
	m.workerID.Store(&id)
}

// SocketDir is the directory holding this worker's plugin sockets.
func (m *Manager) SocketDir() string { return m.socketDir }

// Close kills every running instance (Kill with ctx), waits for them to be
// gone (bounded by ctx) and cleans the socket directory. Launch and Scan
// fail with ErrClosed afterwards. Calling Close again returns nil.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.closing)
	live := make([]*Instance, 0, len(m.instances))
	for in := range m.instances {
		live = append(live, in)
	}
	m.mu.Unlock()

	errs := make([]error, len(live))
	var wg sync.WaitGroup
	for i, in := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = in.Kill(ctx)
		}()
	}
	wg.Wait()

	reaped := make(chan struct{})
	go func() {
		m.reapers.Wait()
		close(reaped)
	}()
	select {
	case <-reaped:
	case <-ctx.Done():
		// The waiter above ends once the SIGKILLed processes are reaped.
		errs = append(errs, fmt.Errorf("close plugin manager: instances still exiting: %w", ctx.Err()))
	}

	var err error
	if m.ownDir {
		err = os.RemoveAll(m.socketDir)
	} else {
		err = wipeSockets(m.socketDir)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("clean socket dir: %w", err))
	}
	return errors.Join(errs...)
}

// reserve counts a launch that is starting, or reports that the manager is
// closed. Close waits for every reservation to end: a failed launch, or the
// reaper of a launched instance.
func (m *Manager) reserve() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.reapers.Add(1)
	return true
}

// adopt makes a launched instance visible to Close, unless Close has begun.
func (m *Manager) adopt(in *Instance) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.instances[in] = struct{}{}
	return true
}

func (m *Manager) forget(in *Instance) {
	m.mu.Lock()
	delete(m.instances, in)
	m.mu.Unlock()
}

// wipeSockets removes what a manager creates in dir, and nothing else.
func wipeSockets(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, pluginDirPrefix) || (strings.HasPrefix(n, workerSockPrefix) && strings.HasSuffix(n, ".sock")) {
			if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// sweepDeadWorkerDirs removes default socket directories whose owning
// worker is gone (a SIGKILLed worker cannot remove its own). A directory
// counts only if it carries our pid file and that pid is not running.
func sweepDeadWorkerDirs(tmp string, log hclog.Logger) {
	matches, _ := filepath.Glob(filepath.Join(tmp, defaultDirPrefix+"*"))
	for _, dir := range matches {
		b, err := os.ReadFile(filepath.Join(dir, pidFileName))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pidAlive(pid) {
			continue
		}
		if err := os.RemoveAll(dir); err == nil {
			log.Debug("removed socket dir of a dead worker", "dir", dir, "pid", pid)
		}
	}
}

// pidAlive reports whether pid names a process (EPERM: someone else's, alive).
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// dirSafe shortens a worker id to something harmless in a file name.
func dirSafe(id string) string {
	var b strings.Builder
	for _, r := range id {
		if b.Len() >= 16 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "worker"
	}
	return b.String()
}

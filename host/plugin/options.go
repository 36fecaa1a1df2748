package plugin

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Defaults for the zero values of Options.
const (
	DefaultLogLevel        = "info"
	DefaultCallTimeout     = 30 * time.Second
	DefaultStartTimeout    = 30 * time.Second
	DefaultDescribeTimeout = 5 * time.Second
	DefaultKillGrace       = 2 * time.Second
	DefaultTailLines       = 50
	// DefaultMemoryCheckInterval is how often a plugin's memory is checked
	// against Options.MemoryLimit.
	DefaultMemoryCheckInterval = time.Second
)

// maxSocketDirLen keeps every socket path under the 108-byte sun_path limit:
// go-plugin puts a plugin's socket at <dir>/plugin-dirNNNNNNNNNN/pluginNNNNNNNNNN
// (about 40 bytes after <dir>).
const maxSocketDirLen = 64

// Options configure a Manager. Zero values take the defaults above; New
// validates them once.
type Options struct {
	// PluginPaths are the plugin.path directories Scan searches.
	PluginPaths []string
	// SocketDir holds the unix sockets of this worker's plugins (go-plugin's
	// and the Worker callback services). Empty: a fresh directory under
	// os.TempDir, removed by Close. A configured directory is created if
	// needed, emptied by New (sockets left by a worker that died) and by
	// Close, and kept.
	SocketDir string
	// Logger receives the manager's lines and every plugin's output, under
	// the sub-logger "plugin". Nil discards.
	Logger hclog.Logger
	// WorkerID is passed to plugins as SLUICE_WORKER_ID.
	WorkerID string
	// LogLevel is passed to plugins as SLUICE_LOG_LEVEL when a Spec has none:
	// trace, debug, info, warn or error.
	LogLevel string
	// CallTimeout bounds every plugin call whose context has no deadline.
	CallTimeout time.Duration
	// StartTimeout bounds a launch: exec, go-plugin handshake and dial.
	StartTimeout time.Duration
	// DescribeTimeout bounds the launch, and then the Describe call, of each
	// binary during Scan. It is short on purpose: a file that is not a
	// plugin may never answer the handshake, and costs this much (once:
	// failures are cached like successes).
	DescribeTimeout time.Duration
	// KillGrace is how long Kill waits for a plugin to exit after asking it
	// to shut down before it sends SIGKILL. go-plugin itself gives up on a
	// graceful exit after 2 s, so values above that change nothing.
	KillGrace time.Duration
	// TailLines is how many of a plugin's last output lines are kept for
	// crash reports.
	TailLines int
	// MemoryLimit, when positive, is the most private resident memory
	// (bytes) a plugin process may hold: one above it is killed, and its
	// task or connector fails saying so (memory.go). 0: no limit.
	MemoryLimit int64
	// MemoryCheckInterval is how often MemoryLimit is checked.
	MemoryCheckInterval time.Duration
}

var logLevels = []string{"trace", "debug", "info", "warn", "error"}

func validLogLevel(l string) bool {
	for _, v := range logLevels {
		if l == v {
			return true
		}
	}
	return false
}

// normalize fills defaults and returns every problem at once.
func (o Options) normalize() (Options, error) {
	var errs []error
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.LogLevel == "" {
		o.LogLevel = DefaultLogLevel
	}
	o.LogLevel = strings.ToLower(o.LogLevel)
	if !validLogLevel(o.LogLevel) {
		errs = append(errs, fmt.Errorf("log level %q: want one of %s", o.LogLevel, strings.Join(logLevels, ", ")))
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"call timeout", &o.CallTimeout, DefaultCallTimeout},
		{"start timeout", &o.StartTimeout, DefaultStartTimeout},
		{"describe timeout", &o.DescribeTimeout, DefaultDescribeTimeout},
		{"kill grace", &o.KillGrace, DefaultKillGrace},
		{"memory check interval", &o.MemoryCheckInterval, DefaultMemoryCheckInterval},
	}
	for _, d := range durations {
		switch {
		case *d.v < 0:
			errs = append(errs, fmt.Errorf("%s %s: must not be negative", d.name, *d.v))
		case *d.v == 0:
			*d.v = d.def
		}
	}
	if o.MemoryLimit < 0 {
		errs = append(errs, fmt.Errorf("memory limit %d: must not be negative", o.MemoryLimit))
	}
	if o.TailLines < 0 {
		errs = append(errs, fmt.Errorf("tail lines %d: must not be negative", o.TailLines))
	} else if o.TailLines == 0 {
		o.TailLines = DefaultTailLines
	}
	paths := make([]string, 0, len(o.PluginPaths))
	for _, p := range o.PluginPaths {
		if strings.TrimSpace(p) == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("plugin path %q: %w", p, err))
			continue
		}
		paths = append(paths, abs)
	}
	o.PluginPaths = paths
	if o.SocketDir != "" {
		abs, err := filepath.Abs(o.SocketDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("socket dir %q: %w", o.SocketDir, err))
		} else {
			o.SocketDir = abs
		}
		if len(o.SocketDir) > maxSocketDirLen {
			errs = append(errs, fmt.Errorf("socket dir %q: longer than %d bytes; unix socket paths inside it would exceed the kernel's limit", o.SocketDir, maxSocketDirLen))
		}
	}
	if err := checkWorkerID(o.WorkerID); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("plugin manager options: %w", err)
	}
	return o, nil
}

// checkWorkerID refuses an id that cannot travel in a plugin's environment
// (SLUICE_WORKER_ID).
func checkWorkerID(id string) error {
	if strings.ContainsAny(id, "\x00\n") {
		return fmt.Errorf("worker id %q: must not contain NUL or newline", id)
	}
	return nil
}

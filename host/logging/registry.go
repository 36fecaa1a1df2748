package logging

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// RootName is the name of the ancestor of every logger.
const RootName = "root"

// Names of the worker's loggers.
const (
	WorkerName    = "sluice"
	HerderName    = "sluice.herder"
	connectorBase = "sluice.connector."
	taskBase      = "sluice.task."
)

// ConnectorName is the logger name of a connector instance.
func ConnectorName(connector string) string { return connectorBase + connector }

// TaskName is the logger name of a task ("sluice.task.<connector>-<n>").
func TaskName(connector string, task int) string {
	return fmt.Sprintf("%s%s-%d", taskBase, connector, task)
}

// ErrNotFound is returned for a logger the registry does not know.
var ErrNotFound = errors.New("logger not found")

// Options configure a Registry.
type Options struct {
	// Output receives every line; os.Stderr when nil. Writes are serialized.
	Output io.Writer
	// Level is root's level (log4j spelling); INFO when empty.
	Level string
	// Levels are initial levels of namespaces, e.g. {"sluice.herder":"DEBUG"}.
	// Like Level they count as configured, not modified: last_modified stays
	// null until the API changes them.
	Levels map[string]string
	// JSONFormat writes JSON lines instead of hclog's text format.
	JSONFormat bool
	// Now is the clock of last_modified; time.Now when nil.
	Now func() time.Time
}

// LoggerLevel is one logger's level as GET /admin/loggers shows it.
type LoggerLevel struct {
	Level Level `json:"level"`
	// LastModified is when the API last changed the level, in epoch
	// milliseconds; nil when it never did.
	LastModified *int64 `json:"last_modified"`
}

// Registry hands out the worker's named loggers and changes their levels.
// It is safe for concurrent use.
type Registry struct {
	out     io.Writer
	outMu   sync.Mutex // shared by every logger: one line at a time
	jsonFmt bool
	now     func() time.Time

	mu      sync.Mutex // guards loggers and every entry's fields
	loggers map[string]*entry
}

type entry struct {
	logger   hclog.Logger
	explicit Level // "" when the level is inherited
	modified *int64
}

// New builds a registry; an invalid level in opts is an error.
func New(opts Options) (*Registry, error) {
	r := &Registry{out: opts.Output, jsonFmt: opts.JSONFormat, now: opts.Now, loggers: map[string]*entry{}}
	if r.out == nil {
		r.out = os.Stderr
	}
	if r.now == nil {
		r.now = time.Now
	}
	rootLevel := LevelInfo
	if opts.Level != "" {
		l, err := ParseLevel(opts.Level)
		if err != nil {
			return nil, fmt.Errorf("root log level: %w", err)
		}
		rootLevel = l
	}
	r.loggers[RootName] = &entry{logger: r.newLogger("", rootLevel), explicit: rootLevel}
	names := make([]string, 0, len(opts.Levels))
	for name := range opts.Levels {
		names = append(names, name)
	}
	// Ancestors first, so each namespace's descendants see its level.
	sort.Strings(names)
	for _, name := range names {
		l, err := ParseLevel(opts.Levels[name])
		if err != nil {
			return nil, fmt.Errorf("log level of %s: %w", name, err)
		}
		if name == "" {
			return nil, errors.New("log level for an empty logger name")
		}
		r.set(name, l, false)
	}
	return r, nil
}

func (r *Registry) newLogger(name string, l Level) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      l.Hclog(),
		Output:     r.out,
		Mutex:      &r.outMu,
		JSONFormat: r.jsonFmt,
	})
}

// Logger returns the logger of name, creating it with its nearest
// ancestor's level the first time; "root" (or "") is the root logger.
func (r *Registry) Logger(name string) hclog.Logger {
	if name == "" {
		name = RootName
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookup(name).logger
}

// lookup returns name's entry, creating it; r.mu held.
func (r *Registry) lookup(name string) *entry {
	if e, ok := r.loggers[name]; ok {
		return e
	}
	e := &entry{logger: r.newLogger(name, r.effective(name))}
	r.loggers[name] = e
	return e
}

// effective is the level of name: its own, else its nearest ancestor's
// ("a.b.c" looks at "a.b.c", "a.b", "a", then root); r.mu held.
func (r *Registry) effective(name string) Level {
	for n := name; n != ""; {
		if e, ok := r.loggers[n]; ok && e.explicit != "" {
			return e.explicit
		}
		i := strings.LastIndexByte(n, '.')
		if i < 0 {
			break
		}
		n = n[:i]
	}
	return r.loggers[RootName].explicit
}

// isUnder reports whether name is namespace or one of its descendants.
func isUnder(name, namespace string) bool {
	if namespace == RootName {
		return true
	}
	return name == namespace || strings.HasPrefix(name, namespace+".")
}

// Levels lists every logger the registry knows with its effective level,
// root included.
func (r *Registry) Levels() map[string]LoggerLevel {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]LoggerLevel, len(r.loggers))
	for name, e := range r.loggers {
		out[name] = LoggerLevel{Level: r.effective(name), LastModified: copyTime(e.modified)}
	}
	return out
}

// Level is the effective level of one known logger; ErrNotFound for a name
// no part of the worker has used or set.
func (r *Registry) Level(name string) (LoggerLevel, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.loggers[name]
	if !ok {
		return LoggerLevel{}, fmt.Errorf("logger %s: %w", name, ErrNotFound)
	}
	return LoggerLevel{Level: r.effective(name), LastModified: copyTime(e.modified)}, nil
}

// SetLevel sets level (log4j spelling, any case) on namespace and every
// known descendant, creating namespace if needed, and returns the sorted
// names it set. last_modified moves only for loggers whose level changed:
// setting the level a logger already has is not a modification.
func (r *Registry) SetLevel(namespace, level string) ([]string, error) {
	l, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	if namespace == "" {
		namespace = RootName
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.set(namespace, l, true), nil
}

// set applies l to namespace and its descendants; r.mu held.
func (r *Registry) set(namespace string, l Level, track bool) []string {
	r.lookup(namespace)
	stamp := r.now().UnixMilli()
	// Read every level before changing any: a descendant that inherits from
	// namespace must compare against the level it had, not the new one.
	before := map[string]Level{}
	for name := range r.loggers {
		if isUnder(name, namespace) {
			before[name] = r.effective(name)
		}
	}
	affected := make([]string, 0, len(before))
	for name, prev := range before {
		e := r.loggers[name]
		affected = append(affected, name)
		if prev != l && track {
			ts := stamp
			e.modified = &ts
		}
		e.explicit = l
		e.logger.SetLevel(l.Hclog())
	}
	sort.Strings(affected)
	return affected
}

func copyTime(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

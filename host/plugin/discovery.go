package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// ErrNotExecutable marks a regular file at the top of a plugin.path
// directory that cannot be executed.
var ErrNotExecutable = errors.New("not executable")

// scanParallelism bounds concurrent describe launches: enough that a few
// non-plugin files (each costing the describe timeout) do not serialize a
// scan, few enough for a small machine.
const scanParallelism = 4

// Problem is a file or directory Scan could not use, and why.
type Problem struct {
	Path string
	Err  error
}

func (p Problem) Error() string { return p.Path + ": " + p.Err.Error() }

// Class is one connector class found in plugin.path.
type Class struct {
	// Name is the full class name (connector.class).
	Name string
	// Aliases are the other names Lookup accepts for this class: the simple
	// name, the simple name without a "Connector" suffix, and the declared
	// aliases that do not clash with another class.
	Aliases []string
	Type    pluginv1.ConnectorType
	Version string
	// TaskClass is the class name the plugin gave the class's tasks; empty
	// when it gave none (older and non-Go plugins).
	TaskClass string
	// Path is the binary that serves the class; SDK is what it said it was
	// built with.
	Path string
	SDK  string
	// Def is the plugin's full description of the class (config definition,
	// documentation).
	Def *pluginv1.ConnectorClass
}

// fileKey identifies one version of a binary. A binary replaced in place
// changes its size or mtime; that is what plugin.path operators do.
type fileKey struct {
	size  int64
	mtime time.Time
}

// described is the cached outcome of describing one binary version.
type described struct {
	key  fileKey
	resp *pluginv1.DescribeResponse
	err  error
}

type catalog struct {
	scanMu sync.Mutex // one Scan at a time

	catMu   sync.RWMutex
	cache   map[string]*described // by path
	classes []Class               // sorted by Name
	byName  map[string]int        // full name -> index in classes
	byAlias map[string][]int      // alias -> indexes (several: ambiguous)

	describes atomic.Int64 // describe launches, for tests and logs
}

func newCatalog() catalog {
	return catalog{cache: map[string]*described{}, byName: map[string]int{}, byAlias: map[string][]int{}}
}

// Scan looks for plugins in every plugin.path directory and describes the
// new or changed ones. Candidates are the executable regular files (or
// symlinks to them) directly in a plugin.path directory, and those one
// level down, so that plugin.path/<connector>/<binary> layouts work; names
// starting with "." are skipped. A non-executable file directly in a
// plugin.path directory is reported; one level down it is taken for a
// support file and ignored.
//
// A binary is described once per path, size and modification time: an
// unchanged binary, working or not, is not launched again. Scan returns
// every current problem (missing directories, non-executable files, files
// that fail the handshake or Describe, classes served twice); the error is
// only for ctx or a closed manager. The class index is replaced at the end.
//
// Scan does not watch: call it again (or run Watch) to pick up changes.
func (m *Manager) Scan(ctx context.Context) ([]Problem, error) {
	m.scanMu.Lock()
	defer m.scanMu.Unlock()
	if m.isClosed() {
		return nil, ErrClosed
	}

	candidates, problems := m.candidates()

	m.catMu.RLock()
	old := m.cache
	m.catMu.RUnlock()
	next := make(map[string]*described, len(candidates))
	var todo []candidate
	for _, c := range candidates {
		if d, ok := old[c.path]; ok && d.key == c.key {
			next[c.path] = d
			continue
		}
		todo = append(todo, c)
	}

	results := make([]*described, len(todo))
	sem := make(chan struct{}, scanParallelism)
	var wg sync.WaitGroup
	for i, c := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			resp, err := m.describe(ctx, c.path)
			results[i] = &described{key: c.key, resp: resp, err: err}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("scan plugin path: %w", err)
	}
	if m.isClosed() {
		return nil, ErrClosed
	}
	for i, c := range todo {
		next[c.path] = results[i]
	}

	// Build the index in candidate order (plugin.path order, then names), so
	// that which binary wins a clash is stable.
	var classes []Class
	owner := map[string]string{}
	for _, c := range candidates {
		d := next[c.path]
		if d.err != nil {
			problems = append(problems, Problem{Path: c.path, Err: d.err})
			continue
		}
		for _, cc := range d.resp.GetClasses() {
			if prev, dup := owner[cc.GetClassName()]; dup {
				problems = append(problems, Problem{Path: c.path, Err: fmt.Errorf("class %s is already served by %s; ignored here", cc.GetClassName(), prev)})
				continue
			}
			owner[cc.GetClassName()] = c.path
			classes = append(classes, Class{
				Name:      cc.GetClassName(),
				Type:      cc.GetType(),
				Version:   cc.GetVersion(),
				TaskClass: cc.GetTaskClassName(),
				Path:      c.path,
				SDK:       d.resp.GetSdk(),
				Def:       cc,
			})
		}
	}
	byName, byAlias := index(classes)

	m.catMu.Lock()
	m.cache, m.classes, m.byName, m.byAlias = next, classes, byName, byAlias
	m.catMu.Unlock()
	return problems, nil
}

// Classes returns every known class, sorted by full name.
func (m *Manager) Classes() []Class {
	m.catMu.RLock()
	defer m.catMu.RUnlock()
	return append([]Class(nil), m.classes...)
}

// Watch rescans every interval until ctx ends, logging classes that appear
// or disappear and problems that are new. It returns nil when ctx ends.
func (m *Manager) Watch(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		return fmt.Errorf("watch plugin path: interval %s must be positive", interval)
	}
	known := map[string]bool{}
	for _, c := range m.Classes() {
		known[c.Name] = true
	}
	reported := map[string]bool{}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		problems, err := m.Scan(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch plugin path: %w", err)
		}
		now := map[string]bool{}
		for _, c := range m.Classes() {
			now[c.Name] = true
			if !known[c.Name] {
				m.log.Info("connector class added", "class", c.Name, "path", c.Path)
			}
		}
		for n := range known {
			if !now[n] {
				m.log.Info("connector class removed", "class", n)
			}
		}
		known = now
		seen := map[string]bool{}
		for _, p := range problems {
			s := p.Error()
			seen[s] = true
			if !reported[s] {
				m.log.Warn("plugin path problem", "path", p.Path, "error", p.Err)
			}
		}
		reported = seen
	}
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

type candidate struct {
	path string
	key  fileKey
}

// candidates lists the files Scan considers, in a stable order.
func (m *Manager) candidates() ([]candidate, []Problem) {
	var out []candidate
	var problems []Problem
	seen := map[string]bool{}
	add := func(path string, fi os.FileInfo) {
		if !seen[path] {
			seen[path] = true
			out = append(out, candidate{path: path, key: fileKey{size: fi.Size(), mtime: fi.ModTime()}})
		}
	}
	for _, dir := range m.opts.PluginPaths {
		entries, err := os.ReadDir(dir)
		if err != nil {
			problems = append(problems, Problem{Path: dir, Err: err})
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			fi, err := os.Stat(path) // follows symlinks
			if err != nil {
				problems = append(problems, Problem{Path: path, Err: err})
				continue
			}
			switch {
			case fi.IsDir():
				sub, err := os.ReadDir(path)
				if err != nil {
					problems = append(problems, Problem{Path: path, Err: err})
					continue
				}
				for _, se := range sub {
					if strings.HasPrefix(se.Name(), ".") {
						continue
					}
					sp := filepath.Join(path, se.Name())
					if sfi, err := os.Stat(sp); err == nil && sfi.Mode().IsRegular() && sfi.Mode()&0o111 != 0 {
						add(sp, sfi)
					}
				}
			case !fi.Mode().IsRegular():
				// sockets, devices, fifos: not ours to judge
			case fi.Mode()&0o111 == 0:
				problems = append(problems, Problem{Path: path, Err: ErrNotExecutable})
			default:
				add(path, fi)
			}
		}
	}
	return out, problems
}

// describe launches a binary, asks Describe and kills it. The start and
// the call each get the describe timeout; the kill its grace.
func (m *Manager) describe(ctx context.Context, path string) (*pluginv1.DescribeResponse, error) {
	m.describes.Add(1)
	in, err := m.launch(ctx, Spec{Path: path, Task: -1}, m.opts.DescribeTimeout)
	if err != nil {
		return nil, err
	}
	defer func() {
		kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), m.opts.KillGrace+time.Second)
		defer kcancel()
		_ = in.Kill(kctx)
	}()
	cctx, cancel := context.WithTimeout(ctx, m.opts.DescribeTimeout)
	defer cancel()
	resp, err := in.Describe(cctx)
	if err != nil {
		return nil, fmt.Errorf("describe: %w", err)
	}
	if err := checkDescribe(resp); err != nil {
		return nil, fmt.Errorf("describe: %w", err)
	}
	return resp, nil
}

// checkDescribe rejects answers the index cannot use.
func checkDescribe(resp *pluginv1.DescribeResponse) error {
	if len(resp.GetClasses()) == 0 {
		return errors.New("the plugin serves no connector class")
	}
	seen := map[string]bool{}
	var errs []error
	for i, c := range resp.GetClasses() {
		n := c.GetClassName()
		switch {
		case strings.TrimSpace(n) == "" || strings.ContainsAny(n, " \t\n"):
			errs = append(errs, fmt.Errorf("class %d: invalid class name %q", i, n))
		case seen[n]:
			errs = append(errs, fmt.Errorf("class %s: declared twice", n))
		}
		seen[n] = true
		if t := c.GetType(); t != pluginv1.ConnectorType_CONNECTOR_TYPE_SOURCE && t != pluginv1.ConnectorType_CONNECTOR_TYPE_SINK {
			errs = append(errs, fmt.Errorf("class %s: type %s is neither source nor sink", n, t))
		}
	}
	return errors.Join(errs...)
}

// sortClasses orders classes by name; index relies on it.
func sortClasses(cs []Class) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
}

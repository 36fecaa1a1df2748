package herder_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/storage"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

const (
	srcClass  = "io.test.CounterSourceConnector"
	sinkClass = "io.test.LogSinkConnector"
	hangClass = "io.test.HangingSourceConnector"
	// srcTaskClass is the task class srcClass declares; sinkClass declares
	// none, as a plugin built before the contract carried task classes.
	srcTaskClass = "io.test.CounterSourceTask"
)

func srcDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "topic", Type: config.String, Required: true, Importance: config.High, Doc: "Topic to write."}).
		Define(config.Key{Name: "secret", Type: config.Password, Default: "", Importance: config.Low, Doc: "A secret."})
}

func sinkDefn() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "prefix", Type: config.String, Default: "", Importance: config.Low, Doc: "Line prefix.", Group: "Output"})
}

// fakeInstances is a plugin-less Instances: connectors and tasks are Go
// values the tests steer.
type fakeInstances struct {
	mu         sync.Mutex
	starts     map[string]int // connector starts by name
	stops      map[string]int
	taskStarts map[string]int // by task id
	conns      map[string]*fakeConn
	tasks      map[string]*fakeTask
	numTasks   func(name string, max int) int
	extra      map[string]map[string]string // extra task config entries by connector
	hangStart  chan struct{}                // connector start of "hang-*" blocks until closed
	altered    []herder.ConnectorOffset
	startErr   error
	// failRuns makes the next runs of a task (by id) fail as soon as
	// they start; taskRuns records when each task's runners were built.
	failRuns map[string]int
	taskRuns map[string][]time.Time
	// failTrace, when set for a task, is the plugin trace its failures
	// carry (a *wire.Error's Trace).
	failTrace map[string]string
	// validateErr, when set, is the plugin's answer to a validate call.
	validateErr func(cfg map[string]string) error
}

func newFakeInstances() *fakeInstances {
	return &fakeInstances{
		starts: map[string]int{}, stops: map[string]int{}, taskStarts: map[string]int{},
		conns: map[string]*fakeConn{}, tasks: map[string]*fakeTask{},
		numTasks:  func(_ string, max int) int { return max },
		extra:     map[string]map[string]string{},
		hangStart: make(chan struct{}),
		failRuns:  map[string]int{},
		taskRuns:  map[string][]time.Time{},
		failTrace: map[string]string{},
	}
}

func (f *fakeInstances) classes() []herder.Class {
	return []herder.Class{
		{Name: srcClass, Type: herder.TypeSource, Version: "1.0", TaskClass: srcTaskClass, Def: &pluginv1.ConnectorClass{ClassName: srcClass, Config: srcDef().Proto()}},
		{Name: sinkClass, Type: herder.TypeSink, Version: "1.0", Def: &pluginv1.ConnectorClass{ClassName: sinkClass, Config: sinkDefn().Proto()}},
		{Name: hangClass, Type: herder.TypeSource, Version: "undefined", Def: &pluginv1.ConnectorClass{ClassName: hangClass, Config: config.NewDef().Proto()}},
	}
}

func (f *fakeInstances) Classes() []herder.Class { return f.classes() }

func (f *fakeInstances) Lookup(_ context.Context, name string) (herder.Class, error) {
	for _, c := range f.classes() {
		simple := c.Name[strings.LastIndex(c.Name, ".")+1:]
		if name == c.Name || name == simple || name == strings.TrimSuffix(simple, "Connector") {
			return c, nil
		}
	}
	return herder.Class{}, fmt.Errorf("%w %q", herder.ErrUnknownClass, name)
}

func (f *fakeInstances) Validate(ctx context.Context, class herder.Class, cfg map[string]string) ([]*pluginv1.ConfigValue, error) {
	if f.validateErr != nil {
		return nil, f.validateErr(cfg)
	}
	switch class.Name {
	case srcClass:
		return config.ConfigValuesProto(srcDef().Validate(cfg)), nil
	case sinkClass:
		return config.ConfigValuesProto(sinkDefn().Validate(cfg)), nil
	}
	// The hanging class hangs in validate until the call's deadline.
	<-ctx.Done()
	return nil, &wire.Error{Kind: wire.KindTimeout, Message: "plugin did not answer"}
}

func (f *fakeInstances) StartConnector(ctx context.Context, name string, class herder.Class, cfg map[string]string, cb herder.ConnectorCallbacks) (herder.ConnectorInstance, error) {
	if strings.HasPrefix(name, "hang-") {
		select {
		case <-f.hangStart:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return nil, f.startErr
	}
	f.starts[name]++
	c := &fakeConn{f: f, name: name, cb: cb, done: make(chan struct{}), cfg: maps.Clone(cfg)}
	f.conns[name] = c
	return c, nil
}

func (f *fakeInstances) NewTask(_ context.Context, spec herder.TaskSpec, l herder.TaskListener) (herder.TaskRunner, error) {
	t := &fakeTask{spec: spec, l: l, stop: make(chan struct{}), fail: make(chan error, 1), pauses: make(chan bool, 16)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.taskStarts[spec.ID.String()]++
	f.tasks[spec.ID.String()] = t
	f.taskRuns[spec.ID.String()] = append(f.taskRuns[spec.ID.String()], time.Now())
	if f.failRuns[spec.ID.String()] > 0 {
		f.failRuns[spec.ID.String()]--
		msg := fmt.Sprintf("start %d of %s failed on purpose", f.taskStarts[spec.ID.String()], spec.ID)
		if tr := f.failTrace[spec.ID.String()]; tr != "" {
			t.fail <- &wire.Error{Kind: wire.KindFatal, Message: msg, Trace: tr}
		} else {
			t.fail <- errors.New(msg)
		}
	}
	return t, nil
}

func (f *fakeInstances) AlterOffsets(_ context.Context, _ herder.Class, _ map[string]string, offsets []herder.ConnectorOffset) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.altered = append(f.altered, offsets...)
	return false, nil
}

func (f *fakeInstances) task(id string) *fakeTask {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tasks[id]
}

func (f *fakeInstances) conn(name string) *fakeConn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns[name]
}

func (f *fakeInstances) count(m map[string]int, k string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return m[k]
}

type fakeConn struct {
	f        *fakeInstances
	name     string
	cb       herder.ConnectorCallbacks
	done     chan struct{}
	once     sync.Once
	crashMsg string
	cfg      map[string]string // the config the connector was started with
}

func (c *fakeConn) TaskConfigs(_ context.Context, max int) ([]map[string]string, error) {
	c.f.mu.Lock()
	n := c.f.numTasks(c.name, max)
	extra := maps.Clone(c.f.extra[c.name])
	c.f.mu.Unlock()
	out := make([]map[string]string, n)
	for i := range out {
		out[i] = map[string]string{"n": fmt.Sprint(i)}
		maps.Copy(out[i], extra)
	}
	return out, nil
}

func (c *fakeConn) Stop(context.Context) error {
	c.f.mu.Lock()
	c.f.stops[c.name]++
	c.f.mu.Unlock()
	c.once.Do(func() { close(c.done) })
	return nil
}

func (c *fakeConn) Done() <-chan struct{} { return c.done }

func (c *fakeConn) Err() (string, string) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return c.crashMsg, "crash trace"
}

// crash ends the "process" on its own.
func (c *fakeConn) crash() {
	c.f.mu.Lock()
	c.crashMsg = "plugin process exited unexpectedly (signal: killed)"
	c.f.mu.Unlock()
	c.once.Do(func() { close(c.done) })
}

type fakeTask struct {
	spec   herder.TaskSpec
	l      herder.TaskListener
	mu     sync.Mutex
	paused bool
	ran    bool
	stop   chan struct{}
	once   sync.Once
	fail   chan error
	pauses chan bool
}

func (t *fakeTask) Run(ctx context.Context) error {
	t.mu.Lock()
	t.ran = true
	paused := t.paused
	t.mu.Unlock()
	if paused {
		t.l.OnPaused()
	} else {
		t.l.OnRunning()
	}
	select {
	case <-t.stop:
		t.l.OnStopped()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case err := <-t.fail:
		trace := "task trace line"
		if we := (*wire.Error)(nil); errors.As(err, &we) && we.Trace != "" {
			trace = we.Trace
		}
		t.l.OnFailed(err, trace)
		return err
	}
}

func (t *fakeTask) Pause() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.paused = true
	if t.ran {
		t.l.OnPaused()
	}
}

func (t *fakeTask) Resume() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.paused = false
	if t.ran {
		t.l.OnRunning()
	}
}

func (t *fakeTask) Stop() { t.once.Do(func() { close(t.stop) }) }

type fakeGroups struct {
	mu      sync.Mutex
	offsets map[string]map[string]map[int32]int64
	members bool
}

func (g *fakeGroups) Offsets(_ context.Context, group string) (map[string]map[int32]int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]map[int32]int64{}
	for t, ps := range g.offsets[group] {
		out[t] = maps.Clone(ps)
	}
	return out, nil
}

func (g *fakeGroups) HasMembers(context.Context, string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.members, nil
}

func (g *fakeGroups) Alter(_ context.Context, group string, set map[string]map[int32]int64, reset map[string][]int32) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.offsets[group] == nil {
		g.offsets[group] = map[string]map[int32]int64{}
	}
	for t, ps := range set {
		if g.offsets[group][t] == nil {
			g.offsets[group][t] = map[int32]int64{}
		}
		maps.Copy(g.offsets[group][t], ps)
	}
	for t, ps := range reset {
		for _, p := range ps {
			delete(g.offsets[group][t], p)
		}
	}
	return nil
}

func (g *fakeGroups) Delete(_ context.Context, group string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.offsets, group)
	return nil
}

type fixture struct {
	h      *herder.Standalone
	in     *fakeInstances
	store  *storage.FileOffsetStore
	groups *fakeGroups
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, nil)
}

// newFixtureWith is newFixture with options changed by mod.
func newFixtureWith(t *testing.T, mod func(*herder.StandaloneOptions)) *fixture {
	t.Helper()
	in := newFakeInstances()
	store, err := storage.OpenFileOffsetStore(filepath.Join(t.TempDir(), "offsets"))
	if err != nil {
		t.Fatal(err)
	}
	groups := &fakeGroups{offsets: map[string]map[string]map[int32]int64{}}
	opts := herder.StandaloneOptions{
		WorkerID:  "127.0.0.1:8083",
		Instances: in,
		Offsets:   store,
		Groups:    groups,
		Converters: func(prop, class string, _ map[string]string) error {
			if class != "org.apache.kafka.connect.storage.StringConverter" {
				return config.Invalid(prop, class, "Class "+class+" could not be found.")
			}
			return nil
		},
		TaskShutdownTimeout: time.Second,
	}
	if mod != nil {
		mod(&opts)
	}
	h, err := herder.NewStandalone(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(in.hangStart)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &fixture{h: h, in: in, store: store, groups: groups}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func srcConfig(extra ...string) map[string]string {
	m := map[string]string{"connector.class": "CounterSource", "topic": "t", "tasks.max": "2"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// waitFor polls cond until it holds or the test's patience ends.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// states returns "connector:task0,task1" states.
func states(t *testing.T, h herder.Herder, name string) string {
	t.Helper()
	st, err := h.ConnectorStatus(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	parts := make([]string, len(st.Tasks))
	for i, ts := range st.Tasks {
		parts[i] = ts.State
	}
	return st.Connector.State + ":" + strings.Join(parts, ",")
}

func waitStates(t *testing.T, h herder.Herder, name, want string) {
	t.Helper()
	var got string
	deadline := time.Now().Add(5 * time.Second)
	for {
		got = states(t, h, name)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("states of %s: got %s, want %s", name, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func herderErr(t *testing.T, err error, kind error, msgPart string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error containing %q, got nil", msgPart)
	}
	if kind != nil && !errors.Is(err, kind) {
		t.Fatalf("error %q: want kind %v", err, kind)
	}
	if !strings.Contains(err.Error(), msgPart) {
		t.Fatalf("error %q: want it to contain %q", err, msgPart)
	}
}

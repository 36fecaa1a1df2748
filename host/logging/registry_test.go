package logging

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestRegistry(t *testing.T, opts Options) (*Registry, *bytes.Buffer, *clock) {
	t.Helper()
	var buf bytes.Buffer
	c := &clock{t: time.UnixMilli(1_700_000_000_000)}
	opts.Output = &buf
	opts.Now = c.now
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, &buf, c
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]Level{"debug": LevelDebug, " WARN ": LevelWarn, "Fatal": LevelFatal, "all": LevelAll, "OFF": LevelOff, "trace": LevelTrace} {
		got, err := ParseLevel(in)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "verbose", "5", "warning"} {
		if _, err := ParseLevel(in); !errors.Is(err, ErrInvalidLevel) {
			t.Errorf("ParseLevel(%q) error = %v, want ErrInvalidLevel", in, err)
		}
	}
}

func TestInitialLevelsAreNotModifications(t *testing.T) {
	r, _, _ := newTestRegistry(t, Options{Level: "warn", Levels: map[string]string{"sluice.herder": "debug"}})
	r.Logger("sluice.task.a-0")
	got := r.Levels()
	want := map[string]LoggerLevel{
		"root":            {Level: LevelWarn},
		"sluice.herder":   {Level: LevelDebug},
		"sluice.task.a-0": {Level: LevelWarn},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Levels() = %+v, want %+v", got, want)
	}
	if _, err := New(Options{Level: "loud"}); !errors.Is(err, ErrInvalidLevel) {
		t.Fatalf("New with bad level: %v", err)
	}
}

func TestSetLevelReachesDescendantsOnly(t *testing.T) {
	r, buf, c := newTestRegistry(t, Options{})
	t0 := r.Logger("sluice.task.orders-0")
	t1 := r.Logger("sluice.task.orders-1")
	other := r.Logger("sluice.tasks") // shares a prefix, not a namespace
	conn := r.Logger("sluice.connector.orders")

	c.advance(time.Second)
	affected, err := r.SetLevel("sluice.task", "debug")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sluice.task", "sluice.task.orders-0", "sluice.task.orders-1"}; !reflect.DeepEqual(affected, want) {
		t.Fatalf("affected = %v, want %v", affected, want)
	}
	t0.Debug("task zero debug")
	t1.With("k", "v").Debug("derived debug")
	other.Debug("other debug")
	conn.Debug("connector debug")
	out := buf.String()
	for _, s := range []string{"task zero debug", "derived debug"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	for _, s := range []string{"other debug", "connector debug"} {
		if strings.Contains(out, s) {
			t.Errorf("output has %q although its logger is at INFO:\n%s", s, out)
		}
	}
	lvl, err := r.Level("sluice.task.orders-0")
	if err != nil {
		t.Fatal(err)
	}
	if lvl.Level != LevelDebug || lvl.LastModified == nil || *lvl.LastModified != 1_700_000_001_000 {
		t.Fatalf("level = %+v (last_modified %v)", lvl, lvl.LastModified)
	}
	if lvl, _ := r.Level("sluice.tasks"); lvl.Level != LevelInfo || lvl.LastModified != nil {
		t.Fatalf("unrelated logger changed: %+v", lvl)
	}
	// A logger created later inherits from its nearest ancestor.
	r.Logger("sluice.task.orders-2").Debug("late debug")
	if !strings.Contains(buf.String(), "late debug") {
		t.Fatalf("a new task logger did not inherit DEBUG")
	}
	if lvl, _ := r.Level("sluice.task.orders-2"); lvl.Level != LevelDebug || lvl.LastModified != nil {
		t.Fatalf("new logger = %+v", lvl)
	}
}

func TestSameLevelDoesNotBumpLastModified(t *testing.T) {
	r, _, c := newTestRegistry(t, Options{})
	r.Logger("sluice.herder")
	if _, err := r.SetLevel("sluice.herder", "INFO"); err != nil {
		t.Fatal(err)
	}
	if lvl, _ := r.Level("sluice.herder"); lvl.LastModified != nil {
		t.Fatalf("setting the inherited level counted as a change: %+v", *lvl.LastModified)
	}
	if _, err := r.SetLevel("sluice.herder", "ERROR"); err != nil {
		t.Fatal(err)
	}
	first, _ := r.Level("sluice.herder")
	c.advance(time.Minute)
	if _, err := r.SetLevel("sluice.herder", "error"); err != nil {
		t.Fatal(err)
	}
	second, _ := r.Level("sluice.herder")
	if first.LastModified == nil || second.LastModified == nil || *first.LastModified != *second.LastModified {
		t.Fatalf("last_modified moved on a repeated level: %v -> %v", first.LastModified, second.LastModified)
	}
}

func TestRootReachesEveryLogger(t *testing.T) {
	r, buf, _ := newTestRegistry(t, Options{})
	a := r.Logger("sluice")
	b := r.Logger("sluice.connector.x")
	affected, err := r.SetLevel("root", "OFF")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"root", "sluice", "sluice.connector.x"}; !reflect.DeepEqual(affected, want) {
		t.Fatalf("affected = %v", affected)
	}
	a.Error("silenced")
	b.Error("silenced")
	if buf.Len() != 0 {
		t.Fatalf("OFF still logs: %q", buf.String())
	}
	if _, err := r.SetLevel("root", "fatal"); err != nil {
		t.Fatal(err)
	}
	b.Warn("a warning")
	b.Error("an error")
	if out := buf.String(); strings.Contains(out, "a warning") || !strings.Contains(out, "an error") {
		t.Fatalf("FATAL should log errors only: %q", out)
	}
	if lvl, _ := r.Level("root"); lvl.Level != LevelFatal {
		t.Fatalf("root = %v, want the log4j name that was set", lvl.Level)
	}
}

func TestUnknownLoggerAndBadLevel(t *testing.T) {
	r, _, _ := newTestRegistry(t, Options{})
	if _, err := r.Level("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Level(nope) = %v", err)
	}
	if _, err := r.SetLevel("sluice", "chatty"); !errors.Is(err, ErrInvalidLevel) {
		t.Fatalf("SetLevel bad level = %v", err)
	}
	if _, err := r.Level("sluice"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a rejected SetLevel created the logger")
	}
}

func TestConcurrentUse(t *testing.T) {
	r, _, _ := newTestRegistry(t, Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				l := r.Logger(TaskName("c", j%5))
				l.Info("line", "worker", i)
				if j%50 == 0 {
					if _, err := r.SetLevel("sluice.task", []string{"DEBUG", "INFO"}[j%2]); err != nil {
						t.Error(err)
					}
				}
				r.Levels()
			}
		}()
	}
	wg.Wait()
	if got := len(r.Levels()); got != 7 { // root, sluice.task, 5 tasks
		t.Fatalf("%d loggers, want 7", got)
	}
}

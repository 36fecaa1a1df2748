package herder_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluice-io/sluice/host/configprovider"
	"github.com/sluice-io/sluice/host/herder"
)

// leaseProvider is a provider whose values expire: it answers the current
// value of every key, with the current TTL, and counts its calls.
type leaseProvider struct {
	mu    sync.Mutex
	value string
	ttl   time.Duration
	calls int
}

func (p *leaseProvider) set(value string, ttl time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.value, p.ttl = value, ttl
}

func (p *leaseProvider) Get(ctx context.Context, path string, keys []string) (map[string]string, error) {
	d, err := p.GetWithTTL(ctx, path, keys)
	return d.Values, err
}

func (p *leaseProvider) GetWithTTL(_ context.Context, _ string, keys []string) (configprovider.Data, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	out := map[string]string{}
	for _, k := range keys {
		out[k] = p.value
	}
	return configprovider.Data{Values: out, TTL: p.ttl}, nil
}

var _ configprovider.TTLProvider = (*leaseProvider)(nil)

// logBuf collects a logger's output for the test to read.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const leaseVar = "${vault:/db/creds:password}"

func leaseFixture(t *testing.T, value string, ttl time.Duration) (*fixture, *leaseProvider, *logBuf) {
	t.Helper()
	p := &leaseProvider{value: value, ttl: ttl}
	logs := &logBuf{}
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) {
		o.Resolver = (*configprovider.Resolver)(nil).With("vault", p)
		o.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})
	})
	return f, p, logs
}

// startedWith is the secret the connector instance and its tasks got at
// their latest start.
func startedWith(t *testing.T, f *fixture) (conn, task0, task1 string) {
	t.Helper()
	t0, t1 := f.in.task("src-0"), f.in.task("src-1")
	if t0 == nil || t1 == nil {
		t.Fatal("tasks not started")
	}
	return f.in.conn("src").cfg["secret"], t0.spec.ConnectorConfig["secret"], t1.spec.ConnectorConfig["secret"]
}

func TestReloadRestartsConnectorAndTasksWithNewValues(t *testing.T) {
	const ttl = 400 * time.Millisecond
	f, p, logs := leaseFixture(t, "pw-1", ttl)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig("secret", leaseVar), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	// The credential rotates; the new one does not expire.
	p.set("pw-2", 0)
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	if c, t0, t1 := startedWith(t, f); c != "pw-1" || t0 != "pw-1" || t1 != "pw-1" {
		t.Fatalf("first start with %q %q %q", c, t0, t1)
	}
	if n := f.in.count(f.in.starts, "src"); n != 1 {
		t.Fatalf("%d starts before the TTL ran out", n)
	}
	if !strings.Contains(logs.String(), "Scheduling a restart of connector src in 400 ms") {
		t.Fatalf("no schedule logged:\n%s", logs)
	}

	waitFor(t, "the reload restart", func() bool { return f.in.count(f.in.starts, "src") == 2 })
	waitFor(t, "tasks restarted", func() bool {
		return f.in.count(f.in.taskStarts, "src-0") == 2 && f.in.count(f.in.taskStarts, "src-1") == 2
	})
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	if c, t0, t1 := startedWith(t, f); c != "pw-2" || t0 != "pw-2" || t1 != "pw-2" {
		t.Fatalf("restarted with %q %q %q, want the new value", c, t0, t1)
	}
	// The stored config keeps the variable.
	if got, _ := f.h.ConnectorConfig(ctx, "src"); got["secret"] != leaseVar {
		t.Fatalf("stored secret %q", got["secret"])
	}
	// The new values have no TTL: nothing more is scheduled.
	time.Sleep(2 * ttl)
	if n, t0 := f.in.count(f.in.starts, "src"), f.in.count(f.in.taskStarts, "src-0"); n != 2 || t0 != 2 {
		t.Fatalf("after the reload: %d connector starts, %d task starts", n, t0)
	}
	if n := strings.Count(logs.String(), "Scheduling a restart of connector src"); n == 0 {
		t.Fatal("schedule not logged")
	}
}

func TestReloadRepeatsWhileValuesExpire(t *testing.T) {
	f, p, _ := leaseFixture(t, "pw", 150*time.Millisecond)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig("secret", leaseVar), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	// Each restart reads a TTL again and schedules the next one.
	waitFor(t, "three reload restarts", func() bool { return f.in.count(f.in.starts, "src") >= 4 })
	p.set("pw", 0)
	p.mu.Lock()
	calls := p.calls
	p.mu.Unlock()
	if calls < 4 {
		t.Fatalf("provider asked %d times", calls)
	}
}

func TestReloadNoneDoesNotRestart(t *testing.T) {
	const ttl = 100 * time.Millisecond
	f, p, logs := leaseFixture(t, "pw-1", ttl)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig("secret", leaseVar, "config.action.reload", "none"), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	p.set("pw-2", ttl)
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	time.Sleep(6 * ttl)
	if n, t0 := f.in.count(f.in.starts, "src"), f.in.count(f.in.taskStarts, "src-0"); n != 1 || t0 != 1 {
		t.Fatalf("config.action.reload=none: %d connector starts, %d task starts", n, t0)
	}
	if c, _, _ := startedWith(t, f); c != "pw-1" {
		t.Fatalf("connector has %q", c)
	}
	if strings.Contains(logs.String(), "Scheduling a restart") {
		t.Fatalf("a restart was scheduled:\n%s", logs)
	}
}

func TestReloadCancelledByDeleteAndReconfigure(t *testing.T) {
	const ttl = 300 * time.Millisecond
	f, _, _ := leaseFixture(t, "pw", ttl)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig("secret", leaseVar), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	if err := f.h.DeleteConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	// Reconfigured to none while a restart is pending: it is dropped.
	if _, _, err := f.h.PutConnectorConfig(ctx, "other", srcConfig("secret", leaseVar), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.h.PutConnectorConfig(ctx, "other", srcConfig("secret", leaseVar, "config.action.reload", "none"), true, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl)
	if n := f.in.count(f.in.starts, "src"); n != 1 {
		t.Fatalf("deleted connector started %d times", n)
	}
	if _, err := f.h.ConnectorStatus(ctx, "src"); err == nil {
		t.Fatal("deleted connector came back")
	}
	if n := f.in.count(f.in.starts, "other"); n != 2 {
		t.Fatalf("reconfigured connector started %d times, want 2 (create, update)", n)
	}
}

func TestReloadStopsWithHerder(t *testing.T) {
	const ttl = 200 * time.Millisecond
	f, _, _ := leaseFixture(t, "pw", ttl)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig("secret", leaseVar), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	if err := f.h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * ttl)
	if n := f.in.count(f.in.starts, "src"); n != 1 {
		t.Fatalf("started %d times after close", n)
	}
}

func TestReloadActionValidated(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	_, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig("config.action.reload", "sometimes"), false, herder.TargetStarted)
	herderErr(t, err, herder.ErrBadRequest, "Invalid value sometimes for configuration config.action.reload: String must be one of: none, restart")
	for _, v := range []string{"none", "restart"} {
		if _, _, err := f.h.PutConnectorConfig(ctx, "src-"+v, srcConfig("config.action.reload", v), false, herder.TargetStarted); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
}

// A resolution made after the connector started (here, one task restarted)
// does not postpone the pending reload: the connector instance and the
// other task still hold the values read first, which expire on time.
func TestReloadNotPostponedByLaterResolution(t *testing.T) {
	const ttl = 600 * time.Millisecond
	f, p, _ := leaseFixture(t, "pw-1", ttl)
	ctx := ctxT(t)
	start := time.Now()
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig("secret", leaseVar), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	// The lease now runs long; task 0 restarts and reads it.
	p.set("pw-2", time.Minute)
	if err := f.h.RestartTask(ctx, herder.TaskID{Connector: "src", Task: 0}); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) >= ttl {
		t.Skip("too slow to restart the task before the TTL ran out")
	}
	waitFor(t, "the reload restart at the first TTL", func() bool { return f.in.count(f.in.starts, "src") == 2 })
	if took := time.Since(start); took > ttl+2*time.Second {
		t.Fatalf("reload restart after %s, want about %s", took, ttl)
	}
	waitFor(t, "task 1 restarted", func() bool { return f.in.count(f.in.taskStarts, "src-1") == 2 })
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	if c, _, t1 := startedWith(t, f); c != "pw-2" || t1 != "pw-2" {
		t.Fatalf("restarted with %q %q, want pw-2", c, t1)
	}
	// The next lease is a minute long: no second restart.
	time.Sleep(2 * ttl)
	if n := f.in.count(f.in.starts, "src"); n != 2 {
		t.Fatalf("%d connector starts, want 2", n)
	}
}

// A restart of the connector and all its tasks reads every value again:
// the reload pending from before is dropped, not run on top of it.
func TestReloadCoveredByFullRestart(t *testing.T) {
	const ttl = 800 * time.Millisecond
	f, p, _ := leaseFixture(t, "pw-1", ttl)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig("secret", leaseVar), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	p.set("pw-2", time.Minute)
	if _, err := f.h.RestartConnector(ctx, "src", true, false); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	time.Sleep(ttl + 400*time.Millisecond)
	if n, t0 := f.in.count(f.in.starts, "src"), f.in.count(f.in.taskStarts, "src-0"); n != 2 || t0 != 2 {
		t.Fatalf("%d connector starts, %d of task 0; want 2 and 2 (create, manual restart)", n, t0)
	}
}

// Stopping a connector drops its pending reload: resumed, it reads the
// values again, and only their TTL counts.
func TestReloadCancelledByStop(t *testing.T) {
	const ttl = 700 * time.Millisecond
	f, p, _ := leaseFixture(t, "pw-1", ttl)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig("secret", leaseVar), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	if err := f.h.StopConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	p.set("pw-2", time.Minute)
	if err := f.h.ResumeConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	time.Sleep(ttl + 400*time.Millisecond)
	if n := f.in.count(f.in.starts, "src"); n != 2 {
		t.Fatalf("%d connector starts, want 2 (create, resume)", n)
	}
	if c, t0, _ := startedWith(t, f); c != "pw-2" || t0 != "pw-2" {
		t.Fatalf("resumed with %q %q", c, t0)
	}
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/host/config"
)

// Short group timings keep these tests to seconds.
const (
	testSession   = 1500 * time.Millisecond
	testHeartbeat = 250 * time.Millisecond
	testRebalance = 3 * time.Second
	testGroup     = "connect-cluster"
)

// ledger is who runs what, across all members, as their herders apply the
// callbacks. A claim on something another member still runs is a zombie:
// the test fails.
type ledger struct {
	t     *testing.T
	mu    sync.Mutex
	owner map[string]string
}

func key(w Work) []string {
	var ks []string
	for _, c := range w.Connectors {
		ks = append(ks, "connector "+c)
	}
	for _, t := range w.Tasks {
		ks = append(ks, "task "+t.String())
	}
	return ks
}

func (l *ledger) claim(who string, w Work) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range key(w) {
		if o, ok := l.owner[k]; ok && o != who {
			l.t.Errorf("%s starts %s while %s still runs it", who, k, o)
		}
		l.owner[k] = who
	}
}

func (l *ledger) release(who string, w Work) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range key(w) {
		if l.owner[k] != who {
			l.t.Errorf("%s stops %s it does not run (owner %q)", who, k, l.owner[k])
		}
		delete(l.owner, k)
	}
}

// herder records what the member tells it and keeps the ledger.
type herder struct {
	name    string
	l       *ledger
	configs *atomic.Pointer[ConfigSnapshot]

	mu       sync.Mutex
	running  workSet
	added    workSet // everything ever added
	revoked  workSet // everything ever revoked
	lost     []Work
	causes   []error
	rounds   []Assignment
	lastSeen Assignment
	// eagerRevokes counts OnRevoked calls made before a JoinGroup under
	// eager (everything the worker ran).
	eagerRevokes int
	// revokeDelay (nanoseconds) is how long stopping revoked work takes.
	revokeDelay atomic.Int64
	// afterAssigned, when set, runs at the end of every OnAssigned.
	afterAssigned atomic.Pointer[func(Assignment)]
}

func (h *herder) ConfigSnapshot() ConfigSnapshot { return *h.configs.Load() }

// OnRevoked takes revokeDelay to stop the work, or less: like the
// distributed herder, it kills what has not stopped by ctx's deadline.
func (h *herder) OnRevoked(ctx context.Context, a Assignment) {
	if d := time.Duration(h.revokeDelay.Load()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !setOf(a.Revoked).minus(h.running).empty() {
		h.l.t.Errorf("%s told to revoke %v, runs %v", h.name, a.Revoked, h.running.work())
	}
	if a.Protocol == Eager && a.Owned.Empty() && a.Revoked.String() == h.running.work().String() {
		h.eagerRevokes++
	}
	h.running.removeSet(setOf(a.Revoked))
	h.revoked.addSet(setOf(a.Revoked))
	h.l.release(h.name, a.Revoked)
}

func (h *herder) OnAssigned(_ context.Context, a Assignment) {
	if f := h.afterAssigned.Load(); f != nil {
		defer (*f)(a)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rounds = append(h.rounds, a)
	h.lastSeen = a
	if a.Error != NoError {
		return
	}
	h.l.claim(h.name, a.Added)
	h.running.addSet(setOf(a.Added))
	h.added.addSet(setOf(a.Added))
	if got := h.running.work(); got.String() != a.Owned.String() {
		h.l.t.Errorf("%s runs %v, member says it owns %v", h.name, got, a.Owned)
	}
}

func (h *herder) OnLost(_ context.Context, lost Work, cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if lost.String() != h.running.work().String() {
		h.l.t.Errorf("%s lost %v, runs %v", h.name, lost, h.running.work())
	}
	h.lost = append(h.lost, lost)
	h.causes = append(h.causes, cause)
	h.l.release(h.name, h.running.work())
	h.running = newWorkSet()
}

func (h *herder) runs() Work {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running.work()
}

// crash is the process dying: whatever it ran stops with it.
func (h *herder) crash() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.l.release(h.name, h.running.work())
	h.running = newWorkSet()
}

type testGroupEnv struct {
	t        *testing.T
	c        *kfake.Cluster
	l        *ledger
	configs  atomic.Pointer[ConfigSnapshot]
	maxDelay time.Duration
}

func newEnv(t *testing.T, maxDelay time.Duration, tasks map[string]int, opts ...kfake.Opt) *testGroupEnv {
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e := &testGroupEnv{t: t, c: c, l: &ledger{t: t, owner: map[string]string{}}, maxDelay: maxDelay}
	e.configs.Store(&ConfigSnapshot{Offset: 10, Tasks: tasks})
	return e
}

type worker struct {
	name   string
	h      *herder
	m      *Member
	cancel context.CancelFunc
	done   chan error
}

func (e *testGroupEnv) start(name string) *worker { return e.startWith(name, Sessioned) }

// startWith starts a worker configured with connect.protocol p.
func (e *testGroupEnv) startWith(name string, p Protocol) *worker {
	return e.startWithSession(name, p, testSession)
}

// startWithSession starts a worker with its own session timeout.
func (e *testGroupEnv) startWithSession(name string, p Protocol, session time.Duration) *worker {
	t := e.t
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.c.ListenAddrs()...), kgo.ClientID(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	h := &herder{name: name, l: e.l, configs: &e.configs, running: newWorkSet(), added: newWorkSet(), revoked: newWorkSet()}
	m, err := New(Config{
		Client: cl, GroupID: testGroup, URL: "http://" + name + ":8083", Protocol: p,
		SessionTimeout: session, HeartbeatInterval: testHeartbeat, RebalanceTimeout: testRebalance,
		MaxDelay: e.maxDelay, Handler: h, Logger: testLog(t, name),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{name: name, h: h, m: m, cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-w.done
	})
	return w
}

// testLog is the members' log: with SLUICE_TEST_LOG set, in the output of
// the test (shown when it fails, or with -v).
func testLog(t *testing.T, name string) hclog.Logger {
	if os.Getenv("SLUICE_TEST_LOG") == "" {
		return nil
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Debug, Output: t.Output()})
}

// kill ends the worker as a crash does: no LeaveGroup, work gone.
func (w *worker) kill(t *testing.T) {
	w.cancel()
	if err := <-w.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("%s: Run returned %v", w.name, err)
	}
	w.done <- nil // for the cleanup
	w.h.crash()
}

// leave stops the worker's work, then leaves the group.
func (w *worker) leave(t *testing.T) {
	w.h.crash()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.m.Leave(ctx); err != nil {
		t.Fatalf("%s: leave: %v", w.name, err)
	}
	if err := <-w.done; err != nil {
		t.Fatalf("%s: Run after Leave returned %v", w.name, err)
	}
	w.done <- nil
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settled: every configured item runs exactly once among ws, balanced, and
// no member is in the middle of a rebalance.
func (e *testGroupEnv) settled(ws ...*worker) bool {
	want := e.configs.Load()
	all := newWorkSet()
	n := 0
	cmin, cmax, tmin, tmax := 1<<30, -1, 1<<30, -1
	for _, w := range ws {
		if w.m.Status().Rebalancing {
			return false
		}
		r := w.h.runs()
		n += r.Len()
		all.addWork(r)
		cmin, cmax = min(cmin, len(r.Connectors)), max(cmax, len(r.Connectors))
		tmin, tmax = min(tmin, len(r.Tasks)), max(tmax, len(r.Tasks))
	}
	return n == all.work().Len() && all.work().String() == want.work().work().String() &&
		cmax-cmin < 2 && tmax-tmin < 2
}

func (e *testGroupEnv) dump(ws ...*worker) string {
	s := ""
	for _, w := range ws {
		st := w.m.Status()
		s += fmt.Sprintf("\n  %s gen %d leader %v rebalancing %v runs %v", w.name, st.Generation, st.IsLeader, st.Rebalancing, w.h.runs())
	}
	return s
}

func (e *testGroupEnv) waitSettled(d time.Duration, ws ...*worker) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for !e.settled(ws...) {
		if time.Now().After(deadline) {
			e.t.Fatalf("group did not settle in %v:%s", d, e.dump(ws...))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func snapshotRevoked(ws ...*worker) map[string]Work {
	out := map[string]Work{}
	for _, w := range ws {
		w.h.mu.Lock()
		out[w.name] = w.h.revoked.work()
		w.h.mu.Unlock()
	}
	return out
}

func snapshotAdded(ws ...*worker) map[string]Work {
	out := map[string]Work{}
	for _, w := range ws {
		w.h.mu.Lock()
		out[w.name] = w.h.added.work()
		w.h.mu.Unlock()
	}
	return out
}

var eightTasks = map[string]int{"c1": 4, "c2": 4}

func TestMembersJoinOneByOne(t *testing.T) {
	e := newEnv(t, time.Second, eightTasks)
	w1 := e.start("w1")
	e.waitSettled(10*time.Second, w1)
	if st := w1.m.Status(); !st.IsLeader || st.LeaderURL != "http://w1:8083" {
		t.Fatalf("status %+v", st)
	}
	if p, ok := w1.m.LeaderPlan(); !ok || p.Members[w1.m.Status().MemberID].Owned.Len() != 10 {
		t.Fatalf("leader plan %+v %v", p, ok)
	}

	w2 := e.start("w2")
	e.waitSettled(10*time.Second, w1, w2)
	// w1 gave up exactly what w2 runs now, nothing more.
	rev := snapshotRevoked(w1)["w1"]
	if rev.String() != w2.h.runs().String() || rev.Len() != 5 {
		t.Fatalf("w1 revoked %v, w2 runs %v", rev, w2.h.runs())
	}
	st2 := w2.m.Status()
	if st2.IsLeader || st2.LeaderURL != "http://w1:8083" || st2.Leader != w1.m.Status().MemberID {
		t.Fatalf("w2 status %+v", st2)
	}

	w3 := e.start("w3")
	e.waitSettled(10*time.Second, w1, w2, w3)
	after := snapshotRevoked(w1, w2)
	moved := setOf(after["w1"]).minus(setOf(rev))
	moved.addSet(setOf(after["w2"]))
	if got := moved.work(); got.String() != w3.h.runs().String() {
		t.Fatalf("revoked for w3: %v; w3 runs %v", got, w3.h.runs())
	}
	if n := w3.h.runs().Len(); n != 2 { // 2 connectors, 8 tasks over 3: w3 gets 0 connectors, 2 tasks
		t.Fatalf("w3 runs %v", w3.h.runs())
	}
	for _, w := range []*worker{w1, w2, w3} {
		if len(w.h.lost) != 0 {
			t.Fatalf("%s lost work: %v", w.name, w.h.lost)
		}
	}
	g, err := e.c.WaitGroupStable(context.Background(), testGroup, 3)
	if err != nil || g.State != "Stable" {
		t.Fatalf("group %+v %v", g, err)
	}

	// What the coordinator holds decodes as Kafka Connect's formats: each
	// member's metadata names its URL, config offset and what it runs,
	// and its assignment names the leader.
	dg := describeGroup(t, e)
	if dg.ProtocolType != ProtocolType || dg.Protocol != string(Sessioned) || len(dg.Members) != 3 {
		t.Fatalf("described group %s/%s with %d members", dg.ProtocolType, dg.Protocol, len(dg.Members))
	}
	byID := map[string]*worker{}
	for _, w := range []*worker{w1, w2, w3} {
		byID[w.m.Status().MemberID] = w
	}
	for _, dm := range dg.Members {
		w := byID[dm.MemberID]
		md, err := DecodeMetadata(dm.ProtocolMetadata)
		if err != nil || w == nil {
			t.Fatalf("member %s: %v", dm.MemberID, err)
		}
		// Metadata is from the member's last JoinGroup: what it ran
		// then, before the round that gave it lastSeen.Added.
		if md.Version != 2 || md.URL != "http://"+w.name+":8083" || md.ConfigOffset != 10 {
			t.Fatalf("%s metadata %+v", w.name, md)
		}
		// A member whose last JoinGroup was its first carries no current
		// assignment (under load the group may settle before it rejoins).
		current := &WireAssignment{}
		if md.Current != nil {
			current = md.Current
		}
		w.h.mu.Lock()
		last := w.h.lastSeen
		w.h.mu.Unlock()
		if got := setOf(current.Assigned, last.Added).work(); got.String() != w.h.runs().String() {
			t.Fatalf("%s joined running %v, then got %v; runs %v", w.name, current.Assigned, last.Added, w.h.runs())
		}
		a, err := DecodeAssignment(dm.MemberAssignment)
		if err != nil || a.Version != 2 || a.Leader != w1.m.Status().MemberID || a.LeaderURL != "http://w1:8083" || a.ConfigOffset != 10 {
			t.Fatalf("%s assignment %+v %v", w.name, a, err)
		}
	}
}

func groupOfThree(t *testing.T, maxDelay time.Duration) (*testGroupEnv, []*worker) {
	e := newEnv(t, maxDelay, eightTasks)
	w1 := e.start("w1")
	e.waitSettled(10*time.Second, w1)
	w2, w3 := e.start("w2"), e.start("w3")
	e.waitSettled(10*time.Second, w1, w2, w3)
	return e, []*worker{w1, w2, w3}
}

// reassignedAfter waits until the survivors run everything and says how long
// it took from start.
func reassignedAfter(t *testing.T, e *testGroupEnv, start time.Time, ws ...*worker) time.Duration {
	e.waitSettled(15*time.Second, ws...)
	return time.Since(start)
}

func TestCleanLeaveWaitsForTheDelay(t *testing.T) {
	const delay = 1500 * time.Millisecond
	e, ws := groupOfThree(t, delay)
	gone := ws[2].h.runs()
	start := time.Now()
	ws[2].leave(t)
	took := reassignedAfter(t, e, start, ws[0], ws[1])
	if took < delay-100*time.Millisecond {
		t.Fatalf("share of the leaver reassigned after %v, before the %v delay", took, delay)
	}
	if took > delay+testSession {
		t.Fatalf("reassignment took %v", took)
	}
	got := setOf(ws[0].h.runs(), ws[1].h.runs())
	if !setOf(gone).minus(got).empty() {
		t.Fatalf("survivors run %v, the leaver ran %v", got.work(), gone)
	}
	t.Logf("clean leave, delay %v: reassigned after %v", delay, took)
}

func TestCleanLeaveWithoutDelay(t *testing.T) {
	e, ws := groupOfThree(t, 0)
	start := time.Now()
	ws[2].leave(t)
	took := reassignedAfter(t, e, start, ws[0], ws[1])
	// No session timeout to wait for, no delay: one rebalance.
	if took >= testSession {
		t.Fatalf("reassignment took %v", took)
	}
	t.Logf("clean leave, no delay: reassigned after %v", took)
}

func TestKilledWorkerShareMovesAfterSessionTimeoutAndDelay(t *testing.T) {
	const delay = time.Second
	e, ws := groupOfThree(t, delay)
	start := time.Now()
	ws[2].kill(t)
	took := reassignedAfter(t, e, start, ws[0], ws[1])
	// Evicted a session timeout after its last heartbeat, then the delay.
	if min := testSession - testHeartbeat + delay - 100*time.Millisecond; took < min {
		t.Fatalf("reassigned after %v, expected at least %v", took, min)
	}
	t.Logf("killed worker, session %v, delay %v: reassigned after %v", testSession, delay, took)
}

func TestReturningWorkerGetsItsShareBack(t *testing.T) {
	const delay = 3 * time.Second
	e, ws := groupOfThree(t, delay)
	had := ws[2].h.runs()
	revoked := snapshotRevoked(ws[0], ws[1])
	added := snapshotAdded(ws[0], ws[1])
	ws[2].kill(t)
	// Wait for the coordinator to drop it, then restart it.
	if _, err := e.c.WaitGroupInfo(context.Background(), testGroup, func(g *GroupInfo) bool {
		return g != nil && g.State == "Stable" && len(g.Members) == 2
	}); err != nil {
		t.Fatal(err)
	}
	back := e.start("w3")
	e.waitSettled(15*time.Second, ws[0], ws[1], back)
	if got := back.h.runs(); got.String() != had.String() {
		t.Fatalf("returning worker runs %v, ran %v", got, had)
	}
	// The others never moved anything.
	if now := snapshotRevoked(ws[0], ws[1]); !maps.EqualFunc(now, revoked, func(a, b Work) bool { return a.String() == b.String() }) {
		t.Fatalf("survivors revoked %v (before %v)", now, revoked)
	}
	if now := snapshotAdded(ws[0], ws[1]); !maps.EqualFunc(now, added, func(a, b Work) bool { return a.String() == b.String() }) {
		t.Fatalf("survivors were given %v (before %v)", now, added)
	}
}

type GroupInfo = kfake.GroupInfo

// partition cuts one member off the group coordinator: its heartbeats,
// joins and syncs under its member id fail as a dead connection does.
func partition(c *kfake.Cluster, memberID string, healed *atomic.Bool) {
	for _, k := range []int16{int16(kmsg.Heartbeat), int16(kmsg.JoinGroup), int16(kmsg.SyncGroup)} {
		c.ControlKey(k, func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if healed.Load() {
				return nil, nil, false
			}
			var id string
			switch r := req.(type) {
			case *kmsg.HeartbeatRequest:
				id = r.MemberID
			case *kmsg.JoinGroupRequest:
				id = r.MemberID
			case *kmsg.SyncGroupRequest:
				id = r.MemberID
			}
			if id != memberID {
				return nil, nil, false
			}
			return nil, errors.New("partitioned"), true
		})
	}
}

func TestPartitionedWorkerStopsBeforeOthersTakeOver(t *testing.T) {
	// No delay: the others take the work over as soon as the coordinator
	// evicts the cut-off member. The ledger fails the test if they start
	// anything before it has stopped.
	e, ws := groupOfThree(t, 0)
	victim := ws[2]
	had := victim.h.runs()
	var healed atomic.Bool
	oldID := victim.m.Status().MemberID
	var joinsAsOld atomic.Int32
	e.c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if req.(*kmsg.JoinGroupRequest).MemberID == oldID {
			joinsAsOld.Add(1)
		}
		return nil, nil, false
	})
	start := time.Now()
	partition(e.c, oldID, &healed)
	waitFor(t, 10*time.Second, "the cut-off member to report its loss", func() bool {
		victim.h.mu.Lock()
		defer victim.h.mu.Unlock()
		return len(victim.h.lost) == 1
	})
	lostAfter := time.Since(start)
	if victim.h.lost[0].String() != had.String() {
		t.Fatalf("lost %v, ran %v", victim.h.lost[0], had)
	}
	// Given up a heartbeat interval before the coordinator may evict it.
	if lostAfter < testSession-2*testHeartbeat-100*time.Millisecond || lostAfter > testSession+testHeartbeat {
		t.Fatalf("loss reported after %v, session timeout %v", lostAfter, testSession)
	}
	// The coordinator evicts it and the others take its work over while
	// it is still cut off: the ledger has checked that nobody started
	// anything before it had stopped. (It keeps offering its old id,
	// which the cut is keyed on, so it cannot come back meanwhile.)
	e.waitSettled(15*time.Second, ws[0], ws[1])
	if joinsAsOld.Load() == 0 {
		t.Fatal("cut off, the member did not try to join again under its old id")
	}
	// Healed, its old id is refused (evicted): it joins as a new member
	// and the group settles with everyone.
	healed.Store(true)
	e.waitSettled(15*time.Second, ws...)
	if id := victim.m.Status().MemberID; id == "" || id == oldID {
		t.Fatalf("after its eviction the cut-off member rejoined as %q (old id %q)", id, oldID)
	}
	t.Logf("partitioned member stopped its work after %v", lostAfter)
}

func TestEvictedWorkerLearnsAndComesBack(t *testing.T) {
	// The coordinator drops w3 while w3 believes its heartbeats are
	// answered; its next real heartbeat gets UNKNOWN_MEMBER_ID. It stops
	// its work, joins as a new member inside the delay, and gets its share
	// back.
	const delay = 3 * time.Second
	e, ws := groupOfThree(t, delay)
	victim := ws[2]
	had := victim.h.runs()
	id := victim.m.Status().MemberID
	var faking atomic.Bool
	faking.Store(true)
	e.c.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		hb := req.(*kmsg.HeartbeatRequest)
		if !faking.Load() || hb.MemberID != id {
			return nil, nil, false
		}
		return hb.ResponseKind(), nil, true
	})
	if _, err := e.c.WaitGroupInfo(context.Background(), testGroup, func(g *GroupInfo) bool {
		return g != nil && g.State == "Stable" && len(g.Members) == 2
	}); err != nil {
		t.Fatal(err)
	}
	faking.Store(false)
	waitFor(t, 5*time.Second, "w3 to learn it was dropped", func() bool {
		victim.h.mu.Lock()
		defer victim.h.mu.Unlock()
		return len(victim.h.lost) == 1
	})
	if !errors.Is(victim.h.causes[0], kerr.UnknownMemberID) || victim.h.lost[0].String() != had.String() {
		t.Fatalf("lost %v because %v", victim.h.lost[0], victim.h.causes[0])
	}
	e.waitSettled(10*time.Second, ws...)
	if got := victim.h.runs(); got.String() != had.String() {
		t.Fatalf("w3 runs %v, ran %v", got, had)
	}
	if victim.m.Status().MemberID == id {
		t.Fatal("w3 kept its old member id")
	}
}

func TestCoordinatorMoveKeepsMembership(t *testing.T) {
	e := newEnv(t, time.Second, eightTasks, kfake.NumBrokers(3))
	ws := []*worker{e.start("w1")}
	e.waitSettled(10*time.Second, ws...)
	ws = append(ws, e.start("w2"), e.start("w3"))
	e.waitSettled(10*time.Second, ws...)
	gens := map[string]int32{}
	for _, w := range ws {
		gens[w.name] = w.m.Status().Generation
	}
	// Heartbeats to the old coordinator now get NOT_COORDINATOR; kgo finds
	// the new one and the members carry on in the same generation.
	old := e.c.CoordinatorFor(testGroup)
	var atOld, atNew atomic.Int32
	var moved atomic.Bool
	e.c.ControlKey(int16(kmsg.Heartbeat), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		if moved.Load() {
			if e.c.CurrentNode() == old {
				atOld.Add(1)
			} else {
				atNew.Add(1)
			}
		}
		return nil, nil, false
	})
	for e.c.CoordinatorFor(testGroup) == old {
		e.c.RehashCoordinators()
	}
	moved.Store(true)
	time.Sleep(2 * testSession)
	// Some went to the old coordinator (refused), then on to the new one.
	if atOld.Load() == 0 || atNew.Load() < 6 {
		t.Fatalf("heartbeats after the move: %d to the old coordinator, %d to the new", atOld.Load(), atNew.Load())
	}
	for _, w := range ws {
		if len(w.h.lost) != 0 {
			t.Fatalf("%s lost its work on a coordinator move: %v", w.name, w.h.lost)
		}
		if g := w.m.Status().Generation; g != gens[w.name] {
			t.Fatalf("%s moved from generation %d to %d", w.name, gens[w.name], g)
		}
	}
	e.waitSettled(time.Second, ws...)
}

func TestLeaderFailover(t *testing.T) {
	e, ws := groupOfThree(t, 2*time.Second)
	var leader *worker
	var rest []*worker
	for _, w := range ws {
		if w.m.Status().IsLeader {
			leader = w
		} else {
			rest = append(rest, w)
		}
	}
	if leader == nil {
		t.Fatalf("no leader:%s", e.dump(ws...))
	}
	start := time.Now()
	leader.kill(t)
	e.waitSettled(15*time.Second, rest...)
	// A new leader remembers nothing: what the old one ran is new work to
	// it, assigned without waiting for the delay.
	took := time.Since(start)
	if took > testSession+2*time.Second-200*time.Millisecond {
		t.Fatalf("new leader waited %v", took)
	}
	n := 0
	for _, w := range rest {
		if w.m.Status().IsLeader {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d leaders:%s", n, e.dump(rest...))
	}
}

func TestConfigChangeRebalances(t *testing.T) {
	e, ws := groupOfThree(t, time.Second)
	before := snapshotRevoked(ws...)
	e.configs.Store(&ConfigSnapshot{Offset: 20, Tasks: map[string]int{"c1": 4, "c3": 2}})
	for _, w := range ws {
		w.m.Rejoin("config changed")
	}
	e.waitSettled(10*time.Second, ws...)
	for _, w := range ws {
		if st := w.m.Status(); st.Generation < 0 || w.h.lastSeen.ConfigOffset != 20 {
			t.Fatalf("%s at offset %d", w.name, w.h.lastSeen.ConfigOffset)
		}
	}
	// c2 stopped where it ran; c1 and c3 may move for balance.
	var revoked []string
	for name, w := range snapshotRevoked(ws...) {
		for _, k := range key(setOf(w).minus(setOf(before[name])).work()) {
			if strings.Contains(k, "c2") {
				revoked = append(revoked, k)
			}
		}
	}
	slices.Sort(revoked)
	if want := []string{"connector c2", "task c2-0", "task c2-1", "task c2-2", "task c2-3"}; !slices.Equal(revoked, want) {
		t.Fatalf("c2 revoked: %v", revoked)
	}
}

func TestConfigMismatchMakesEveryoneRejoin(t *testing.T) {
	e, ws := groupOfThree(t, time.Second)
	// One worker has read further than the others (the leader included).
	ahead := &ConfigSnapshot{Offset: 30, Tasks: map[string]int{"c1": 4, "c2": 4, "c4": 1}}
	var leader, follower *worker
	for _, w := range ws {
		if w.m.Status().IsLeader {
			leader = w
		} else if follower == nil {
			follower = w
		}
	}
	follower.h.configs = &atomic.Pointer[ConfigSnapshot]{}
	follower.h.configs.Store(ahead)
	follower.m.Rejoin("read further")
	waitFor(t, 10*time.Second, "a config mismatch round", func() bool {
		leader.h.mu.Lock()
		defer leader.h.mu.Unlock()
		for _, a := range leader.h.rounds {
			if a.Error == ConfigMismatch && a.ConfigOffset == 30 {
				return true
			}
		}
		return false
	})
	// Everyone catches up: the group assigns c4.
	e.configs.Store(ahead)
	for _, w := range ws {
		w.m.Rejoin("caught up")
	}
	e.waitSettled(10*time.Second, ws...)
}

func TestRunFailsOnFatalGroupError(t *testing.T) {
	// The broker's minimum session timeout is above ours.
	e := newEnv(t, 0, eightTasks, kfake.GroupMinSessionTimeout(6*time.Second))
	w := e.start("w1")
	select {
	case err := <-w.done:
		if !errors.Is(err, ErrFatal) || !errors.Is(err, kerr.InvalidSessionTimeout) {
			t.Fatalf("Run returned %v", err)
		}
		w.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not fail")
	}
	if len(w.h.rounds) != 0 || len(w.h.lost) != 0 {
		t.Fatalf("callbacks for a member that never joined: %+v %+v", w.h.rounds, w.h.lost)
	}
}

func TestLeaveWithoutRun(t *testing.T) {
	e := newEnv(t, 0, eightTasks)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	m, err := New(Config{Client: cl, GroupID: testGroup, Handler: &herder{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, p := range []Protocol{Eager, Compatible, Sessioned, ""} {
		if _, err := New(Config{Client: &kgo.Client{}, GroupID: "g", Handler: &herder{}, Protocol: p}); err != nil {
			t.Errorf("connect.protocol %q: %v", p, err)
		}
	}
	if _, err := New(Config{Client: &kgo.Client{}, GroupID: "g", Handler: &herder{}, Protocol: "default"}); err == nil {
		t.Error(`connect.protocol "default" accepted (the wire name, not a config value)`)
	}
	_, err := New(Config{Client: &kgo.Client{}, GroupID: "g", Handler: &herder{}, SessionTimeout: time.Second, HeartbeatInterval: 2 * time.Second})
	if err == nil {
		t.Fatal("heartbeat above session timeout accepted")
	}
}

func TestFromWorker(t *testing.T) {
	w, err := config.ParseWorker(map[string]string{
		"key.converter": "StringConverter", "value.converter": "StringConverter", "group.id": "g",
		"config.storage.topic": "c", "offset.storage.topic": "o", "status.storage.topic": "s",
		"connect.protocol": "COMPATIBLE", "session.timeout.ms": "7000", "scheduled.rebalance.max.delay.ms": "0",
		"inter.worker.key.ttl.ms": "2500", "inter.worker.signature.algorithm": "HmacSHA512",
		"inter.worker.verification.algorithms": "HmacSHA512,HmacSHA256",
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	c := FromWorker(w)
	if c.GroupID != "g" || c.Protocol != Compatible || c.SessionTimeout != 7*time.Second ||
		c.HeartbeatInterval != 3*time.Second || c.RebalanceTimeout != time.Minute || c.MaxDelay != 0 {
		t.Fatalf("config %+v", c)
	}
	if iw := c.InterWorker; iw == nil || iw.KeyTTL != 2500*time.Millisecond || iw.SignatureAlgorithm != "HmacSHA512" ||
		iw.KeyAlgorithm != "HmacSHA256" || len(iw.VerificationAlgorithms) != 2 {
		t.Fatalf("inter.worker settings %+v", c.InterWorker)
	}
}

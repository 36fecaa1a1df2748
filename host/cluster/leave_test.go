package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupTraffic records, as the coordinator receives them, one worker's
// JoinGroups and everyone's LeaveGroups.
type groupTraffic struct {
	mu     sync.Mutex
	joins  []trafficEntry // the watched worker's JoinGroups
	leaves []trafficEntry
	// idleAtLeave: whether the watched worker ran nothing when each of
	// its LeaveGroups arrived.
	idleAtLeave []bool
}

type trafficEntry struct {
	at       time.Time
	memberID string
}

// watch records w's JoinGroups (known by the URL in their metadata) and
// every LeaveGroup.
func (e *testGroupEnv) watch(w *worker) *groupTraffic {
	g := &groupTraffic{}
	url := "http://" + w.name + ":8083"
	e.c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		jg := req.(*kmsg.JoinGroupRequest)
		if len(jg.Protocols) > 0 {
			if md, err := DecodeMetadata(jg.Protocols[0].Metadata); err == nil && md.URL == url {
				g.mu.Lock()
				g.joins = append(g.joins, trafficEntry{at: time.Now(), memberID: jg.MemberID})
				g.mu.Unlock()
			}
		}
		return nil, nil, false
	})
	e.c.ControlKey(int16(kmsg.LeaveGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		lg := req.(*kmsg.LeaveGroupRequest)
		id := lg.MemberID
		if len(lg.Members) > 0 {
			id = lg.Members[0].MemberID
		}
		idle := w.h.runs().Empty()
		g.mu.Lock()
		g.leaves = append(g.leaves, trafficEntry{at: time.Now(), memberID: id})
		g.idleAtLeave = append(g.idleAtLeave, idle)
		g.mu.Unlock()
		return nil, nil, false
	})
	return g
}

// leaveOf is the first LeaveGroup of member id.
func (g *groupTraffic) leaveOf(id string) (trafficEntry, bool, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, l := range g.leaves {
		if l.memberID == id {
			return l, g.idleAtLeave[i], true
		}
	}
	return trafficEntry{}, false, false
}

// joinsAfter is the watched worker's JoinGroups sent after t.
func (g *groupTraffic) joinsAfter(t time.Time) []trafficEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []trafficEntry
	for _, j := range g.joins {
		if j.at.After(t) {
			out = append(out, j)
		}
	}
	return out
}

// leaveOnNextRound makes w ask, in its next OnAssigned, to leave the group
// for wait, as the distributed herder does when it cannot read the config
// topic up to the round's offset.
func leaveOnNextRound(w *worker, wait time.Duration) {
	var once sync.Once
	f := func(Assignment) {
		once.Do(func() { w.m.LeaveAndRejoinAfter(wait, "test: behind the config topic") })
	}
	w.h.afterAssigned.Store(&f)
}

// leaveSlowlyOnNextRound makes w, in its next OnAssigned, take stop to
// stop its work and ask to leave the group for a minute; the channel gets
// that round's member id.
func leaveSlowlyOnNextRound(w *worker, stop time.Duration) <-chan string {
	asked := make(chan string, 1)
	var once sync.Once
	f := func(a Assignment) {
		once.Do(func() {
			w.h.revokeDelay.Store(int64(stop))
			w.m.LeaveAndRejoinAfter(time.Minute, "test: behind the config topic")
			asked <- a.MemberID
		})
	}
	w.h.afterAssigned.Store(&f)
	return asked
}

// roundAsked waits for the round leaveSlowlyOnNextRound acts in and
// returns its member id.
func roundAsked(t *testing.T, asked <-chan string) string {
	t.Helper()
	select {
	case id := <-asked:
		return id
	case <-time.After(10 * time.Second):
		t.Fatal("w1 did not complete a round")
	}
	return ""
}

// An eager worker that asks to leave and rejoin after a wait stops
// everything, sends LeaveGroup (the other worker rebalances at once and
// takes over all the work while it is out), sends no JoinGroup before the
// wait has passed, and then joins as a new member (no member id in its
// first JoinGroup, a new id after it), without being told its membership
// was lost. The ledger fails the test if anything runs on both at once.
func TestEagerLeaveAndRejoinAfter(t *testing.T) {
	const wait = 2 * time.Second
	e := newEnv(t, time.Second, eightTasks)
	w1 := e.startWith("w1", Eager)
	e.waitSettled(10*time.Second, w1)
	w2 := e.startWith("w2", Eager)
	e.waitSettled(10*time.Second, w1, w2)
	traffic := e.watch(w1)

	leaveOnNextRound(w1, wait)
	e.configs.Store(&ConfigSnapshot{Offset: 11, Tasks: eightTasks})
	w1.m.Rejoin("test: a config change")
	w2.m.Rejoin("test: a config change")
	waitFor(t, 10*time.Second, "w1 to ask to leave", func() bool { return w1.m.Status().MemberID == "" })
	waitFor(t, 5*time.Second, "w1's LeaveGroup", func() bool {
		traffic.mu.Lock()
		defer traffic.mu.Unlock()
		return len(traffic.leaves) > 0
	})
	traffic.mu.Lock()
	left, idle := traffic.leaves[0], traffic.idleAtLeave[0]
	traffic.mu.Unlock()
	if !idle {
		t.Fatal("w1 still ran work when its LeaveGroup arrived")
	}
	oldID := left.memberID
	if oldID == "" || oldID == w2.m.Status().MemberID {
		t.Fatalf("LeaveGroup from %q", oldID)
	}

	// w2 takes everything over while w1 waits.
	e.waitSettled(wait, w2)
	tookOver := time.Since(left.at)
	if n := w2.h.runs().Len(); n != 10 {
		t.Fatalf("w2 runs %v while w1 is out", w2.h.runs())
	}
	if j := traffic.joinsAfter(left.at); len(j) != 0 {
		t.Fatalf("w1 joined %v after %v, before its wait", j[0].at.Sub(left.at), wait)
	}
	if st := w1.m.Status(); st.MemberID != "" || st.Generation != -1 || st.LeaderURL != "" || !st.Rebalancing || !st.Owned.Empty() {
		t.Fatalf("w1's status while out of the group: %+v", st)
	}
	if !w1.h.runs().Empty() {
		t.Fatalf("w1 runs %v while out of the group", w1.h.runs())
	}
	if dg := describeGroup(t, e); len(dg.Members) != 1 {
		t.Fatalf("%d members while w1 is out", len(dg.Members))
	}

	// After the wait w1 comes back as a new member and the work is dealt
	// out over both again.
	e.waitSettled(wait+10*time.Second, w1, w2)
	joins := traffic.joinsAfter(left.at)
	if len(joins) == 0 {
		t.Fatal("no JoinGroup from w1 after it left")
	}
	if g := joins[0].at.Sub(left.at); g < wait {
		t.Fatalf("w1 rejoined %v after leaving, before its wait of %v", g, wait)
	}
	t.Logf("w2 ran all the work %v after w1's LeaveGroup; w1 joined again %v after it", tookOver, joins[0].at.Sub(left.at))
	if joins[0].memberID != "" {
		t.Fatalf("w1 rejoined as %q: not a new member", joins[0].memberID)
	}
	if id := w1.m.Status().MemberID; id == "" || id == oldID {
		t.Fatalf("w1 is %q after rejoining, was %q", id, oldID)
	}
	w1.h.mu.Lock()
	lost, causes := len(w1.h.lost), w1.h.causes
	w1.h.mu.Unlock()
	if lost != 0 {
		t.Fatalf("w1 was told its membership was lost: %v", causes)
	}
	expectEager(t, e, w1, w2)
	if _, _, ok := traffic.leaveOf(w1.m.Status().MemberID); ok {
		t.Fatal("w1 left again")
	}
}

// Leave during the wait returns at once and nothing joins afterwards.
func TestLeaveDuringRejoinWait(t *testing.T) {
	e := newEnv(t, time.Second, eightTasks)
	w1 := e.startWith("w1", Eager)
	e.waitSettled(10*time.Second, w1)
	traffic := e.watch(w1)
	leaveOnNextRound(w1, time.Minute)
	w1.m.Rejoin("test")
	waitFor(t, 10*time.Second, "w1's LeaveGroup", func() bool {
		_, _, ok := traffic.leaveOf(w1.h.lastAssigned().MemberID)
		return ok
	})
	if !w1.h.runs().Empty() {
		t.Fatalf("w1 runs %v out of the group", w1.h.runs())
	}
	start := leaveAtOnce(t, w1, "during the wait")
	time.Sleep(200 * time.Millisecond)
	if j := traffic.joinsAfter(start); len(j) != 0 {
		t.Fatalf("w1 joined after Leave: %v", j)
	}
}

// leaveAtOnce calls w's Leave, which must return nil within a second and
// end its Run without an error, and returns when it was called.
func leaveAtOnce(t *testing.T, w *worker, when string) time.Time {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.m.Leave(ctx); err != nil {
		t.Fatalf("leave %s: %v", when, err)
	}
	if err := <-w.done; err != nil {
		t.Fatalf("Run after Leave: %v", err)
	}
	w.done <- nil
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Leave %s took %v", when, d)
	}
	return start
}

func (h *herder) lastAssigned() Assignment {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastSeen
}

// Leave called while the member is on its way out (stopping its work for
// LeaveAndRejoinAfter, or sending the LeaveGroup) still leaves the group:
// the others rebalance at once, not after the session timeout. The
// LeaveGroup must come from one of the two: the member's own leave is cut
// short by the end of Run's context, and Leave sends one only for a member
// id it still sees.
func TestLeaveWhileLeavingForRejoin(t *testing.T) {
	e := newEnv(t, time.Second, eightTasks)
	w1 := e.startWith("w1", Eager)
	e.waitSettled(10*time.Second, w1)
	w2 := e.startWith("w2", Eager)
	e.waitSettled(10*time.Second, w1, w2)
	traffic := e.watch(w1)

	// Stopping the work takes a while: Leave arrives meanwhile.
	asked := leaveSlowlyOnNextRound(w1, time.Second)
	w1.m.Rejoin("test")
	id := roundAsked(t, asked)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w1.m.Leave(ctx); err != nil {
		t.Fatalf("leave while leaving: %v", err)
	}
	if err := <-w1.done; err != nil {
		t.Fatalf("Run after Leave: %v", err)
	}
	w1.done <- nil
	left := time.Now()
	// Well within the session timeout: only a LeaveGroup makes it.
	waitFor(t, testSession/2, "w1's LeaveGroup", func() bool {
		_, _, ok := traffic.leaveOf(id)
		return ok
	})
	if dg := describeGroup(t, e); len(dg.Members) != 1 || dg.Members[0].MemberID != w2.m.Status().MemberID {
		t.Fatalf("members after w1 left: %+v", dg.Members)
	}
	e.waitSettled(10*time.Second, w2)
	t.Logf("w2 runs everything %v after w1's Leave returned", time.Since(left))
}

// A member stopping its work to leave (LeaveAndRejoinAfter) is still in the
// group: if the group rebalances meanwhile, the coordinator waits for its
// JoinGroup at most the rebalance timeout and then completes the round
// without it, handing out what it is still stopping. As before an eager
// JoinGroup, OnRevoked's context ends in time for a handler that kills
// what has not stopped to be done before that.
func TestSlowStopBeforeLeavingWhileTheGroupRebalances(t *testing.T) {
	e := newEnv(t, time.Second, eightTasks)
	w1 := e.startWith("w1", Eager)
	e.waitSettled(10*time.Second, w1)
	w2 := e.startWith("w2", Eager)
	e.waitSettled(10*time.Second, w1, w2)
	traffic := e.watch(w1)

	asked := leaveSlowlyOnNextRound(w1, 2*testRebalance)
	w1.m.Rejoin("test")
	w2.m.Rejoin("test")
	roundAsked(t, asked)
	// w2 rejoins while w1 stops its work (the ledger fails the test if
	// w2 starts any of it before w1 has stopped it).
	time.Sleep(100 * time.Millisecond)
	e.configs.Store(&ConfigSnapshot{Offset: 12, Tasks: eightTasks})
	w2.m.Rejoin("test: a config change")
	waitFor(t, 3*testRebalance, "w1's LeaveGroup", func() bool {
		traffic.mu.Lock()
		defer traffic.mu.Unlock()
		return len(traffic.leaves) > 0
	})
	e.waitSettled(10*time.Second, w2)
	if !w1.h.runs().Empty() {
		t.Fatalf("w1 runs %v out of the group", w1.h.runs())
	}
	w1.h.mu.Lock()
	lost, causes := len(w1.h.lost), w1.h.causes
	w1.h.mu.Unlock()
	if lost != 0 {
		t.Fatalf("w1 was dropped from the group while stopping its work: %v", causes)
	}
}

// LeaveAndRejoinWhen: when the wait ends the member asks whether to join;
// told to wait again, it sends no JoinGroup until it has, and asks again.
// Leave while it waits again returns at once.
func TestLeaveAndRejoinWhenReady(t *testing.T) {
	const wait, again = 500 * time.Millisecond, 700 * time.Millisecond
	e := newEnv(t, time.Second, eightTasks)
	w1 := e.startWith("w1", Eager)
	e.waitSettled(10*time.Second, w1)
	w2 := e.startWith("w2", Eager)
	e.waitSettled(10*time.Second, w1, w2)
	traffic := e.watch(w1)

	var mu sync.Mutex
	var asked []time.Time
	ready := func(ctx context.Context) (time.Duration, bool) {
		if ctx.Err() != nil {
			t.Error("asked with a context that ended")
		}
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, time.Now())
		return again, len(asked) >= 2
	}
	var once sync.Once
	f := func(Assignment) {
		once.Do(func() { w1.m.LeaveAndRejoinWhen(wait, "test: behind the config topic", ready) })
	}
	w1.h.afterAssigned.Store(&f)
	w1.m.Rejoin("test")
	var left trafficEntry
	waitFor(t, 10*time.Second, "w1's LeaveGroup", func() bool {
		traffic.mu.Lock()
		defer traffic.mu.Unlock()
		if len(traffic.leaves) == 0 {
			return false
		}
		left = traffic.leaves[0]
		return true
	})
	e.waitSettled(wait+10*time.Second, w1, w2)
	joins := traffic.joinsAfter(left.at)
	mu.Lock()
	n := len(asked)
	first, second := asked[0], asked[n-1]
	mu.Unlock()
	if n != 2 {
		t.Fatalf("asked %d times whether to rejoin, want 2", n)
	}
	if d := first.Sub(left.at); d < wait {
		t.Fatalf("asked %v after leaving, before the wait of %v", d, wait)
	}
	if d := second.Sub(first); d < again {
		t.Fatalf("asked again %v after the first time, before the wait of %v", d, again)
	}
	if len(joins) == 0 || joins[0].at.Before(second) || joins[0].memberID != "" {
		t.Fatalf("w1's JoinGroups after it left: %v; asked at %v", joins, second.Sub(left.at))
	}
	t.Logf("w1 asked %v and %v after leaving, joined %v after", first.Sub(left.at), second.Sub(left.at), joins[0].at.Sub(left.at))

	// Leave while waiting again.
	mu.Lock()
	asked = nil
	mu.Unlock()
	var once2 sync.Once
	g := func(a Assignment) {
		once2.Do(func() {
			w1.m.LeaveAndRejoinWhen(0, "test", func(context.Context) (time.Duration, bool) { return time.Minute, false })
		})
	}
	w1.h.afterAssigned.Store(&g)
	w1.m.Rejoin("test")
	waitFor(t, 10*time.Second, "w1 out again", func() bool { return w1.m.Status().MemberID == "" })
	time.Sleep(100 * time.Millisecond)
	leaveAtOnce(t, w1, "while waiting again")
}

// Heartbeats keep the membership while the member stops its work to leave,
// however long that takes within the bound (here longer than the session
// timeout), and none is sent for the old membership once its LeaveGroup is
// out.
func TestHeartbeatsUntilLeaveGroup(t *testing.T) {
	const stop = testSession + 500*time.Millisecond
	e := newEnv(t, time.Second, eightTasks)
	w1 := e.startWith("w1", Eager)
	e.waitSettled(10*time.Second, w1)
	w2 := e.startWith("w2", Eager)
	e.waitSettled(10*time.Second, w1, w2)
	traffic := e.watch(w1)
	var mu sync.Mutex
	beats := map[string][]time.Time{}
	e.c.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		hb := req.(*kmsg.HeartbeatRequest)
		mu.Lock()
		beats[hb.MemberID] = append(beats[hb.MemberID], time.Now())
		mu.Unlock()
		return nil, nil, false
	})

	asked := leaveSlowlyOnNextRound(w1, stop)
	w1.m.Rejoin("test")
	id := roundAsked(t, asked)
	start := time.Now()
	var left trafficEntry
	waitFor(t, stop+5*time.Second, "w1's LeaveGroup", func() bool {
		l, _, ok := traffic.leaveOf(id)
		left = l
		return ok
	})
	if d := left.at.Sub(start); d < stop-100*time.Millisecond {
		t.Fatalf("LeaveGroup %v after the leave was asked for, before the stop of %v", d, stop)
	}
	time.Sleep(2 * testHeartbeat)
	mu.Lock()
	var during, after int
	for _, at := range beats[id] {
		switch {
		case at.After(left.at):
			after++
		case at.After(start):
			during++
		}
	}
	mu.Unlock()
	if want := int(stop/testHeartbeat) - 2; during < want || after != 0 {
		t.Fatalf("heartbeats of %s: %d while stopping (want %d or more), %d after its LeaveGroup", id, during, want, after)
	}
	w1.h.mu.Lock()
	lost, causes := len(w1.h.lost), w1.h.causes
	w1.h.mu.Unlock()
	if lost != 0 {
		t.Fatalf("w1 was dropped while stopping: %v", causes)
	}
	e.waitSettled(10*time.Second, w2)
}

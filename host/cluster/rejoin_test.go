package cluster

import (
	"errors"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A coordinator goes silent for one member long enough for it to give its
// membership up, then answers again while it still knows the member, as a
// broker that restarts and reloads the group does. The member rejoins under
// its old id and gets its work back at once, without the scheduled delay.
// A member that came back as a new one would leave an old member behind for
// the coordinator to wait out, and its work would look like a departed
// worker's, held back for the delay.
//
// Two cases, by what the coordinator has of the member's last JoinGroup:
//
//   - it said what the member ran: the member's JoinGroup after the loss
//     (running nothing) differs, and the group rebalances with the same
//     members;
//   - it was the member's first (running nothing, as after the loss): the
//     coordinator answers with the generation the member completed before,
//     and the same assignment, which the member must apply again.
func TestMemberBackFromASilentCoordinatorKeepsItsID(t *testing.T) {
	t.Run("rebalance", func(t *testing.T) {
		// Three connectors of two tasks on three workers: each runs one
		// connector and two tasks, so the placement of the member's
		// work is exact.
		e, ws := silentCoordinatorGroup(t, map[string]int{"c1": 2, "c2": 2, "c3": 2})
		// A round everyone joins knowing what it runs.
		gen := ws[0].m.Status().Generation
		for _, w := range ws {
			if w.m.Status().IsLeader {
				w.m.Rejoin("test")
			}
		}
		waitFor(t, 10*time.Second, "a round with everyone's work in their JoinGroup", func() bool {
			return e.settled(ws...) && ws[0].m.Status().Generation > gen &&
				ws[1].m.Status().Generation == ws[0].m.Status().Generation &&
				ws[2].m.Status().Generation == ws[0].m.Status().Generation
		})
		gen = backFromSilence(t, e, ws[2], ws[:2])
		if g := ws[2].m.Status().Generation; g <= gen {
			t.Fatalf("the member is back in generation %d, had %d: no rebalance", g, gen)
		}
	})
	t.Run("same generation", func(t *testing.T) {
		// Two workers with one connector and one task each; a third
		// connector appears as the third worker joins, and is its
		// whole share: nobody gives anything up, so that first round
		// is the last.
		e, ws := silentCoordinatorGroup(t, map[string]int{"c1": 1, "c2": 1})
		e.configs.Store(&ConfigSnapshot{Offset: 11, Tasks: map[string]int{"c1": 1, "c2": 1, "c3": 1}})
		w3 := e.start("w3")
		ws = append(ws, w3)
		e.waitSettled(10*time.Second, ws...)
		w3.h.mu.Lock()
		first := len(w3.h.rounds) == 1 && w3.h.rounds[0].Added.String() == "{connectors:[c3] tasks:[c3-0]}"
		w3.h.mu.Unlock()
		if !first {
			t.Fatalf("w3 settled after rounds %+v, want one giving it c3", w3.h.rounds)
		}
		gen := backFromSilence(t, e, w3, ws[:2])
		for _, w := range ws {
			if g := w.m.Status().Generation; g != gen {
				t.Fatalf("%s in generation %d, the member was in %d: the group rebalanced", w.name, g, gen)
			}
		}
	})
}

// silentCoordinatorGroup is a group whose coordinator keeps every member
// for 10 s without heartbeats, while the members give up after their own
// 1.5 s session: it still knows a member that gave up (a restarted Kafka
// coordinator loads its members with a full session). Two workers run
// tasks; the delay is longer than the test may take, so any wait for it
// fails.
func silentCoordinatorGroup(t *testing.T, tasks map[string]int) (*testGroupEnv, []*worker) {
	e := newEnv(t, 30*time.Second, tasks)
	e.c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		req.(*kmsg.JoinGroupRequest).SessionTimeoutMillis = millis(10 * time.Second)
		return nil, nil, false
	})
	w1 := e.start("w1")
	e.waitSettled(10*time.Second, w1)
	w2 := e.start("w2")
	ws := []*worker{w1, w2}
	if len(tasks) == 3 {
		ws = append(ws, e.start("w3"))
	}
	e.waitSettled(10*time.Second, ws...)
	return e, ws
}

// backFromSilence has the coordinator drop victim's heartbeats until it
// gives its membership up, then checks that it comes back under its id with
// the work it ran, at once, the others untouched; it returns the generation
// the victim was in before.
func backFromSilence(t *testing.T, e *testGroupEnv, victim *worker, others []*worker) int32 {
	t.Helper()
	had := victim.h.runs()
	st := victim.m.Status()
	id, gen := st.MemberID, st.Generation
	victim.h.mu.Lock()
	roundsBefore := len(victim.h.rounds)
	victim.h.mu.Unlock()
	revoked, added := snapshotRevoked(others...), snapshotAdded(others...)

	var silent atomic.Bool
	silent.Store(true)
	e.c.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		if !silent.Load() || req.(*kmsg.HeartbeatRequest).MemberID != id {
			return nil, nil, false
		}
		return nil, errors.New("coordinator silent"), true
	})
	waitFor(t, 10*time.Second, "the member to give its membership up", func() bool {
		victim.h.mu.Lock()
		defer victim.h.mu.Unlock()
		return len(victim.h.lost) == 1
	})
	silent.Store(false)
	back := time.Now()
	if victim.h.lost[0].String() != had.String() {
		t.Fatalf("lost %v, ran %v", victim.h.lost[0], had)
	}

	waitFor(t, 2*testRebalance, "the member's next round", func() bool {
		victim.h.mu.Lock()
		defer victim.h.mu.Unlock()
		return len(victim.h.rounds) > roundsBefore
	})
	victim.h.mu.Lock()
	a := victim.h.rounds[roundsBefore]
	victim.h.mu.Unlock()
	if a.MemberID != id {
		t.Fatalf("the member rejoined as %q, was %q", a.MemberID, id)
	}
	if a.Delay != 0 {
		t.Fatalf("the round after the member came back has a scheduled delay of %v (assigned %v)", a.Delay, a.Added)
	}
	ws := append([]*worker{victim}, others...)
	e.waitSettled(3*time.Second, ws...)
	took := time.Since(back)
	if got := victim.h.runs(); got.String() != had.String() {
		t.Fatalf("the member runs %v, ran %v", got, had)
	}
	eq := func(a, b Work) bool { return a.String() == b.String() }
	if now := snapshotRevoked(others...); !maps.EqualFunc(now, revoked, eq) {
		t.Fatalf("the others revoked %v (before %v)", now, revoked)
	}
	if now := snapshotAdded(others...); !maps.EqualFunc(now, added, eq) {
		t.Fatalf("the others were given %v (before %v)", now, added)
	}
	for _, w := range ws {
		w.h.mu.Lock()
		for _, r := range w.h.rounds {
			if r.Delay != 0 {
				t.Errorf("%s had a round with a scheduled delay of %v", w.name, r.Delay)
			}
		}
		w.h.mu.Unlock()
	}
	t.Logf("member back under its id with its work %v after %v", had, took.Round(time.Millisecond))
	return gen
}

package cluster

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A worker that gave its membership up to a silent coordinator keeps its
// member id to rejoin under, and the coordinator may still know it. Should
// the worker shut down before it is back, Leave must still tell the
// coordinator, so the others rebalance at once rather than after the
// session the coordinator holds for the member (10 s here).
func TestLeaveAfterLossLeavesUnderTheKeptID(t *testing.T) {
	e, ws := silentCoordinatorGroup(t, map[string]int{"c1": 1, "c2": 1})
	victim, other := ws[1], ws[0]
	id := victim.m.Status().MemberID
	gen := other.m.Status().Generation

	var silent atomic.Bool
	silent.Store(true)
	drop := func(member string) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		if !silent.Load() || member != id {
			return nil, nil, false
		}
		return nil, errors.New("coordinator silent"), true
	}
	e.c.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		return drop(req.(*kmsg.HeartbeatRequest).MemberID)
	})
	e.c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		jr := req.(*kmsg.JoinGroupRequest)
		jr.SessionTimeoutMillis = millis(10 * time.Second)
		return drop(jr.MemberID)
	})
	var leaves memberIDs
	e.c.ControlKey(int16(kmsg.LeaveGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		lr := req.(*kmsg.LeaveGroupRequest)
		leaves.add(lr.MemberID)
		for _, m := range lr.Members {
			leaves.add(m.MemberID)
		}
		return nil, nil, false
	})
	waitFor(t, 10*time.Second, "the member to give its membership up", func() bool {
		victim.h.mu.Lock()
		defer victim.h.mu.Unlock()
		return len(victim.h.lost) == 1
	})
	// Shut down while still out: the coordinator answers LeaveGroup.
	victim.leave(t)
	left := time.Now()
	if got, found := leaves.seen(id); !found {
		t.Fatalf("Leave after the loss sent no LeaveGroup for the kept id %q (sent for %q)", id, got)
	}
	waitFor(t, 3*time.Second, "the other member to rebalance without the one that left", func() bool {
		return other.m.Status().Generation > gen && !other.m.Status().Rebalancing
	})
	t.Logf("the group rebalanced %v after the lost member left", time.Since(left).Round(time.Millisecond))
}

// The coordinator that made the member give up may still be silent when
// the worker shuts down: Leave's LeaveGroup for the kept id then gives up
// after the session timeout (the coordinator drops the member by itself by
// then) and Leave succeeds, rather than holding the shutdown to its
// deadline or failing it.
func TestLeaveAfterLossToASilentCoordinatorIsBounded(t *testing.T) {
	e, ws := silentCoordinatorGroup(t, map[string]int{"c1": 1, "c2": 1})
	victim := ws[1]
	id := victim.m.Status().MemberID
	for _, k := range []kmsg.Key{kmsg.Heartbeat, kmsg.JoinGroup, kmsg.LeaveGroup} {
		e.c.ControlKey(int16(k), func(req kmsg.Request) (kmsg.Response, error, bool) {
			e.c.KeepControl()
			var member string
			switch r := req.(type) {
			case *kmsg.HeartbeatRequest:
				member = r.MemberID
			case *kmsg.JoinGroupRequest:
				member = r.MemberID
			case *kmsg.LeaveGroupRequest:
				member = r.MemberID
				for _, m := range r.Members {
					member = m.MemberID
				}
			}
			if member != id {
				return nil, nil, false
			}
			return nil, errors.New("coordinator silent"), true
		})
	}
	waitFor(t, 10*time.Second, "the member to give its membership up", func() bool {
		victim.h.mu.Lock()
		defer victim.h.mu.Unlock()
		return len(victim.h.lost) == 1
	})
	start := time.Now()
	victim.leave(t) // fails the test if Leave returns an error
	if took := time.Since(start); took > testSession+time.Second {
		t.Fatalf("Leave took %v with the coordinator silent; bound is the session timeout %v", took, testSession)
	}
}

// memberIDs records the member ids of requests the coordinator got, from
// its control functions, for the test to look through afterwards.
type memberIDs struct {
	mu  sync.Mutex
	ids []string
}

func (m *memberIDs) add(id string) {
	m.mu.Lock()
	m.ids = append(m.ids, id)
	m.mu.Unlock()
}

// seen returns the ids recorded so far and whether id is among them.
func (m *memberIDs) seen(id string) ([]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.ids...), slices.Contains(m.ids, id)
}

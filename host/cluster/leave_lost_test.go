package cluster

import (
	"errors"
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
	var mu sync.Mutex
	var leaves []string
	e.c.ControlKey(int16(kmsg.LeaveGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		lr := req.(*kmsg.LeaveGroupRequest)
		mu.Lock()
		leaves = append(leaves, lr.MemberID)
		for _, m := range lr.Members {
			leaves = append(leaves, m.MemberID)
		}
		mu.Unlock()
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
	mu.Lock()
	got := append([]string(nil), leaves...)
	mu.Unlock()
	found := false
	for _, l := range got {
		found = found || l == id
	}
	if !found {
		t.Fatalf("Leave after the loss sent no LeaveGroup for the kept id %q (sent for %q)", id, got)
	}
	waitFor(t, 3*time.Second, "the other member to rebalance without the one that left", func() bool {
		return other.m.Status().Generation > gen && !other.m.Status().Rebalancing
	})
	t.Logf("the group rebalanced %v after the lost member left", time.Since(left).Round(time.Millisecond))
}

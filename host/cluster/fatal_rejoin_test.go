package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A member whose JoinGroup the group refuses for good (here: an ACL that
// no longer lets it in) returns ErrFatal from Run, but the coordinator
// still counts it among the members of the rebalance in progress. The
// herder runs it again after a backoff; that Run must join under the id
// the coordinator knows, or the others wait for the old member's session
// (10 s here) before the rebalance completes.
func TestRunAfterFatalRejoinsUnderTheKeptID(t *testing.T) {
	e, ws := silentCoordinatorGroup(t, map[string]int{"c1": 1, "c2": 1})
	victim, other := ws[1], ws[0]
	id := victim.m.Status().MemberID
	gen := other.m.Status().Generation

	var refused atomic.Bool
	var after memberIDs // of the JoinGroups after the refusal
	e.c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		jr := req.(*kmsg.JoinGroupRequest)
		jr.SessionTimeoutMillis = millis(10 * time.Second)
		if refused.Load() {
			after.add(jr.MemberID)
			return nil, nil, false
		}
		if jr.MemberID != id {
			return nil, nil, false
		}
		refused.Store(true)
		resp := jr.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.Generation = -1
		return resp, nil, true
	})
	victim.m.Rejoin("a connector was created")
	var err error
	select {
	case err = <-victim.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the group refused the member")
	}
	if !errors.Is(err, ErrFatal) {
		t.Fatalf("Run returned %v, want ErrFatal", err)
	}

	// As the herder does after its backoff.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // runs before the harness's own cleanup reads w.done
	go func() { victim.done <- victim.m.Run(ctx) }()
	rerun := time.Now()
	// Whether the coordinator rebalances depends on the JoinGroup it last
	// had from the victim: one offering other metadata (the assignment the
	// victim then owned) starts a rebalance, and the generation moves on.
	// One equal to it from a member that does not lead gets the generation
	// the group is in, and SyncGroup hands the victim its assignment back.
	// Either way all the work runs again, once, well within the session.
	waitFor(t, 5*time.Second, "the group to run all its work again with both members", func() bool {
		return e.settled(other, victim) && victim.m.Status().MemberID == id
	})
	if st := other.m.Status(); st.Generation < gen {
		t.Fatalf("generation %d after running again, was %d", st.Generation, gen)
	}
	t.Logf("the group settled %v after Run started again (generation %d, was %d)",
		time.Since(rerun).Round(time.Millisecond), other.m.Status().Generation, gen)
	if got, found := after.seen(id); !found {
		t.Fatalf("no JoinGroup after the refusal carried the kept id %q (ids: %q)", id, got)
	}
	if st := victim.m.Status(); st.MemberID != id {
		t.Fatalf("member id %q after running again, want the kept %q", st.MemberID, id)
	}
}

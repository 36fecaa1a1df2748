package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heartbeats keeps one generation's membership alive. Its goroutine is owned
// by the Run loop, which stops it before every JoinGroup (or, as a probe
// during a rebalance, after the SyncGroup) and on exit.
type heartbeats struct {
	cancel context.CancelFunc
	done   chan struct{}
	// rebalance is closed when the coordinator says a rebalance started;
	// lost is closed once lostErr is set.
	rebalance chan struct{}
	lost      chan struct{}
	lostErr   error
	contact   atomic.Int64 // unix nanos of the last contact
}

// stopAndDrain stops the goroutine and returns why the membership is lost,
// if it is.
func (h *heartbeats) stopAndDrain() error {
	h.cancel()
	<-h.done
	select {
	case <-h.lost:
		return h.lostErr
	default:
		return nil
	}
}

func (h *heartbeats) lastContact() time.Time { return time.Unix(0, h.contact.Load()) }

// startHeartbeats starts heartbeating for s's generation. A probe (during a
// rebalance) takes REBALANCE_IN_PROGRESS and ILLEGAL_GENERATION (the group
// moved on, and the JoinGroup under way is how this member follows) as
// normal, and calls onLost when the membership is gone.
func (m *Member) startHeartbeats(ctx context.Context, s *session, probe bool, onLost func()) *heartbeats {
	ctx, cancel := context.WithCancel(ctx)
	h := &heartbeats{cancel: cancel, done: make(chan struct{}), rebalance: make(chan struct{}), lost: make(chan struct{})}
	h.contact.Store(s.lastContact.UnixNano())
	memberID, generation := s.memberID, s.generation
	go func() {
		defer close(h.done)
		if err := m.heartbeat(ctx, h, memberID, generation, probe); err != nil {
			h.lostErr = err
			close(h.lost)
			if onLost != nil {
				onLost()
			}
		}
	}()
	return h
}

// heartbeat runs until ctx ends (nil) or the membership is lost (why).
//
// The coordinator evicts a member it has not heard from for a session
// timeout, and may hand its work out right after. So the member gives up
// earlier: when nothing has proved it alive for the session timeout less one
// heartbeat interval. That interval is what the owner has to stop its work
// before anyone else can start it.
func (m *Member) heartbeat(ctx context.Context, h *heartbeats, memberID string, generation int32, probe bool) error {
	interval := m.cfg.HeartbeatInterval
	grace := m.cfg.SessionTimeout - interval
	t := time.NewTimer(interval)
	defer t.Stop()
	rebalancing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		deadline := h.lastContact().Add(grace)
		sent := time.Now()
		if !sent.Before(deadline) {
			return fmt.Errorf("the group coordinator has not answered for %v", grace)
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group = m.cfg.GroupID
		req.Generation = generation
		req.MemberID = memberID
		rctx, cancel := context.WithDeadline(ctx, deadline)
		resp, err := req.RequestWith(rctx, m.cfg.Client)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		switch {
		case err == nil:
			h.contact.Store(sent.UnixNano())
			t.Reset(interval)
		case errors.Is(err, kerr.RebalanceInProgress):
			// Still a member; it must rejoin within the rebalance
			// timeout. Keep the session alive until it does.
			h.contact.Store(sent.UnixNano())
			if !rebalancing && !probe {
				rebalancing = true
				close(h.rebalance)
			}
			t.Reset(interval)
		case probe && errors.Is(err, kerr.IllegalGeneration):
			t.Reset(interval)
		case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.IllegalGeneration), errors.Is(err, kerr.FencedInstanceID):
			return fmt.Errorf("heartbeat: %w", err)
		default:
			// Coordinator moving or unreachable: try again soon,
			// until the deadline says the session is gone.
			if !time.Now().Before(deadline) {
				return fmt.Errorf("the group coordinator has not answered for %v: %w", grace, err)
			}
			m.log.Debug("heartbeat failed", "error", err)
			t.Reset(max(0, min(interval, 100*time.Millisecond, time.Until(deadline))))
		}
	}
}

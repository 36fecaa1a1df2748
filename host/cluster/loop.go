package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// session is what the Run goroutine knows of its membership. Only that
// goroutine touches it.
type session struct {
	memberID      string
	generation    int32
	lastCompleted int32
	// member: a SyncGroup completed and the membership was not lost since.
	member bool
	// lost: the membership was lost since the last completed round, and
	// its work stopped (see apply).
	lost  bool
	owned Work
	// current is what the worker runs, as sent in JoinGroup metadata; nil
	// until something is assigned, and again after a loss.
	current *WireAssignment
	// lastContact is when the coordinator last showed this membership
	// alive (a heartbeat's send time, a join or sync answer's arrival).
	lastContact time.Time
	// probe keeps proving the membership alive while a rebalance is under
	// way (nil when not a member).
	probe *heartbeats
	// protocol is the one the group ran in the last completed round (the
	// configured one before any): under Eager everything is revoked before
	// the next JoinGroup.
	protocol Protocol
}

// noteContact records a proof of membership seen by heartbeats: a round
// that fails after a long wait must count from the last one, not from the
// JoinGroup before the wait.
func (s *session) noteContact(t time.Time) {
	if t.After(s.lastContact) {
		s.lastContact = t
	}
}

// joined is a successful JoinGroup.
type joined struct {
	generation int32
	leader     string
	protocol   Protocol
	members    []kmsg.JoinGroupResponseMember
}

func (m *Member) loop(ctx context.Context) error {
	// A Run after one that ended with the membership lost (ErrFatal: the
	// herder runs the member again after a backoff) joins under the id it
	// kept, as the loop itself does after a loss: the coordinator may still
	// count that member in the rebalance in progress, and would hold the
	// others until its session expired. An id it no longer knows gets
	// UNKNOWN_MEMBER_ID, and the member joins afresh then.
	m.mu.Lock()
	kept := m.keptID
	m.mu.Unlock()
	s := &session{generation: -1, lastCompleted: -1, protocol: m.cfg.Protocol, memberID: kept}
	reason := "joining"
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		m.setStatus(func(st *Status) { st.Rebalancing = true })
		// A rejoin asked for before this JoinGroup is served by it.
		select {
		case <-m.rejoinCh:
		default:
		}
		j, w, ok, err := m.rebalance(ctx, s, reason)
		if err != nil {
			return err
		}
		if !ok {
			reason = "rebalance failed"
			continue
		}
		hb := m.startHeartbeats(ctx, s, false, nil)
		nx := m.apply(ctx, s, j, w)
		var leave *leaveRequest
		if reason, leave, err = m.stay(ctx, s, hb, nx); err != nil {
			return err
		}
		if leave != nil {
			if reason, err = m.leaveFor(ctx, s, *leave); err != nil {
				return err
			}
		}
	}
}

// rebalance is one JoinGroup + SyncGroup round. A member that owns work
// keeps heartbeating meanwhile (the coordinator accepts heartbeats during a
// rebalance): a JoinGroup may legitimately wait up to the rebalance timeout,
// and only the heartbeats tell such a wait from a coordinator that is gone.
// ok false: start over.
func (m *Member) rebalance(ctx context.Context, s *session, reason string) (j joined, w WireAssignment, ok bool, err error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if s.member {
		s.probe = m.startHeartbeats(rctx, s, true, cancel)
	}
	defer func() {
		if s.probe == nil {
			return
		}
		lost := s.probe.stopAndDrain()
		s.noteContact(s.probe.lastContact())
		s.probe = nil
		if lost != nil && ctx.Err() == nil {
			m.lose(ctx, s, lost)
			ok, err = false, nil
		}
	}()
	m.revokeEager(ctx, s, s.protocol, "before rejoining", m.rejoinBy())
	if j, err = m.join(rctx, s, reason); err != nil {
		if ctx.Err() == nil && rctx.Err() != nil {
			return j, w, false, nil // the probe found the membership gone
		}
		return j, w, false, err
	}
	// From here the probe must speak for the generation just joined: the
	// coordinator renews a session only on heartbeats of the current
	// generation, and the eager stop below may outlast the session
	// timeout. A probe that already found the membership gone cancelled
	// rctx; the SyncGroup then fails and the deferred check reports it.
	if s.probe != nil && s.probe.stopAndDrain() == nil {
		s.noteContact(s.probe.lastContact())
		s.probe = m.startHeartbeats(rctx, s, true, cancel)
	}
	// In a round that names "default" every Sluice member stops all its
	// work, whether or not the round completes: what this member remembers
	// as leader of a cooperative round no longer says who runs what, and
	// would make the stopped work look lost, held back for the delay.
	if j.protocol == Eager {
		m.assignor.forget()
	}
	// A member whose last round was cooperative kept its work into a round
	// that turns out eager. It stops it all before its SyncGroup: a leader
	// doing so has stopped before anyone learns an assignment; a follower
	// as early as it can, since the eager leader cannot see what it runs.
	m.revokeEager(ctx, s, j.protocol, "the group chose the eager protocol", m.rejoinBy())
	if w, ok, err = m.sync(rctx, s, j); err != nil && ctx.Err() == nil && rctx.Err() != nil {
		return j, w, false, nil
	}
	return j, w, ok, err
}

// join sends JoinGroup until it succeeds, the group refuses the member for
// good, or ctx ends.
func (m *Member) join(ctx context.Context, s *session, reason string) (joined, error) {
	var bo backoff
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = m.cfg.GroupID
		req.SessionTimeoutMillis = millis(m.cfg.SessionTimeout)
		req.RebalanceTimeoutMillis = millis(m.cfg.RebalanceTimeout)
		req.MemberID = s.memberID
		req.ProtocolType = ProtocolType
		req.Protocols = m.protocols(s, m.cfg.Handler.ConfigSnapshot().Offset)
		req.Reason = kmsg.StringPtr(reason)
		resp, err := req.RequestWith(ctx, m.cfg.Client)
		if err != nil {
			if ctx.Err() != nil {
				return joined{}, ctx.Err()
			}
			m.maybeLost(ctx, s, fmt.Errorf("join group: %w", err))
			if err := bo.wait(ctx); err != nil {
				return joined{}, err
			}
			continue
		}
		err = kerr.ErrorForCode(resp.ErrorCode)
		switch {
		case err == nil:
			name := ""
			if resp.Protocol != nil {
				name = *resp.Protocol
			}
			p, ok := protocolNamed(name)
			if !ok || !slices.Contains(m.cfg.Protocol.offered(), p) {
				return joined{}, m.fatal(ctx, s, fmt.Errorf("group chose protocol %q", name))
			}
			s.memberID = resp.MemberID
			s.generation = resp.Generation
			s.lastContact = time.Now()
			m.setStatus(func(st *Status) { st.MemberID = s.memberID })
			return joined{generation: resp.Generation, leader: resp.LeaderID, protocol: p, members: resp.Members}, nil
		case errors.Is(err, kerr.MemberIDRequired):
			// KIP-394: the coordinator names us; join again with it.
			s.memberID = resp.MemberID
			m.setStatus(func(st *Status) { st.MemberID = s.memberID })
		case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.IllegalGeneration), errors.Is(err, kerr.FencedInstanceID):
			m.lose(ctx, s, fmt.Errorf("join group: %w", err))
		case errors.Is(err, kerr.RebalanceInProgress):
		case fatalGroupError(err):
			return joined{}, m.fatal(ctx, s, fmt.Errorf("join group: %w", err))
		default:
			m.maybeLost(ctx, s, fmt.Errorf("join group: %w", err))
			if err := bo.wait(ctx); err != nil {
				return joined{}, err
			}
		}
	}
}

// protocols is the JoinGroup offer: each protocol with its metadata, the
// current assignment embedded with that protocol's version (version 0 has
// no room for it).
func (m *Member) protocols(s *session, configOffset int64) []kmsg.JoinGroupRequestProtocol {
	ps := m.cfg.Protocol.offered()
	out := make([]kmsg.JoinGroupRequestProtocol, 0, len(ps))
	for _, p := range ps {
		md := Metadata{Version: p.Version(), URL: m.cfg.URL, ConfigOffset: configOffset}
		if s.current != nil && p.Version() >= 1 {
			cur := *s.current
			cur.Version = p.Version()
			md.Current = &cur
		}
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name = p.Name()
		jp.Metadata = AppendMetadata(nil, md)
		out = append(out, jp)
	}
	return out
}

// revokeEager stops everything the worker runs when p, the protocol of the
// last round or of the round just joined, is eager: the leader will deal all
// work out again from scratch (Kafka Connect's onJoinPrepare, which does so
// before the JoinGroup of every round after an eager one). A worker whose
// last round failed (CONFIG_MISMATCH) started nothing of it and has
// nothing to stop.
//
// The coordinator waits for the member (its JoinGroup, or after the join
// its SyncGroup) at most the rebalance timeout; past that it completes the
// round without it and the others start what it is still stopping. So
// OnRevoked's context ends at by, the latest time the member can still
// make the round, and a stop that runs past it is reported.
func (m *Member) revokeEager(ctx context.Context, s *session, p Protocol, why string, by time.Time) {
	if p != Eager || s.owned.Empty() {
		return
	}
	revoked := s.owned
	s.owned, s.current = Work{}, nil
	m.setStatus(func(st *Status) { st.Owned = Work{} })
	m.log.Info("eager protocol: revoking all work", "when", why, "revoked", revoked.Len(), "within", time.Until(by))
	start := time.Now()
	rctx, cancel := context.WithDeadline(ctx, by)
	defer cancel()
	m.cfg.Handler.OnRevoked(rctx, Assignment{
		Generation: s.generation,
		MemberID:   s.memberID,
		Protocol:   Eager,
		Revoked:    revoked,
	})
	if now := time.Now(); now.After(by) && ctx.Err() == nil {
		m.log.Warn("eager protocol: stopping all work outlasted rebalance.timeout.ms; the group may complete the round without this worker and hand its work to others",
			"took", now.Sub(start), "rebalance_timeout", m.cfg.RebalanceTimeout)
	}
}

// rejoinBy is the latest time a member that starts waiting now for the
// group can answer it and still make the round: the rebalance timeout, less
// a heartbeat interval for how late a heartbeat learned of the rebalance
// and two more for the request to get there.
func (m *Member) rejoinBy() time.Time {
	rt, hb := m.cfg.RebalanceTimeout, m.cfg.HeartbeatInterval
	return time.Now().Add(max(rt-3*hb, rt/2))
}

// sync sends SyncGroup, with the plan when this member leads. ok false:
// rejoin.
func (m *Member) sync(ctx context.Context, s *session, j joined) (WireAssignment, bool, error) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group = m.cfg.GroupID
	req.Generation = j.generation
	req.MemberID = s.memberID
	req.ProtocolType = kmsg.StringPtr(ProtocolType)
	req.Protocol = kmsg.StringPtr(j.protocol.Name())
	if j.leader == s.memberID {
		req.GroupAssignment = m.assign(s, j)
	}
	resp, err := req.RequestWith(ctx, m.cfg.Client)
	if err != nil {
		if ctx.Err() != nil {
			return WireAssignment{}, false, ctx.Err()
		}
		m.maybeLost(ctx, s, fmt.Errorf("sync group: %w", err))
		var bo backoff
		return WireAssignment{}, false, bo.wait(ctx)
	}
	err = kerr.ErrorForCode(resp.ErrorCode)
	switch {
	case err == nil:
	case errors.Is(err, kerr.RebalanceInProgress):
		return WireAssignment{}, false, nil
	case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.IllegalGeneration), errors.Is(err, kerr.FencedInstanceID):
		m.lose(ctx, s, fmt.Errorf("sync group: %w", err))
		return WireAssignment{}, false, nil
	case fatalGroupError(err):
		return WireAssignment{}, false, m.fatal(ctx, s, fmt.Errorf("sync group: %w", err))
	default:
		m.maybeLost(ctx, s, fmt.Errorf("sync group: %w", err))
		var bo backoff
		return WireAssignment{}, false, bo.wait(ctx)
	}
	s.lastContact = time.Now()
	w, err := DecodeAssignment(resp.MemberAssignment)
	if err != nil {
		// Nothing to act on; a new round may bring a readable one.
		m.log.Warn("unreadable assignment; rejoining", "generation", j.generation, "error", err)
		var bo backoff
		return WireAssignment{}, false, bo.wait(ctx)
	}
	return w, true, nil
}

// assign runs the assignor as leader and encodes everyone's assignment.
func (m *Member) assign(s *session, j joined) []kmsg.SyncGroupRequestGroupAssignment {
	states := make([]MemberState, 0, len(j.members))
	for _, jm := range j.members {
		md, err := DecodeMetadata(jm.ProtocolMetadata)
		if err != nil {
			// A member we cannot read still gets an assignment;
			// it is treated as running nothing.
			m.log.Warn("unreadable member metadata", "member", jm.MemberID, "error", err)
			states = append(states, MemberState{ID: jm.MemberID})
			continue
		}
		st := MemberState{ID: jm.MemberID, URL: md.URL, ConfigOffset: md.ConfigOffset}
		if md.Current != nil {
			st.Owned = md.Current.Assigned
		}
		states = append(states, st)
	}
	r := Round{
		Leader:                  s.memberID,
		Generation:              j.generation,
		LastCompletedGeneration: s.lastCompleted,
		Members:                 states,
		Config:                  m.cfg.Handler.ConfigSnapshot(),
		Now:                     m.cfg.Now(),
	}
	var plan Plan
	if j.protocol == Eager {
		plan = AssignEager(r)
	} else {
		plan = m.assignor.Assign(r)
	}
	m.mu.Lock()
	m.plan = &plan
	m.mu.Unlock()
	ids := make([]string, 0, len(plan.Members))
	for id := range plan.Members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(ids))
	for _, id := range ids {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID = id
		ga.MemberAssignment = AppendAssignment(nil, plan.Wire(id, j.protocol.Version()))
		out = append(out, ga)
	}
	m.log.Debug("assigned as leader", "generation", j.generation, "members", len(ids), "error", plan.Error, "delay", plan.Delay)
	return out
}

// next is what the member does once a round's callbacks returned.
type next struct {
	rejoinNow bool
	rejoinAt  time.Time
	reason    string
}

// apply hands a completed round to the Handler.
func (m *Member) apply(ctx context.Context, s *session, j joined, w WireAssignment) next {
	a := Assignment{
		Generation:   j.generation,
		MemberID:     s.memberID,
		Protocol:     j.protocol,
		Leader:       w.Leader,
		LeaderURL:    w.LeaderURL,
		IsLeader:     w.Leader == s.memberID,
		ConfigOffset: w.ConfigOffset,
		Error:        w.Error,
		Delay:        time.Duration(w.DelayMs) * time.Millisecond,
	}
	// A stable group answers a follower that rejoins unchanged with the
	// generation it already completed, and the same assignment: its
	// increments were applied then and must not be applied twice. An eager
	// assignment is whole, not an increment, and the worker stopped
	// everything before it joined: it applies again.
	//
	// Not so after a loss, under the old id: the work is stopped. The
	// coordinator answers with the completed generation only when the
	// JoinGroup is the one it has for that generation, whose metadata
	// said (no current assignment, as after a loss) that the worker ran
	// nothing then: the increments of that round are all it should run,
	// and are applied again.
	replay := j.generation == s.lastCompleted && j.protocol != Eager && !s.lost
	s.lastCompleted = j.generation
	s.lost = false
	s.member = true
	s.protocol = j.protocol
	switch {
	case w.Error != NoError || replay:
	case j.protocol == Eager:
		owned, assigned := setOf(s.owned), setOf(w.Assigned)
		a.Added, a.Revoked = assigned.minus(owned).work(), owned.minus(assigned).work()
		s.owned = assigned.work()
		s.current = &WireAssignment{Version: j.protocol.Version(), Leader: w.Leader, LeaderURL: w.LeaderURL,
			ConfigOffset: w.ConfigOffset, Assigned: s.owned}
	default:
		owned := setOf(s.owned)
		revoked := setOf(w.Revoked).intersect(owned)
		owned.removeSet(revoked)
		added := setOf(w.Assigned).minus(owned)
		owned.addSet(added)
		a.Added, a.Revoked = added.work(), revoked.work()
		s.owned = owned.work()
		s.current = &WireAssignment{Version: j.protocol.Version(), Leader: w.Leader, LeaderURL: w.LeaderURL,
			ConfigOffset: w.ConfigOffset, Assigned: s.owned}
	}
	a.Owned = s.owned
	m.setStatus(func(st *Status) {
		st.MemberID, st.Generation, st.Leader, st.LeaderURL, st.IsLeader, st.Owned =
			s.memberID, j.generation, w.Leader, w.LeaderURL, a.IsLeader, s.owned
	})
	m.log.Info("joined group", "generation", j.generation, "protocol", j.protocol, "leader", a.IsLeader,
		"added", a.Added.Len(), "revoked", a.Revoked.Len(), "owned", a.Owned.Len(), "delay", a.Delay, "error", a.Error)
	if replay {
		m.setStatus(func(st *Status) { st.Rebalancing = false })
		return next{}
	}
	if !a.Revoked.Empty() {
		m.cfg.Handler.OnRevoked(ctx, a)
	}
	m.cfg.Handler.OnAssigned(ctx, a)
	m.setStatus(func(st *Status) { st.Rebalancing = false })
	switch {
	case a.Error != NoError:
		return next{rejoinNow: true, reason: "config offsets did not match"}
	case !a.Revoked.Empty() && j.protocol != Eager:
		// Under eager the leader has placed everything already.
		return next{rejoinNow: true, reason: "revoked work to hand over"}
	case a.Delay > 0:
		return next{rejoinAt: time.Now().Add(a.Delay), reason: "scheduled rebalance"}
	}
	return next{}
}

// stay keeps the membership (heartbeats run) until a rebalance is due; it
// returns the reason to rejoin with, or a request to leave first (the work
// is stopped then, still heartbeating).
func (m *Member) stay(ctx context.Context, s *session, hb *heartbeats, nx next) (string, *leaveRequest, error) {
	defer func() {
		lost := hb.stopAndDrain()
		s.lastContact = hb.lastContact()
		if lost != nil && ctx.Err() == nil && s.member {
			m.lose(ctx, s, lost)
		}
	}()
	// A leave asked for in the round's callbacks goes before the rejoin
	// the round may ask for.
	select {
	case lv := <-m.leaveCh:
		m.revokeAll(ctx, s, lv.reason)
		return "", &lv, nil
	default:
	}
	if nx.rejoinNow {
		return nx.reason, nil, nil
	}
	var timer <-chan time.Time
	if !nx.rejoinAt.IsZero() {
		t := time.NewTimer(time.Until(nx.rejoinAt))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return "", nil, ctx.Err()
	case lv := <-m.leaveCh:
		m.revokeAll(ctx, s, lv.reason)
		return "", &lv, nil
	case reason := <-m.rejoinCh:
		return reason, nil, nil
	case <-timer:
		return nx.reason, nil, nil
	case <-hb.rebalance:
		return "group rebalancing", nil, nil
	case <-hb.lost:
		return "membership lost", nil, nil
	}
}

// revokeAll stops everything the member owns before it leaves the group:
// the others may start it as soon as the LeaveGroup is answered. The
// heartbeats still run, so a slow stop does not get the member evicted
// (and its work handed out) before it has stopped. The member is still in
// the group meanwhile: should the group rebalance, the coordinator waits
// for its JoinGroup at most the rebalance timeout and then hands out what
// it still runs. So OnRevoked's context ends at rejoinBy, as before an
// eager JoinGroup.
func (m *Member) revokeAll(ctx context.Context, s *session, why string) {
	m.setStatus(func(st *Status) { st.Rebalancing = true })
	if s.owned.Empty() {
		return
	}
	revoked := s.owned
	s.owned, s.current = Work{}, nil
	m.setStatus(func(st *Status) { st.Owned = Work{} })
	by := m.rejoinBy()
	m.log.Info("leaving the group: revoking all work", "why", why, "revoked", revoked.Len(), "within", time.Until(by))
	rctx, cancel := context.WithDeadline(ctx, by)
	defer cancel()
	m.cfg.Handler.OnRevoked(rctx, Assignment{
		Generation: s.generation,
		MemberID:   s.memberID,
		Protocol:   s.protocol,
		Revoked:    revoked,
	})
	if time.Now().After(by) && ctx.Err() == nil {
		m.log.Warn("stopping all work before leaving outlasted rebalance.timeout.ms; a group rebalancing meanwhile may have handed it to others",
			"rebalance_timeout", m.cfg.RebalanceTimeout)
	}
}

// leaveFor leaves the group (its work is stopped already), waits lv.wait
// and returns the reason to join with, as a new member: Kafka Connect's
// maybeLeaveGroup followed by its unsync backoff. The other members
// rebalance as soon as the coordinator has the LeaveGroup, without waiting
// for a session timeout. Heartbeats are stopped: nothing speaks for the old
// membership any more. The wait ends early only when ctx does (Leave,
// shutdown): a Rejoin during the wait is served by the join after it. With
// lv.ready, the member joins only once it says so, waiting again between
// tries.
func (m *Member) leaveFor(ctx context.Context, s *session, lv leaveRequest) (string, error) {
	id := s.memberID
	s.memberID, s.generation, s.lastCompleted, s.member, s.owned, s.current = "", -1, -1, false, Work{}, nil
	// A new member leads, if at all, from scratch: what this one
	// remembers of its rounds names a member that is gone.
	m.assignor.forget()
	m.mu.Lock()
	m.status = Status{Generation: -1, Rebalancing: true}
	m.keptID = ""
	m.plan = nil
	m.mu.Unlock()
	if id != "" {
		lctx, cancel := context.WithTimeout(ctx, m.cfg.SessionTimeout)
		err := m.sendLeave(lctx, id, lv.reason)
		cancel()
		if err != nil && ctx.Err() != nil {
			// Leave (or shutdown) cut this LeaveGroup short, perhaps
			// before it was sent: Leave sends one for the member id
			// it finds in the status once Run has returned.
			m.setStatus(func(st *Status) { st.MemberID = id })
			return "", ctx.Err()
		}
		if err != nil {
			// The coordinator drops the member after the session
			// timeout anyway.
			m.log.Warn("could not leave the group; the coordinator drops this member after session.timeout.ms", "error", err)
		}
	}
	m.log.Info("out of the group; rejoining as a new member after the backoff", "reason", lv.reason, "wait", lv.wait)
	for wait := lv.wait; ; {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return "", ctx.Err()
			case <-t.C:
			}
		}
		if lv.ready == nil || ctx.Err() != nil {
			break
		}
		again, ok := lv.ready(ctx)
		if ok {
			break
		}
		wait = max(again, 0)
		m.log.Info("not ready to rejoin the group; waiting again", "reason", lv.reason, "wait", wait)
	}
	return "rejoining after leaving the group: " + lv.reason, ctx.Err()
}

// lose ends the membership: the Handler stops everything, and the member
// joins again. It offers its old member id when the coordinator did not
// refuse it (see refusedID), as Kafka's clients do.
func (m *Member) lose(ctx context.Context, s *session, cause error) {
	wasMember, owned := s.member, s.owned
	// A member that gave up because the coordinator went silent (a broker
	// that stopped, a network cut) may still be known to it: a restarted
	// coordinator reloads the group with its members. Joining again under
	// the same id lets the group rebalance at once instead of waiting for
	// the old session to expire, and the leader then sees the same members,
	// so the work this one ran is not taken for a departed worker's and
	// held back for scheduled.rebalance.max.delay.ms. An id the coordinator
	// refuses gets UNKNOWN_MEMBER_ID at the next JoinGroup, and the member
	// joins afresh then.
	if refusedID(cause) {
		s.memberID = ""
	}
	s.generation, s.member, s.owned, s.current, s.lost = -1, false, Work{}, nil, true
	if s.probe != nil {
		s.probe.stopAndDrain()
		s.probe = nil
	}
	m.mu.Lock()
	// Status shows no id until a JoinGroup succeeds; Leave sends its
	// LeaveGroup for the kept one within a bound, since the coordinator
	// may not answer.
	m.status = Status{Generation: -1, Rebalancing: true}
	m.keptID = s.memberID
	m.plan = nil
	m.mu.Unlock()
	if !wasMember {
		return
	}
	m.log.Warn("lost group membership; stopping all work", "owned", owned.Len(), "cause", cause)
	m.cfg.Handler.OnLost(ctx, owned, cause)
}

// refusedID tells whether cause is the coordinator refusing the membership
// itself (an id it no longer knows, a generation it moved past, an instance
// fenced by a newer one): only then is the id dropped. Silence, network
// errors and coordinator moves say nothing about the id.
func refusedID(cause error) bool {
	return errors.Is(cause, kerr.UnknownMemberID) || errors.Is(cause, kerr.IllegalGeneration) ||
		errors.Is(cause, kerr.FencedInstanceID)
}

// maybeLost loses the membership when the coordinator has not seen this
// member alive for a session timeout: it has been evicted by now. While a
// probe runs, the probe decides.
func (m *Member) maybeLost(ctx context.Context, s *session, err error) {
	m.log.Debug("group request failed", "error", err)
	grace := m.cfg.SessionTimeout - m.cfg.HeartbeatInterval
	if s.member && s.probe == nil && time.Since(s.lastContact) >= grace {
		m.lose(ctx, s, fmt.Errorf("the group coordinator has not answered for %v: %w", grace, err))
	}
}

func (m *Member) fatal(ctx context.Context, s *session, err error) error {
	m.lose(ctx, s, err)
	return fmt.Errorf("%w: group %s: %w", ErrFatal, m.cfg.GroupID, err)
}

func fatalGroupError(err error) bool {
	for _, f := range []error{
		kerr.InconsistentGroupProtocol, kerr.InvalidSessionTimeout, kerr.GroupAuthorizationFailed,
		kerr.InvalidGroupID, kerr.GroupMaxSizeReached, kerr.UnsupportedVersion, kerr.GroupIDNotFound,
	} {
		if errors.Is(err, f) {
			return true
		}
	}
	return false
}

func (m *Member) sendLeave(ctx context.Context, memberID, reason string) error {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = m.cfg.GroupID
	req.MemberID = memberID // v0-2
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = memberID
	lm.Reason = kmsg.StringPtr(reason)
	req.Members = append(req.Members, lm) // v3+
	resp, err := req.RequestWith(ctx, m.cfg.Client)
	if err != nil {
		return fmt.Errorf("leave group %s: %w", m.cfg.GroupID, err)
	}
	errs := []error{kerr.ErrorForCode(resp.ErrorCode)}
	for _, r := range resp.Members {
		errs = append(errs, kerr.ErrorForCode(r.ErrorCode))
	}
	for _, e := range errs {
		// Already gone is what we wanted.
		if e != nil && !errors.Is(e, kerr.UnknownMemberID) {
			return fmt.Errorf("leave group %s: %w", m.cfg.GroupID, e)
		}
	}
	m.log.Info("left group", "member", memberID)
	return nil
}

// backoff spaces retries: 50 ms doubling to 1 s.
type backoff struct{ d time.Duration }

func (b *backoff) wait(ctx context.Context) error {
	b.d = min(max(2*b.d, 50*time.Millisecond), time.Second)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func millis(d time.Duration) int32 { return int32(d / time.Millisecond) }

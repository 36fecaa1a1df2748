package cluster

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// ConfigSnapshot is what the group needs from the config topic: the offset
// read up to and, for every configured connector, its committed task count
// (tasks 0 … n-1).
type ConfigSnapshot struct {
	Offset int64
	Tasks  map[string]int
}

func (c ConfigSnapshot) work() workSet {
	s := newWorkSet()
	for name, n := range c.Tasks {
		s.conns[name] = struct{}{}
		for i := range n {
			s.tasks[TaskID{Connector: name, Task: int32(i)}] = struct{}{}
		}
	}
	return s
}

// MemberState is one group member as the leader sees it in JoinGroup.
type MemberState struct {
	ID           string
	URL          string
	ConfigOffset int64
	// Owned is what the member runs now.
	Owned Work
}

// Round is the input of one assignment: the group as it joined, the leader's
// config snapshot and clock.
type Round struct {
	Leader     string
	Generation int32
	// LastCompletedGeneration is the last generation the leader itself
	// completed (synced). When it is not the generation the assignor last
	// assigned, the assignor forgets what it remembered: someone else led
	// in between.
	LastCompletedGeneration int32
	Members                 []MemberState
	Config                  ConfigSnapshot
	Now                     time.Time
}

// Plan is the outcome of one assignment: the same header for everyone and
// each member's increments.
type Plan struct {
	Error        int16
	Leader       string
	LeaderURL    string
	ConfigOffset int64
	// Delay is how long until the leader wants the group to rejoin (a
	// departed worker's share waits, or revocations are throttled); zero
	// when nothing is scheduled.
	Delay   time.Duration
	Members map[string]MemberPlan
}

// MemberPlan is what one member is told, and what it will run.
type MemberPlan struct {
	URL string
	// Assigned is new to the member: start it.
	Assigned Work
	// Revoked is to stop; it goes to someone else in a later round.
	Revoked Work
	// Owned is what the member runs once it has applied the plan.
	Owned Work
}

// Wire is member's assignment as SyncGroup carries it.
func (p Plan) Wire(member string, version int16) WireAssignment {
	mp := p.Members[member]
	return WireAssignment{
		Version:      version,
		Error:        p.Error,
		Leader:       p.Leader,
		LeaderURL:    p.LeaderURL,
		ConfigOffset: p.ConfigOffset,
		Assigned:     mp.Assigned,
		Revoked:      mp.Revoked,
		DelayMs:      delayMs(p.Delay),
	}
}

// delayMs rounds up so a member never rejoins before the leader's deadline.
func delayMs(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return int32(min(ms, math.MaxInt32))
}

// ConnectorOwner says which member runs connector name after this plan.
func (p Plan) ConnectorOwner(name string) (member string, ok bool) {
	for id, mp := range p.Members {
		if mp.Owned.HasConnector(name) {
			return id, true
		}
	}
	return "", false
}

// TaskOwner says which member runs task id after this plan.
func (p Plan) TaskOwner(id TaskID) (member string, ok bool) {
	for m, mp := range p.Members {
		if mp.Owned.HasTask(id) {
			return m, true
		}
	}
	return "", false
}

// Assignor is Kafka Connect's incremental cooperative assignor (KIP-415,
// protocols compatible and sessioned). It is deterministic: the same rounds
// fed to two assignors give the same plans, whatever the order of members in
// each round. It keeps memory between rounds, so one leader uses one
// Assignor for as long as it leads. Not safe for concurrent use.
type Assignor struct {
	maxDelay time.Duration

	// previous is what the last plan left running, plus lost work still
	// waiting for its worker.
	previous           workSet
	previousRevocation workSet
	previousGeneration int32
	previousMembers    map[string]struct{}

	// Lost-work delay: scheduled is when waiting work goes to someone
	// (zero: nothing waits), delay is what the last plan told members.
	scheduled  time.Time
	delay      time.Duration
	candidates map[string]struct{}

	// Back-to-back load-balancing revocations are throttled.
	revokedInPrevious bool
	revokingRounds    int
}

// NewAssignor returns an assignor that holds a departed worker's share for
// maxDelay (scheduled.rebalance.max.delay.ms) before giving it to others.
func NewAssignor(maxDelay time.Duration) *Assignor {
	return &Assignor{
		maxDelay:           max(maxDelay, 0),
		previous:           newWorkSet(),
		previousRevocation: newWorkSet(),
		previousGeneration: -1,
		previousMembers:    map[string]struct{}{},
		candidates:         map[string]struct{}{},
	}
}

// forget drops the memory of the previous round, as a generation mismatch
// does: the next round starts from what the members report.
func (a *Assignor) forget() {
	a.previous = newWorkSet()
	a.previousGeneration = -1
}

// load is one worker's work while a plan is built; lists stay in the order
// items were added, starting sorted.
type load struct {
	id    string
	conns []string
	tasks []TaskID
}

func (l *load) empty() bool { return len(l.conns) == 0 && len(l.tasks) == 0 }

func (l *load) set() workSet {
	return setOf(Work{Connectors: l.conns, Tasks: l.tasks})
}

func (l *load) remove(s workSet) {
	l.conns = slices.DeleteFunc(l.conns, func(c string) bool { _, ok := s.conns[c]; return ok })
	l.tasks = slices.DeleteFunc(l.tasks, func(t TaskID) bool { _, ok := s.tasks[t]; return ok })
}

// openPlan starts the plan of a round, for either assignor: the members
// sorted by id, the leader and its URL, and the config offset. A leader
// behind some member cannot assign what it has not read: then the plan is
// complete (mismatch true): everyone is told CONFIG_MISMATCH with the
// newest offset, keeps what it owns, catches up and rejoins.
func openPlan(r Round) (members []MemberState, plan Plan, mismatch bool) {
	members = slices.Clone(r.Members)
	slices.SortFunc(members, func(x, y MemberState) int { return cmp.Compare(x.ID, y.ID) })
	plan = Plan{Leader: r.Leader, Members: make(map[string]MemberPlan, len(members))}
	maxOffset := r.Config.Offset
	for _, m := range members {
		if m.ID == r.Leader {
			plan.LeaderURL = m.URL
		}
		maxOffset = max(maxOffset, m.ConfigOffset)
	}
	if r.Config.Offset < maxOffset {
		plan.Error = ConfigMismatch
		plan.ConfigOffset = maxOffset
		for _, m := range members {
			plan.Members[m.ID] = MemberPlan{URL: m.URL, Owned: normalize(m.Owned)}
		}
		return members, plan, true
	}
	plan.ConfigOffset = r.Config.Offset
	return members, plan, false
}

// Assign computes one round.
func (a *Assignor) Assign(r Round) Plan {
	members, plan, mismatch := openPlan(r)
	if mismatch {
		// Nothing is remembered.
		return plan
	}

	if a.previousGeneration != r.LastCompletedGeneration {
		a.previous = newWorkSet()
	}
	configured := r.Config.work()
	owned := make(map[string]workSet, len(members))
	active := newWorkSet()
	for _, m := range members {
		owned[m.ID] = setOf(m.Owned)
		active.addSet(owned[m.ID])
	}

	// A revocation that did not happen (the worker still runs it) makes
	// what the workers report the truth to start from.
	if !a.previousRevocation.empty() {
		if active.hasAnyOf(a.previousRevocation) {
			a.previous = active.clone()
		}
		a.previousRevocation = newWorkSet()
	}

	// Kafka Connect takes deleted = previous − configured. Anything a member
	// runs that the leader's snapshot (at least as new as any member's) does
	// not configure is deleted as well, so a new leader with no memory still
	// stops it.
	deleted := a.previous.clone()
	deleted.addSet(active)
	deleted.removeSet(configured)
	duplicated := duplicates(members, owned)
	lost := a.previous.minus(active, deleted)
	created := configured.minus(a.previous, active)

	current := make(map[string]workSet, len(members))
	toRevoke := make(map[string]workSet, len(members))
	next := make([]*load, 0, len(members))
	for _, m := range members {
		current[m.ID] = owned[m.ID].minus(deleted)
		rev := owned[m.ID].intersect(deleted)
		rev.addSet(owned[m.ID].intersect(duplicated))
		toRevoke[m.ID] = rev
		w := owned[m.ID].minus(rev).work()
		next = append(next, &load{id: m.ID, conns: w.Connectors, tasks: w.Tasks})
	}

	reassign := newWorkSet()
	a.handleLost(r.Now, lost, reassign, next)

	if a.delay == 0 {
		balance := balancingRevocations(configured, next)
		switch {
		case a.revokedInPrevious && len(balance) > 0:
			// Revoking again right after revoking: wait a little,
			// more each time, unless delays are off.
			a.revokingRounds++
			a.delay = revokingBackoff(a.revokingRounds, a.maxDelay)
			if a.delay != 0 {
				a.scheduled = r.Now.Add(a.delay)
			} else {
				applyRevocations(toRevoke, next, balance)
			}
		case len(balance) > 0:
			applyRevocations(toRevoke, next, balance)
			a.revokedInPrevious = true
		case a.revokedInPrevious:
			a.revokedInPrevious = false
			a.revokingRounds = 0
		}
	} else {
		a.revokedInPrevious = false
	}

	toAssign := created.clone()
	toAssign.addSet(reassign)
	assignWork(next, toAssign.work())

	nextAll := newWorkSet()
	revokedAll := newWorkSet()
	for _, l := range next {
		ls := l.set()
		nextAll.addSet(ls)
		revokedAll.addSet(toRevoke[l.id])
		m := memberByID(members, l.id)
		plan.Members[l.id] = MemberPlan{
			URL:      m.URL,
			Assigned: ls.minus(current[l.id]).work(),
			Revoked:  toRevoke[l.id].work(),
			Owned:    ls.minus(toRevoke[l.id]).work(),
		}
	}
	a.previous = nextAll.minus(revokedAll)
	a.previous.addSet(lost)
	a.previousRevocation.addSet(revokedAll)
	a.previousGeneration = r.Generation
	a.previousMembers = make(map[string]struct{}, len(members))
	for _, m := range members {
		a.previousMembers[m.ID] = struct{}{}
	}
	plan.Delay = a.delay
	return plan
}

func memberByID(ms []MemberState, id string) MemberState {
	i, _ := slices.BinarySearchFunc(ms, id, func(m MemberState, id string) int { return cmp.Compare(m.ID, id) })
	return ms[i]
}

// duplicates is everything more than one member runs.
func duplicates(members []MemberState, owned map[string]workSet) workSet {
	seen, dup := newWorkSet(), newWorkSet()
	for _, m := range members {
		for c := range owned[m.ID].conns {
			if _, ok := seen.conns[c]; ok {
				dup.conns[c] = struct{}{}
			}
			seen.conns[c] = struct{}{}
		}
		for t := range owned[m.ID].tasks {
			if _, ok := seen.tasks[t]; ok {
				dup.tasks[t] = struct{}{}
			}
			seen.tasks[t] = struct{}{}
		}
	}
	return dup
}

// handleLost decides about work whose worker is gone: reassign it now (into
// reassign, or straight to candidate workers in next), or keep it waiting and
// set the delay.
func (a *Assignor) handleLost(now time.Time, lost, reassign workSet, next []*load) {
	if lost.empty() && !a.revokedInPrevious {
		a.resetDelay()
		return
	}
	everyoneBack := true
	for id := range a.previousMembers {
		if !slices.ContainsFunc(next, func(l *load) bool { return l.id == id }) {
			everyoneBack = false
			break
		}
	}
	// Nobody left, yet something is missing: a worker did not get its last
	// assignment. Nothing to wait for.
	if a.scheduled.IsZero() && everyoneBack {
		reassign.addSet(lost)
		return
	}
	if a.maxDelay == 0 {
		reassign.addSet(lost)
		return
	}
	if !a.scheduled.IsZero() && !now.Before(a.scheduled) {
		// The wait is over. Workers that stood empty during it are
		// likely the departed ones back: they get the lost work.
		var cands []*load
		for _, l := range next {
			if _, ok := a.candidates[l.id]; ok {
				cands = append(cands, l)
			}
		}
		if len(cands) > 0 {
			w := lost.work()
			for i, c := range w.Connectors {
				l := cands[i%len(cands)]
				l.conns = append(l.conns, c)
			}
			for i, t := range w.Tasks {
				l := cands[i%len(cands)]
				l.tasks = append(l.tasks, t)
			}
		} else {
			reassign.addSet(lost)
		}
		a.resetDelay()
		a.revokedInPrevious = false
		return
	}
	for _, l := range next {
		if l.empty() {
			a.candidates[l.id] = struct{}{}
		}
	}
	if now.Before(a.scheduled) {
		a.delay = min(a.scheduled.Sub(now), a.maxDelay)
	} else {
		a.delay = a.maxDelay
	}
	a.scheduled = now.Add(a.delay)
}

func (a *Assignor) resetDelay() {
	clear(a.candidates)
	a.scheduled = time.Time{}
	a.delay = 0
}

// revokingBackoff is the wait before the n-th back-to-back revoking round:
// 40^n ms, at most maxDelay; no wait at all when maxDelay is 0.
func revokingBackoff(n int, maxDelay time.Duration) time.Duration {
	if maxDelay <= 0 {
		return 0
	}
	d := time.Millisecond
	for range n {
		d *= 40
		if d >= maxDelay {
			return maxDelay
		}
	}
	return d
}

// balancingRevocations says what each worker above its fair share gives up:
// with T items over N workers everyone ends with ⌊T/N⌋, T mod N of them with
// one more. Workers already above the floor keep the extra ones first (in
// member order), so the fewest items move. Connectors and tasks are
// balanced separately.
func balancingRevocations(configured workSet, next []*load) map[string]workSet {
	if len(next) == 0 || configured.empty() {
		return nil
	}
	if !slices.ContainsFunc(next, func(l *load) bool { return !l.empty() }) {
		return nil
	}
	out := map[string]workSet{}
	get := func(id string) workSet {
		s, ok := out[id]
		if !ok {
			s = newWorkSet()
			out[id] = s
		}
		return s
	}
	for id, cs := range excess(len(configured.conns), next, func(l *load) []string { return l.conns }) {
		for _, c := range cs {
			get(id).conns[c] = struct{}{}
		}
	}
	for id, ts := range excess(len(configured.tasks), next, func(l *load) []TaskID { return l.tasks }) {
		for _, t := range ts {
			get(id).tasks[t] = struct{}{}
		}
	}
	return out
}

func excess[E any](total int, next []*load, items func(*load) []E) map[string][]E {
	n := len(next)
	floor, extras := total/n, total%n
	atFloor, atExtra := 0, 0
	for _, l := range next {
		switch len(items(l)) {
		case floor:
			atFloor++
		case floor + 1:
			atExtra++
		}
	}
	if atExtra == extras && atFloor+atExtra == n {
		return nil
	}
	out := map[string][]E{}
	given := 0
	for _, l := range next {
		have := items(l)
		if len(have) <= floor {
			continue
		}
		keep := floor
		if given < extras {
			given++
			if len(have) == floor+1 {
				continue
			}
			keep = floor + 1
		}
		// Give up the most recently listed ones; lists start sorted.
		out[l.id] = slices.Clone(have[keep:])
	}
	return out
}

func applyRevocations(toRevoke map[string]workSet, next []*load, balance map[string]workSet) {
	for _, l := range next {
		b, ok := balance[l.id]
		if !ok {
			continue
		}
		toRevoke[l.id].addSet(b)
		l.remove(b)
	}
}

// assignWork hands out w's connectors, then its tasks, to the least loaded
// workers first: each pass gives one item to every worker at the lowest
// level, so levels fill evenly. Ties go by member id.
func assignWork(next []*load, w Work) {
	if len(next) == 0 {
		return
	}
	fill(next, w.Connectors, func(l *load) int { return len(l.conns) }, func(l *load, c string) { l.conns = append(l.conns, c) })
	fill(next, w.Tasks, func(l *load) int { return len(l.tasks) }, func(l *load, t TaskID) { l.tasks = append(l.tasks, t) })
}

func fill[E any](next []*load, items []E, size func(*load) int, add func(*load, E)) {
	if len(items) == 0 {
		return
	}
	ws := slices.Clone(next)
	slices.SortStableFunc(ws, func(x, y *load) int {
		if c := cmp.Compare(size(x), size(y)); c != 0 {
			return c
		}
		return cmp.Compare(x.id, y.id)
	})
	i := 0
	for i < len(items) {
		level := size(ws[0])
		upTo := len(ws)
		for j, l := range ws {
			if size(l) > level {
				upTo = j
				break
			}
		}
		for _, l := range ws[:upTo] {
			add(l, items[i])
			i++
			if i == len(items) {
				return
			}
		}
	}
}

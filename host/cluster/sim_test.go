package cluster

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// sim plays the group around the assignor: members that apply their plans
// exactly as Member does, a leader that keeps its Assignor while it leads,
// and a clock the test moves. It checks after every round that no item is
// run by two members and that each member's view matches the leader's.
type sim struct {
	t        testing.TB
	maxDelay time.Duration
	now      time.Time
	gen      int32
	leader   string
	config   ConfigSnapshot
	members  map[string]*simMember
	history  []Plan
}

type simMember struct {
	id            string
	owned         Work
	assignor      *Assignor
	lastCompleted int32
}

func newSim(t testing.TB, maxDelay time.Duration, tasks map[string]int) *sim {
	return &sim{
		t:        t,
		maxDelay: maxDelay,
		now:      time.Unix(1_700_000_000, 0),
		config:   ConfigSnapshot{Offset: 1, Tasks: maps.Clone(tasks)},
		members:  map[string]*simMember{},
	}
}

func (s *sim) join(ids ...string) {
	for _, id := range ids {
		s.members[id] = &simMember{id: id, lastCompleted: -1}
	}
}

// leave removes members as a crash or a clean leave does: their work is
// simply gone from the group.
func (s *sim) leave(ids ...string) {
	for _, id := range ids {
		delete(s.members, id)
		if s.leader == id {
			s.leader = ""
		}
	}
}

func (s *sim) setConfig(tasks map[string]int) {
	s.config = ConfigSnapshot{Offset: s.config.Offset + 1, Tasks: maps.Clone(tasks)}
}

func (s *sim) ids() []string { return slices.Sorted(maps.Keys(s.members)) }

// round runs one generation and applies it.
func (s *sim) round() Plan {
	s.t.Helper()
	s.gen++
	if s.leader == "" {
		s.leader = s.ids()[0]
	}
	lead := s.members[s.leader]
	if lead.assignor == nil {
		lead.assignor = NewAssignor(s.maxDelay)
	}
	var states []MemberState
	for _, id := range s.ids() {
		m := s.members[id]
		states = append(states, MemberState{ID: id, URL: "http://" + id, ConfigOffset: s.config.Offset, Owned: m.owned})
	}
	plan := lead.assignor.Assign(Round{
		Leader: s.leader, Generation: s.gen, LastCompletedGeneration: lead.lastCompleted,
		Members: states, Config: s.config, Now: s.now,
	})
	if plan.Error != NoError {
		s.t.Fatalf("gen %d: error %d", s.gen, plan.Error)
	}
	if got := len(plan.Members); got != len(s.members) {
		s.t.Fatalf("gen %d: plan for %d members, group has %d", s.gen, got, len(s.members))
	}
	for _, id := range s.ids() {
		m := s.members[id]
		mp := plan.Members[id]
		for _, c := range mp.Revoked.Connectors {
			if !m.owned.HasConnector(c) {
				s.t.Fatalf("gen %d: %s told to revoke connector %s it does not run", s.gen, id, c)
			}
		}
		for _, tk := range mp.Revoked.Tasks {
			if !m.owned.HasTask(tk) {
				s.t.Fatalf("gen %d: %s told to revoke task %s it does not run", s.gen, id, tk)
			}
		}
		after := setOf(m.owned)
		after.removeSet(setOf(mp.Revoked))
		if after.hasAnyOf(setOf(mp.Assigned)) {
			s.t.Fatalf("gen %d: %s assigned %v it already runs (%v)", s.gen, id, mp.Assigned, m.owned)
		}
		after.addSet(setOf(mp.Assigned))
		m.owned = after.work()
		if m.owned.String() != mp.Owned.String() {
			s.t.Fatalf("gen %d: %s runs %v, leader thinks %v", s.gen, id, m.owned, mp.Owned)
		}
		m.lastCompleted = s.gen
	}
	s.checkNoDoubles()
	s.history = append(s.history, plan)
	return plan
}

func (s *sim) checkNoDoubles() {
	s.t.Helper()
	seen := map[string]string{}
	for _, id := range s.ids() {
		w := s.members[id].owned
		for _, c := range w.Connectors {
			if o, ok := seen["c:"+c]; ok {
				s.t.Fatalf("gen %d: connector %s run by %s and %s", s.gen, c, o, id)
			}
			seen["c:"+c] = id
		}
		for _, tk := range w.Tasks {
			if o, ok := seen["t:"+tk.String()]; ok {
				s.t.Fatalf("gen %d: task %s run by %s and %s", s.gen, tk, o, id)
			}
			seen["t:"+tk.String()] = id
		}
	}
}

// converge plays rounds as members would trigger them: at once after a
// revocation, after the delay when one is scheduled; it stops when the
// group is quiet and returns the plans.
func (s *sim) converge() []Plan {
	s.t.Helper()
	var plans []Plan
	for range 40 {
		p := s.round()
		plans = append(plans, p)
		revoked := false
		for _, mp := range p.Members {
			revoked = revoked || !mp.Revoked.Empty()
		}
		switch {
		case revoked:
		case p.Delay > 0:
			s.now = s.now.Add(p.Delay)
		default:
			return plans
		}
	}
	s.t.Fatalf("no convergence after 40 rounds")
	return nil
}

// checkSettled asserts everything configured runs exactly once, nothing
// else runs, and both connectors and tasks are balanced.
func (s *sim) checkSettled() {
	s.t.Helper()
	want := s.config.work()
	got := newWorkSet()
	cmin, cmax, tmin, tmax := 1<<30, -1, 1<<30, -1
	for _, id := range s.ids() {
		w := s.members[id].owned
		got.addWork(w)
		cmin, cmax = min(cmin, len(w.Connectors)), max(cmax, len(w.Connectors))
		tmin, tmax = min(tmin, len(w.Tasks)), max(tmax, len(w.Tasks))
	}
	if got.work().String() != want.work().String() {
		s.t.Fatalf("gen %d: run %v, configured %v", s.gen, got.work(), want.work())
	}
	if cmax-cmin >= 2 || tmax-tmin >= 2 {
		s.t.Fatalf("gen %d: unbalanced: connectors %d..%d tasks %d..%d: %s", s.gen, cmin, cmax, tmin, tmax, s.dump())
	}
}

func (s *sim) dump() string {
	out := ""
	for _, id := range s.ids() {
		out += fmt.Sprintf("\n  %s: %v", id, s.members[id].owned)
	}
	return out
}

func (s *sim) owned(id string) Work { return s.members[id].owned }

func work(conns []string, tasks ...TaskID) Work {
	return normalize(Work{Connectors: conns, Tasks: tasks})
}

func tid(c string, n int32) TaskID { return TaskID{Connector: c, Task: n} }

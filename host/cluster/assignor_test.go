package cluster

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var twoByFour = map[string]int{"c1": 4, "c2": 4}

func wantOwned(t *testing.T, s *sim, id string, want Work) {
	t.Helper()
	if got := s.owned(id); got.String() != want.String() {
		t.Fatalf("%s runs %v, want %v%s", id, got, want, s.dump())
	}
}

func TestAssignorGrowsOneTwoThree(t *testing.T) {
	s := newSim(t, 10*time.Second, twoByFour)
	s.join("w1")
	p := s.round()
	wantOwned(t, s, "w1", s.config.work().work())
	if len(p.Members["w1"].Assigned.Tasks) != 8 || p.Delay != 0 || p.Leader != "w1" || p.LeaderURL != "http://w1" {
		t.Fatalf("first round: %+v", p)
	}

	s.join("w2")
	p = s.round()
	// Only what must move is revoked, and nothing is assigned while it is.
	if got := p.Members["w1"].Revoked; got.String() != work([]string{"c2"}, tid("c2", 0), tid("c2", 1), tid("c2", 2), tid("c2", 3)).String() {
		t.Fatalf("w1 revokes %v", got)
	}
	if !p.Members["w2"].Assigned.Empty() || !p.Members["w1"].Assigned.Empty() {
		t.Fatalf("assigned during the revoking round: %+v", p.Members)
	}
	p = s.round()
	if !p.Members["w1"].Revoked.Empty() || !p.Members["w1"].Assigned.Empty() {
		t.Fatalf("w1 touched again: %+v", p.Members["w1"])
	}
	wantOwned(t, s, "w1", work([]string{"c1"}, tid("c1", 0), tid("c1", 1), tid("c1", 2), tid("c1", 3)))
	wantOwned(t, s, "w2", work([]string{"c2"}, tid("c2", 0), tid("c2", 1), tid("c2", 2), tid("c2", 3)))

	s.join("w3")
	p = s.round()
	if got := p.Members["w1"].Revoked.String(); got != work(nil, tid("c1", 3)).String() {
		t.Fatalf("w1 revokes %s", got)
	}
	if got := p.Members["w2"].Revoked.String(); got != work(nil, tid("c2", 3)).String() {
		t.Fatalf("w2 revokes %s", got)
	}
	s.round()
	wantOwned(t, s, "w3", work(nil, tid("c1", 3), tid("c2", 3)))
	s.checkSettled()
	if p := s.round(); p.Delay != 0 || len(p.Members["w3"].Assigned.Tasks) != 0 {
		t.Fatalf("quiet group still moving: %+v", p)
	}
}

func settledThree(t *testing.T, maxDelay time.Duration) *sim {
	s := newSim(t, maxDelay, twoByFour)
	s.join("w1", "w2", "w3")
	s.converge()
	s.checkSettled()
	return s
}

func TestAssignorHoldsDepartedShareForTheDelay(t *testing.T) {
	s := settledThree(t, 10*time.Second)
	w1, w2, w3 := s.owned("w1"), s.owned("w2"), s.owned("w3")
	s.leave("w2")
	p := s.round()
	if p.Delay != 10*time.Second {
		t.Fatalf("delay %v, want the max delay", p.Delay)
	}
	wantOwned(t, s, "w1", w1)
	wantOwned(t, s, "w3", w3)

	// A rebalance inside the window keeps the rest of it.
	s.now = s.now.Add(4 * time.Second)
	if p := s.round(); p.Delay != 6*time.Second {
		t.Fatalf("delay %v, want the 6s left", p.Delay)
	}
	wantOwned(t, s, "w1", w1)
	s.now = s.now.Add(6 * time.Second)
	p = s.round()
	if p.Delay != 0 {
		t.Fatalf("delay %v after expiry", p.Delay)
	}
	got := setOf(p.Members["w1"].Assigned, p.Members["w3"].Assigned)
	if got.work().String() != w2.String() {
		t.Fatalf("reassigned %v, w2 had %v", got.work(), w2)
	}
	s.converge()
	s.checkSettled()
}

func TestAssignorGivesBouncedWorkerItsShareBack(t *testing.T) {
	s := settledThree(t, 10*time.Second)
	w1, w2, w3 := s.owned("w1"), s.owned("w2"), s.owned("w3")
	s.leave("w2")
	s.round()
	s.now = s.now.Add(3 * time.Second)
	s.join("w2-again") // a new member id, empty, as after a restart
	if p := s.round(); p.Delay != 7*time.Second || !p.Members["w2-again"].Assigned.Empty() {
		t.Fatalf("returning worker round: %+v", p)
	}
	s.now = s.now.Add(7 * time.Second)
	p := s.round()
	if got := p.Members["w2-again"].Assigned; got.String() != w2.String() {
		t.Fatalf("returning worker got %v, had %v", got, w2)
	}
	for _, id := range []string{"w1", "w3"} {
		if mp := p.Members[id]; !mp.Revoked.Empty() || !mp.Assigned.Empty() {
			t.Fatalf("%s moved: %+v", id, mp)
		}
	}
	wantOwned(t, s, "w1", w1)
	wantOwned(t, s, "w3", w3)
	if plans := s.converge(); len(plans) != 1 {
		t.Fatalf("%d more rounds after the return", len(plans))
	}
}

func TestAssignorWithoutDelayReassignsAtOnce(t *testing.T) {
	s := settledThree(t, 0)
	w2 := s.owned("w2")
	s.leave("w2")
	p := s.round()
	if p.Delay != 0 {
		t.Fatalf("delay %v with delays off", p.Delay)
	}
	got := setOf(p.Members["w1"].Assigned, p.Members["w3"].Assigned)
	if got.work().String() != w2.String() {
		t.Fatalf("reassigned %v, w2 had %v", got.work(), w2)
	}
	s.checkSettled()
}

func TestAssignorNewLeaderTreatsMissingWorkAsNew(t *testing.T) {
	s := settledThree(t, 10*time.Second)
	w1 := s.owned("w1")
	s.leave("w1") // the leader; w2 leads with no memory
	p := s.round()
	if p.Leader != "w2" || p.Delay != 0 {
		t.Fatalf("leader %s delay %v", p.Leader, p.Delay)
	}
	got := setOf(p.Members["w2"].Assigned, p.Members["w3"].Assigned)
	if got.work().String() != w1.String() {
		t.Fatalf("reassigned %v, w1 had %v", got.work(), w1)
	}
	s.converge()
	s.checkSettled()
}

func TestAssignorForgetsWhenAnotherLeaderRanTheLastRound(t *testing.T) {
	a := NewAssignor(time.Minute)
	cfg := ConfigSnapshot{Offset: 3, Tasks: map[string]int{"c": 2}}
	now := time.Unix(0, 0)
	all := work([]string{"c"}, tid("c", 0), tid("c", 1))
	a.Assign(Round{Leader: "a", Generation: 1, LastCompletedGeneration: -1, Config: cfg, Now: now,
		Members: []MemberState{{ID: "a"}}})
	// Generation 2 was led elsewhere: "b" runs everything. "b" is gone at
	// generation 3; had the assignor trusted its memory it would think
	// nothing is lost (it never gave "b" anything) — either way nothing
	// must wait, and "a" must not be told to keep what it does not run.
	p := a.Assign(Round{Leader: "a", Generation: 3, LastCompletedGeneration: 2, Config: cfg, Now: now,
		Members: []MemberState{{ID: "a", Owned: Work{}}}})
	if p.Delay != 0 || p.Members["a"].Owned.String() != all.String() {
		t.Fatalf("plan %+v", p)
	}
}

func TestAssignorRevokesDeletedConnectors(t *testing.T) {
	s := settledThree(t, 10*time.Second)
	s.setConfig(map[string]int{"c1": 4})
	p := s.converge()[0]
	revoked := setOf(p.Members["w1"].Revoked, p.Members["w2"].Revoked, p.Members["w3"].Revoked).work()
	if revoked.String() != work([]string{"c2"}, tid("c2", 0), tid("c2", 1), tid("c2", 2), tid("c2", 3)).String() {
		t.Fatalf("revoked %v", revoked)
	}
	s.checkSettled()

	// Fewer tasks: only the ones gone are stopped.
	s.setConfig(map[string]int{"c1": 2})
	p = s.converge()[0]
	revoked = setOf(p.Members["w1"].Revoked, p.Members["w2"].Revoked, p.Members["w3"].Revoked).work()
	if revoked.String() != work(nil, tid("c1", 2), tid("c1", 3)).String() {
		t.Fatalf("revoked %v", revoked)
	}
	s.checkSettled()
}

func TestAssignorNewLeaderRevokesDeletedWork(t *testing.T) {
	a := NewAssignor(time.Minute)
	p := a.Assign(Round{Leader: "a", Generation: 5, LastCompletedGeneration: 4,
		Config: ConfigSnapshot{Offset: 9, Tasks: map[string]int{"keep": 1}}, Now: time.Unix(0, 0),
		Members: []MemberState{
			{ID: "a", Owned: work([]string{"gone"}, tid("gone", 0), tid("keep", 0))},
			{ID: "b"},
		}})
	if got := p.Members["a"].Revoked.String(); got != work([]string{"gone"}, tid("gone", 0)).String() {
		t.Fatalf("revoked %s", got)
	}
	if owner, ok := p.ConnectorOwner("keep"); !ok || owner != "a" {
		t.Fatalf("keep owned by %q (a and b tie at no connector; a sorts first)", owner)
	}
}

func TestAssignorRevokesDuplicatesEverywhere(t *testing.T) {
	a := NewAssignor(time.Minute)
	cfg := ConfigSnapshot{Offset: 1, Tasks: map[string]int{"c": 2}}
	p := a.Assign(Round{Leader: "a", Generation: 1, LastCompletedGeneration: -1, Config: cfg, Now: time.Unix(0, 0),
		Members: []MemberState{
			{ID: "a", Owned: work([]string{"c"}, tid("c", 0))},
			{ID: "b", Owned: work(nil, tid("c", 0), tid("c", 1))},
		}})
	for _, id := range []string{"a", "b"} {
		if !p.Members[id].Revoked.HasTask(tid("c", 0)) || p.Members[id].Owned.HasTask(tid("c", 0)) {
			t.Fatalf("%s keeps the duplicate: %+v", id, p.Members[id])
		}
	}
	p = a.Assign(Round{Leader: "a", Generation: 2, LastCompletedGeneration: 1, Config: cfg, Now: time.Unix(0, 0),
		Members: []MemberState{
			{ID: "a", Owned: work([]string{"c"})},
			{ID: "b", Owned: work(nil, tid("c", 1))},
		}})
	// Now nobody runs c-0: it is new, and goes to the one with fewer tasks.
	if owner, ok := p.TaskOwner(tid("c", 0)); !ok || owner != "a" || !p.Members["a"].Assigned.HasTask(tid("c", 0)) {
		t.Fatalf("c-0 not reassigned to a: %+v", p.Members)
	}
}

func TestAssignorConfigMismatch(t *testing.T) {
	a := NewAssignor(time.Minute)
	r := Round{Leader: "a", Generation: 1, LastCompletedGeneration: -1, Now: time.Unix(0, 0),
		Config: ConfigSnapshot{Offset: 5, Tasks: map[string]int{"c": 1}},
		Members: []MemberState{
			{ID: "a", URL: "http://a", ConfigOffset: 5},
			{ID: "b", URL: "http://b", ConfigOffset: 7, Owned: work(nil, tid("c", 0))},
		}}
	p := a.Assign(r)
	if p.Error != ConfigMismatch || p.ConfigOffset != 7 || p.LeaderURL != "http://a" || p.Delay != 0 {
		t.Fatalf("plan %+v", p)
	}
	for id, mp := range p.Members {
		if !mp.Assigned.Empty() || !mp.Revoked.Empty() {
			t.Fatalf("%s given work with a mismatch: %+v", id, mp)
		}
	}
	// Caught up: the round goes as if the failed one never happened.
	r.Config.Offset = 7
	p = a.Assign(r)
	if p.Error != NoError || p.ConfigOffset != 7 || !p.Members["a"].Assigned.HasConnector("c") {
		t.Fatalf("plan %+v", p)
	}
}

func TestAssignorThrottlesBackToBackRevocations(t *testing.T) {
	s := newSim(t, 10*time.Second, map[string]int{"c1": 6, "c2": 6, "c3": 6})
	s.join("w1")
	s.round()
	s.join("w2")
	if p := s.round(); p.Members["w1"].Revoked.Empty() {
		t.Fatal("no revocation for w2")
	}
	s.join("w3") // joins before the follow-up round: it would revoke again
	p := s.round()
	if p.Delay != 40*time.Millisecond {
		t.Fatalf("delay %v, want 40ms", p.Delay)
	}
	if !p.Members["w1"].Revoked.Empty() {
		t.Fatalf("revoked while throttled: %v", p.Members["w1"].Revoked)
	}
	s.now = s.now.Add(p.Delay)
	if p := s.round(); p.Members["w1"].Revoked.Empty() {
		t.Fatalf("no revocation after the backoff: %+v", p)
	}
	s.converge()
	s.checkSettled()
}

func TestRevokingBackoff(t *testing.T) {
	for _, c := range []struct {
		n    int
		max  time.Duration
		want time.Duration
	}{
		{1, 5 * time.Minute, 40 * time.Millisecond},
		{2, 5 * time.Minute, 1600 * time.Millisecond},
		{3, 5 * time.Minute, 64 * time.Second},
		{4, 5 * time.Minute, 5 * time.Minute},
		{9, 5 * time.Minute, 5 * time.Minute},
		{1, 0, 0},
		{1, 10 * time.Millisecond, 10 * time.Millisecond},
	} {
		if got := revokingBackoff(c.n, c.max); got != c.want {
			t.Errorf("backoff(%d, %v) = %v, want %v", c.n, c.max, got, c.want)
		}
	}
}

func TestAssignorIsDeterministic(t *testing.T) {
	mk := func(order []int) Plan {
		a := NewAssignor(time.Minute)
		ms := []MemberState{
			{ID: "m1", URL: "u1", Owned: work([]string{"a", "b", "c"}, tid("a", 0), tid("a", 1), tid("b", 0))},
			{ID: "m2", URL: "u2"},
			{ID: "m3", URL: "u3", Owned: work(nil, tid("c", 0))},
		}
		var in []MemberState
		for _, i := range order {
			in = append(in, ms[i])
		}
		return a.Assign(Round{Leader: "m2", Generation: 1, LastCompletedGeneration: -1, Now: time.Unix(0, 0),
			Config:  ConfigSnapshot{Offset: 1, Tasks: map[string]int{"a": 3, "b": 2, "c": 2, "d": 1}},
			Members: in})
	}
	want := fmt.Sprintf("%+v", mk([]int{0, 1, 2}))
	for _, o := range [][]int{{2, 1, 0}, {1, 0, 2}, {1, 2, 0}} {
		if got := fmt.Sprintf("%+v", mk(o)); got != want {
			t.Fatalf("member order %v changed the plan:\n%s\n%s", o, got, want)
		}
	}
}

// TestAssignorRandomChurn plays random joins, crashes, bounces and config
// changes, lets the group settle after each, and checks: nobody ever runs
// what another runs (sim checks every round), everything configured runs
// once and is balanced once settled, and a surviving worker gives up no
// more than the balance arithmetic forces.
func TestAssignorRandomChurn(t *testing.T) {
	for seed := range uint64(100) {
		for _, maxDelay := range []time.Duration{0, 5 * time.Second} {
			t.Run(fmt.Sprintf("seed%d/delay%v", seed, maxDelay), func(t *testing.T) {
				churn(t, seed, maxDelay)
			})
		}
	}
}

func churn(t *testing.T, seed uint64, maxDelay time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 99))
	tasks := map[string]int{}
	for i := range 1 + rng.IntN(5) {
		tasks[fmt.Sprintf("c%d", i)] = rng.IntN(7)
	}
	s := newSim(t, maxDelay, tasks)
	next := 0
	newID := func() string { next++; return fmt.Sprintf("w%02d", next) }
	s.join(newID())
	s.converge()
	s.checkSettled()
	for step := range 25 {
		before := map[string]Work{}
		for _, id := range s.ids() {
			before[id] = s.owned(id)
		}
		op := rng.IntN(6)
		switch {
		case op == 0 || len(s.members) == 1:
			s.join(newID())
		case op == 1:
			ids := s.ids()
			s.leave(ids[rng.IntN(len(ids))])
		case op == 2: // bounce: gone, and back as a new member inside the delay
			ids := s.ids()
			s.leave(ids[rng.IntN(len(ids))])
			s.round()
			// What survivors hold now is the start: a new leader may
			// have handed them the departed share already.
			for _, id := range s.ids() {
				before[id] = s.owned(id)
			}
			s.now = s.now.Add(maxDelay / 3)
			s.join(newID())
		case op == 3:
			tasks[fmt.Sprintf("c%d", 10+step)] = rng.IntN(6)
			s.setConfig(tasks)
		case op == 4 && len(tasks) > 0:
			for name := range tasks {
				delete(tasks, name)
				break
			}
			s.setConfig(tasks)
		default:
			for name := range tasks {
				tasks[name] = rng.IntN(8)
				break
			}
			s.setConfig(tasks)
		}
		s.converge()
		s.checkSettled()
		checkMovement(t, s, before)
	}
}

// checkMovement bounds what moved away from workers that stayed: with T
// items over N workers (floor F = T/N, X = T mod N of them get F+1), a
// survivor holding s > F items must give up s − (F+1), or s − F when no
// extra slot is left for it; nothing else of a survivor's may move.
func checkMovement(t *testing.T, s *sim, before map[string]Work) {
	t.Helper()
	configured := s.config.work()
	owner := map[string]string{}
	for _, id := range s.ids() {
		w := s.owned(id)
		for _, c := range w.Connectors {
			owner["c:"+c] = id
		}
		for _, tk := range w.Tasks {
			owner["t:"+tk.String()] = id
		}
	}
	bound := func(total int, sizes []int) int {
		n := len(s.members)
		floor, extras := total/n, total%n
		r, over := 0, 0
		for _, sz := range sizes {
			if sz > floor {
				r += sz - floor - 1
				over++
			}
		}
		return r + max(0, over-extras)
	}
	var csizes, tsizes []int
	cmoved, tmoved := 0, 0
	for id, w := range before {
		if _, alive := s.members[id]; !alive {
			continue
		}
		kept := setOf(w).intersect(configured).work()
		csizes = append(csizes, len(kept.Connectors))
		tsizes = append(tsizes, len(kept.Tasks))
		for _, c := range kept.Connectors {
			if owner["c:"+c] != id {
				cmoved++
			}
		}
		for _, tk := range kept.Tasks {
			if owner["t:"+tk.String()] != id {
				tmoved++
			}
		}
	}
	if b := bound(len(configured.conns), csizes); cmoved > b {
		t.Fatalf("gen %d: %d connectors moved off survivors, at most %d needed%s", s.gen, cmoved, b, s.dump())
	}
	if b := bound(len(configured.tasks), tsizes); tmoved > b {
		t.Fatalf("gen %d: %d tasks moved off survivors, at most %d needed%s", s.gen, tmoved, b, s.dump())
	}
}

package cluster

import (
	"slices"
)

// AssignEager computes a round of the eager protocol ("default", version 0)
// as Kafka Connect's EagerAssignor does. Under eager every member stopped
// all its work before joining, so the plan deals out everything configured,
// from scratch and without memory: connectors in name order round-robin
// over the members in member id order, then the tasks (connector by
// connector in name order, each connector's tasks by number) round-robin
// continuing from the member after the one that got the last connector.
// Connectors go first so that connectors with one task each do not pile
// their tasks on the same members as their connector instances.
//
// A leader behind the newest member's config offset assigns nothing:
// everyone gets CONFIG_MISMATCH, the newest offset and an empty assignment,
// reads the config topic to the end and rejoins.
//
// Names and ids are compared as Go strings (byte order), Java compares
// UTF-16 code units; the two orders differ only between characters above
// U+FFFF and those from U+E000 to U+FFFF.
func AssignEager(r Round) Plan {
	members, plan, mismatch := openPlan(r)
	if mismatch {
		// Under eager every member stopped all its work before joining:
		// it keeps nothing.
		for id, mp := range plan.Members {
			plan.Members[id] = MemberPlan{URL: mp.URL}
		}
		return plan
	}
	if len(members) == 0 {
		return plan
	}

	conns := make([]string, 0, len(r.Config.Tasks))
	for c := range r.Config.Tasks {
		conns = append(conns, c)
	}
	slices.Sort(conns)
	loads := make([]Work, len(members))
	next := 0
	turn := func() *Work {
		w := &loads[next]
		next = (next + 1) % len(loads)
		return w
	}
	for _, c := range conns {
		w := turn()
		w.Connectors = append(w.Connectors, c)
	}
	for _, c := range conns {
		for i := range r.Config.Tasks[c] {
			w := turn()
			w.Tasks = append(w.Tasks, TaskID{Connector: c, Task: int32(i)})
		}
	}
	for i, m := range members {
		w := normalize(loads[i])
		plan.Members[m.ID] = MemberPlan{URL: m.URL, Assigned: w, Owned: w}
	}
	return plan
}

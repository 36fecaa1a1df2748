package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// ConnectorTask is the task number that stands for the connector instance
// itself inside an encoded assignment (Kafka Connect's CONNECTOR_TASK).
const ConnectorTask int32 = -1

// TaskID names one task of a connector.
type TaskID struct {
	Connector string
	Task      int32
}

func (t TaskID) String() string { return fmt.Sprintf("%s-%d", t.Connector, t.Task) }

func compareTasks(a, b TaskID) int {
	if c := cmp.Compare(a.Connector, b.Connector); c != 0 {
		return c
	}
	return cmp.Compare(a.Task, b.Task)
}

// Work is a set of connector instances and tasks: what a worker runs, what
// it is given or what it must give up. Both lists are sorted (tasks by
// connector, then number) and hold no duplicates when built by this package.
type Work struct {
	Connectors []string
	Tasks      []TaskID
}

// Empty reports whether w names nothing.
func (w Work) Empty() bool { return len(w.Connectors) == 0 && len(w.Tasks) == 0 }

// Len is the number of connectors plus the number of tasks.
func (w Work) Len() int { return len(w.Connectors) + len(w.Tasks) }

// HasConnector reports whether w holds the connector instance name.
func (w Work) HasConnector(name string) bool {
	_, ok := slices.BinarySearch(w.Connectors, name)
	return ok
}

// HasTask reports whether w holds task id.
func (w Work) HasTask(id TaskID) bool {
	_, ok := slices.BinarySearchFunc(w.Tasks, id, compareTasks)
	return ok
}

func (w Work) String() string {
	var b strings.Builder
	b.WriteString("{connectors:[")
	b.WriteString(strings.Join(w.Connectors, ","))
	b.WriteString("] tasks:[")
	for i, t := range w.Tasks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t.String())
	}
	b.WriteString("]}")
	return b.String()
}

// workSet is the mutable form of Work the assignor computes with.
type workSet struct {
	conns map[string]struct{}
	tasks map[TaskID]struct{}
}

func newWorkSet() workSet {
	return workSet{conns: map[string]struct{}{}, tasks: map[TaskID]struct{}{}}
}

func setOf(ws ...Work) workSet {
	s := newWorkSet()
	for _, w := range ws {
		s.addWork(w)
	}
	return s
}

func (s workSet) addWork(w Work) {
	for _, c := range w.Connectors {
		s.conns[c] = struct{}{}
	}
	for _, t := range w.Tasks {
		s.tasks[t] = struct{}{}
	}
}

func (s workSet) addSet(o workSet) {
	for c := range o.conns {
		s.conns[c] = struct{}{}
	}
	for t := range o.tasks {
		s.tasks[t] = struct{}{}
	}
}

func (s workSet) removeSet(o workSet) {
	for c := range o.conns {
		delete(s.conns, c)
	}
	for t := range o.tasks {
		delete(s.tasks, t)
	}
}

func (s workSet) clone() workSet {
	c := newWorkSet()
	c.addSet(s)
	return c
}

// minus returns s without anything in any of subs.
func (s workSet) minus(subs ...workSet) workSet {
	r := s.clone()
	for _, sub := range subs {
		r.removeSet(sub)
	}
	return r
}

// intersect returns what s and o share.
func (s workSet) intersect(o workSet) workSet {
	r := newWorkSet()
	for c := range s.conns {
		if _, ok := o.conns[c]; ok {
			r.conns[c] = struct{}{}
		}
	}
	for t := range s.tasks {
		if _, ok := o.tasks[t]; ok {
			r.tasks[t] = struct{}{}
		}
	}
	return r
}

func (s workSet) hasAnyOf(o workSet) bool {
	for c := range o.conns {
		if _, ok := s.conns[c]; ok {
			return true
		}
	}
	for t := range o.tasks {
		if _, ok := s.tasks[t]; ok {
			return true
		}
	}
	return false
}

func (s workSet) empty() bool { return len(s.conns) == 0 && len(s.tasks) == 0 }

func (s workSet) work() Work {
	w := Work{}
	if len(s.conns) > 0 {
		w.Connectors = make([]string, 0, len(s.conns))
		for c := range s.conns {
			w.Connectors = append(w.Connectors, c)
		}
		slices.Sort(w.Connectors)
	}
	if len(s.tasks) > 0 {
		w.Tasks = make([]TaskID, 0, len(s.tasks))
		for t := range s.tasks {
			w.Tasks = append(w.Tasks, t)
		}
		slices.SortFunc(w.Tasks, compareTasks)
	}
	return w
}

// normalize sorts w's lists and drops duplicates, so callers may build Work
// by hand in any order.
func normalize(w Work) Work { return setOf(w).work() }

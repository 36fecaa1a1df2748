//go:build integration

package main

import (
	"maps"
	"os"
	"strconv"
	"strings"
)

// CPU accounting. Every benchmark gets the user+system CPU seconds of the
// processes that did its work, by role:
//
//	bench     this harness (all its threads): the franz-go clients of the
//	          baselines, and for pipelines the finish-line polling
//	kafka     the broker's JVM (all its threads, JIT and GC included)
//	worker    pipelines: the `sluice standalone` process, plus those of its
//	          children the sampler did not see (see sluiceWorker.cpuByRole)
//	plugins   pipelines: the connector and task plugin processes
//	children  other benchmarks: processes this harness started and reaped
//	          during the benchmark, with the children they reaped (the
//	          distributed workers and their plugins; not the plugins of a
//	          SIGKILLed worker, which init reaps)
//
// The window is the benchmark's Run call: its start-up (topic creation, a
// pipeline's worker and plugin start, a group's join), its timed section,
// and what follows before Run returns (a pipeline's checks, connector
// deletion and worker stop). Benchmark.Prepare, which fills the topic the
// consumers read or builds a plugin, runs before the window opens. Worker
// and plugin processes live entirely inside the window, so their whole
// lives are counted.

// clockTicks is USER_HZ, the unit of the times in /proc/<pid>/stat: 100 on
// every Linux architecture Go supports (sysconf(_SC_CLK_TCK)).
const clockTicks = 100

func ticksToSeconds(t int64) float64 { return float64(t) / clockTicks }

// statFields returns the fields of /proc/<pid>/stat after the command name
// (field 3, the state, first), or nil. pid may be "self".
func statFields(pid string) []string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// procTimes are a process's CPU times in clock ticks: its own user+system
// time over all its threads (stat fields 14 and 15), and that of the
// children it has waited for, each with their own waited-for children
// (fields 16 and 17).
type procTimes struct {
	own, children int64
}

// readProcTimes reads the times of pid ("self" for this process); ok is
// false if the process is gone.
func readProcTimes(pid string) (t procTimes, ok bool) {
	f := statFields(pid)
	if len(f) < 15 {
		return t, false
	}
	var v [4]int64
	for i := range v {
		n, err := strconv.ParseInt(f[11+i], 10, 64)
		if err != nil {
			return t, false
		}
		v[i] = n
	}
	return procTimes{own: v[0] + v[1], children: v[2] + v[3]}, true
}

// cpuTicks is the own user+system time of pid in clock ticks, or 0.
func cpuTicks(pid int) int64 {
	t, _ := readProcTimes(strconv.Itoa(pid))
	return t.own
}

// cpuSnapshot is what a benchmark's CPU window is measured with: this
// process, its reaped children and the broker.
type cpuSnapshot struct {
	self    procTimes
	kafka   int64
	kafkaOK bool
}

func takeCPUSnapshot(kafkaPid string) cpuSnapshot {
	var s cpuSnapshot
	s.self, _ = readProcTimes("self")
	var k procTimes
	k, s.kafkaOK = readProcTimes(kafkaPid)
	s.kafka = k.own
	return s
}

// cpuRoles turns two snapshots around a benchmark's Run into seconds by
// role: "bench", "kafka" (unless the broker was not readable at both ends)
// and, when own (the roles the benchmark measured itself) is empty,
// "children" if this harness reaped any in between. own's roles are added
// as they are.
func cpuRoles(before, after cpuSnapshot, own map[string]float64) map[string]float64 {
	m := map[string]float64{"bench": ticksToSeconds(after.self.own - before.self.own)}
	if before.kafkaOK && after.kafkaOK {
		m["kafka"] = ticksToSeconds(after.kafka - before.kafka)
	}
	if len(own) == 0 {
		if c := after.self.children - before.self.children; c > 0 {
			m["children"] = ticksToSeconds(c)
		}
	}
	maps.Copy(m, own)
	return m
}

package plugin

import (
	"fmt"
	"time"
)

// A plugin that leaks memory must not take the worker down with it. Two
// things see to that:
//
//   - Every plugin process is the kernel's preferred victim when the machine
//     runs out of memory: its oom_score_adj is raised to oomScoreAdj as soon
//     as it is started (raising it needs no privilege; one inherited from a
//     worker that is higher already is kept), so the OOM killer ends
//     a plugin, whose task then fails and can be restarted, before the worker
//     (or a broker on the same machine).
//   - With Options.MemoryLimit, the worker checks each plugin's private
//     resident memory (RssAnon: its heap and stacks, not the binary's pages
//     nor the memory a task shares with the worker) every
//     Options.MemoryCheckInterval, and kills a plugin that is above the limit
//     with a reason that names the setting. Go plugins also get GOMEMLIMIT at
//     nine tenths of the limit, so their garbage collector works harder
//     before the limit is reached.

// oomScoreAdj is the plugin processes' /proc/<pid>/oom_score_adj.
const oomScoreAdj = 500

// MemoryLimitSetting is the worker setting Options.MemoryLimit comes from,
// named in the reason a plugin is killed for.
const MemoryLimitSetting = "sluice.plugin.memory.max.bytes"

// watchMemory kills the instance when its private resident memory exceeds
// limit. It returns once the process has exited or a kill was requested,
// and closes watched then: the reaper waits for that before Done closes,
// so the watcher never outlives its instance (launch starts it after the
// instance is adopted, with watched set).
func (in *Instance) watchMemory(limit int64, every time.Duration, watched chan<- struct{}) {
	defer close(watched)
	t := time.NewTicker(every)
	defer t.Stop()
	pid := in.Pid()
	for {
		select {
		case <-in.p.exited:
			return
		case <-in.killReq:
			return
		case <-t.C:
		}
		rss, err := residentAnon(pid)
		if err != nil {
			// Gone, or /proc unreadable: the reaper sees the exit.
			continue
		}
		if rss > limit {
			if in.p.hasExited() {
				// What was read may be another process's, the pid reused
				// once this one was reaped: it ended on its own.
				return
			}
			reason := fmt.Sprintf("killed: its resident memory (%s) exceeded %s=%d (%s)",
				mib(rss), MemoryLimitSetting, limit, mib(limit))
			in.log.Error("plugin process over its memory limit; killing it", "pid", pid, "resident_bytes", rss, "limit_bytes", limit)
			in.killNow(reason)
			return
		}
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

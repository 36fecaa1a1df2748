package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// setOOMScoreAdj makes pid, a child of the worker, the OOM killer's
// preferred victim: oomScoreAdj, unless the worker's own score adjustment
// (which the child inherited) is that high already. Lowering it, which a
// privileged worker could, would make the plugin a lesser victim than the
// worker (a worker in a container whose runtime gave it 1000).
func setOOMScoreAdj(pid int) error {
	if b, err := os.ReadFile("/proc/self/oom_score_adj"); err == nil {
		if own, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && own >= oomScoreAdj {
			return nil
		}
	}
	return os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid), []byte(strconv.Itoa(oomScoreAdj)), 0)
}

// residentAnon is pid's private anonymous resident memory in bytes: the
// RssAnon line of /proc/<pid>/status.
func residentAnon(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, []byte("RssAnon:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("/proc/%d/status: unexpected RssAnon line %q", pid, line)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status: RssAnon: %w", pid, err)
		}
		return kb << 10, nil
	}
	return 0, errors.New("no RssAnon in /proc/" + strconv.Itoa(pid) + "/status")
}

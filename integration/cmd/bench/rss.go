//go:build integration

package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// resetPeakRSS makes the kernel forget pid's peak RSS (VmHWM), so that the
// peak read after a benchmark belongs to that benchmark alone. Writing "5"
// to clear_refs does exactly that (Linux >= 4.0).
func resetPeakRSS(pid string) error {
	if err := os.WriteFile("/proc/"+pid+"/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("reset peak rss of %s: %w", pid, err)
	}
	return nil
}

// peakRSS reads VmHWM of pid ("self" for this process) in bytes.
func peakRSS(pid string) (int64, error) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0, fmt.Errorf("peak rss of %s: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmHWM %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%s/status", pid)
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The banner names the offsets file the worker writes: the one
// CONNECT_OFFSET_STORAGE_FILE_FILENAME names, unless --dir is given, which
// wins as every dev flag wins over CONNECT_* variables.
func TestDevOffsetsFileFromEnvironment(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), "env-offsets.json")
	t.Setenv("CONNECT_OFFSET_STORAGE_FILE_FILENAME", envFile)
	t.Setenv("CONNECT_OFFSET_FLUSH_INTERVAL_MS", "100")
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, envFile},
		{[]string{"--dir", dir}, filepath.Join(dir, "offsets.json")},
	} {
		args := append([]string{"dev", "--rest", freeAddr(t), "--plugin-path", pluginDir, "--log-level", "WARN"}, c.args...)
		stdout, stderr, stop, done := runBg(t, args...)
		waitFor(t, "the banner", done, stderr, func() bool { return strings.Contains(stdout.String(), "Try:") })
		line := ""
		for l := range strings.Lines(stdout.String()) {
			if strings.Contains(l, "Offsets file:") {
				line = l
			}
		}
		if !strings.HasSuffix(strings.TrimSpace(line), c.want) {
			t.Errorf("%v: banner says %q, want %s", c.args, line, c.want)
		}
		// The demo source commits offsets: they go to that file.
		waitFor(t, "the offsets file "+c.want, done, stderr, func() bool {
			st, err := os.Stat(c.want)
			return err == nil && st.Size() > 0
		})
		if code := stop(); code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
	}
}

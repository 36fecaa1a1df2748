package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// A setting that sluice dev cannot use is reported as written, with its
// ${provider:path:key} variable: never the secret it resolved to.
func TestDevValidationErrorHidesResolvedSecret(t *testing.T) {
	secrets := filepath.Join(t.TempDir(), "secrets.properties")
	if err := os.WriteFile(secrets, []byte("flush=hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONNECT_CONFIG_PROVIDERS", "file")
	t.Setenv("CONNECT_CONFIG_PROVIDERS_FILE_CLASS", "org.apache.kafka.common.config.provider.FileConfigProvider")
	t.Setenv("CONNECT_OFFSET_FLUSH_INTERVAL_MS", "${file:"+secrets+":flush}")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"dev", "--demo=false", "--rest", freeAddr(t), "--plugin-path", pluginDir}, &stdout, &stderr)
	if code != exitWorker || strings.Contains(stderr.String(), "hunter2") || !strings.Contains(stderr.String(), "offset.flush.interval.ms") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

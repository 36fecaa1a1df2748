package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Help asked for is the command's output: on stdout, exit 0, nothing on
// stderr. A mistake in the command line stays on stderr with exit 2.
func TestSubcommandHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{
		{"connectors", "list", "--help"},
		{"connectors", "create", "-h"},
		{"connectors", "get", "--help"},
		{"connectors", "restart", "-help"},
		{"connectors", "offsets", "--help"},
		{"plugins", "--help"},
		{"validate", "-h"},
		{"loggers", "--help"},
	} {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), args, &out, &errOut)
		if code != ExitOK || errOut.Len() != 0 || !strings.Contains(out.String(), "-url") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
		if !strings.Contains(out.String(), "sluice "+args[0]) {
			t.Errorf("%v: usage does not name the command: %q", args, out.String())
		}
	}
	for _, args := range [][]string{
		{"connectors", "list", "--bogus"},
		{"plugins", "-o"},
	} {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), args, &out, &errOut)
		if code != ExitUsage || out.Len() != 0 || !strings.Contains(errOut.String(), "-url") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
}

// A -c setting written with ':' (as a .properties file allows) is refused
// without quoting its value, which may be a password: the flag package
// would print the whole argument.
func TestSettingErrorHidesValue(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Run(context.Background(), []string{"validate", "-c", "connection.password:hunter2", "--url", "http://127.0.0.1:1"}, &out, &errOut)
	if code != ExitUsage || strings.Contains(errOut.String(), "hunter2") || !strings.Contains(errOut.String(), "connection.password") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

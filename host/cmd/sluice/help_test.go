package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// "-h" where it is not a flag is an argument: a connector file named -h
// after the worker file (connect-standalone only takes --help there), or
// the value of a dev flag. It is read as such, not taken for a request for
// help that would exit 0 without running anything.
func TestWorkerCommandsHelpOnlyWhereAFlagIs(t *testing.T) {
	dir := t.TempDir()
	good := workerProps(t, dir, "127.0.0.1:1", freeAddr(t))
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"standalone", good, "-h"}, exitConnector, "-h"},
		{[]string{"standalone", good, "-help"}, exitConnector, "-help"},
		{[]string{"dev", "--rest", "-h"}, exitUsage, `--rest "-h"`},
		{[]string{"dev", "--plugin-path", "--help", "--rest", "nohostport"}, exitUsage, `--rest "nohostport"`},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) || strings.Contains(out.String(), "Usage") {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q (want %q)", c.args, code, c.code, out.String(), errb.String(), c.want)
		}
	}
	// --help after the worker file still asks for help, as in
	// connect-standalone; a mistake in the flags is exit 2 on stderr.
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"standalone", good, "a.json", "--help"}, &out, &errb); code != exitOK || !strings.Contains(out.String(), "Usage: sluice standalone") || errb.Len() != 0 {
		t.Errorf("--help after the files: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"dev", "--bogus"}, &out, &errb); code != exitUsage || out.Len() != 0 || !strings.Contains(errb.String(), "bogus") {
		t.Errorf("dev --bogus: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

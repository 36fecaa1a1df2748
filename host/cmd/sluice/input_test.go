package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// --help (or -h) on a worker command prints its usage and exits 0, as a
// request for help is not a mistake; connect-standalone also takes --help
// after the worker file.
func TestWorkerCommandsHelp(t *testing.T) {
	for _, args := range [][]string{
		{"standalone", "--help"},
		{"standalone", "-h"},
		{"standalone", "worker.properties", "--help"},
		{"distributed", "--help"},
		{"distributed", "worker.properties", "-h"},
		{"dev", "--help"},
		{"dev", "-h"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &out, &errb)
		if code != exitOK {
			t.Errorf("%v: exit %d, want 0; stderr %q", args, code, errb.String())
		}
		if !strings.Contains(out.String(), "Usage: sluice "+args[0]) {
			t.Errorf("%v: no usage on stdout: %q (stderr %q)", args, out.String(), errb.String())
		}
	}
}

// A file that is not there is named, with connect-standalone's status: 2
// for the worker's file, 3 for a connector's.
func TestStandaloneMissingFiles(t *testing.T) {
	dir := t.TempDir()
	good := workerProps(t, dir, "127.0.0.1:1", freeAddr(t))
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{dir + "/nope.properties"}, dir + "/nope.properties", exitWorker},
		{[]string{good, dir + "/gone.json"}, dir + "/gone.json", exitConnector},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"standalone"}, c.args...), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) || !strings.Contains(errb.String(), "no such file") {
			t.Errorf("%v: exit %d, stderr %q; want %d naming %s", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

// Two connector files with one name: the second would fail to be created
// (connect-standalone creates with allowReplace=false). Said before the
// worker starts, naming both files.
func TestStandaloneDuplicateConnectorNames(t *testing.T) {
	dir := t.TempDir()
	// Nothing listens on this Kafka address: the check comes first.
	good := workerProps(t, dir, "127.0.0.1:1", freeAddr(t))
	a := write(t, dir, "a.properties", "name=dup\nconnector.class=FileStreamSource\ntopic=t\n")
	b := write(t, dir, "b.json", `{"name":"dup","connector.class":"FileStreamSource","topic":"u"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20e9)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"standalone", good, a, b}, &out, &errb)
	if code != exitConnector {
		t.Fatalf("exit %d, want 3; stderr:\n%s", code, errb.String())
	}
	for _, w := range []string{"dup", a, b} {
		if !strings.Contains(errb.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, errb.String())
		}
	}
	if strings.Contains(errb.String(), "start the worker") {
		t.Errorf("the worker was started:\n%s", errb.String())
	}
}

// A flag given to sluice dev is what the user asked for: it wins over a
// CONNECT_* variable left in the environment (from Confluent's image, say),
// which still overrides dev's defaults.
func TestDevFlagsWinOverEnvironment(t *testing.T) {
	rest, other := freeAddr(t), freeAddr(t)
	t.Setenv("CONNECT_LISTENERS", "http://"+other)
	t.Setenv("CONNECT_LOG_LEVEL", "DEBUG") // no --log-level: the variable applies
	_, stderr, stop, done := runBg(t, "dev", "--demo=false", "--rest", rest, "--plugin-path", pluginDir, "--dir", t.TempDir())
	deadline := time.Now().Add(60 * time.Second)
	for getJSON(t, "http://"+rest+"/health", nil) != 200 {
		if getJSON(t, "http://"+other+"/health", nil) == 200 {
			t.Fatalf("the REST API is on CONNECT_LISTENERS %s, not --rest %s", other, rest)
		}
		select {
		case code := <-done:
			t.Fatalf("dev ended with %d:\n%s", code, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no REST API on %s:\n%s", rest, stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "[DEBUG]") {
		t.Errorf("CONNECT_LOG_LEVEL=DEBUG did not apply:\n%s", stderr)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
}

// With CONNECT_BOOTSTRAP_SERVERS set, sluice dev's worker uses that Kafka:
// the banner says so, rather than naming the embedded broker.
func TestDevBannerNamesTheKafkaInUse(t *testing.T) {
	other, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	seeds := strings.Join(other.ListenAddrs(), ",")
	t.Setenv("CONNECT_BOOTSTRAP_SERVERS", seeds)
	stdout, stderr, stop, done := runBg(t, "dev", "--demo=false", "--rest", freeAddr(t), "--plugin-path", pluginDir, "--dir", t.TempDir(), "--log-level", "WARN")
	waitFor(t, "the banner", done, stderr, func() bool { return strings.Contains(stdout.String(), "Try:") })
	banner := stdout.String()
	if !strings.Contains(banner, seeds) || !strings.Contains(banner, "CONNECT_BOOTSTRAP_SERVERS") || strings.Contains(banner, "embedded, in this process") {
		t.Errorf("banner does not name the Kafka in use (%s):\n%s", seeds, banner)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
}

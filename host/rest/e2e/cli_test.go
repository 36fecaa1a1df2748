package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/cli"
)

// sluice runs one CLI command line against the worker.
func (e *env) sluice(args ...string) (code int, stdout, stderr string) {
	e.t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code = cli.Run(ctx, append(args, "--url", e.url), &out, &errb)
	return code, out.String(), errb.String()
}

// sluiceOK runs a command that must succeed.
func (e *env) sluiceOK(args ...string) string {
	e.t.Helper()
	code, out, errb := e.sluice(args...)
	if code != cli.ExitOK {
		e.t.Fatalf("sluice %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errb)
	}
	return out
}

// sameJSON fails unless the CLI's -o json output is the API's answer.
func sameJSON(t *testing.T, what, cliOut string, api []byte) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal([]byte(cliOut), &a); err != nil {
		t.Fatalf("%s: -o json printed %q: %v", what, cliOut, err)
	}
	if err := json.Unmarshal(api, &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("%s: -o json printed\n%s\nthe API answers\n%s", what, ja, jb)
	}
}

// rowOf finds the table row starting with first and splits it in cells.
func rowOf(t *testing.T, table, first string) []string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == first {
			return f
		}
	}
	t.Fatalf("no row %q in\n%s", first, table)
	return nil
}

// The sluice CLI (host/cli) against the real worker: connectors create,
// list, status, pause, resume, delete; plugins; validate; -o json.
func TestCLI(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	in, out := e.dir+"/in.txt", e.dir+"/out.txt"
	lines := writeLines(t, in, "c", 0, 20)
	srcFile := filepath.Join(e.dir, "src.properties")
	if err := os.WriteFile(srcFile, []byte("name=cli-src\nconnector.class=FileStreamSource\ntopic=cli\nfile="+in+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sinkFile := filepath.Join(e.dir, "sink.json")
	sink, _ := json.Marshal(map[string]any{"name": "cli-snk", "config": map[string]string{"connector.class": "FileStreamSink", "topics": "cli", "file": out}})
	if err := os.WriteFile(sinkFile, sink, 0o644); err != nil {
		t.Fatal(err)
	}

	// validate: valid exits 0; errors exit 1 and are listed by key.
	if o := e.sluiceOK("validate", srcFile); !strings.Contains(o, "org.apache.kafka.connect.file.FileStreamSourceConnector: the configuration is valid") {
		t.Fatalf("validate valid: %q", o)
	}
	code, o, _ := e.sluice("validate", srcFile, "-c", "batch.size=0", "-c", "topic=")
	if code != cli.ExitError || !strings.Contains(o, "2 error(s)") ||
		!strings.Contains(strings.Join(rowOf(t, o, "batch.size"), " "), "Invalid value 0 for configuration batch.size: Value must be at least 1") {
		t.Fatalf("validate with errors: exit %d\n%s", code, o)
	}
	code, o, _ = e.sluice("validate", srcFile, "-c", "batch.size=0", "-o", "json")
	var ci configInfos
	if err := json.Unmarshal([]byte(o), &ci); code != cli.ExitError || err != nil || ci.ErrorCount != 1 || len(ci.errorsOf()["batch.size"]) != 1 {
		t.Fatalf("validate -o json: exit %d %v %q", code, err, o)
	}

	// create from a properties file and from a JSON create request.
	if o := e.sluiceOK("connectors", "create", srcFile); !strings.HasPrefix(o, "Created connector cli-src") || !strings.Contains(o, "FileStreamSource") {
		t.Fatalf("create: %q", o)
	}
	o = e.sluiceOK("connectors", "create", sinkFile, "-o", "json")
	var info connectorInfo
	strict(t, []byte(o), &info)
	if info.Name != "cli-snk" || info.Type != "sink" || info.Config["file"] != out {
		t.Fatalf("create -o json: %+v", info)
	}
	if code, _, errb := e.sluice("connectors", "create", srcFile); code != cli.ExitError || !strings.Contains(errb, "Connector cli-src already exists") {
		t.Fatalf("duplicate create: exit %d %q", code, errb)
	}
	waitFile(t, out, lines)
	e.waitStatus("cli-src", "RUNNING:RUNNING")
	e.waitStatus("cli-snk", "RUNNING:RUNNING")

	// list: a table, and the API's answers with -o json.
	o = e.sluiceOK("connectors", "list")
	if row := rowOf(t, o, "cli-src"); !slices.Equal(row, []string{"cli-src", "source", "RUNNING", "1", "RUNNING", "FileStreamSource"}) {
		t.Fatalf("list row %v in\n%s", row, o)
	}
	if row := rowOf(t, o, "cli-snk"); row[1] != "sink" || row[2] != "RUNNING" {
		t.Fatalf("list row %v", row)
	}
	sameJSON(t, "list", e.sluiceOK("connectors", "list", "-o", "json"), e.must("GET", "/connectors", nil, 200))
	sameJSON(t, "list --expand info", e.sluiceOK("connectors", "list", "-o", "json", "--expand", "info"), e.must("GET", "/connectors?expand=info", nil, 200))

	// status.
	o = e.sluiceOK("connectors", "status", "cli-src")
	if row := rowOf(t, o, "cli-src"); !slices.Equal(row, []string{"cli-src", "(source)", "RUNNING", e.workerID(), "-"}) {
		t.Fatalf("status row %v in\n%s", row, o)
	}
	if !strings.Contains(o, "task 0") {
		t.Fatalf("status without the task:\n%s", o)
	}
	sameJSON(t, "status", e.sluiceOK("connectors", "status", "cli-src", "-o", "json"), e.must("GET", "/connectors/cli-src/status", nil, 200))
	code, _, errb := e.sluice("connectors", "status", "nope")
	if code != cli.ExitError || !strings.Contains(errb, "No status found for connector nope") {
		t.Fatalf("status of nothing: exit %d %q", code, errb)
	}
	code, _, errb = e.sluice("connectors", "status", "nope", "-o", "json")
	var eb errBody
	if err := json.Unmarshal([]byte(errb), &eb); code != cli.ExitError || err != nil || *eb.ErrorCode != 404 {
		t.Fatalf("status of nothing -o json: exit %d %q", code, errb)
	}

	// pause and resume move the state and stop and restart the data.
	if o := e.sluiceOK("connectors", "pause", "cli-snk"); strings.TrimSpace(o) != "Pausing connector cli-snk" {
		t.Fatalf("pause: %q", o)
	}
	e.waitStatus("cli-snk", "PAUSED:PAUSED")
	more := writeLines(t, in, "c", 20, 30)
	e.waitTopic("cli", append(slices.Clone(lines), more...))
	time.Sleep(500 * time.Millisecond)
	if got := fileLines(t, out); len(got) != len(lines) {
		t.Fatalf("a paused sink wrote: %d lines", len(got))
	}
	if o := e.sluiceOK("connectors", "resume", "cli-snk"); strings.TrimSpace(o) != "Resuming connector cli-snk" {
		t.Fatalf("resume: %q", o)
	}
	e.waitStatus("cli-snk", "RUNNING:RUNNING")
	waitFile(t, out, append(lines, more...))

	// plugins.
	o = e.sluiceOK("plugins")
	if row := rowOf(t, o, "org.apache.kafka.connect.file.FileStreamSourceConnector"); row[1] != "source" {
		t.Fatalf("plugins row %v", row)
	}
	if strings.Contains(o, "converter") {
		t.Fatalf("plugins lists converters without --all:\n%s", o)
	}
	sameJSON(t, "plugins", e.sluiceOK("plugins", "-o", "json"), e.must("GET", "/connector-plugins", nil, 200))
	if row := rowOf(t, e.sluiceOK("plugins", "--all"), "org.apache.kafka.connect.json.JsonConverter"); row[1] != "converter" {
		t.Fatalf("plugins --all row %v", row)
	}

	// delete.
	for _, n := range []string{"cli-src", "cli-snk"} {
		if o := e.sluiceOK("connectors", "delete", n); strings.TrimSpace(o) != "Deleted connector "+n {
			t.Fatalf("delete: %q", o)
		}
		e.mustFail("GET", "/connectors/"+n, nil, 404)
		e.waitPids(n)
	}
	if o := e.sluiceOK("connectors", "list", "-o", "json"); strings.TrimSpace(o) != "[]" {
		t.Fatalf("list after delete: %q", o)
	}
}

// Package node_test runs the conformance suite against the Node.js example
// plugin, installing its npm dependencies first when they are missing.
package node_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/conformance"
)

func TestNodeExampleConformance(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; the Node.js example needs Node.js 18 or later")
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@grpc", "grpc-js")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("node_modules is missing and npm is not installed to run npm ci")
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	file := filepath.Join(t.TempDir(), "sink.txt")
	conformance.Run(t, filepath.Join(dir, "sluice-node-example"), conformance.Options{
		Classes: map[string]conformance.ClassOptions{
			"io.sluice.examples.node.SequenceSource": {
				ValidConfig:   map[string]string{"topic": "sequence", "max.records": "100", "batch.size": "40"},
				InvalidConfig: map[string]string{"max.records": "many"},
				InvalidKeys:   []string{"topic", "max.records"},
				SourceRecords: 100,
				Resume:        true,
			},
			"io.sluice.examples.node.MemorySink": {
				ValidConfig: map[string]string{"file": file},
			},
		},
	})
	// The sink wrote what it was given.
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the sink's file: %v", err)
	}
	want := ""
	for _, r := range conformance.DefaultSinkRecords() {
		want += r.Value.(string) + "\n"
	}
	if string(b) != want {
		t.Fatalf("sink file:\n%s\nwant:\n%s", b, want)
	}
}

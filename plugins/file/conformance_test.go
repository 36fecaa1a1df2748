package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/conformance"
)

// TestConformance builds the binary and runs the plugin contract suite on
// both classes: the source on a file of lines, the sink on a temporary
// output file.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the plugin binary")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.txt")
	sinkRecs := conformance.DefaultSinkRecords()
	bin := conformance.BuildGo(t, ".")
	conformance.Run(t, bin, conformance.Options{
		Classes: map[string]conformance.ClassOptions{
			"org.apache.kafka.connect.file.FileStreamSourceConnector": {
				ValidConfig:   map[string]string{"file": in, "topic": "lines", "batch.size": "50"},
				InvalidConfig: map[string]string{"file": in, "batch.size": "0"},
				InvalidKeys:   []string{"topic", "batch.size"},
				// Fewer than the file holds, so the resumed run has lines left.
				SourceRecords: 200,
				Resume:        true,
			},
			"org.apache.kafka.connect.file.FileStreamSinkConnector": {
				ValidConfig: map[string]string{"file": out, "topics": "conformance"},
				SinkRecords: sinkRecs,
			},
		},
	})
	// Again with the whole file consumed, so the source task is tailing
	// (its Poll waiting for lines) when the suite stops it.
	t.Run("tailing", func(t *testing.T) {
		conformance.Run(t, bin, conformance.Options{
			Classes: map[string]conformance.ClassOptions{
				"org.apache.kafka.connect.file.FileStreamSourceConnector": {
					ValidConfig:   map[string]string{"file": in, "topic": "lines"},
					SourceRecords: 300,
				},
			},
		})
	})
	// The sink task wrote every value it was put, in order.
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, r := range sinkRecs {
		want.WriteString(r.Value.(string) + "\n")
	}
	if string(got) != want.String() {
		t.Errorf("sink file holds %q, want %q", got, want.String())
	}
}

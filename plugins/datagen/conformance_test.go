package main

import (
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/conformance"
)

const (
	datagenClass = "io.sluice.connect.datagen.DatagenConnector"
	noopClass    = "io.sluice.connect.datagen.NoopSinkConnector"
)

// TestConformance builds the binary and runs the plugin contract suite on
// both classes, the generator once with structs and once with raw bytes.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the plugin binary")
	}
	bin := conformance.BuildGo(t, ".")
	conformance.Run(t, bin, conformance.Options{
		Classes: map[string]conformance.ClassOptions{
			datagenClass: {
				ValidConfig: map[string]string{"kafka.topic": "orders", "quickstart": "orders", "key.field": "orderid",
					"random.seed": "7", "max.records": "400", "batch.size": "64"},
				InvalidConfig: map[string]string{"quickstart": "stocks", "key.field": "nope", "max.records": "-2"},
				InvalidKeys:   []string{"kafka.topic", "quickstart", "max.records"},
				// Fewer than max.records, so the resumed run has records left.
				SourceRecords: 250,
				Resume:        true,
			},
			noopClass: {
				ValidConfig:   map[string]string{"topics": "conformance", "log.every": "4"},
				InvalidConfig: map[string]string{"log.every": "often"},
				InvalidKeys:   []string{"log.every"},
			},
		},
	})
	t.Run("raw", func(t *testing.T) {
		conformance.Run(t, bin, conformance.Options{
			Classes: map[string]conformance.ClassOptions{
				datagenClass: {
					ValidConfig: map[string]string{"kafka.topic": "bench", "format": "raw", "record.size": "1024",
						"key.field": "userid", "max.records": "300"},
					// All of max.records, so the stop check finds Poll waiting.
					SourceRecords: 300,
				},
			},
		})
	})
}

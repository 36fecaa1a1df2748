package main

import (
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/conformance"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.BuildGo(t, "."), conformance.Options{
		Classes: map[string]conformance.ClassOptions{
			"io.sluice.examples.CounterSource": {
				ValidConfig:   map[string]string{"topic": "counts", "max.records": "250"},
				InvalidConfig: map[string]string{"max.records": "-5", "interval.ms": "soon"},
				InvalidKeys:   []string{"topic", "max.records", "interval.ms"},
				// All of max.records, so the Stop check finds Poll waiting.
				SourceRecords: 250,
				Resume:        true,
			},
		},
	})
}

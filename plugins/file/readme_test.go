package main

import (
	"flag"
	"testing"

	"github.com/sluice-io/sluice/plugins/internal/configdoc"
	"github.com/sluice-io/sluice/pluginsdk/config"
)

var updateREADME = flag.Bool("update", false, "rewrite this plugin's settings tables in plugins/README.md")

// TestREADME checks that plugins/README.md shows the settings as the
// connectors declare them; -update rewrites the tables.
func TestREADME(t *testing.T) {
	configdoc.CheckREADME(t, "../README.md", *updateREADME, map[string]*config.Def{"FileStreamSource": sourceDef(), "FileStreamSink": sinkDef()})
}

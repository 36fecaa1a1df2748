package main

import (
	"flag"
	"os"
	"testing"

	"github.com/sluice-io/sluice/plugins/internal/configdoc"
	"github.com/sluice-io/sluice/pluginsdk/config"
)

var updateREADME = flag.Bool("update", false, "rewrite this plugin's settings tables in plugins/README.md")

// TestREADME checks that plugins/README.md shows the settings as the
// connectors declare them; -update rewrites the tables.
func TestREADME(t *testing.T) {
	const path = "../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for name, def := range readmeTables() {
		table := configdoc.Table(def)
		if *updateREADME {
			var ok bool
			if readme, ok = configdoc.Replace(readme, name, table); !ok {
				t.Fatalf("README has no section %q", name)
			}
			continue
		}
		if !configdoc.Check(readme, name, table) {
			t.Errorf("README section %q is not the current settings table (run go test -run README -update); want:\n%s", name, table)
		}
	}
	if *updateREADME {
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readmeTables() map[string]*config.Def {
	return map[string]*config.Def{"Datagen": datagenDef(), "NoopSink": noopDef()}
}

package herder_test

import (
	"testing"
)

// The sink batch bounds are Sluice extensions: validate lists them only
// when the config sets them, and checks them then.
func TestValidateSinkBatchSettings(t *testing.T) {
	f := newFixture(t)
	listed := func(cfg map[string]string) (map[string]bool, map[string][]string) {
		t.Helper()
		infos, err := f.h.ValidateConfig(ctxT(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		names, errs := map[string]bool{}, map[string][]string{}
		for _, c := range infos.Configs {
			if c.Definition != nil {
				names[c.Definition.Name] = true
			}
			if c.Value != nil && len(c.Value.Errors) > 0 {
				errs[c.Value.Name] = c.Value.Errors
			}
		}
		return names, errs
	}
	base := map[string]string{"connector.class": sinkClass, "name": "k", "topics": "a"}
	names, errs := listed(base)
	if names["sluice.sink.batch.max.records"] || names["sluice.sink.batch.max.bytes"] || len(errs) != 0 {
		t.Fatalf("unset: listed %v, errors %v", names, errs)
	}
	if !names["topics"] {
		t.Fatal("topics not listed")
	}
	cfg := map[string]string{"sluice.sink.batch.max.records": "0", "sluice.sink.batch.max.bytes": "1048576"}
	for k, v := range base {
		cfg[k] = v
	}
	names, errs = listed(cfg)
	if !names["sluice.sink.batch.max.records"] || !names["sluice.sink.batch.max.bytes"] {
		t.Fatalf("set: listed %v", names)
	}
	if len(errs) != 1 || len(errs["sluice.sink.batch.max.records"]) != 1 {
		t.Fatalf("errors %v, want one for max.records=0", errs)
	}
}

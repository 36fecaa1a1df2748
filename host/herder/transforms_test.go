package herder_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/transforms"
)

// catalog is the worker's catalog: the transforms package's classes and its
// whole-config validation.
type catalog struct{ transforms.Catalog }

func (catalog) ValidateConfig(cfg map[string]string) []config.ConfigValue {
	return transforms.ValidateConfig(cfg)
}

func newTransformFixture(t *testing.T) *fixture {
	return newFixtureWith(t, func(o *herder.StandaloneOptions) { o.Transforms = catalog{} })
}

// Each broken transform or predicate setting is refused at validate, on
// its own key and with Kafka's message, and at create with a 400 that
// lists it.
func TestTransformValidation(t *testing.T) {
	f := newTransformFixture(t)
	for _, c := range []struct {
		name string
		cfg  []string
		key  string
		msg  string
	}{
		{"unknown alias class", []string{"transforms", "a", "transforms.a.type", "com.example.Nope"},
			"transforms.a.type", "Class com.example.Nope could not be found."},
		{"missing class", []string{"transforms", "a"},
			"transforms.a.type", `Missing required configuration "transforms.a.type" which has no default value.`},
		{"undefined predicate", []string{"transforms", "a", "transforms.a.type", "Filter", "transforms.a.predicate", "p"},
			"transforms.a.predicate", "The predicate 'p' is not defined in predicates"},
		{"bad regex", []string{"transforms", "r", "transforms.r.type", "RegexRouter", "transforms.r.regex", "(", "transforms.r.replacement", "x"},
			"transforms.r.regex", "Invalid regex"},
		{"bad predicate regex", []string{"predicates", "p", "predicates.p.type", "TopicNameMatches", "predicates.p.pattern", "["},
			"predicates.p.pattern", "Invalid regex"},
		{"abstract class", []string{"transforms", "i", "transforms.i.type", "org.apache.kafka.connect.transforms.InsertField"},
			"transforms.i.type", "This class is abstract and cannot be created. Did you mean"},
		{"class refuses its settings", []string{"transforms", "i", "transforms.i.type", "InsertField$Value"},
			"transforms.i.type", ""},
	} {
		cfg := srcConfig(append([]string{"name", "s"}, c.cfg...)...)
		infos, err := f.h.ValidateConfig(ctxT(t), cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, ci := range infos.Configs {
			if ci.Value != nil && ci.Value.Name == c.key {
				got = ci.Value.Errors
			}
		}
		if infos.ErrorCount != 1 || len(got) != 1 || !strings.Contains(got[0], c.msg) {
			t.Errorf("%s: %d errors, on %s: %q; want one containing %q", c.name, infos.ErrorCount, c.key, got, c.msg)
			continue
		}
		_, _, err = f.h.PutConnectorConfig(ctxT(t), "s", cfg, false, "")
		if !errors.Is(err, herder.ErrBadRequest) || !strings.Contains(err.Error(), got[0]) ||
			!strings.Contains(err.Error(), "Connector configuration is invalid and contains the following 1 error(s):") {
			t.Errorf("%s: create = %v", c.name, err)
		}
	}
	// A valid chain passes, with its class's settings listed.
	cfg := srcConfig("name", "ok", "transforms", "wrap", "transforms.wrap.type", "org.apache.kafka.connect.transforms.HoistField$Value",
		"transforms.wrap.field", "content")
	infos, err := f.h.ValidateConfig(ctxT(t), cfg)
	if err != nil || infos.ErrorCount != 0 {
		t.Fatalf("valid chain: %v, %+v", err, infos)
	}
	found := false
	for _, ci := range infos.Configs {
		found = found || ci.Definition != nil && ci.Definition.Name == "transforms.wrap.field"
	}
	if !found {
		t.Fatal("transforms.wrap.field is not listed")
	}
	if _, _, err := f.h.PutConnectorConfig(ctxT(t), "ok", cfg, false, ""); err != nil {
		t.Fatal(err)
	}
}

package herder_test

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/storage"
)

// policyMsg is Kafka's AbstractConnectorClientConfigOverridePolicy message,
// which names the client setting without its override prefix.
func policyMsg(policy, setting string) string {
	return "The '" + policy + "' policy does not allow '" + setting + "' to be overridden in the connector configuration."
}

// createRefusal is the message of Kafka's 400 for a config with these
// validation errors.
func createRefusal(errs ...string) string {
	msg := "Connector configuration is invalid and contains the following " + strconv.Itoa(len(errs)) + " error(s):"
	for _, e := range errs {
		msg += "\n" + e
	}
	return msg + "\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"
}

// keyErrors maps every key of a validate answer that has errors to them.
func keyErrors(infos *herder.ConfigInfos) map[string][]string {
	out := map[string][]string{}
	for _, c := range infos.Configs {
		if c.Value != nil && len(c.Value.Errors) > 0 {
			out[c.Value.Name] = c.Value.Errors
		}
	}
	return out
}

func equalErrors(a, b map[string][]string) bool {
	return maps.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

func sinkCfg(extra ...string) map[string]string {
	m := map[string]string{"connector.class": sinkClass, "topics": "a"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

type overrideCase struct {
	what string
	cfg  map[string]string
	want map[string][]string // per-key errors; empty: valid
}

// checkOverrideCases validates each case (error_count and the per-key
// errors exactly), then creates it: refused with Kafka's 400 message and
// nothing created when it has errors, created otherwise.
func checkOverrideCases(t *testing.T, h herder.Herder, cases []overrideCase) {
	t.Helper()
	ctx := ctxT(t)
	for i, c := range cases {
		cfg := maps.Clone(c.cfg)
		cfg["name"] = "c" + strconv.Itoa(i)
		infos, err := h.ValidateConfig(ctx, cfg)
		if err != nil {
			t.Fatalf("%s: validate: %v", c.what, err)
		}
		wantCount := 0
		for _, errs := range c.want {
			wantCount += len(errs)
		}
		if got := keyErrors(infos); infos.ErrorCount != wantCount || !equalErrors(got, c.want) {
			t.Fatalf("%s: error_count %d, errors %q; want %d, %q", c.what, infos.ErrorCount, got, wantCount, c.want)
		}
		_, created, err := h.PutConnectorConfig(ctx, cfg["name"], cfg, false, herder.TargetStopped)
		names, _ := h.Connectors(ctx)
		if wantCount == 0 {
			if err != nil || !created || !slices.Contains(names, cfg["name"]) {
				t.Fatalf("%s: create: created %v, %v; connectors %v", c.what, created, err, names)
			}
			continue
		}
		var msgs []string
		for _, k := range slices.Sorted(maps.Keys(c.want)) {
			msgs = append(msgs, c.want[k]...)
		}
		var he *herder.Error
		if !errors.As(err, &he) || !errors.Is(err, herder.ErrBadRequest) || he.Message != createRefusal(msgs...) {
			t.Fatalf("%s: create answered %#v\nwant a bad request with\n%q", c.what, err, createRefusal(msgs...))
		}
		if slices.Contains(names, cfg["name"]) {
			t.Fatalf("%s: refused connector was created: %v", c.what, names)
		}
	}
}

// connector.client.config.override.policy=None (KIP-458): every
// producer/consumer/admin override is an error on its key, with Kafka's
// message, and the connector is not created. A bare prefix names no
// setting and is no override (Kafka's originalsWithPrefix skips it).
func TestOverridePolicyNone(t *testing.T) {
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) { o.OverridePolicy = herder.PolicyNone })
	checkOverrideCases(t, f.h, []overrideCase{
		{"source producer", srcConfig("producer.override.acks", "1"),
			map[string][]string{"producer.override.acks": {policyMsg("None", "acks")}}},
		{"sink consumer", sinkCfg("consumer.override.max.poll.records", "5"),
			map[string][]string{"consumer.override.max.poll.records": {policyMsg("None", "max.poll.records")}}},
		// A sink with a dead letter queue uses an admin client (and a
		// producer), so Kafka checks admin.override.* for it.
		{"sink admin", sinkCfg("errors.deadletterqueue.topic.name", "dlq", "admin.override.x", "y"),
			map[string][]string{"admin.override.x": {policyMsg("None", "x")}}},
		{"principal settings too", srcConfig("producer.override.sasl.mechanism", "PLAIN", "producer.override.security.protocol", "SASL_SSL"),
			map[string][]string{
				"producer.override.sasl.mechanism":    {policyMsg("None", "sasl.mechanism")},
				"producer.override.security.protocol": {policyMsg("None", "security.protocol")},
			}},
		{"bare prefix", srcConfig("producer.override.", "x"), map[string][]string{}},
		{"no overrides", srcConfig(), map[string][]string{}},
		// Only the overrides of clients the connector uses are checked,
		// as in Kafka Connect; the others are never applied.
		{"source consumer", srcConfig("consumer.override.max.poll.records", "5"), map[string][]string{}},
		{"source admin without topic creation", srcConfig("admin.override.x", "y"), map[string][]string{}},
		{"source admin with topic creation", srcConfig("admin.override.x", "y",
			"topic.creation.default.replication.factor", "1", "topic.creation.default.partitions", "1"),
			map[string][]string{"admin.override.x": {policyMsg("None", "x")}}},
		{"sink producer and admin without a dead letter queue", sinkCfg("producer.override.acks", "1", "admin.override.x", "y"), map[string][]string{}},
		{"sink producer with a dead letter queue", sinkCfg("errors.deadletterqueue.topic.name", "dlq", "producer.override.acks", "1"),
			map[string][]string{"producer.override.acks": {policyMsg("None", "acks")}}},
	})
}

// Principal allows only sasl.jaas.config, sasl.mechanism and
// security.protocol to be overridden.
func TestOverridePolicyPrincipal(t *testing.T) {
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) { o.OverridePolicy = herder.PolicyPrincipal })
	principal := []string{
		"producer.override.sasl.mechanism", "PLAIN",
		"producer.override.security.protocol", "SASL_SSL",
		"producer.override.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`,
	}
	checkOverrideCases(t, f.h, []overrideCase{
		{"source with acks", srcConfig(append(slices.Clone(principal), "producer.override.acks", "1")...),
			map[string][]string{"producer.override.acks": {policyMsg("Principal", "acks")}}},
		{"sink consumer", sinkCfg("consumer.override.security.protocol", "SASL_SSL", "consumer.override.max.poll.records", "5"),
			map[string][]string{"consumer.override.max.poll.records": {policyMsg("Principal", "max.poll.records")}}},
		{"source principal only", srcConfig(principal...), map[string][]string{}},
		{"sink principal only", sinkCfg("consumer.override.sasl.mechanism", "SCRAM-SHA-512", "consumer.override.security.protocol", "SASL_PLAINTEXT"),
			map[string][]string{}},
	})
}

// All, the default since Kafka 3.0, allows every override.
func TestOverridePolicyAll(t *testing.T) {
	for _, policy := range []string{"", herder.PolicyAll} {
		t.Run("policy="+policy, func(t *testing.T) {
			f := newFixtureWith(t, func(o *herder.StandaloneOptions) { o.OverridePolicy = policy })
			checkOverrideCases(t, f.h, []overrideCase{
				{"source", srcConfig("producer.override.acks", "1", "producer.override.sasl.mechanism", "PLAIN"), map[string][]string{}},
				{"sink", sinkCfg("consumer.override.max.poll.records", "5", "errors.deadletterqueue.topic.name", "dlq",
					"admin.override.x", "y", "producer.override.acks", "1"), map[string][]string{}},
			})
		})
	}
	store, err := storage.OpenFileOffsetStore(filepath.Join(t.TempDir(), "offsets"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = herder.NewStandalone(herder.StandaloneOptions{Instances: newFakeInstances(), Offsets: store, OverridePolicy: "none"})
	if err == nil || err.Error() != `standalone herder: override policy "none": want All, None or Principal` {
		t.Fatalf("policy none (lower case): %v", err)
	}
}

// Replacing or patching a connector's config goes through the policy as
// creating it does; a refused change leaves the stored config as it was.
func TestOverridePolicyOnUpdate(t *testing.T) {
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) { o.OverridePolicy = herder.PolicyNone })
	checkOverrideUpdates(t, f.h)
}

func TestDistributedOverridePolicy(t *testing.T) {
	e := newDEnv(t)
	e.options = func(o *herder.DistributedOptions) { o.OverridePolicy = herder.PolicyNone }
	h := e.start("w1", newFakeInstances(), false)
	checkOverrideCases(t, h, []overrideCase{
		{"source producer", srcConfig("producer.override.acks", "1"),
			map[string][]string{"producer.override.acks": {policyMsg("None", "acks")}}},
		{"sink consumer", sinkCfg("consumer.override.max.poll.records", "5"),
			map[string][]string{"consumer.override.max.poll.records": {policyMsg("None", "max.poll.records")}}},
	})
	checkOverrideUpdates(t, h)
}

func checkOverrideUpdates(t *testing.T, h herder.Herder) {
	t.Helper()
	ctx := ctxT(t)
	cfg := srcConfig()
	if _, _, err := h.PutConnectorConfig(ctx, "u", cfg, false, herder.TargetStopped); err != nil {
		t.Fatal(err)
	}
	// A distributed herder answers once it has read its own write back.
	waitFor(t, "the config of u", func() bool {
		_, err := h.ConnectorConfig(ctx, "u")
		return err == nil
	})
	want := createRefusal(policyMsg("None", "acks"))
	refused := func(what string, err error) {
		t.Helper()
		var he *herder.Error
		if !errors.As(err, &he) || !errors.Is(err, herder.ErrBadRequest) || he.Message != want {
			t.Fatalf("%s answered %#v\nwant a bad request with\n%q", what, err, want)
		}
		got, err := h.ConnectorConfig(ctx, "u")
		if err != nil || !maps.Equal(got, withName(cfg, "u")) {
			t.Fatalf("config after a refused %s: %v, %v", what, got, err)
		}
	}
	_, _, err := h.PutConnectorConfig(ctx, "u", srcConfig("producer.override.acks", "1"), true, herder.TargetStarted)
	refused("replace", err)
	acks := "1"
	_, err = h.PatchConnectorConfig(ctx, "u", map[string]*string{"producer.override.acks": &acks})
	refused("patch", err)
}

func withName(cfg map[string]string, name string) map[string]string {
	out := maps.Clone(cfg)
	out["name"] = name
	return out
}

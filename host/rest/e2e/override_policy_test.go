package e2e

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// overrideRefused is Kafka Connect's message for a client override the
// worker's connector.client.config.override.policy does not allow; it names
// the setting without its override prefix.
func overrideRefused(policy, setting string) string {
	return "The '" + policy + "' policy does not allow '" + setting + "' to be overridden in the connector configuration."
}

// invalidConfig is Kafka Connect's 400 message for a config with these
// validation errors.
func invalidConfig(errs ...string) string {
	msg := "Connector configuration is invalid and contains the following " + strconv.Itoa(len(errs)) + " error(s):"
	for _, e := range errs {
		msg += "\n" + e
	}
	return msg + "\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"
}

func sameErrors(a, b map[string][]string) bool {
	return maps.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

// With connector.client.config.override.policy=None on the worker, the
// validate endpoint shows every override as an error on its key, and
// POST /connectors, PUT /connectors/{c}/config and PATCH of a config
// answer 400 with Kafka's message, changing nothing.
func TestOverridePolicyNoneREST(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{props: map[string]string{"connector.client.config.override.policy": "None"}})
	in := e.dir + "/in.txt"
	src := map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "p-none", "producer.override.acks": "1"}
	sink := map[string]string{"connector.class": "FileStreamSink", "file": e.dir + "/out.txt", "topics": "p-none",
		"consumer.override.max.poll.records": "5"}
	for _, c := range []struct {
		plugin, key, setting string
		cfg                  map[string]string
	}{
		{"FileStreamSource", "producer.override.acks", "acks", src},
		{"FileStreamSink", "consumer.override.max.poll.records", "max.poll.records", sink},
	} {
		ci := validate(e, c.plugin, withName(c.cfg, "v"))
		want := map[string][]string{c.key: {overrideRefused("None", c.setting)}}
		if ci.ErrorCount != 1 || !sameErrors(ci.errorsOf(), want) {
			t.Fatalf("validate %s: error_count %d, errors %q; want 1, %q", c.plugin, ci.ErrorCount, ci.errorsOf(), want)
		}
		if v := ci.value(c.key); v == nil || *v != c.cfg[c.key] {
			t.Fatalf("validate %s: value of %s %v, want %q", c.plugin, c.key, v, c.cfg[c.key])
		}
		wantMsg := invalidConfig(overrideRefused("None", c.setting))
		if msg := e.mustFail("POST", "/connectors", map[string]any{"name": "bad", "config": c.cfg}, 400); msg != wantMsg {
			t.Fatalf("POST %s: message\n%q\nwant\n%q", c.plugin, msg, wantMsg)
		}
		if msg := e.mustFail("PUT", "/connectors/bad/config", c.cfg, 400); msg != wantMsg {
			t.Fatalf("PUT %s: message\n%q\nwant\n%q", c.plugin, msg, wantMsg)
		}
		e.mustFail("GET", "/connectors/bad", nil, 404, "Connector bad not found")
	}

	// An existing connector cannot take an override either way.
	writeLines(t, in, "x", 0, 1)
	good := map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "p-none"}
	e.create("good", good)
	want := invalidConfig(overrideRefused("None", "acks"))
	if msg := e.mustFail("PUT", "/connectors/good/config", src, 400); msg != want {
		t.Fatalf("PUT over good: message %q", msg)
	}
	if msg := e.mustFail("PATCH", "/connectors/good/config", map[string]string{"producer.override.acks": "1"}, 400); msg != want {
		t.Fatalf("PATCH good: message %q", msg)
	}
	var got map[string]string
	strict(t, e.must("GET", "/connectors/good/config", nil, 200), &got)
	if !maps.Equal(got, withName(good, "good")) {
		t.Fatalf("config after refused updates: %v", got)
	}
	var names []string
	e.mustJSON("GET", "/connectors", nil, 200, &names)
	if !slices.Equal(names, []string{"good"}) {
		t.Fatalf("connectors %v", names)
	}
}

// Principal, named by Kafka's class as a Kafka worker file would: only
// sasl.jaas.config, sasl.mechanism and security.protocol may be overridden.
func TestOverridePolicyPrincipalREST(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{props: map[string]string{
		"connector.client.config.override.policy": "org.apache.kafka.connect.connector.policy.PrincipalConnectorClientConfigOverridePolicy"}})
	cfg := map[string]string{"connector.class": "FileStreamSource", "file": e.dir + "/in.txt", "topic": "p-principal",
		"producer.override.sasl.mechanism":    "PLAIN",
		"producer.override.security.protocol": "SASL_PLAINTEXT",
		"producer.override.acks":              "1"}
	ci := validate(e, "FileStreamSource", withName(cfg, "v"))
	want := map[string][]string{"producer.override.acks": {overrideRefused("Principal", "acks")}}
	if ci.ErrorCount != 1 || !sameErrors(ci.errorsOf(), want) {
		t.Fatalf("validate: error_count %d, errors %q; want 1, %q", ci.ErrorCount, ci.errorsOf(), want)
	}
	msg := e.mustFail("POST", "/connectors", map[string]any{"name": "bad", "config": cfg}, 400)
	if w := invalidConfig(overrideRefused("Principal", "acks")); msg != w {
		t.Fatalf("POST: message\n%q\nwant\n%q", msg, w)
	}
	delete(cfg, "producer.override.acks")
	if ci := validate(e, "FileStreamSource", withName(cfg, "v")); ci.ErrorCount != 0 {
		t.Fatalf("principal settings only: error_count %d, errors %q", ci.ErrorCount, ci.errorsOf())
	}
}

// The default policy, All, lets a sink's consumer overrides through, and
// they reach its consumer: consumer.override.group.id names the group that
// commits the sink's offsets and consumer.override.client.id the member's
// client id.
func TestOverridePolicyAllREST(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	const topic, group, clientID, n = "p-all", "policy-group", "policy-consumer", 20
	srcIn, out := e.dir+"/in.txt", e.dir+"/out.txt"
	lines := writeLines(t, srcIn, "all", 0, n)
	src := map[string]string{"connector.class": "FileStreamSource", "file": srcIn, "topic": topic,
		"producer.override.acks": "1", "admin.override.x": "y"}
	sink := map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": topic,
		"consumer.override.max.poll.records": "5", "consumer.override.group.id": group, "consumer.override.client.id": clientID}
	for plugin, cfg := range map[string]map[string]string{"FileStreamSource": src, "FileStreamSink": sink} {
		if ci := validate(e, plugin, withName(cfg, "v")); ci.ErrorCount != 0 {
			t.Fatalf("validate %s: error_count %d, errors %q", plugin, ci.ErrorCount, ci.errorsOf())
		}
	}
	e.create("src", src)
	e.create("snk", sink)
	e.waitStatus("src", "RUNNING:RUNNING")
	e.waitStatus("snk", "RUNNING:RUNNING")
	e.waitTopic(topic, lines)
	waitFile(t, out, lines)

	cl := e.kafka()
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// committed is the group's committed offset of the topic's partition,
	// -1 for none yet.
	committed := func(g string) int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		offs, err := adm.FetchOffsets(ctx, g)
		if err != nil {
			t.Fatalf("offsets of group %s: %v", g, err)
		}
		if o, ok := offs.Lookup(topic, 0); ok && o.Err == nil {
			return o.At
		}
		return -1
	}
	waitUntil(t, "the sink's commit in "+group, 15*time.Second, func() bool { return committed(group) == n })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	groups, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range groups[group].Members {
		ids = append(ids, m.ClientID)
	}
	if !slices.Equal(ids, []string{clientID}) {
		t.Fatalf("members of %s: client ids %v, want [%s]", group, ids, clientID)
	}
	// connect-snk, the group without the override, was never used.
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := listed.Groups(); !slices.Equal(got, []string{group}) {
		t.Fatalf("groups %v, want [%s]", got, group)
	}
}

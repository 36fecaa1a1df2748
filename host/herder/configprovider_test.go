package herder_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/configprovider"
	"github.com/sluice-io/sluice/host/herder"
)

const cpSecret = "hunter2-secret"

// secretsFile writes a properties file and returns its path and a resolver
// with a "file" provider.
func secretsFile(t *testing.T) (string, *configprovider.Resolver) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.properties")
	if err := os.WriteFile(path, []byte("topic=resolved-topic\nsecret="+cpSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := configprovider.New(map[string]string{"config.providers": "file", "config.providers.file.class": "FileConfigProvider"})
	if err != nil {
		t.Fatal(err)
	}
	return path, r
}

func TestStandaloneResolvesVariablesOnStartOnly(t *testing.T) {
	path, r := secretsFile(t)
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) { o.Resolver = r })
	ctx := ctxT(t)
	topicVar, secretVar := "${file:"+path+":topic}", "${file:"+path+":secret}"
	cfg := srcConfig("topic", topicVar, "secret", secretVar, "note", "${vault:x:y}")
	// The connector copies its resolved topic into its task configs.
	f.in.extra["src"] = map[string]string{"topic": "resolved-topic"}

	info, _, err := f.h.PutConnectorConfig(ctx, "src", cfg, false, herder.TargetStarted)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config["topic"] != topicVar || info.Config["secret"] != secretVar {
		t.Fatalf("create answer %v", info.Config)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")

	started := f.in.conn("src").cfg
	if started["topic"] != "resolved-topic" || started["secret"] != cpSecret || started["note"] != "${vault:x:y}" {
		t.Fatalf("connector started with %v", started)
	}
	for _, id := range []string{"src-0", "src-1"} {
		ts := f.in.task(id)
		if ts.spec.ConnectorConfig["secret"] != cpSecret || ts.spec.TaskConfig["topic"] != "resolved-topic" {
			t.Fatalf("%s started with connector config %v, task config %v", id, ts.spec.ConnectorConfig, ts.spec.TaskConfig)
		}
	}
	got, _ := f.h.ConnectorConfig(ctx, "src")
	if got["topic"] != topicVar || got["secret"] != secretVar {
		t.Fatalf("GET config %v", got)
	}
	tasks, _ := f.h.TaskConfigs(ctx, "src")
	if len(tasks) != 2 || tasks[0].Config["topic"] != topicVar {
		t.Fatalf("GET tasks %+v", tasks)
	}
	ci, _ := f.h.ConnectorInfo(ctx, "src")
	for k, v := range ci.Config {
		if strings.Contains(v, cpSecret) || strings.Contains(v, "resolved-topic") {
			t.Fatalf("GET connector shows %s=%s", k, v)
		}
	}
}

func TestStandaloneValidateResolves(t *testing.T) {
	path, r := secretsFile(t)
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) { o.Resolver = r })
	ctx := ctxT(t)
	// topic is required: unresolved it would still be set, so use a key
	// whose resolved value the validation would reject if unresolved:
	// tasks.max must be an int.
	intFile := filepath.Join(filepath.Dir(path), "n.properties")
	if err := os.WriteFile(intFile, []byte("n=3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tmVar := "${file:" + intFile + ":n}"
	infos, err := f.h.ValidateConfig(ctx, srcConfig("name", "v", "tasks.max", tmVar, "secret", "${file:"+path+":secret}"))
	if err != nil {
		t.Fatal(err)
	}
	if infos.ErrorCount != 0 {
		for _, c := range infos.Configs {
			if c.Value != nil && len(c.Value.Errors) > 0 {
				t.Errorf("%s: %v", c.Value.Name, c.Value.Errors)
			}
		}
		t.Fatalf("%d errors", infos.ErrorCount)
	}
	for _, c := range infos.Configs {
		if c.Value != nil && c.Value.Value != nil && strings.Contains(*c.Value.Value, cpSecret) {
			t.Fatalf("validate answer shows the secret in %s", c.Value.Name)
		}
		if c.Value != nil && c.Value.Name == "tasks.max" && (c.Value.Value == nil || *c.Value.Value != tmVar) {
			t.Fatalf("tasks.max shown as %v", c.Value.Value)
		}
	}
	// Unresolved it fails: the same config with a key the file lacks.
	infos, err = f.h.ValidateConfig(ctx, srcConfig("name", "v", "tasks.max", "${file:"+intFile+":absent}"))
	if err != nil || infos.ErrorCount == 0 {
		t.Fatalf("unresolvable tasks.max: %v %+v", err, infos)
	}
	// A provider error fails validation, and with it the create, naming
	// key, provider and path.
	missing := filepath.Join(filepath.Dir(path), "missing.properties")
	_, _, err = f.h.PutConnectorConfig(ctx, "bad", srcConfig("secret", "${file:"+missing+":secret}"), false, herder.TargetStarted)
	herderErr(t, err, herder.ErrBadRequest, missing)
	for _, s := range []string{"secret", "file"} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not name %s", err, s)
		}
	}
	if names, _ := f.h.Connectors(ctx); len(names) != 0 {
		t.Fatalf("created %v", names)
	}
}

func TestDistributedResolvesVariablesOnStartOnly(t *testing.T) {
	path, r := secretsFile(t)
	e := newDEnv(t)
	e.resolver = r
	in := newFakeInstances()
	in.extra["src"] = map[string]string{"secret": cpSecret}
	h := e.start("w1", in, false)
	secretVar := "${file:" + path + ":secret}"
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", srcConfig("secret", secretVar), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")
	if got := in.conn("src").cfg["secret"]; got != cpSecret {
		t.Fatalf("connector started with secret %q", got)
	}
	if ts := in.task("src-1"); ts.spec.TaskConfig["secret"] != cpSecret || ts.spec.ConnectorConfig["secret"] != cpSecret {
		t.Fatalf("task started with %v / %v", ts.spec.TaskConfig, ts.spec.ConnectorConfig)
	}
	tcs, err := h.TaskConfigs(ctxT(t), "src")
	if err != nil || len(tcs) != 2 || tcs[0].Config["secret"] != secretVar {
		t.Fatalf("task configs %+v %v", tcs, err)
	}
	if n := e.configTopicMentions(cpSecret); n != 0 {
		t.Fatalf("the config topic holds the secret in %d records", n)
	}
	if n := e.configTopicMentions(secretVar); n < 2 {
		t.Fatalf("the config topic holds the placeholder in %d records, want connector and task configs", n)
	}
}

// configTopicMentions counts the config topic records whose value
// contains s.
func (e *dEnv) configTopicMentions(s string) int {
	e.t.Helper()
	n := 0
	e.eachRecord(dConfigTopic, func(r *kgo.Record) {
		if strings.Contains(string(r.Value), s) {
			n++
		}
	})
	return n
}

func TestValidateErrorsShowTheSubmittedConfig(t *testing.T) {
	path, r := secretsFile(t)
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) { o.Resolver = r })
	ctx := ctxT(t)
	secretVar := "${file:" + path + ":secret}"
	_, _, err := f.h.PutConnectorConfig(ctx, "x", map[string]string{"secret": secretVar}, false, herder.TargetStarted)
	herderErr(t, err, herder.ErrBadRequest, secretVar)
	if strings.Contains(err.Error(), cpSecret) {
		t.Fatalf("error shows the secret: %v", err)
	}
	// A connector.class that is itself a variable: the message names the
	// variable, not the resolved name.
	clsFile := filepath.Join(filepath.Dir(path), "c.properties")
	if err := os.WriteFile(clsFile, []byte("c=NoSuchSecretClass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clsVar := "${file:" + clsFile + ":c}"
	_, err = f.h.ValidateConfig(ctx, map[string]string{"connector.class": clsVar})
	herderErr(t, err, nil, clsVar)
	if strings.Contains(err.Error(), "NoSuchSecretClass") {
		t.Fatalf("error shows the resolved class: %v", err)
	}
}

// dirSecrets writes files into a directory for a "dir" provider.
func dirSecrets(t *testing.T, r *configprovider.Resolver, files map[string]string) (string, *configprovider.Resolver) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, r.With("dir", &configprovider.DirectoryProvider{})
}

// noneContain fails when any value, error or recommended value of the
// answer contains s.
func noneContain(t *testing.T, infos *herder.ConfigInfos, s string) {
	t.Helper()
	for _, c := range infos.Configs {
		v := c.Value
		if v == nil {
			continue
		}
		all := append(append([]string{}, v.Errors...), v.RecommendedValues...)
		if v.Value != nil {
			all = append(all, *v.Value)
		}
		for _, x := range all {
			if strings.Contains(x, s) {
				t.Errorf("%s shows %q: %q", v.Name, s, x)
			}
		}
	}
}

func TestValidateMasksTrimmedAndCrossKeyValues(t *testing.T) {
	_, r := secretsFile(t)
	dir, r := dirSecrets(t, r, map[string]string{"topic": "dir-secret-topic\n", "flag": "schemas-secret-flag"})
	var convCalls int
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) {
		o.Resolver = r
		o.Converters = func(prop, class string, cfg map[string]string) error {
			if prop != "value.converter" {
				return nil
			}
			convCalls++
			// A converter complaining about another key's resolved
			// value, and quoting the trimmed topic.
			return fmt.Errorf("Invalid value %s for schemas.enable (topic %s)", cfg["value.converter.schemas.enable"], strings.TrimSpace(cfg["topic"]))
		}
	})
	topicVar, flagVar := "${dir:"+dir+":topic}", "${dir:"+dir+":flag}"
	infos, err := f.h.ValidateConfig(ctxT(t), srcConfig("topic", topicVar,
		"value.converter", "org.apache.kafka.connect.storage.StringConverter",
		"value.converter.schemas.enable", flagVar))
	if err != nil {
		t.Fatal(err)
	}
	if convCalls != 1 {
		t.Fatalf("converter checked %d times", convCalls)
	}
	noneContain(t, infos, "dir-secret-topic")
	noneContain(t, infos, "schemas-secret-flag")
	var convErr string
	for _, c := range infos.Configs {
		if c.Value != nil && c.Value.Name == "value.converter" && len(c.Value.Errors) == 1 {
			convErr = c.Value.Errors[0]
		}
		if c.Value != nil && c.Value.Name == "topic" && (c.Value.Value == nil || *c.Value.Value != topicVar) {
			t.Errorf("topic shown as %v", c.Value.Value)
		}
	}
	if want := "Invalid value " + flagVar + " for schemas.enable (topic " + topicVar + ")"; convErr != want {
		t.Fatalf("converter error %q, want %q", convErr, want)
	}
}

func TestValidateMasksPluginErrors(t *testing.T) {
	path, r := secretsFile(t)
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) { o.Resolver = r })
	f.in.validateErr = func(cfg map[string]string) error {
		return fmt.Errorf("login refused for password %s", cfg["secret"])
	}
	secretVar := "${file:" + path + ":secret}"
	_, err := f.h.ValidateConfig(ctxT(t), srcConfig("secret", secretVar))
	herderErr(t, err, nil, "login refused for password "+secretVar)
	if strings.Contains(err.Error(), cpSecret) || errors.Is(err, herder.ErrBadRequest) {
		t.Fatalf("plugin error %q (bad request: %v)", err, errors.Is(err, herder.ErrBadRequest))
	}
	// A short resolved value is replaced only where it stands alone, not
	// inside other words.
	short := filepath.Join(filepath.Dir(path), "s.properties")
	if err := os.WriteFile(short, []byte("n=on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.in.validateErr = func(cfg map[string]string) error { return errors.New("connection refused") }
	_, err = f.h.ValidateConfig(ctxT(t), srcConfig("flag", "${file:"+short+":n}"))
	herderErr(t, err, nil, "connection refused")
}

func TestSinkOffsetsUseTheResolvedGroup(t *testing.T) {
	path, r := secretsFile(t)
	gFile := filepath.Join(filepath.Dir(path), "g.properties")
	if err := os.WriteFile(gFile, []byte("g=resolved-group\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) { o.Resolver = r })
	ctx := ctxT(t)
	cfg := map[string]string{"connector.class": sinkClass, "topics": "t", "consumer.override.group.id": "${file:" + gFile + ":g}"}
	if _, _, err := f.h.PutConnectorConfig(ctx, "snk", cfg, false, herder.TargetStopped); err != nil {
		t.Fatal(err)
	}
	f.groups.offsets["resolved-group"] = map[string]map[int32]int64{"t": {0: 3}}
	got, err := f.h.ConnectorOffsets(ctx, "snk")
	if err != nil || len(got.Offsets) != 1 || got.Offsets[0].Offset["kafka_offset"] != int64(3) {
		t.Fatalf("GET offsets %+v %v", got, err)
	}
	body := &herder.ConnectorOffsets{Offsets: []herder.ConnectorOffset{
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": 1}, Offset: map[string]any{"kafka_offset": 9}},
	}}
	if _, err := f.h.AlterConnectorOffsets(ctx, "snk", body); err != nil {
		t.Fatal(err)
	}
	f.groups.mu.Lock()
	if n := len(f.groups.offsets); n != 1 || f.groups.offsets["resolved-group"]["t"][1] != 9 {
		t.Errorf("after PATCH the groups are %v", f.groups.offsets)
	}
	f.groups.mu.Unlock()
	if _, err := f.h.ResetConnectorOffsets(ctx, "snk"); err != nil {
		t.Fatal(err)
	}
	f.groups.mu.Lock()
	defer f.groups.mu.Unlock()
	if len(f.groups.offsets) != 0 {
		t.Fatalf("after DELETE the groups are %v", f.groups.offsets)
	}
}

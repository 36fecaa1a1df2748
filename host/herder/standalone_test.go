package herder_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/herder"
)

func TestCreateRunsConnectorAndTasks(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	cfg := srcConfig("secret", "${file:/etc/s.properties:pw}")
	info, created, err := f.h.PutConnectorConfig(ctx, "src", cfg, false, herder.TargetStarted)
	if err != nil {
		t.Fatal(err)
	}
	if !created || info.Type != herder.TypeSource || len(info.Tasks) != 2 {
		t.Fatalf("created=%v info=%+v", created, info)
	}
	want := maps.Clone(cfg)
	want["name"] = "src"
	got, err := f.h.ConnectorConfig(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("config %v, want exactly %v", got, want)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")

	tasks, err := f.h.TaskConfigs(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 || tasks[1].ID != (herder.TaskID{Connector: "src", Task: 1}) ||
		tasks[1].Config["task.class"] != srcTaskClass || tasks[1].Config["n"] != "1" {
		t.Fatalf("task configs %+v", tasks)
	}
	if ts := f.in.task("src-0"); ts.spec.ConnectorConfig["secret"] != "${file:/etc/s.properties:pw}" {
		t.Fatalf("task got connector config %v", ts.spec.ConnectorConfig)
	}
	st, _ := f.h.ConnectorStatus(ctx, "src")
	if st.Connector.WorkerID != "127.0.0.1:8083" || st.Type != "source" {
		t.Fatalf("status %+v", st)
	}

	_, _, err = f.h.PutConnectorConfig(ctx, "src", cfg, false, herder.TargetStarted)
	herderErr(t, err, herder.ErrAlreadyExists, "Connector src already exists")
	names, _ := f.h.Connectors(ctx)
	if !slices.Equal(names, []string{"src"}) {
		t.Fatalf("connectors %v", names)
	}
}

// task.class names the task class the plugin declared, as Kafka's Worker
// puts Connector.taskClass there, both in what is stored and shown and in
// what the task starts with; a class that declares none gets its own name.
func TestTaskConfigsNameTheTaskClass(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.h.PutConnectorConfig(ctx, "snk", map[string]string{"connector.class": sinkClass, "topics": "a"}, false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	waitStates(t, f.h, "snk", "RUNNING:RUNNING")
	for conn, want := range map[string]string{"src": srcTaskClass, "snk": sinkClass} {
		tasks, err := f.h.TaskConfigs(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) == 0 {
			t.Fatalf("%s: no task configs", conn)
		}
		for _, tc := range tasks {
			if got := tc.Config["task.class"]; got != want {
				t.Errorf("%s task %d: task.class %q, want %q", conn, tc.ID.Task, got, want)
			}
			id := fmt.Sprintf("%s-%d", conn, tc.ID.Task)
			if got := f.in.task(id).spec.TaskConfig["task.class"]; got != want {
				t.Errorf("task %s started with task.class %q, want %q", id, got, want)
			}
		}
	}
}

func TestSinkTaskConfigsGetTopics(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	_, _, err := f.h.PutConnectorConfig(ctx, "snk", map[string]string{"connector.class": sinkClass, "topics": "a,b"}, false, "")
	if err != nil {
		t.Fatal(err)
	}
	tasks, _ := f.h.TaskConfigs(ctx, "snk")
	if len(tasks) != 1 || tasks[0].Config["topics"] != "a,b" || tasks[0].Config["task.class"] != sinkClass {
		t.Fatalf("sink task configs %+v", tasks)
	}
	if _, ok := tasks[0].Config["topics.regex"]; ok {
		t.Fatalf("topics.regex added though not set: %v", tasks[0].Config)
	}
	waitStates(t, f.h, "snk", "RUNNING:RUNNING")
	topics, err := f.h.ConnectorActiveTopics(ctx, "snk")
	if err != nil || !slices.Equal(topics, []string{"a", "b"}) {
		t.Fatalf("active topics %v %v", topics, err)
	}
	if err := f.h.ResetConnectorActiveTopics(ctx, "snk"); err != nil {
		t.Fatal(err)
	}
	if topics, _ := f.h.ConnectorActiveTopics(ctx, "snk"); len(topics) != 0 {
		t.Fatalf("after reset %v", topics)
	}
}

func TestTopicTrackingDisabled(t *testing.T) {
	in := newFakeInstances()
	h, err := herder.NewStandalone(herder.StandaloneOptions{Instances: in, Offsets: newFixture(t).store, TopicTrackingDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.ConnectorActiveTopics(ctxT(t), "x")
	herderErr(t, err, herder.ErrForbidden, "Topic tracking is disabled.")
	h2, _ := herder.NewStandalone(herder.StandaloneOptions{Instances: in, Offsets: newFixture(t).store, TopicResetDisabled: true})
	herderErr(t, h2.ResetConnectorActiveTopics(ctxT(t), "x"), herder.ErrForbidden, "Topic tracking reset is disabled.")
}

func TestCreateRejectsInvalidConfig(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	_, _, err := f.h.PutConnectorConfig(ctx, "src", map[string]string{"connector.class": srcClass, "tasks.max": "0"}, false, "")
	herderErr(t, err, herder.ErrBadRequest, "Connector configuration is invalid and contains the following 2 error(s):\n")
	for _, part := range []string{
		"Invalid value 0 for configuration tasks.max: Value must be at least 1",
		`Missing required configuration "topic" which has no default value.`,
		"You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`",
	} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("message %q lacks %q", err, part)
		}
	}
	if names, _ := f.h.Connectors(ctx); len(names) != 0 {
		t.Fatalf("invalid connector was created: %v", names)
	}

	_, _, err = f.h.PutConnectorConfig(ctx, "x", map[string]string{"connector.class": "CountrSource"}, false, "")
	herderErr(t, err, nil, "Failed to find any class that implements Connector and which name matches CountrSource (did you mean CounterSource")
	var he *herder.Error
	if !errors.As(err, &he) || he.Kind != nil {
		t.Fatalf("unknown class: want a 500 herder error, got %#v", err)
	}

	_, _, err = f.h.PutConnectorConfig(ctx, "x", map[string]string{"topic": "t"}, false, "")
	herderErr(t, err, herder.ErrBadRequest, "contains no connector type")

	_, _, err = f.h.PutConnectorConfig(ctx, "x", map[string]string{"name": "y", "connector.class": srcClass}, false, "")
	herderErr(t, err, herder.ErrBadRequest, "Connector name configuration (y) doesn't match connector name in the URL (x)")
}

func validatedNames(infos *herder.ConfigInfos) []string {
	var out []string
	for _, c := range infos.Configs {
		if c.Definition != nil {
			out = append(out, c.Definition.Name)
		}
	}
	slices.Sort(out)
	return out
}

func TestValidateSourceKeySetAndGroups(t *testing.T) {
	f := newFixture(t)
	infos, err := f.h.ValidateConfig(ctxT(t), map[string]string{"connector.class": srcClass, "name": "s", "topic": "t", "secret": "hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	// Kafka's connect_rest_test.py expects exactly the framework keys plus
	// the connector's own for FileStreamSource; the same set rule here.
	// Sluice's extensions (automatic task restart, a source DLQ) are listed
	// only when the config sets them.
	want := []string{"name", "connector.class", "tasks.max", "key.converter", "value.converter", "header.converter",
		"transforms", "config.action.reload", "errors.retry.timeout", "errors.retry.delay.max.ms", "errors.tolerance",
		"errors.log.enable", "errors.log.include.messages", "predicates", "topic.creation.groups", "exactly.once.support",
		"transaction.boundary", "transaction.boundary.interval.ms", "offsets.storage.topic", "tasks.max.enforce",
		"topic", "secret"}
	slices.Sort(want)
	if got := validatedNames(infos); !slices.Equal(got, want) {
		t.Fatalf("keys\n got %v\nwant %v", got, want)
	}
	ext, err := f.h.ValidateConfig(ctxT(t), map[string]string{"connector.class": srcClass, "name": "s", "topic": "t",
		"sluice.task.restart.enable": "yes", "errors.deadletterqueue.topic.name": "dlq"})
	if err != nil {
		t.Fatal(err)
	}
	extNames := validatedNames(ext)
	for _, k := range []string{"sluice.task.restart.enable", "errors.deadletterqueue.topic.name"} {
		if !slices.Contains(extNames, k) {
			t.Fatalf("extension key %s set but not validated: %v", k, extNames)
		}
	}
	for _, k := range []string{"sluice.task.restart.max.attempts", "errors.deadletterqueue.context.headers.enable"} {
		if slices.Contains(extNames, k) {
			t.Fatalf("extension key %s listed though unset", k)
		}
	}
	if ext.ErrorCount != 1 {
		t.Fatalf("restart.enable=yes: error_count %d, want 1 (not a boolean)", ext.ErrorCount)
	}
	if infos.ErrorCount != 0 || infos.Name != srcClass {
		t.Fatalf("error_count %d name %s", infos.ErrorCount, infos.Name)
	}
	wantGroups := []string{"Common", "Transforms", "Predicates", "Error Handling", "Topic Creation", "Exactly Once Support", "offsets.topic"}
	if !slices.Equal(infos.Groups, wantGroups) {
		t.Fatalf("groups %v want %v", infos.Groups, wantGroups)
	}
	for _, c := range infos.Configs {
		switch c.Definition.Name {
		case "secret":
			if c.Value == nil || c.Value.Value == nil || *c.Value.Value != "[hidden]" || c.Definition.Type != "PASSWORD" {
				t.Fatalf("secret shown as %+v", c.Value)
			}
		case "tasks.max":
			if c.Definition.DefaultValue == nil || *c.Definition.DefaultValue != "1" || c.Definition.Required || *c.Definition.Group != "Common" {
				t.Fatalf("tasks.max definition %+v", c.Definition)
			}
		case "name":
			if !c.Definition.Required || c.Definition.DefaultValue != nil || c.Definition.Importance != "HIGH" {
				t.Fatalf("name definition %+v", c.Definition)
			}
		}
	}
}

func TestValidateSinkRules(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	errsOf := func(infos *herder.ConfigInfos, key string) []string {
		for _, c := range infos.Configs {
			if c.Value != nil && c.Value.Name == key {
				return c.Value.Errors
			}
		}
		return nil
	}
	infos, err := f.h.ValidateConfig(ctx, map[string]string{"connector.class": sinkClass, "name": "k"})
	if err != nil {
		t.Fatal(err)
	}
	if infos.ErrorCount != 2 || !slices.Equal(errsOf(infos, "topics"), []string{"Must configure one of topics or topics.regex"}) {
		t.Fatalf("neither topics nor regex: %d errors, topics %v", infos.ErrorCount, errsOf(infos, "topics"))
	}
	if !slices.Equal(infos.Groups, []string{"Common", "Transforms", "Predicates", "Error Handling", "Output"}) {
		t.Fatalf("sink groups %v", infos.Groups)
	}
	infos, _ = f.h.ValidateConfig(ctx, map[string]string{"connector.class": sinkClass, "name": "k", "topics": "a, dlq,,a", "topics.regex": "d.*",
		"errors.deadletterqueue.topic.name": "dlq", "value.converter": "Nope", "producer.override.acks": "1"})
	if got := errsOf(infos, "topics"); len(got) != 2 || got[1] != "The DLQ topic 'dlq' may not be included in the list of topics ('topics=[a, dlq]') consumed by the connector" {
		t.Fatalf("topics errors %q", got)
	}
	if got := errsOf(infos, "topics.regex"); len(got) != 2 || got[1] != "The DLQ topic 'dlq' may not be matched by the regex for the topics ('topics.regex=d.*') consumed by the connector" {
		t.Fatalf("regex errors %q", got)
	}
	if got := errsOf(infos, "value.converter"); len(got) != 1 || !strings.Contains(got[0], "Class Nope could not be found.") {
		t.Fatalf("converter errors %q", got)
	}
	if infos.ErrorCount != 5 {
		t.Fatalf("error_count %d, want 5", infos.ErrorCount)
	}
	// errors.tolerance is case-sensitive, as Kafka's ValidString.
	infos, _ = f.h.ValidateConfig(ctx, map[string]string{"connector.class": sinkClass, "name": "k", "topics": "a", "errors.tolerance": "ALL"})
	if got := errsOf(infos, "errors.tolerance"); infos.ErrorCount != 1 || !slices.Equal(got, []string{"Invalid value ALL for configuration errors.tolerance: String must be one of: none, all"}) {
		t.Fatalf("errors.tolerance=ALL: %d errors, %q", infos.ErrorCount, got)
	}
}

func TestValidateTransformAliases(t *testing.T) {
	f := newFixture(t)
	infos, err := f.h.ValidateConfig(ctxT(t), srcConfig("name", "s", "transforms", "a", "transforms.a.type", "org.example.Nope", "transforms.a.predicate", "p"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range infos.Configs {
		if c.Definition != nil && strings.HasPrefix(c.Definition.Name, "transforms.a.") {
			names = append(names, c.Definition.Name)
			if *c.Definition.Group != "Transforms: a" {
				t.Fatalf("group of %s: %s", c.Definition.Name, *c.Definition.Group)
			}
		}
	}
	if !slices.Equal(names, []string{"transforms.a.type", "transforms.a.negate", "transforms.a.predicate"}) {
		t.Fatalf("transform keys %v", names)
	}
	if infos.ErrorCount != 2 || !slices.Contains(infos.Groups, "Transforms: a") {
		t.Fatalf("error_count %d groups %v", infos.ErrorCount, infos.Groups)
	}
}

func TestPauseResumeStop(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, ""); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	if err := f.h.PauseConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "PAUSED:PAUSED,PAUSED")
	if err := f.h.ResumeConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	if n := f.in.count(f.in.taskStarts, "src-0"); n != 1 {
		t.Fatalf("pause/resume restarted the task: %d starts", n)
	}
	if err := f.h.StopConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "STOPPED:")
	if tasks, _ := f.h.TaskConfigs(ctx, "src"); len(tasks) != 0 {
		t.Fatalf("stopped connector keeps task configs %v", tasks)
	}
	if f.in.count(f.in.stops, "src") != 1 {
		t.Fatalf("connector not stopped")
	}
	// STOPPED -> PAUSED starts it, paused, without tasks (as Kafka
	// Connect's testPauseStopResume has it); resumed, it gets them.
	if err := f.h.PauseConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "PAUSED:")
	if err := f.h.ResumeConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	if n := f.in.count(f.in.starts, "src"); n != 2 {
		t.Fatalf("connector starts %d, want 2", n)
	}
	herderErr(t, f.h.PauseConnector(ctx, "nope"), herder.ErrNotFound, "Unknown connector nope")
}

func TestInitialStates(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "p", srcConfig(), false, herder.TargetPaused); err != nil {
		t.Fatal(err)
	}
	// As in Kafka Connect: created PAUSED, no task configs until resumed.
	waitStates(t, f.h, "p", "PAUSED:")
	if tcs, err := f.h.TaskConfigs(ctx, "p"); err != nil || len(tcs) != 0 {
		t.Fatalf("task configs of a connector created PAUSED: %v %v", tcs, err)
	}
	if err := f.h.ResumeConnector(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "p", "RUNNING:RUNNING,RUNNING")
	if _, _, err := f.h.PutConnectorConfig(ctx, "s", srcConfig(), false, herder.TargetStopped); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "s", "STOPPED:")
	if f.in.count(f.in.starts, "s") != 0 {
		t.Fatal("a STOPPED connector was started")
	}
	_, _, err := f.h.PutConnectorConfig(ctx, "r", srcConfig(), false, "RUNNING")
	if err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "r", "RUNNING:RUNNING,RUNNING")
}

func TestFailedTaskStaysFailedUntilRestarted(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, ""); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	f.in.task("src-1").fail <- errors.New("plugin process exited unexpectedly (signal: killed)")
	waitStates(t, f.h, "src", "RUNNING:RUNNING,FAILED")
	ts, err := f.h.TaskStatus(ctx, herder.TaskID{Connector: "src", Task: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ts.Trace, "signal: killed") || !strings.Contains(ts.Trace, "task trace line") {
		t.Fatalf("trace %q", ts.Trace)
	}
	// A pause and resume does not clear FAILED.
	_ = f.h.PauseConnector(ctx, "src")
	_ = f.h.ResumeConnector(ctx, "src")
	waitStates(t, f.h, "src", "RUNNING:RUNNING,FAILED")

	if err := f.h.RestartTask(ctx, herder.TaskID{Connector: "src", Task: 1}); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	if f.in.count(f.in.taskStarts, "src-1") != 2 || f.in.count(f.in.taskStarts, "src-0") != 1 {
		t.Fatalf("task starts %v", f.in.taskStarts)
	}
	herderErr(t, f.h.RestartTask(ctx, herder.TaskID{Connector: "src", Task: 7}), herder.ErrNotFound, "Unknown task: src-7")
	herderErr(t, f.h.RestartTask(ctx, herder.TaskID{Connector: "x", Task: 0}), herder.ErrNotFound, "Unknown connector: x")
	_, err = f.h.TaskStatus(ctx, herder.TaskID{Connector: "src", Task: 9})
	herderErr(t, err, herder.ErrNotFound, "No status found for task src-9")
}

func TestRestartPlans(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, ""); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")

	// onlyFailed with nothing failed: a no-op, plan unchanged.
	plan, err := f.h.RestartConnector(ctx, "src", true, true)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Connector.State != "RUNNING" || plan.Tasks[0].State != "RUNNING" || plan.Tasks[1].State != "RUNNING" {
		t.Fatalf("no-op plan %+v", plan)
	}
	if f.in.count(f.in.starts, "src") != 1 || f.in.count(f.in.taskStarts, "src-0") != 1 {
		t.Fatal("no-op restart restarted something")
	}

	// A failed task: onlyFailed+includeTasks restarts that task alone.
	f.in.task("src-0").fail <- errors.New("boom")
	waitStates(t, f.h, "src", "RUNNING:FAILED,RUNNING")
	plan, err = f.h.RestartConnector(ctx, "src", true, true)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Connector.State != "RUNNING" || plan.Tasks[0].State != "RESTARTING" || plan.Tasks[1].State != "RUNNING" {
		t.Fatalf("plan %+v", plan)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	if f.in.count(f.in.starts, "src") != 1 || f.in.count(f.in.taskStarts, "src-0") != 2 || f.in.count(f.in.taskStarts, "src-1") != 1 {
		t.Fatalf("starts conn=%d tasks=%v", f.in.count(f.in.starts, "src"), f.in.taskStarts)
	}

	// includeTasks alone: connector and every task, once each.
	plan, err = f.h.RestartConnector(ctx, "src", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Connector.State != "RESTARTING" || plan.Tasks[0].State != "RESTARTING" || plan.Tasks[1].State != "RESTARTING" {
		t.Fatalf("plan %+v", plan)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	if f.in.count(f.in.starts, "src") != 2 || f.in.count(f.in.taskStarts, "src-0") != 3 || f.in.count(f.in.taskStarts, "src-1") != 2 {
		t.Fatalf("starts conn=%d tasks=%v", f.in.count(f.in.starts, "src"), f.in.taskStarts)
	}

	// Legacy: the connector only, nil plan.
	plan, err = f.h.RestartConnector(ctx, "src", false, false)
	if err != nil || plan != nil {
		t.Fatalf("legacy restart: %v %v", plan, err)
	}
	if f.in.count(f.in.starts, "src") != 3 || f.in.count(f.in.taskStarts, "src-0") != 3 {
		t.Fatalf("legacy restart: starts conn=%d tasks=%v", f.in.count(f.in.starts, "src"), f.in.taskStarts)
	}
	_, err = f.h.RestartConnector(ctx, "nope", true, false)
	herderErr(t, err, herder.ErrNotFound, "Unknown connector: nope")
}

func TestConnectorCrashRaiseErrorAndReconfigure(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, ""); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")

	// The connector asks for new task configs: changed ones replace the tasks.
	f.in.mu.Lock()
	f.in.extra["src"] = map[string]string{"files": "a,b"}
	f.in.numTasks = func(string, int) int { return 1 }
	f.in.mu.Unlock()
	f.in.conn("src").cb.RequestTaskReconfiguration()
	waitStates(t, f.h, "src", "RUNNING:RUNNING")
	waitFor(t, "new task config", func() bool {
		tasks, _ := f.h.TaskConfigs(ctx, "src")
		return len(tasks) == 1 && tasks[0].Config["files"] == "a,b"
	})
	// Unchanged configs: nothing restarts.
	before := f.in.count(f.in.taskStarts, "src-0")
	f.in.conn("src").cb.RequestTaskReconfiguration()
	time.Sleep(50 * time.Millisecond)
	if got := f.in.count(f.in.taskStarts, "src-0"); got != before {
		t.Fatalf("unchanged task configs restarted tasks: %d -> %d", before, got)
	}

	// A crash of the connector process: FAILED with its trace; tasks run on.
	f.in.conn("src").crash()
	waitStates(t, f.h, "src", "FAILED:RUNNING")
	st, _ := f.h.ConnectorStatus(ctx, "src")
	if !strings.Contains(st.Connector.Trace, "signal: killed") || !strings.Contains(st.Connector.Trace, "crash trace") {
		t.Fatalf("trace %q", st.Connector.Trace)
	}
	if _, err := f.h.RestartConnector(ctx, "src", false, true); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING")

	// RaiseError: FAILED with the message, instance stopped.
	stops := f.in.count(f.in.stops, "src")
	f.in.conn("src").cb.RaiseError("cannot reach the database", "at db.go:12")
	waitStates(t, f.h, "src", "FAILED:RUNNING")
	waitFor(t, "failed connector stopped", func() bool { return f.in.count(f.in.stops, "src") == stops+1 })
	st, _ = f.h.ConnectorStatus(ctx, "src")
	if st.Connector.Trace != "cannot reach the database\nat db.go:12" {
		t.Fatalf("trace %q", st.Connector.Trace)
	}
}

func TestTasksMaxEnforced(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	f.in.numTasks = func(string, int) int { return 3 }
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, ""); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "FAILED:")
	st, _ := f.h.ConnectorStatus(ctx, "src")
	if !strings.Contains(st.Connector.Trace, "has generated 3 tasks, which is greater than 2") {
		t.Fatalf("trace %q", st.Connector.Trace)
	}
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig("tasks.max.enforce", "false"), true, ""); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING,RUNNING")
}

func TestUpdateRestartsConnectorAndTasks(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, ""); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	old := f.in.task("src-0")
	v := "other"
	info, err := f.h.PatchConnectorConfig(ctx, "src", map[string]*string{"topic": &v, "tasks.max": nil})
	if err != nil {
		t.Fatal(err)
	}
	if info.Config["topic"] != "other" || len(info.Tasks) != 1 {
		t.Fatalf("patched info %+v", info)
	}
	if _, ok := info.Config["tasks.max"]; ok {
		t.Fatal("null in PATCH did not remove the key")
	}
	select {
	case <-old.stop:
	default:
		t.Fatal("old task not stopped")
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING")
	if f.in.task("src-0").spec.ConnectorConfig["topic"] != "other" {
		t.Fatal("new task does not see the new config")
	}
	_, created, err := f.h.PutConnectorConfig(ctx, "src", srcConfig("topic", "third"), true, "")
	if err != nil || created {
		t.Fatalf("replace: created=%v err=%v", created, err)
	}
	if f.in.count(f.in.starts, "src") != 3 {
		t.Fatalf("connector starts %d", f.in.count(f.in.starts, "src"))
	}
	_, err = f.h.PatchConnectorConfig(ctx, "nope", nil)
	herderErr(t, err, herder.ErrNotFound, "Connector nope not found")
}

// TestUpdateKeepsTasksWhenNothingChanged: as Kafka Connect's standalone
// herder, a PUT restarts the connector but keeps its tasks, failed ones
// included, when neither the connector's config nor its task configs
// changed; a change of the connector's config alone (a converter, which
// reaches tasks through it, not through their task configs: KAFKA-9228)
// restarts them.
func TestUpdateKeepsTasksWhenNothingChanged(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, ""); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	f.in.task("src-1").fail <- errors.New("boom")
	waitStates(t, f.h, "src", "RUNNING:RUNNING,FAILED")
	kept := f.in.task("src-0")

	if _, created, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), true, ""); err != nil || created {
		t.Fatalf("same config: created=%v err=%v", created, err)
	}
	if n := f.in.count(f.in.starts, "src"); n != 2 {
		t.Fatalf("connector starts %d, want 2 (PUT restarts the connector)", n)
	}
	select {
	case <-kept.stop:
		t.Fatal("a PUT of the same config stopped a running task")
	default:
	}
	if a, b := f.in.count(f.in.taskStarts, "src-0"), f.in.count(f.in.taskStarts, "src-1"); a != 1 || b != 1 {
		t.Fatalf("task starts %d %d, want 1 1", a, b)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,FAILED")

	cfg := srcConfig("value.converter", "org.apache.kafka.connect.storage.StringConverter")
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", cfg, true, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-kept.stop:
	default:
		t.Fatal("a changed connector config did not stop the tasks")
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	if a, b := f.in.count(f.in.taskStarts, "src-0"), f.in.count(f.in.taskStarts, "src-1"); a != 2 || b != 2 {
		t.Fatalf("task starts %d %d, want 2 2", a, b)
	}
	if got := f.in.task("src-0").spec.ConnectorConfig["value.converter"]; got != cfg["value.converter"] {
		t.Fatalf("restarted task sees value.converter %q", got)
	}
}

func TestDelete(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, ""); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
	t0 := f.in.task("src-0")
	if err := f.h.DeleteConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-t0.stop:
	default:
		t.Fatal("task not stopped")
	}
	if f.in.count(f.in.stops, "src") != 1 {
		t.Fatal("connector not stopped")
	}
	_, err := f.h.ConnectorStatus(ctx, "src")
	herderErr(t, err, herder.ErrNotFound, "No status found for connector src")
	_, err = f.h.ConnectorInfo(ctx, "src")
	herderErr(t, err, herder.ErrNotFound, "Connector src not found")
	herderErr(t, f.h.DeleteConnector(ctx, "src"), herder.ErrNotFound, "Connector src not found")
	// The name can be used again.
	if _, created, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, ""); err != nil || !created {
		t.Fatalf("recreate: %v %v", created, err)
	}
}

// A plugin hanging in validate or start holds up only what concerns it.
func TestHangingPluginDoesNotWedgeHerder(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	validated := make(chan error, 1)
	go func() {
		_, err := f.h.ValidateConfig(short, map[string]string{"connector.class": hangClass, "name": "h"})
		validated <- err
	}()
	// Meanwhile another connector is created and runs.
	if _, _, err := f.h.PutConnectorConfig(ctx, "ok", srcConfig(), false, ""); err != nil {
		t.Fatal(err)
	}
	if err := <-validated; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging validate: %v", err)
	}
	if s := f.h.Stage(); !strings.Contains(s, "performing multi-property validation for the connector") && !strings.Contains(s, "The last operation") {
		t.Fatalf("stage %q", s)
	}

	// A connector whose start hangs: the create request times out, the
	// herder goes on; its status answers meanwhile.
	short2, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	_, _, err := f.h.PutConnectorConfig(short2, "hang-1", srcConfig(), false, "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging create: %v", err)
	}
	if s := f.h.Stage(); !strings.Contains(s, "The worker is currently starting the connector hang-1, which began at ") {
		t.Fatalf("stage %q", s)
	}
	if got := states(t, f.h, "hang-1"); got != "UNASSIGNED:" {
		t.Fatalf("hung connector status %s", got)
	}
	if _, _, err := f.h.PutConnectorConfig(ctx, "ok2", srcConfig(), false, ""); err != nil {
		t.Fatal(err)
	}
	if err := f.h.PauseConnector(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	short3, cancel3 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel3()
	if err := f.h.PauseConnector(short3, "hang-1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pause of the hung connector: %v", err)
	}
}

func TestSourceOffsets(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, ""); err != nil {
		t.Fatal(err)
	}
	body := &herder.ConnectorOffsets{Offsets: []herder.ConnectorOffset{{Partition: map[string]any{"file": "a"}, Offset: map[string]any{"pos": 10}}}}
	_, err := f.h.AlterConnectorOffsets(ctx, "src", body)
	herderErr(t, err, herder.ErrBadRequest, "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/src/stop' endpoint")
	if err := f.h.StopConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	_, err = f.h.AlterConnectorOffsets(ctx, "src", &herder.ConnectorOffsets{})
	herderErr(t, err, herder.ErrBadRequest, "Partitions / offsets need to be provided for an alter offsets request")
	msg, err := f.h.AlterConnectorOffsets(ctx, "src", body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(msg, "The Connect framework-managed offsets for this connector have been altered successfully.") {
		t.Fatalf("message %q", msg)
	}
	got, err := f.h.ConnectorOffsets(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Offsets) != 1 || got.Offsets[0].Partition["file"] != "a" || got.Offsets[0].Offset["pos"].(interface{ String() string }).String() != "10" {
		t.Fatalf("offsets %+v", got)
	}
	stored, _ := f.store.All(ctx, "src")
	if len(stored) != 1 || string(stored[0].Partition) != `{"file":"a"}` || string(stored[0].Offset) != `{"pos":10}` {
		t.Fatalf("stored %q", stored)
	}
	if len(f.in.altered) != 1 {
		t.Fatalf("connector hook not asked: %v", f.in.altered)
	}
	msg, err = f.h.ResetConnectorOffsets(ctx, "src")
	if err != nil || !strings.Contains(msg, "have been reset successfully") {
		t.Fatalf("reset: %q %v", msg, err)
	}
	if got, _ := f.h.ConnectorOffsets(ctx, "src"); len(got.Offsets) != 0 {
		t.Fatalf("offsets after reset %+v", got)
	}
}

func TestSinkOffsets(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "snk", map[string]string{"connector.class": sinkClass, "topics": "t"}, false, herder.TargetStopped); err != nil {
		t.Fatal(err)
	}
	_, err := f.h.AlterConnectorOffsets(ctx, "snk", &herder.ConnectorOffsets{Offsets: []herder.ConnectorOffset{{Partition: map[string]any{"kafka_topic": "t"}}}})
	herderErr(t, err, herder.ErrBadRequest, "must contain the keys 'kafka_topic' and 'kafka_partition'")
	body := &herder.ConnectorOffsets{Offsets: []herder.ConnectorOffset{
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": 0}, Offset: map[string]any{"kafka_offset": 5}},
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": 1}, Offset: map[string]any{"kafka_offset": "7"}},
	}}
	if _, err := f.h.AlterConnectorOffsets(ctx, "snk", body); err != nil {
		t.Fatal(err)
	}
	got, err := f.h.ConnectorOffsets(ctx, "snk")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Offsets) != 2 || got.Offsets[1].Partition["kafka_partition"] != int32(1) || got.Offsets[1].Offset["kafka_offset"] != int64(7) {
		t.Fatalf("sink offsets %+v", got.Offsets)
	}
	f.groups.members = true
	_, err = f.h.ResetConnectorOffsets(ctx, "snk")
	herderErr(t, err, nil, "zombie sink tasks")
	f.groups.members = false
	if _, err := f.h.ResetConnectorOffsets(ctx, "snk"); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.h.ConnectorOffsets(ctx, "snk"); len(got.Offsets) != 0 {
		t.Fatalf("after reset %+v", got.Offsets)
	}
}

func TestHealthAndPlugins(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	herderErr(t, f.h.Health(ctx), herder.ErrStarting, "Worker is still starting up.")
	f.h.MarkReady()
	if err := f.h.Health(ctx); err != nil {
		t.Fatal(err)
	}
	ps, _ := f.h.Plugins(ctx, true)
	if len(ps) != 3 || ps[0].Class != sinkClass || ps[0].Type != "sink" || ps[1].Class != srcClass || ps[1].Version != "1.0" || ps[2].Class != hangClass || ps[2].Version != "" {
		t.Fatalf("plugins %+v", ps)
	}
	keys, err := f.h.PluginConfig(ctx, "LogSink")
	if err != nil {
		t.Fatal(err)
	}
	if keys[0].Name != "prefix" || keys[1].Name != "name" || !slices.ContainsFunc(keys, func(k herder.ConfigKeyInfo) bool { return k.Name == "topics.regex" }) {
		t.Fatalf("plugin config %+v", keys[:2])
	}
	_, err = f.h.PluginConfig(ctx, "Nope")
	herderErr(t, err, herder.ErrNotFound, "Unknown plugin Nope.")
}

func TestConnectorStartFailureStillCreates(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t)
	f.in.startErr = errors.New("launch plugin: exec format error")
	_, created, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, "")
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	st, _ := f.h.ConnectorStatus(ctx, "src")
	if st.Connector.State != "FAILED" || !strings.Contains(st.Connector.Trace, "exec format error") || len(st.Tasks) != 0 {
		t.Fatalf("status %+v", st)
	}
	f.in.mu.Lock()
	f.in.startErr = nil
	f.in.mu.Unlock()
	if _, err := f.h.RestartConnector(ctx, "src", false, false); err != nil {
		t.Fatal(err)
	}
	waitStates(t, f.h, "src", "RUNNING:RUNNING,RUNNING")
}

// With topic.creation.enable (the worker's default), a source connector's
// topic.creation.* settings are validated when it is created, each problem
// on its key, rather than failing its tasks at their first record; with it
// off, they are not looked at.
func TestValidateSourceTopicCreation(t *testing.T) {
	ctx := ctxT(t)
	errsOf := func(infos *herder.ConfigInfos, key string) []string {
		for _, c := range infos.Configs {
			if c.Value != nil && c.Value.Name == key {
				return c.Value.Errors
			}
		}
		return nil
	}
	bad := srcConfig("name", "s", "topic.creation.default.partitions", "0",
		"topic.creation.groups", "compacted", "topic.creation.compacted.include", "orders-(",
		"topic.creation.compacted.replication.factor", "x")
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) { o.TopicCreation = true })
	infos, err := f.h.ValidateConfig(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"topic.creation.default.replication.factor":   `missing required configuration "topic.creation.default.replication.factor"`,
		"topic.creation.default.partitions":           "invalid value 0 for configuration topic.creation.default.partitions",
		"topic.creation.compacted.include":            "invalid value for configuration topic.creation.compacted.include",
		"topic.creation.compacted.replication.factor": "invalid value x for configuration topic.creation.compacted.replication.factor",
	}
	for key, msg := range want {
		if got := errsOf(infos, key); len(got) != 1 || !strings.Contains(got[0], msg) {
			t.Errorf("%s: errors %q, want one containing %q", key, got, msg)
		}
	}
	if infos.ErrorCount != len(want) {
		t.Errorf("error_count %d, want %d", infos.ErrorCount, len(want))
	}
	if _, _, err := f.h.PutConnectorConfig(ctx, "s", bad, false, ""); err == nil || !strings.Contains(err.Error(), "topic.creation.default.replication.factor") {
		t.Fatalf("create with bad topic creation settings: %v", err)
	}

	good := srcConfig("name", "s", "topic.creation.default.partitions", "3", "topic.creation.default.replication.factor", "-1")
	if infos, err := f.h.ValidateConfig(ctx, good); err != nil || infos.ErrorCount != 0 {
		t.Fatalf("good topic creation settings: %v, %+v", err, infos)
	}

	off := newFixture(t)
	if infos, err := off.h.ValidateConfig(ctx, bad); err != nil || infos.ErrorCount != 0 {
		t.Fatalf("topic.creation.enable=false: %v, %d errors", err, infos.ErrorCount)
	}
}

// A topic creation group named twice and a header converter that does not
// exist are errors on their keys, in Kafka Connect's words.
func TestValidateDuplicateGroupsAndHeaderConverter(t *testing.T) {
	ctx := ctxT(t)
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) { o.TopicCreation = true })
	infos, err := f.h.ValidateConfig(ctx, srcConfig("name", "s", "topic.creation.default.partitions", "1",
		"topic.creation.default.replication.factor", "1", "topic.creation.groups", "a, b, a",
		"topic.creation.a.include", "x.*", "topic.creation.b.include", "y.*",
		"header.converter", "com.example.NoSuchHeaderConverter"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, c := range infos.Configs {
		if c.Value != nil && len(c.Value.Errors) > 0 {
			got[c.Value.Name] = c.Value.Errors
		}
	}
	if len(got) != 2 || infos.ErrorCount != 2 ||
		!slices.Equal(got["topic.creation.groups"], []string{"Invalid value [a, b, a] for configuration topic.creation.groups: Duplicate alias provided."}) ||
		len(got["header.converter"]) != 1 || !strings.Contains(got["header.converter"][0], "Class com.example.NoSuchHeaderConverter could not be found.") {
		t.Fatalf("error_count %d, errors %q", infos.ErrorCount, got)
	}
}

package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/conformance"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// The test binary doubles as the plugin under test: with modeEnv set it
// serves a source and a sink that break the contract in the named way.
const (
	modeEnv  = "SLUICE_CONFORMANCE_TEST_PLUGIN"
	innerEnv = "SLUICE_CONFORMANCE_TEST_INNER"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		servePlugin(mode)
		if mode == "exit-nonzero" {
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func servePlugin(mode string) {
	pluginsdk.Serve(
		pluginsdk.Class{Name: "test.Source", New: func() pluginsdk.Connector { return &source{connector{mode}} }},
		pluginsdk.Class{Name: "test.Sink", New: func() pluginsdk.Connector { return &sink{connector{mode}} }},
	)
}

func def(mode string) *config.Def {
	d := config.NewDef()
	if mode != "validate-accepts-anything" {
		d.Define(config.Key{Name: "topic", Type: config.String, Required: true, Validator: config.NonEmptyString()})
	}
	return d
}

type connector struct{ mode string }

func (c *connector) Version() string     { return "1.0.0" }
func (c *connector) Config() *config.Def { return def(c.mode) }
func (c *connector) Start(context.Context, pluginsdk.ConnectorContext, map[string]string) error {
	return nil
}
func (c *connector) TaskConfigs(_ context.Context, n int) ([]map[string]string, error) {
	if c.mode == "too-many-tasks" {
		n++
	}
	return make([]map[string]string, n), nil
}
func (c *connector) Stop(context.Context) error { return nil }

type source struct{ connector }

func (s *source) NewTask() pluginsdk.SourceTask { return &sourceTask{mode: s.mode} }

type sourceTask struct {
	mode    string
	next    int64
	emitted int // per process, so a resumed task has records to give
}

func (t *sourceTask) Start(ctx context.Context, tc pluginsdk.SourceTaskContext, _ map[string]string) error {
	if t.mode == "ignores-offsets" {
		return nil
	}
	off, err := tc.Offset(ctx, map[string]any{"p": int64(0)})
	if seq, ok := off["seq"].(int64); ok {
		t.next = seq + 1
	}
	return err
}

func (t *sourceTask) Poll(ctx context.Context) ([]*data.SourceRecord, error) {
	if t.emitted >= 20 {
		<-ctx.Done()
		return nil, nil
	}
	r := &data.SourceRecord{
		Record:          data.Record{Topic: "t", Partition: data.NoPartition, ValueSchema: data.Int64Schema, Value: t.next},
		SourcePartition: map[string]any{"p": int64(0)},
		SourceOffset:    map[string]any{"seq": t.next},
	}
	t.next++
	t.emitted++
	return []*data.SourceRecord{r}, nil
}

func (t *sourceTask) Stop(context.Context) error { return nil }

type sink struct{ connector }

func (s *sink) NewTask() pluginsdk.SinkTask { return &sinkTask{mode: s.mode} }

type sinkTask struct{ mode string }

func (t *sinkTask) Start(context.Context, pluginsdk.SinkTaskContext, map[string]string) error {
	return nil
}
func (t *sinkTask) Put(context.Context, []*data.SinkRecord) error { return nil }
func (t *sinkTask) Stop(context.Context) error                    { return nil }

func (t *sinkTask) PreCommit(_ context.Context, offsets map[data.TopicPartition]int64) (map[data.TopicPartition]int64, error) {
	if t.mode == "commits-too-far" {
		for tp := range offsets {
			offsets[tp] += 10
		}
	}
	return offsets, nil
}

// TestInner runs the suite against this binary as a plugin; TestSuite
// starts it in a child process and reads its verdict.
func TestInner(t *testing.T) {
	mode := os.Getenv(innerEnv)
	if mode == "" {
		t.Skip("run by TestSuite")
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	valid := map[string]string{"topic": "t"}
	conformance.Run(t, bin, conformance.Options{
		Env:         []string{modeEnv + "=" + mode},
		PollTimeout: 5 * time.Second,
		Classes: map[string]conformance.ClassOptions{
			"test.Source": {ValidConfig: valid, InvalidConfig: map[string]string{"topic": ""}, InvalidKeys: []string{"topic"}, SourceRecords: 10, Resume: true},
			"test.Sink":   {ValidConfig: valid},
		},
	})
}

// TestSuite proves the suite passes a good plugin and fails each broken one
// in the check that names the breach.
func TestSuite(t *testing.T) {
	for mode, wantFailed := range map[string][]string{
		"good":                      nil,
		"validate-accepts-anything": {"test.Source/validate/invalid"},
		"too-many-tasks":            {"test.Source/connector/task-configs-1", "test.Sink/connector/task-configs-3"},
		"ignores-offsets":           {"test.Source/source-resume"},
		"commits-too-far":           {"test.Sink/sink-task/pre-commit"},
		"exit-nonzero":              {"describe/exit", "test.Source/connector/exit", "test.Sink/sink-task/exit"},
	} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestInner$", "-test.v")
			cmd.Env = append(os.Environ(), innerEnv+"="+mode)
			out, err := cmd.CombinedOutput()
			if wantFailed == nil {
				if err != nil {
					t.Fatalf("the suite failed a conforming plugin: %v\n%s", err, out)
				}
				return
			}
			if err == nil {
				t.Fatalf("the suite passed a plugin that breaks the contract (%s):\n%s", mode, out)
			}
			for _, name := range wantFailed {
				if !strings.Contains(string(out), "--- FAIL: TestInner/"+name+" ") {
					t.Errorf("the suite did not fail check %s for a plugin that %s:\n%s", name, mode, out)
				}
			}
		})
	}
}

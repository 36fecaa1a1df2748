package main

import (
	"context"
	"maps"

	"github.com/hashicorp/go-hclog"

	"github.com/sluice-io/sluice/plugins/internal/version"
	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

const logEveryKey = "log.every"

func noopDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: logEveryKey, Type: config.Long, Default: int64(0), Importance: config.Low,
			Validator: config.AtLeast(int64(0)),
			Doc:       "Log the running count every time it passes a multiple of this many records. 0: log only when the task stops."})
}

// NoopSinkConnector accepts records and drops them.
type NoopSinkConnector struct {
	props map[string]string
}

var _ pluginsdk.SinkConnector = (*NoopSinkConnector)(nil)
var _ pluginsdk.RecordBorrower = (*NoopSinkTask)(nil)

// Version is Sluice's version.
func (c *NoopSinkConnector) Version() string { return version.Version }

// Config declares log.every.
func (c *NoopSinkConnector) Config() *config.Def { return noopDef() }

// Start checks the configuration.
func (c *NoopSinkConnector) Start(_ context.Context, _ pluginsdk.ConnectorContext, props map[string]string) error {
	if _, err := noopDef().Parse(props); err != nil {
		return err
	}
	c.props = maps.Clone(props)
	return nil
}

// TaskConfigs runs maxTasks identical tasks.
func (c *NoopSinkConnector) TaskConfigs(_ context.Context, maxTasks int) ([]map[string]string, error) {
	out := make([]map[string]string, max(maxTasks, 1))
	for i := range out {
		out[i] = maps.Clone(c.props)
	}
	return out, nil
}

// Stop has nothing to release.
func (c *NoopSinkConnector) Stop(context.Context) error { return nil }

// NewTask returns a counting task.
func (c *NoopSinkConnector) NewTask() pluginsdk.SinkTask { return &NoopSinkTask{} }

// NoopSinkTask counts what it is put.
type NoopSinkTask struct {
	logEvery int64
	nextLog  int64
	count    int64
	// puts counts the Put calls, empty ones included: with count, the
	// batch size the worker delivered (a benchmark's figure).
	puts int64
	log  hclog.Logger
}

var (
	_ pluginsdk.SinkTask     = (*NoopSinkTask)(nil)
	_ pluginsdk.PreCommitter = (*NoopSinkTask)(nil)
)

// Start reads log.every.
func (t *NoopSinkTask) Start(_ context.Context, _ pluginsdk.SinkTaskContext, props map[string]string) error {
	cfg, err := noopDef().Parse(props)
	if err != nil {
		return err
	}
	t.logEvery = cfg.Long(logEveryKey)
	t.nextLog = t.logEvery
	t.log = pluginsdk.Logger()
	return nil
}

// Put counts recs.
func (t *NoopSinkTask) Put(_ context.Context, recs []*data.SinkRecord) error {
	t.count += int64(len(recs))
	t.puts++
	if t.logEvery > 0 && t.count >= t.nextLog {
		t.log.Info("noop sink received records", "records", t.count)
		t.nextLog = (t.count/t.logEvery + 1) * t.logEvery
	}
	return nil
}

// BorrowsRecords: Put keeps nothing, so the SDK need not copy the batch
// for it.
func (t *NoopSinkTask) BorrowsRecords() bool { return true }

// Count is how many records the task was put.
func (t *NoopSinkTask) Count() int64 { return t.count }

// PreCommit lets the worker commit everything delivered: nothing is kept.
func (t *NoopSinkTask) PreCommit(_ context.Context, offsets map[data.TopicPartition]int64) (map[data.TopicPartition]int64, error) {
	return offsets, nil
}

// Stop logs the counts.
func (t *NoopSinkTask) Stop(context.Context) error {
	if t.log != nil {
		t.log.Info("noop sink stopped", "records", t.count, "puts", t.puts)
	}
	return nil
}

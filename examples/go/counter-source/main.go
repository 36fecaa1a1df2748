// Command counter-source is an example source connector: each task counts
// upwards and emits {"task": n, "seq": i} structs to a topic, recording
// {"task": n} / {"seq": i} as its source partition and offset, so a restarted
// task carries on after the last offset the worker stored.
//
// It returns one record per Poll on purpose: the SDK gathers successive polls
// into one batch for the worker, so simple tasks stay simple.
package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

const version = "0.1.0"

// Settings.
const (
	topicKey      = "topic"
	maxRecordsKey = "max.records"
	intervalKey   = "interval.ms"
	// taskIndexKey is set by TaskConfigs, not by users.
	taskIndexKey = "task.index"
)

func configDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: topicKey, Type: config.String, Required: true, Importance: config.High,
			Validator: config.NonEmptyString(), Doc: "Topic the records are written to."}).
		Define(config.Key{Name: maxRecordsKey, Type: config.Long, Default: int64(-1), Importance: config.Medium,
			Validator: config.AtLeast(int64(-1)), Doc: "Records each task emits per run before it idles; -1 for no limit."}).
		Define(config.Key{Name: intervalKey, Type: config.Long, Default: int64(0), Importance: config.Low,
			Validator: config.AtLeast(int64(0)), Doc: "Pause between two records of a task, in milliseconds."})
}

// valueSchema is the schema of every record value.
var valueSchema = &data.Schema{
	Type: data.StructType,
	Name: "io.sluice.examples.Counter",
	Fields: []data.Field{
		{Name: "task", Index: 0, Schema: data.Int32Schema},
		{Name: "seq", Index: 1, Schema: data.Int64Schema},
	},
}

// Connector splits the work: one counter per task.
type Connector struct {
	props map[string]string
}

func (c *Connector) Version() string     { return version }
func (c *Connector) Config() *config.Def { return configDef() }

func (c *Connector) Start(_ context.Context, _ pluginsdk.ConnectorContext, props map[string]string) error {
	if _, err := configDef().Parse(props); err != nil {
		return err
	}
	c.props = props
	return nil
}

// TaskConfigs gives each of maxTasks tasks its own counter (tasks.max).
func (c *Connector) TaskConfigs(_ context.Context, maxTasks int) ([]map[string]string, error) {
	out := make([]map[string]string, maxTasks)
	for i := range out {
		m := make(map[string]string, len(c.props)+1)
		for k, v := range c.props {
			m[k] = v
		}
		m[taskIndexKey] = strconv.Itoa(i)
		out[i] = m
	}
	return out, nil
}

func (c *Connector) Stop(context.Context) error { return nil }

func (c *Connector) NewTask() pluginsdk.SourceTask { return &Task{} }

// Task emits one counter's records.
type Task struct {
	topic     string
	max       int64
	interval  time.Duration
	task      int32
	partition map[string]any
	next      int64 // the seq of the next record
	emitted   int64
}

func (t *Task) Start(ctx context.Context, tc pluginsdk.SourceTaskContext, props map[string]string) error {
	cfg, err := configDef().Parse(props)
	if err != nil {
		return err
	}
	t.topic = cfg.String(topicKey)
	t.max = cfg.Long(maxRecordsKey)
	t.interval = time.Duration(cfg.Long(intervalKey)) * time.Millisecond
	n, err := strconv.ParseInt(props[taskIndexKey], 10, 32)
	if props[taskIndexKey] != "" && err != nil {
		return pluginsdk.Invalid("%s %q is not a task number", taskIndexKey, props[taskIndexKey])
	}
	t.task = int32(n)
	t.partition = map[string]any{"task": int64(t.task)}
	off, err := tc.Offset(ctx, t.partition)
	if err != nil {
		return fmt.Errorf("read the stored offset of task %d: %w", t.task, err)
	}
	if seq, ok := off["seq"].(int64); ok {
		t.next = seq + 1
	}
	pluginsdk.Logger().Info("counter task started", "task", t.task, "next_seq", t.next)
	return nil
}

// Poll returns the next record, or waits for ctx when the task has emitted
// max.records in this run.
func (t *Task) Poll(ctx context.Context) ([]*data.SourceRecord, error) {
	if t.max >= 0 && t.emitted >= t.max {
		<-ctx.Done()
		return nil, nil
	}
	if t.interval > 0 && t.emitted > 0 {
		timer := time.NewTimer(t.interval)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, nil
		}
	}
	seq := t.next
	value := data.NewStruct(valueSchema).MustPut("task", t.task).MustPut("seq", seq)
	t.next++
	t.emitted++
	return []*data.SourceRecord{{
		Record: data.Record{
			Topic: t.topic, Partition: data.NoPartition,
			ValueSchema: valueSchema, Value: value,
		},
		SourcePartition: t.partition,
		SourceOffset:    map[string]any{"seq": seq},
	}}, nil
}

func (t *Task) Stop(context.Context) error { return nil }

func main() {
	pluginsdk.Serve(pluginsdk.Class{
		Name:      "io.sluice.examples.CounterSource",
		Aliases:   []string{"CounterSource"},
		TaskClass: "io.sluice.examples.CounterSourceTask",
		Doc:       "Emits {task, seq} structs per task, resuming after the stored offset (example).",
		New:       func() pluginsdk.Connector { return &Connector{} },
	})
}

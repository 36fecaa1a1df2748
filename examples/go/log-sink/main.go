// Command log-sink is an example sink connector: it appends each record's
// value, as one line of text, to a file, and makes the file durable before
// the worker commits offsets (Flush, called on PreCommit).
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

const version = "0.1.0"

const fileKey = "file"

func configDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: fileKey, Type: config.String, Required: true, Importance: config.High,
			Validator: config.NonEmptyString(), Doc: "File the record values are appended to, one per line."})
}

// Connector runs a single task: one file cannot take several appenders.
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

func (c *Connector) TaskConfigs(context.Context, int) ([]map[string]string, error) {
	return []map[string]string{c.props}, nil
}

func (c *Connector) Stop(context.Context) error { return nil }

func (c *Connector) NewTask() pluginsdk.SinkTask { return &Task{} }

// Task appends values to the file through a buffer.
type Task struct {
	f *os.File
	w *bufio.Writer
}

func (t *Task) Start(_ context.Context, _ pluginsdk.SinkTaskContext, props map[string]string) error {
	cfg, err := configDef().Parse(props)
	if err != nil {
		return err
	}
	t.f, err = os.OpenFile(cfg.String(fileKey), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", cfg.String(fileKey), err)
	}
	t.w = bufio.NewWriter(t.f)
	return nil
}

func (t *Task) Put(_ context.Context, recs []*data.SinkRecord) error {
	for _, r := range recs {
		t.w.WriteString(Text(r.Value))
		if err := t.w.WriteByte('\n'); err != nil {
			// A full disk may clear up; let the worker deliver the batch again.
			return pluginsdk.Retriable("write %s: %v", t.f.Name(), err)
		}
	}
	return nil
}

// Flush makes everything put so far durable; the SDK calls it on PreCommit
// and then lets the worker commit the offsets it was given.
func (t *Task) Flush(context.Context, map[data.TopicPartition]int64) error {
	if err := t.w.Flush(); err != nil {
		return pluginsdk.Retriable("flush %s: %v", t.f.Name(), err)
	}
	if err := t.f.Sync(); err != nil {
		return pluginsdk.Retriable("sync %s: %v", t.f.Name(), err)
	}
	return nil
}

func (t *Task) Stop(ctx context.Context) error {
	if t.f == nil {
		return nil
	}
	ferr := t.Flush(ctx, nil)
	if err := t.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", t.f.Name(), err)
	}
	return ferr
}

// Text renders a Connect value as a line: strings as they are, bytes as
// UTF-8 when they are text, structs, maps and arrays as JSON.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case []byte:
		return string(x)
	case data.Raw:
		return string(x)
	}
	b, err := json.Marshal(plain(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// plain turns Connect values into what encoding/json writes naturally.
func plain(v any) any {
	switch x := v.(type) {
	case *data.Struct:
		out := make(map[string]any, len(x.Schema().Fields))
		for _, f := range x.Schema().Fields {
			out[f.Name] = plain(x.GetIndex(f.Index))
		}
		return out
	case data.Map:
		out := make([][2]any, len(x))
		for i, e := range x {
			out[i] = [2]any{plain(e.Key), plain(e.Value)}
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case data.Decimal:
		return x.String()
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return v
}

func main() {
	pluginsdk.Serve(pluginsdk.Class{
		Name:      "io.sluice.examples.LogSink",
		Aliases:   []string{"LogSink"},
		TaskClass: "io.sluice.examples.LogSinkTask",
		Doc:       "Appends each record's value, as text, to a file (example).",
		New:       func() pluginsdk.Connector { return &Connector{} },
	})
}

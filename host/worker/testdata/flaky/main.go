// Command flaky is a test plugin of host/worker: a source whose task fails
// its first starts, and a sink that reports some records as errant.
//
// FlakySource: each task start appends a line to state.file; while the
// file holds no more than fail.starts lines, Start fails. Then the task
// emits "n" values 0, 1, 2, ... to topic. With leak.mb, each Poll first
// allocates (and keeps) that many MiB more.
//
// ErrantSink: every record whose value (a string) contains "bad" goes to
// the errant record reporter; the others are appended to file.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

func sourceDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "topic", Type: config.String, Required: true, Importance: config.High, Doc: "Topic."}).
		Define(config.Key{Name: "state.file", Type: config.String, Required: true, Importance: config.High, Doc: "Counts task starts."}).
		Define(config.Key{Name: "fail.starts", Type: config.Int, Default: 0, Importance: config.High, Doc: "Starts that fail."}).
		Define(config.Key{Name: "leak.mb", Type: config.Int, Default: 0, Importance: config.Low, Doc: "MiB leaked by each Poll."})
}

type source struct{ props map[string]string }

func (c *source) Version() string     { return "1.0" }
func (c *source) Config() *config.Def { return sourceDef() }
func (c *source) Start(_ context.Context, _ pluginsdk.ConnectorContext, props map[string]string) error {
	c.props = props
	return nil
}
func (c *source) TaskConfigs(context.Context, int) ([]map[string]string, error) {
	return []map[string]string{c.props}, nil
}
func (c *source) Stop(context.Context) error    { return nil }
func (c *source) NewTask() pluginsdk.SourceTask { return &sourceTask{} }

type sourceTask struct {
	topic  string
	next   int64
	leakMB int
	leaked [][]byte
}

func (t *sourceTask) Start(_ context.Context, _ pluginsdk.SourceTaskContext, props map[string]string) error {
	cfg, err := sourceDef().Parse(props)
	if err != nil {
		return err
	}
	path := cfg.String("state.file")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("start\n"); err != nil {
		f.Close()
		return err
	}
	f.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	starts := strings.Count(string(b), "\n")
	if starts <= cfg.Int("fail.starts") {
		return fmt.Errorf("start %d fails on purpose", starts)
	}
	t.topic = cfg.String("topic")
	t.leakMB = cfg.Int("leak.mb")
	return nil
}

func (t *sourceTask) Poll(ctx context.Context) ([]*data.SourceRecord, error) {
	if t.leakMB > 0 {
		b := make([]byte, t.leakMB<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // resident, not just reserved
		}
		t.leaked = append(t.leaked, b)
	}
	if t.next >= 5 {
		<-ctx.Done()
		return nil, nil
	}
	select {
	case <-time.After(10 * time.Millisecond):
	case <-ctx.Done():
		return nil, nil
	}
	n := t.next
	t.next++
	return []*data.SourceRecord{{
		Record:          data.Record{Topic: t.topic, Partition: data.NoPartition, Value: strconv.FormatInt(n, 10), ValueSchema: data.StringSchema},
		SourcePartition: map[string]any{"p": "0"},
		SourceOffset:    map[string]any{"n": n},
	}}, nil
}

func (t *sourceTask) Stop(context.Context) error { return nil }

func sinkDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "file", Type: config.String, Required: true, Importance: config.High, Doc: "Output file."})
}

type sink struct{ props map[string]string }

func (c *sink) Version() string     { return "1.0" }
func (c *sink) Config() *config.Def { return sinkDef() }
func (c *sink) Start(_ context.Context, _ pluginsdk.ConnectorContext, props map[string]string) error {
	c.props = props
	return nil
}
func (c *sink) TaskConfigs(context.Context, int) ([]map[string]string, error) {
	return []map[string]string{c.props}, nil
}
func (c *sink) Stop(context.Context) error  { return nil }
func (c *sink) NewTask() pluginsdk.SinkTask { return &sinkTask{} }

type sinkTask struct {
	tc pluginsdk.SinkTaskContext
	f  *os.File
	w  *bufio.Writer
}

func (t *sinkTask) Start(_ context.Context, tc pluginsdk.SinkTaskContext, props map[string]string) error {
	cfg, err := sinkDef().Parse(props)
	if err != nil {
		return err
	}
	t.tc = tc
	t.f, err = os.OpenFile(cfg.String("file"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	t.w = bufio.NewWriter(t.f)
	return nil
}

func (t *sinkTask) Put(ctx context.Context, recs []*data.SinkRecord) error {
	for _, r := range recs {
		v := fmt.Sprint(r.Value)
		if strings.Contains(v, "bad") {
			rep := t.tc.ErrantRecordReporter()
			if rep == nil {
				return errors.New("no errant record reporter")
			}
			if err := rep.Report(ctx, r, fmt.Errorf("value %q refused", v)); err != nil {
				return err
			}
			continue
		}
		t.w.WriteString(v + "\n")
	}
	return t.w.Flush()
}

func (t *sinkTask) Stop(context.Context) error {
	if t.f == nil {
		return nil
	}
	t.w.Flush()
	return t.f.Close()
}

func main() {
	pluginsdk.Serve(
		pluginsdk.Class{Name: "io.sluice.test.FlakySource", New: func() pluginsdk.Connector { return &source{} }},
		pluginsdk.Class{Name: "io.sluice.test.ErrantSink", New: func() pluginsdk.Connector { return &sink{} }},
	)
}

package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"

	"github.com/sluice-io/sluice/plugins/internal/version"
	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// writeThreshold is how much a sink task buffers before writing. Writes end
// on a line boundary, so tasks appending to the same file (tasks.max > 1, as
// Kafka allows) interleave whole lines.
const writeThreshold = 64 << 10

func sinkDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: fileKey, Type: config.String, Default: nil, Importance: config.High,
			Doc: "Destination filename. If not specified, the standard output will be used."})
}

// SinkConnector is FileStreamSinkConnector. The worker subscribes its tasks
// to topics or topics.regex; the tasks only write.
type SinkConnector struct {
	props map[string]string
}

var (
	_ pluginsdk.SinkConnector = (*SinkConnector)(nil)
	_ pluginsdk.OffsetAlterer = (*SinkConnector)(nil)
)

// Version is Sluice's version.
func (c *SinkConnector) Version() string { return version.Version }

// Config declares file.
func (c *SinkConnector) Config() *config.Def { return sinkDef() }

// Start checks the configuration.
func (c *SinkConnector) Start(_ context.Context, _ pluginsdk.ConnectorContext, props map[string]string) error {
	if _, err := sinkDef().Parse(props); err != nil {
		return err
	}
	c.props = maps.Clone(props)
	return nil
}

// TaskConfigs gives every task the same configuration, as Kafka does: all
// tasks append to the one file.
func (c *SinkConnector) TaskConfigs(_ context.Context, maxTasks int) ([]map[string]string, error) {
	out := make([]map[string]string, max(maxTasks, 1))
	for i := range out {
		out[i] = maps.Clone(c.props)
	}
	return out, nil
}

// Stop has nothing to release.
func (c *SinkConnector) Stop(context.Context) error { return nil }

// NewTask returns a task appending to the configured file.
func (c *SinkConnector) NewTask() pluginsdk.SinkTask { return &SinkTask{} }

// AlterOffsets accepts any change: the sink keeps no offsets of its own, the
// worker's consumer group holds them.
func (c *SinkConnector) AlterOffsets(context.Context, map[string]string, []pluginsdk.OffsetChange) (bool, error) {
	return true, nil
}

// SinkTask is FileStreamSinkTask: it appends each record's value as a line.
type SinkTask struct {
	path string // "" writes to standard output
	f    *os.File
	out  io.Writer
	buf  []byte
}

var (
	_ pluginsdk.SinkTask     = (*SinkTask)(nil)
	_ pluginsdk.PreCommitter = (*SinkTask)(nil)
)

// Start opens the file for appending, creating it if needed.
func (t *SinkTask) Start(_ context.Context, _ pluginsdk.SinkTaskContext, props map[string]string) error {
	cfg, err := sinkDef().Parse(props)
	if err != nil {
		return err
	}
	t.path = strings.TrimSpace(cfg.String(fileKey))
	if t.path == "" {
		// go-plugin has replaced os.Stdout by now: what the plugin writes
		// there reaches the worker's log, not the handshake channel.
		t.out = os.Stdout
		return nil
	}
	t.f, err = os.OpenFile(t.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open sink file: %w", err)
	}
	t.out = t.f
	return nil
}

func (t *SinkTask) name() string {
	if t.path == "" {
		return "stdout"
	}
	return t.path
}

// Put buffers the values of recs, one line each.
func (t *SinkTask) Put(_ context.Context, recs []*data.SinkRecord) error {
	for _, r := range recs {
		t.buf = appendLine(t.buf, r.Value)
		if len(t.buf) >= writeThreshold {
			if err := t.write(); err != nil {
				return err
			}
		}
	}
	return nil
}

// BorrowsRecords: Put copies each value into its buffer as it goes, so the
// SDK need not copy the batch for it.
func (t *SinkTask) BorrowsRecords() bool { return true }

var _ pluginsdk.RecordBorrower = (*SinkTask)(nil)

// PreCommit makes every line put so far durable (written and, for a file,
// fsynced) and lets the worker commit the offsets it delivered.
func (t *SinkTask) PreCommit(_ context.Context, offsets map[data.TopicPartition]int64) (map[data.TopicPartition]int64, error) {
	if err := t.flush(); err != nil {
		return nil, err
	}
	return offsets, nil
}

// Stop writes what is buffered and closes the file.
func (t *SinkTask) Stop(context.Context) error {
	if t.out == nil {
		return nil
	}
	err := t.flush()
	if t.f != nil {
		if cerr := t.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", t.path, cerr)
		}
		t.f = nil
	}
	t.out = nil
	return err
}

// write hands the buffer to the file. A failed write is fatal: a partial
// line may be in the file, and the worker restarting the task from the last
// committed offsets is the honest recovery.
func (t *SinkTask) write() error {
	if len(t.buf) == 0 {
		return nil
	}
	_, err := t.out.Write(t.buf)
	t.buf = t.buf[:0]
	if err != nil {
		return fmt.Errorf("write %s: %w", t.name(), err)
	}
	return nil
}

func (t *SinkTask) flush() error {
	if err := t.write(); err != nil {
		return err
	}
	if t.f != nil {
		if err := t.f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", t.path, err)
		}
	}
	return nil
}

// appendLine appends a value's text and a newline. Kafka prints
// record.value() with Java's toString, and so does data.FormatValue ("1.0",
// "Struct{a=1}", "{k=v}", "[a, b]", "null"), except that bytes are written
// as they are rather than as a Java array reference.
func appendLine(b []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		b = append(b, x...)
	case []byte:
		b = append(b, x...)
	case data.Raw:
		b = append(b, x...)
	default:
		b = append(b, data.FormatValue(v)...)
	}
	return append(b, '\n')
}

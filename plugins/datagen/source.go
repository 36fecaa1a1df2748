package main

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluice-io/sluice/plugins/internal/version"
	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Source partition and offset keys: each task is its own partition and
// counts its records.
const (
	taskField = "task"
	seqField  = "seq"
)

// maxBehind is how far a paced task may fall behind its schedule (when the
// worker did not poll, e.g. while paused) before it forgets the backlog
// instead of producing it in a burst.
const maxBehind = time.Second

// DatagenConnector generates records; tasks.max tasks share the work.
type DatagenConnector struct {
	props map[string]string
}

var (
	_ pluginsdk.SourceConnector      = (*DatagenConnector)(nil)
	_ pluginsdk.Validator            = (*DatagenConnector)(nil)
	_ pluginsdk.ExactlyOnceSupporter = (*DatagenConnector)(nil)
	_ pluginsdk.OffsetAlterer        = (*DatagenConnector)(nil)
)

// Version is Sluice's version.
func (c *DatagenConnector) Version() string { return version.Version }

// Config declares the generator's settings.
func (c *DatagenConnector) Config() *config.Def { return datagenDef() }

// Validate adds the rules between settings (key.field must name a field of
// the quickstart; max.records and iterations must agree).
func (c *DatagenConnector) Validate(_ context.Context, props map[string]string) ([]config.ConfigValue, error) {
	return validate(props), nil
}

// Start checks the configuration.
func (c *DatagenConnector) Start(_ context.Context, _ pluginsdk.ConnectorContext, props map[string]string) error {
	if _, err := parseSettings(props); err != nil {
		return err
	}
	c.props = maps.Clone(props)
	return nil
}

// TaskConfigs runs maxTasks tasks, each with its index and the task count
// (records.per.second is split by it).
func (c *DatagenConnector) TaskConfigs(_ context.Context, maxTasks int) ([]map[string]string, error) {
	return taskConfigs(c.props, max(maxTasks, 1)), nil
}

// Stop has nothing to release.
func (c *DatagenConnector) Stop(context.Context) error { return nil }

// NewTask returns a generator task.
func (c *DatagenConnector) NewTask() pluginsdk.SourceTask { return &DatagenTask{} }

// ExactlyOnceSupport is SUPPORTED: offsets say exactly where each task
// resumes.
func (c *DatagenConnector) ExactlyOnceSupport(context.Context, map[string]string) (pluginsdk.ExactlyOnce, error) {
	return pluginsdk.ExactlyOnceSupported, nil
}

// AlterOffsets accepts {"task": n} partitions with {"seq": i} offsets, i ≥ -1
// (-1 restarts the task at 0); resets are always accepted.
func (c *DatagenConnector) AlterOffsets(_ context.Context, _ map[string]string, offsets []pluginsdk.OffsetChange) (bool, error) {
	for _, o := range offsets {
		if o.Offset == nil {
			continue
		}
		if _, ok := o.Partition[taskField].(int64); !ok {
			return false, pluginsdk.Invalid("source partition %v: want {%q: <task number>}", o.Partition, taskField)
		}
		if seq, ok := o.Offset[seqField].(int64); !ok || seq < -1 {
			return false, pluginsdk.Invalid("offset %v: want {%q: <sequence number>} with a number of at least -1", o.Offset, seqField)
		}
	}
	return true, nil
}

// DatagenTask produces the records of one task.
type DatagenTask struct {
	s         *settings
	g         *generator
	partition map[string]any
	next      int64 // seq of the next record
	spacing   time.Duration
	log       hclog.Logger
	// now replaces time.Now in tests.
	now func() time.Time

	// Pacing: the record numbered paced (counted from paceStart) is due at
	// paceStart + paced*spacing.
	paceStart time.Time
	paced     int64

	// Records to fill (see polled): those the SDK gave back, and the
	// unused rest of the last block.
	free  []*polled
	block []polled
}

var _ pluginsdk.SourceTask = (*DatagenTask)(nil)

// Start parses the configuration and resumes after the stored sequence
// number of this task's partition.
func (t *DatagenTask) Start(ctx context.Context, tc pluginsdk.SourceTaskContext, props map[string]string) error {
	s, err := parseSettings(props)
	if err != nil {
		return err
	}
	t.s, t.g, t.spacing = s, newGenerator(s), s.spacing()
	if t.now == nil {
		t.now = time.Now
	}
	// The worker tags every line with the connector and task already.
	t.log = pluginsdk.Logger()
	t.partition = map[string]any{taskField: int64(s.taskIndex)}
	off, err := tc.Offset(ctx, t.partition)
	if err != nil {
		return fmt.Errorf("read the stored offset of datagen task %d: %w", s.taskIndex, err)
	}
	if off != nil {
		seq, ok := off[seqField].(int64)
		if !ok || seq < -1 {
			return pluginsdk.Invalid("stored offset %v of datagen task %d: want {%q: <sequence number>}", off, s.taskIndex, seqField)
		}
		t.next = seq + 1
	}
	t.log.Info("datagen task started", "quickstart", s.quickstart.name, "next_seq", t.next,
		"spacing", t.spacing.String(), "max_records", s.maxRecords, "raw", s.raw)
	return nil
}

// Poll returns the next batch: up to batch.size records, fewer when pacing
// allows fewer now. A task that reached max.records waits for ctx and
// returns nothing.
func (t *DatagenTask) Poll(ctx context.Context) ([]*data.SourceRecord, error) {
	n := int64(t.s.batchSize)
	if t.s.maxRecords >= 0 {
		n = min(n, t.s.maxRecords-t.next)
		if n <= 0 {
			<-ctx.Done()
			return nil, nil
		}
	}
	now := t.now()
	if t.spacing > 0 {
		for {
			due, wait := t.due(now)
			if due > 0 {
				n = min(n, due)
				break
			}
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil, nil
			case <-timer.C:
			}
			now = t.now()
		}
		t.paced += n
	}
	t.g.setClock(now)
	recs := make([]*data.SourceRecord, n)
	for i := range recs {
		p := t.take(int(n) - i)
		p.seq = t.next
		if t.s.raw {
			var k, v []byte
			k, v, p.buf = t.g.rawInto(p.seq, p.buf)
			p.key, p.value = k, v
		} else {
			p.rec.KeySchema, p.rec.Key, p.rec.ValueSchema, p.rec.Value = t.g.record(p.seq)
		}
		recs[i] = &p.rec
		t.next++
	}
	return recs, nil
}

// due returns how many records are due at now, or how long until the next
// one is.
func (t *DatagenTask) due(now time.Time) (int64, time.Duration) {
	if t.paceStart.IsZero() {
		t.paceStart = now
	}
	next := t.paceStart.Add(time.Duration(t.paced) * t.spacing)
	if behind := now.Sub(next); behind > maxBehind {
		t.paceStart = now.Add(-time.Duration(t.paced) * t.spacing)
		next = now
	}
	if now.Before(next) {
		return 0, next.Sub(now)
	}
	return int64(now.Sub(next)/t.spacing) + 1, 0
}

// Stop has nothing to release.
func (t *DatagenTask) Stop(context.Context) error {
	if t.log != nil {
		t.log.Info("datagen task stopped", "next_seq", t.next)
	}
	return nil
}

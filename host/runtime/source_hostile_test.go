package runtime

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// Poll answers a buggy or hostile plugin may give, which the task must
// refuse with an error naming what is wrong, failing the task and not the
// worker, and storing nothing it should not.

// rewrittenAnswer makes a fake's answers with edit applied to the
// generated message.
func rewrittenAnswer(edit func(m *pluginv1.PollResponse)) func(uint64, []*data.SourceRecord) (*wire.PollBatch, error) {
	return func(first uint64, recs []*data.SourceRecord) (*wire.PollBatch, error) {
		schemas, precs, err := wire.EncodeSourceRecords(recs)
		if err != nil {
			return nil, err
		}
		m := &pluginv1.PollResponse{Schemas: schemas, Records: precs, FirstSeq: first}
		edit(m)
		return wire.NewPollBatch(m), nil
	}
}

// runFailingAnswers runs a task on a fake whose answers (at most limit
// records each; 0: the fake's default) are rewritten by edit, waits for the
// task to fail, checks that no record was acknowledged, and returns the
// task's error.
func runFailingAnswers(t *testing.T, limit int, edit func(m *pluginv1.PollResponse)) error {
	t.Helper()
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	if limit > 0 {
		f.limit = uint64(limit)
	}
	f.answer = rewrittenAnswer(edit)
	l := newRecListener()
	task, err := NewSourceTask(sourceConfig(c, f, newMemOffsets(ev), l))
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	l.await(t, "failed")
	err = wait()
	if got := task.(*sourceTask).tracker.acked(); got != 0 {
		t.Errorf("%d records acknowledged", got)
	}
	return err
}

// runUnacknowledged runs a task on f against a broker that never answers,
// so nothing is ever acknowledged, for a second, and returns it.
func runUnacknowledged(t *testing.T, f *fakeSource, ev *events, maxInFlight int64) (*sourceTask, SourceConfig) {
	t.Helper()
	l := newRecListener()
	cfg := sourceConfig(newCluster(t, 1, nil), f, newMemOffsets(ev), l)
	cfg.ProducerOpts = []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	cfg.MaxInFlightBytes = maxInFlight
	cfg.ShutdownTimeout = 200 * time.Millisecond
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runTask(t, task)
	l.await(t, "running")
	time.Sleep(time.Second)
	return task.(*sourceTask), task.(*sourceTask).cfg
}

// Sequence numbers never repeat within a process: an answer whose last
// sequence number would wrap around past 2^64-1 (and so let the next
// answer start over at 1) fails the task before any record is produced.
func TestSourcePollSequenceOverflowFails(t *testing.T) {
	err := runFailingAnswers(t, 2, func(m *pluginv1.PollResponse) { m.FirstSeq = math.MaxUint64 })
	want := "record sequence numbers from 18446744073709551615 for 2 records run past the largest"
	if wire.KindOf(err) != wire.KindFatal || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run = %v (kind %v), want %q", err, wire.KindOf(err), want)
	}
}

// A source offset is a map, as in Kafka Connect: an offset that is JSON
// but not an object (or null) fails the task when it would be stored,
// naming it, and is not stored; a valid offset of another partition is.
func TestSourceOffsetNotAnObjectFails(t *testing.T) {
	for _, off := range []string{`5`, `"x"`, `[1]`, `true`} {
		t.Run(off, func(t *testing.T) {
			c := newCluster(t, 1, map[string]int32{"t": 3})
			ev := &events{}
			f := newFakeSource(ev)
			f.limit = 2
			// Record 1 has source partition {"sp":1}, record 2 {"sp":0}.
			f.answer = rewrittenAnswer(func(m *pluginv1.PollResponse) { m.Records[0].SourceOffset = []byte(off) })
			st := newMemOffsets(ev)
			l := newRecListener()
			cfg := sourceConfig(c, f, st, l)
			task, err := NewSourceTask(cfg)
			if err != nil {
				t.Fatal(err)
			}
			wait := runTask(t, task)
			eventually(t, "both records acknowledged", func() bool { return task.(*sourceTask).tracker.acked() == 2 })
			task.Stop()
			err = wait()
			want := "source offset " + off + ` of source partition {"sp":1}: not a JSON object`
			if wire.KindOf(err) != wire.KindInvalid || !strings.Contains(err.Error(), want) {
				t.Fatalf("Run = %v (kind %v), want %q", err, wire.KindOf(err), want)
			}
			if got := l.list(); got[len(got)-1] != "failed" {
				t.Errorf("states %v", got)
			}
			if got := st.get(`{"sp":1}`); got != "" {
				t.Errorf(`stored offset of {"sp":1}: %s`, got)
			}
			if got := st.get(`{"sp":0}`); got != `{"o":2}` {
				t.Errorf(`stored offset of {"sp":0}: %q, want {"o":2}`, got)
			}
		})
	}
}

// Records with no key, value or headers still cost the worker memory while
// in flight: a plugin that emits them while Kafka does not answer is not
// polled without bound (each counts minRecordCharge against
// MaxInFlightBytes).
func TestSourceEmptyRecordsAreBoundedInFlight(t *testing.T) {
	ev := &events{}
	f := newFakeSource(ev)
	f.gen = func(seq uint64) *data.SourceRecord {
		r := defaultSourceRecord(seq)
		r.Key, r.Value = data.Raw(nil), data.Raw(nil)
		return r
	}
	task, cfg := runUnacknowledged(t, f, ev, 64<<10)
	bound := cfg.MaxInFlightBytes/minRecordCharge + int64(cfg.MaxPollRecords)
	if got := f.handedOut(); got > uint64(bound) || got < uint64(cfg.MaxPollRecords) {
		t.Fatalf("%d records polled with nothing acknowledged; want between %d and %d", got, cfg.MaxPollRecords, bound)
	}
	if _, n := task.tracker.inflight(); int64(n) > cfg.MaxInFlightBytes/minRecordCharge {
		t.Fatalf("%d records in flight", n)
	}
}

// max_records bounds an answer: one with more records fails the task,
// naming the count, before any record is produced (the worker's plugin
// adapter does not even decode it: wire.ReceivePollAtMost).
func TestSourcePollMoreRecordsThanAskedFails(t *testing.T) {
	err := runFailingAnswers(t, 0, func(m *pluginv1.PollResponse) {
		m.Records = append(m.Records, m.Records[len(m.Records)-1])
	})
	want := "poll: the answer has 101 records, more than the 100 asked for"
	if wire.KindOf(err) != wire.KindInvalid || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run = %v (kind %v), want %q", err, wire.KindOf(err), want)
	}
}

// Source offsets (and partitions) are held until their record is
// acknowledged, so they count against MaxInFlightBytes: records that are
// all offset are not polled without bound while Kafka does not answer.
func TestSourceLargeOffsetsAreBoundedInFlight(t *testing.T) {
	const offsetBytes = 16 << 10
	ev := &events{}
	f := newFakeSource(ev)
	blob := strings.Repeat("x", offsetBytes)
	f.gen = func(seq uint64) *data.SourceRecord {
		r := defaultSourceRecord(seq)
		r.Key, r.Value = data.Raw(nil), data.Raw(nil)
		r.SourceOffset = map[string]any{"blob": blob}
		return r
	}
	task, cfg := runUnacknowledged(t, f, ev, 256<<10)
	bound := cfg.MaxInFlightBytes/offsetBytes + int64(cfg.MaxPollRecords)
	if got := f.handedOut(); got > uint64(bound) || got < uint64(cfg.MaxPollRecords) {
		t.Fatalf("%d records polled with nothing acknowledged; want between %d and %d", got, cfg.MaxPollRecords, bound)
	}
	if b, n := task.tracker.inflight(); int64(n) > cfg.MaxInFlightBytes/offsetBytes+1 || b < int64(n)*offsetBytes {
		t.Fatalf("%d records in flight, counted as %d bytes", n, b)
	}
}

// Records the task cannot write fail it, naming the record's fault, before
// anything is produced: no topic, a negative partition, a value the
// converter does not take, a value that does not match its schema.
func TestSourceUnwritableRecordsFail(t *testing.T) {
	str := func(s string) *pluginv1.Value {
		return &pluginv1.Value{Kind: &pluginv1.Value_StringValue{StringValue: s}}
	}
	for _, tc := range []struct {
		name string
		edit func(m *pluginv1.PollResponse)
		want string
	}{
		{"no topic", func(m *pluginv1.PollResponse) { m.Records[0].Topic = "" }, "KAFKA_PRODUCE: record has no topic"},
		{"negative partition", func(m *pluginv1.PollResponse) {
			p := int32(-5)
			m.Records[0].KafkaPartition = &p
		}, "KAFKA_PRODUCE: invalid partition -5"},
		{"value the converter refuses", func(m *pluginv1.PollResponse) {
			m.Records[0].Value = &pluginv1.Data{Kind: &pluginv1.Data_Value{Value: &pluginv1.Value{Kind: &pluginv1.Value_IntValue{IntValue: 7}}}}
		}, "VALUE_CONVERTER: prefixConverter: cannot convert int64"},
		{"value not of its schema", func(m *pluginv1.PollResponse) {
			m.Schemas = append(m.Schemas, &pluginv1.Schema{Type: pluginv1.SchemaType_SCHEMA_TYPE_INT32})
			m.Records[0].Value = &pluginv1.Data{Schema: uint32(len(m.Schemas)), Kind: &pluginv1.Data_Value{Value: str("seven")}}
		}, "poll: decode records: source record 0 (topic t): value:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := runFailingAnswers(t, 2, tc.edit); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want %q", err, tc.want)
			}
		})
	}
}

// Sequence numbers that repeat or go backwards are refused, and the
// refused answer enters nothing.
func TestAckTrackerRefusesRepeatedSequences(t *testing.T) {
	coords := []sourceCoords{{[]byte(`{"p":0}`), []byte(`{"o":1}`)}, {[]byte(`{"p":0}`), []byte(`{"o":2}`)}}
	tr := newAckTracker()
	if _, err := tr.add(5, coords, nil); err != nil {
		t.Fatal(err)
	}
	for _, first := range []uint64{6, 5, 1} {
		_, err := tr.add(first, coords, nil)
		want := fmt.Sprintf("record sequence number %d does not follow 6", first)
		if err == nil || err.Error() != want {
			t.Fatalf("add(%d) = %v, want %q", first, err, want)
		}
	}
	if n := tr.unsettled(); n != 2 {
		t.Fatalf("%d records entered, want 2", n)
	}
	if _, err := tr.add(7, coords, nil); err != nil {
		t.Fatalf("add(7): %v", err)
	}
}

// A plugin that answers every Poll at once with nothing, ignoring the
// timeout, is polled with a backoff rather than in a tight loop; records it
// gives later still flow at once, and Stop does not wait out a backoff.
func TestSourceQuickEmptyAnswersBackOff(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"t": 3})
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = 1
	f.quickEmpty = true
	l := newRecListener()
	cfg := sourceConfig(c, f, newMemOffsets(ev), l)
	cfg.PollTimeout = time.Second
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	st := task.(*sourceTask)
	eventually(t, "the first record acknowledged", func() bool { return st.tracker.acked() == 1 })
	before := f.pollCount()
	time.Sleep(time.Second)
	// At most 100 ms between polls once the backoff is at its cap: about
	// 14 polls in the second, where a tight loop makes thousands.
	if n := f.pollCount() - before; n > 30 || n < 5 {
		t.Fatalf("%d polls in a second of empty answers, want 5 to 30", n)
	}
	f.mu.Lock()
	f.limit = 301
	f.mu.Unlock()
	eventually(t, "the later records acknowledged", func() bool { return st.tracker.acked() == 301 })
	stopped := time.Now()
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(stopped); d > time.Second {
		t.Fatalf("Stop took %s", d)
	}
}

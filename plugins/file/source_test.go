package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// fakeSourceContext answers Offset from a map keyed by filename.
type fakeSourceContext struct {
	mu      sync.Mutex
	offsets map[string]map[string]any
	asked   []map[string]any
}

func (f *fakeSourceContext) Configs() map[string]string { return nil }

func (f *fakeSourceContext) Offset(ctx context.Context, p map[string]any) (map[string]any, error) {
	offs, err := f.Offsets(ctx, []map[string]any{p})
	if err != nil {
		return nil, err
	}
	return offs[0], nil
}

func (f *fakeSourceContext) Offsets(_ context.Context, ps []map[string]any) ([]map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]map[string]any, len(ps))
	for i, p := range ps {
		f.asked = append(f.asked, p)
		if name, ok := p[filenameField].(string); ok {
			out[i] = f.offsets[name]
		}
	}
	return out, nil
}

func startSource(t *testing.T, tc pluginsdk.SourceTaskContext, props map[string]string) *SourceTask {
	t.Helper()
	task := (&SourceConnector{}).NewTask().(*SourceTask)
	if err := task.Start(context.Background(), tc, props); err != nil {
		t.Fatalf("Start(%v): %v", props, err)
	}
	t.Cleanup(func() { _ = task.Stop(context.Background()) })
	return task
}

// poll calls Poll with a short deadline, as the SDK does when it fills a batch.
func poll(t *testing.T, task *SourceTask, wait time.Duration) []*data.SourceRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	recs, err := task.Poll(ctx)
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	return recs
}

// pollN polls until n records arrived or 5 s passed.
func pollN(t *testing.T, task *SourceTask, n int) []*data.SourceRecord {
	t.Helper()
	var out []*data.SourceRecord
	deadline := time.Now().Add(5 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		out = append(out, poll(t, task, 200*time.Millisecond)...)
	}
	if len(out) != n {
		t.Fatalf("got %d records (%v), want %d", len(out), values(out), n)
	}
	return out
}

func values(recs []*data.SourceRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Value.(string)
	}
	return out
}

func positions(recs []*data.SourceRecord) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.SourceOffset[positionField].(int64)
	}
	return out
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSourceRecordsOfAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "alpha\nbeta\r\ngamma\rdelta")
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "lines"})
	before := time.Now()
	recs := pollN(t, task, 3)
	if got := values(recs); !equal(got, []string{"alpha", "beta", "gamma"}) {
		t.Fatalf("values %q", got)
	}
	if got := positions(recs); !equal(got, []int64{6, 12, 18}) {
		t.Fatalf("positions %v, want [6 12 18]", got)
	}
	for _, r := range recs {
		if r.Topic != "lines" || r.Partition != data.NoPartition {
			t.Errorf("topic %q partition %d", r.Topic, r.Partition)
		}
		if r.Key != nil || r.KeySchema != nil {
			t.Errorf("key %v schema %v; the file source sets no key", r.Key, r.KeySchema)
		}
		if !data.SchemaEqual(r.ValueSchema, data.StringSchema) || r.ValueSchema.Optional {
			t.Errorf("value schema %v; want a required STRING", r.ValueSchema)
		}
		if len(r.SourcePartition) != 1 || r.SourcePartition[filenameField] != path {
			t.Errorf("source partition %v", r.SourcePartition)
		}
		if r.Timestamp.Before(before.Add(-time.Second)) || r.Timestamp.After(time.Now()) {
			t.Errorf("timestamp %v; want the read time", r.Timestamp)
		}
	}
	// "delta" has no line end yet: it waits.
	if recs := poll(t, task, 150*time.Millisecond); len(recs) != 0 {
		t.Fatalf("partial line emitted: %q", values(recs))
	}
	appendFile(t, path, "\nepsilon\n")
	recs = pollN(t, task, 2)
	if got := values(recs); !equal(got, []string{"delta", "epsilon"}) {
		t.Fatalf("after completing the line: %q", got)
	}
	if got := positions(recs); !equal(got, []int64{24, 32}) {
		t.Fatalf("positions %v, want [24 32]", got)
	}
}

func TestSourceFollowsAGrowingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "")
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "t"})
	if recs := poll(t, task, 100*time.Millisecond); len(recs) != 0 {
		t.Fatalf("empty file gave %q", values(recs))
	}
	// A writer appends while the task polls; every line arrives once, in order.
	const n = 500
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			done <- err
			return
		}
		for i := range n {
			if _, err := f.WriteString(strings.Repeat("x", i%7) + "\n"); err != nil {
				done <- err
				return
			}
		}
		done <- f.Close()
	}()
	recs := pollN(t, task, n)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var pos int64
	for i, r := range recs {
		want := strings.Repeat("x", i%7)
		if r.Value != want {
			t.Fatalf("record %d is %q, want %q", i, r.Value, want)
		}
		pos += int64(len(want)) + 1
		if got := r.SourceOffset[positionField]; got != pos {
			t.Fatalf("record %d position %v, want %d", i, got, pos)
		}
	}
}

func TestSourceCRLFSplitAcrossWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "one\r")
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "t"})
	if recs := poll(t, task, 150*time.Millisecond); len(recs) != 0 {
		t.Fatalf("a trailing \\r was taken as a line end before its \\n arrived: %q", values(recs))
	}
	appendFile(t, path, "\ntwo\r\n")
	recs := pollN(t, task, 2)
	if got := values(recs); !equal(got, []string{"one", "two"}) {
		t.Fatalf("values %q", got)
	}
	if got := positions(recs); !equal(got, []int64{5, 10}) {
		t.Fatalf("positions %v, want [5 10]", got)
	}
}

func TestSourceBatchSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	var b strings.Builder
	for i := range 10 {
		b.WriteString(strings.Repeat("l", i) + "\n")
	}
	appendFile(t, path, b.String())
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "t", "batch.size": "3"})
	var sizes []int
	var all []*data.SourceRecord
	for len(all) < 10 {
		recs := poll(t, task, time.Second)
		if len(recs) == 0 {
			t.Fatalf("empty poll after %d records", len(all))
		}
		sizes = append(sizes, len(recs))
		all = append(all, recs...)
	}
	if !equal(sizes, []int{3, 3, 3, 1}) {
		t.Fatalf("batch sizes %v, want [3 3 3 1]", sizes)
	}
	for i, r := range all {
		if r.Value != strings.Repeat("l", i) {
			t.Fatalf("record %d: %q", i, r.Value)
		}
	}
}

func TestSourceDefaultBatchSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, strings.Repeat("row\n", 5000))
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "t"})
	if n := len(poll(t, task, time.Second)); n != defaultBatchSize {
		t.Fatalf("first poll returned %d records; want batch.size's default %d", n, defaultBatchSize)
	}
}

// A restarted task resumes at the stored position: each appended line
// arrives exactly once across the restart.
func TestSourceResumesFromStoredPosition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "a\nb\nc\n")
	props := map[string]string{"file": path, "topic": "t"}
	first := startSource(t, &fakeSourceContext{}, props)
	recs := pollN(t, first, 3)
	if err := first.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The worker stored the offset of the last record.
	last := recs[len(recs)-1]
	tc := &fakeSourceContext{offsets: map[string]map[string]any{path: last.SourceOffset}}
	appendFile(t, path, "d\ne\n")
	second := startSource(t, tc, props)
	recs = pollN(t, second, 2)
	if got := values(recs); !equal(got, []string{"d", "e"}) {
		t.Fatalf("after restart: %q, want [d e]", got)
	}
	if len(tc.asked) != 1 || tc.asked[0][filenameField] != path {
		t.Fatalf("offsets asked for %v; want the partition {filename: %s}", tc.asked, path)
	}
	if recs := poll(t, second, 150*time.Millisecond); len(recs) != 0 {
		t.Fatalf("extra records %q", values(recs))
	}
}

func TestSourceBadStoredOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	for _, tt := range []struct {
		off  map[string]any
		want string
	}{
		// Kafka's task: "Offset position is the incorrect type".
		{map[string]any{positionField: "12"}, "Offset position is the incorrect type"},
		{map[string]any{positionField: 3.5}, "Offset position is the incorrect type"},
		{map[string]any{positionField: int64(-1)}, "non-negative"},
	} {
		tc := &fakeSourceContext{offsets: map[string]map[string]any{path: tt.off}}
		task := (&SourceConnector{}).NewTask()
		err := task.Start(context.Background(), tc, map[string]string{"file": path, "topic": "t"})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Start with stored offset %v: error %v; want one naming %s and saying %q", tt.off, err, path, tt.want)
		}
	}
}

// A stored offset without a position, or with a null one, is no position:
// Kafka's task reads the file from its start (it seeks only when the
// position is not null).
func TestSourceStoredOffsetWithoutPosition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "a\nb\n")
	for _, off := range []map[string]any{
		{"pos": int64(3)},
		{positionField: nil},
		{},
	} {
		tc := &fakeSourceContext{offsets: map[string]map[string]any{path: off}}
		task := startSource(t, tc, map[string]string{"file": path, "topic": "t"})
		recs := pollN(t, task, 2)
		if got := values(recs); !equal(got, []string{"a", "b"}) {
			t.Errorf("stored offset %v: %q, want [a b] from the start", off, got)
		}
		if got := positions(recs); !equal(got, []int64{2, 4}) {
			t.Errorf("stored offset %v: positions %v, want [2 4]", off, got)
		}
		if err := task.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSourceMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "later.txt")
	_, err := openFileInput(path, 0)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("open of a missing file: %v; want ErrNotExist naming %s", err, path)
	}
	// The task waits for the file, as Kafka's does (its system tests create
	// the file after starting the connector).
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "t"})
	if recs := poll(t, task, 100*time.Millisecond); len(recs) != 0 {
		t.Fatalf("records from a missing file: %v", recs)
	}
	appendFile(t, path, "arrived\n")
	recs := pollN(t, task, 1)
	if recs[0].Value != "arrived" {
		t.Fatalf("value %q", recs[0].Value)
	}
}

func TestSourceDirectoryFails(t *testing.T) {
	dir := t.TempDir()
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": dir, "topic": "t"})
	_, err := task.Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Poll of a directory: %v; want an error naming %s", err, dir)
	}
}

func TestSourceInvalidUTF8(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "ok\xff\xfe!\n")
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "t"})
	recs := pollN(t, task, 1)
	if recs[0].Value != "ok\uFFFD\uFFFD!" {
		t.Fatalf("value %q", recs[0].Value)
	}
	if recs[0].SourceOffset[positionField] != int64(6) {
		t.Fatalf("position %v; it counts bytes, not runes", recs[0].SourceOffset[positionField])
	}
}

func TestSourceStdin(t *testing.T) {
	r, w := io.Pipe()
	task := &SourceTask{stdin: r}
	tc := &fakeSourceContext{}
	if err := task.Start(context.Background(), tc, map[string]string{"topic": "t"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Stop(context.Background()) })
	go func() {
		_, _ = w.Write([]byte("from\nstdin\r\npart"))
		_ = w.Close()
	}()
	recs := pollN(t, task, 2)
	if got := values(recs); !equal(got, []string{"from", "stdin"}) {
		t.Fatalf("values %q", got)
	}
	for _, r := range recs {
		if r.SourcePartition != nil || r.SourceOffset != nil {
			t.Errorf("stdin record with partition %v offset %v; stdin has no offsets", r.SourcePartition, r.SourceOffset)
		}
	}
	if len(tc.asked) != 0 {
		t.Errorf("stdin task read offsets %v", tc.asked)
	}
	// The stream ended inside "part": nothing more, and Poll still waits
	// for its deadline rather than failing.
	start := time.Now()
	if recs := poll(t, task, 150*time.Millisecond); len(recs) != 0 {
		t.Fatalf("records after the end of stdin: %q", values(recs))
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("Poll at the end of stdin returned after %v; it should wait for its deadline", d)
	}
}

// Stop makes a waiting Poll return: the SDK cancels Poll's context first.
func TestSourcePollReturnsOnCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "")
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "t"})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	start := time.Now()
	recs, err := task.Poll(ctx)
	if err != nil || len(recs) != 0 {
		t.Fatalf("Poll = %v, %v", recs, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Poll returned %v after cancel", d)
	}
}

func TestSourceConnector(t *testing.T) {
	c := &SourceConnector{}
	props := map[string]string{"file": "/tmp/x", "topic": "t", "name": "n"}
	if err := c.Start(context.Background(), nil, props); err != nil {
		t.Fatal(err)
	}
	cfgs, err := c.TaskConfigs(context.Background(), 5)
	if err != nil || len(cfgs) != 1 || cfgs[0]["file"] != "/tmp/x" || cfgs[0]["name"] != "n" {
		t.Fatalf("TaskConfigs(5) = %v, %v; want one copy of the connector config", cfgs, err)
	}
	for _, tt := range []struct {
		file string
		want pluginsdk.ExactlyOnce
	}{{"/tmp/x", pluginsdk.ExactlyOnceSupported}, {"", pluginsdk.ExactlyOnceUnsupported}} {
		got, err := c.ExactlyOnceSupport(context.Background(), map[string]string{"file": tt.file, "topic": "t"})
		if err != nil || got != tt.want {
			t.Errorf("ExactlyOnceSupport(file=%q) = %v, %v; want %v", tt.file, got, err, tt.want)
		}
	}
	if err := c.Start(context.Background(), nil, map[string]string{"file": "x"}); err == nil {
		t.Error("Start without topic succeeded")
	}
}

func TestSourceConfigValidation(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		bad   map[string]string // key -> part of its message
	}{
		{"valid", map[string]string{"file": "in.txt", "topic": "t"}, nil},
		{"stdin", map[string]string{"topic": "t"}, nil},
		{"missing topic", map[string]string{"file": "x"}, map[string]string{"topic": `Missing required configuration "topic"`}},
		{"empty topic", map[string]string{"topic": ""}, map[string]string{"topic": "String must be non-empty"}},
		{"topic list", map[string]string{"topic": "a,b"}, map[string]string{"topic": "single topic"}},
		{"batch size", map[string]string{"topic": "t", "batch.size": "0"}, map[string]string{"batch.size": "Value must be at least 1"}},
		{"batch size type", map[string]string{"topic": "t", "batch.size": "many"}, map[string]string{"batch.size": "Not a number of type INT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]string{}
			for _, v := range sourceDef().Validate(tt.props) {
				if len(v.Errors) > 0 {
					got[v.Name] = strings.Join(v.Errors, "; ")
				}
			}
			if len(got) != len(tt.bad) {
				t.Fatalf("errors %v, want on keys %v", got, tt.bad)
			}
			for k, msg := range tt.bad {
				if !strings.Contains(got[k], msg) {
					t.Errorf("%s: error %q, want it to contain %q", k, got[k], msg)
				}
			}
		})
	}
	// Kafka's key set, types and defaults (connect_rest_test.py expects these names).
	want := map[string]string{"file": "STRING", "topic": "STRING", "batch.size": "INT"}
	for _, k := range sourceDef().Keys() {
		if want[k.Name] != k.Type.String() {
			t.Errorf("key %s of type %s", k.Name, k.Type)
		}
		delete(want, k.Name)
	}
	if len(want) != 0 {
		t.Errorf("keys not declared: %v", want)
	}
	if k, _ := sourceDef().Key("batch.size"); k.Default != int32(2000) {
		t.Errorf("batch.size default %v, want 2000", k.Default)
	}
	if k, _ := sourceDef().Key("file"); k.Required || k.Default != nil || k.Importance != config.High {
		t.Errorf("file: %+v; want optional with a null default", k)
	}
}

func TestSourceAlterOffsets(t *testing.T) {
	c := &SourceConnector{}
	props := map[string]string{"file": "in.txt", "topic": "t"}
	part := map[string]any{filenameField: "in.txt"}
	tests := []struct {
		name    string
		props   map[string]string
		offsets []pluginsdk.OffsetChange
		ok      bool
	}{
		{"position", props, []pluginsdk.OffsetChange{{Partition: part, Offset: map[string]any{positionField: int64(10)}}}, true},
		{"reset", props, []pluginsdk.OffsetChange{{Partition: map[string]any{"junk": true}, Offset: nil}}, true},
		{"negative", props, []pluginsdk.OffsetChange{{Partition: part, Offset: map[string]any{positionField: int64(-1)}}}, false},
		{"not a number", props, []pluginsdk.OffsetChange{{Partition: part, Offset: map[string]any{positionField: "10"}}}, false},
		{"no position", props, []pluginsdk.OffsetChange{{Partition: part, Offset: map[string]any{"pos": int64(1)}}}, false},
		{"no filename", props, []pluginsdk.OffsetChange{{Partition: map[string]any{"file": "x"}, Offset: map[string]any{positionField: int64(1)}}}, false},
		{"stdin", map[string]string{"topic": "t"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := c.AlterOffsets(context.Background(), tt.props, tt.offsets)
			if tt.ok != (err == nil) || ok != tt.ok {
				t.Fatalf("AlterOffsets = %v, %v; want ok=%v", ok, err, tt.ok)
			}
			if err != nil && wire.KindOf(err) != wire.KindInvalid {
				t.Fatalf("AlterOffsets error %v is not INVALID: the worker would not report it as a veto", err)
			}
		})
	}
}

// AlterOffsets vetoes with Kafka's FileStreamSourceConnector messages, and
// checks an entry's offset before its partition, as Kafka does.
func TestSourceAlterOffsetsMessages(t *testing.T) {
	c := &SourceConnector{}
	props := map[string]string{"file": "in.txt", "topic": "t"}
	part := map[string]any{filenameField: "in.txt"}
	tests := []struct {
		name    string
		props   map[string]string
		offsets []pluginsdk.OffsetChange
		want    string
	}{
		{"stdin", map[string]string{"topic": "t"}, nil,
			"Offsets cannot be modified if the 'file' configuration is unspecified. This is because stdin is used for input and offsets are not tracked."},
		{"no position", props, []pluginsdk.OffsetChange{{Partition: part, Offset: map[string]any{"pos": int64(1)}}},
			"Offset objects should either be null or contain the key 'position'"},
		{"not a number", props, []pluginsdk.OffsetChange{{Partition: part, Offset: map[string]any{positionField: "10"}}},
			"The value for the 'position' key in the offset is expected to be a Long value"},
		{"null position", props, []pluginsdk.OffsetChange{{Partition: part, Offset: map[string]any{positionField: nil}}},
			"The value for the 'position' key in the offset is expected to be a Long value"},
		{"fraction", props, []pluginsdk.OffsetChange{{Partition: part, Offset: map[string]any{positionField: 3.14}}},
			"The value for the 'position' key in the offset is expected to be a Long value"},
		{"negative", props, []pluginsdk.OffsetChange{{Partition: part, Offset: map[string]any{positionField: int64(-10)}}},
			"The value for the 'position' key in the offset should be a non-negative value"},
		{"null partition", props, []pluginsdk.OffsetChange{{Partition: nil, Offset: map[string]any{positionField: int64(0)}}},
			"Partition objects cannot be null"},
		{"no filename", props, []pluginsdk.OffsetChange{{Partition: map[string]any{"other": "in.txt"}, Offset: map[string]any{positionField: int64(0)}}},
			"Partition objects should contain the key 'filename'"},
		{"offset before partition", props, []pluginsdk.OffsetChange{{Partition: map[string]any{"other": "in.txt"}, Offset: map[string]any{positionField: int64(-1)}}},
			"The value for the 'position' key in the offset should be a non-negative value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := c.AlterOffsets(context.Background(), tt.props, tt.offsets)
			if ok || err == nil || err.Error() != tt.want {
				t.Fatalf("AlterOffsets = %v, %v; want the error %q", ok, err, tt.want)
			}
		})
	}
	// Tombstones pass whatever their partition, a nil one included.
	for _, p := range []map[string]any{nil, {}, {"garbage": "x"}, {filenameField: "/elsewhere"}} {
		if ok, err := c.AlterOffsets(context.Background(), props, []pluginsdk.OffsetChange{{Partition: p}}); !ok || err != nil {
			t.Errorf("reset of partition %v = %v, %v; want accepted", p, ok, err)
		}
	}
}

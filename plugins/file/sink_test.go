package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

func sinkRecord(topic string, partition int32, offset int64, schema *data.Schema, v any) *data.SinkRecord {
	return &data.SinkRecord{
		Record: data.Record{Topic: topic, Partition: partition, ValueSchema: schema, Value: v},
		Offset: offset, OriginalTopic: topic, OriginalPartition: partition, OriginalOffset: offset,
	}
}

func startSink(t *testing.T, props map[string]string) *SinkTask {
	t.Helper()
	task := (&SinkConnector{}).NewTask().(*SinkTask)
	if err := task.Start(context.Background(), nil, props); err != nil {
		t.Fatalf("Start(%v): %v", props, err)
	}
	t.Cleanup(func() { _ = task.Stop(context.Background()) })
	return task
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSinkWritesValuesAndFlushesOnPreCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	task := startSink(t, map[string]string{"file": path})
	point := data.StructBuilder().Name("Point").Field("x", data.Int32Schema).Field("label", data.OptionalStringSchema).MustBuild()
	recs := []*data.SinkRecord{
		sinkRecord("a", 0, 10, data.StringSchema, "foo"),
		sinkRecord("a", 1, 3, nil, map[string]any{"some_key": int64(0)}),
		sinkRecord("b", 0, 7, point, data.NewStruct(point).MustPut("x", int32(4))),
		sinkRecord("a", 0, 11, nil, nil),
		sinkRecord("b", 0, 8, data.BytesSchema, []byte("raw bytes")),
		sinkRecord("b", 0, 9, nil, []any{int64(1), "two"}),
		// Java's Double.toString, as Kafka's sink prints a double.
		sinkRecord("b", 0, 10, data.Float64Schema, 2.0),
		sinkRecord("b", 0, 11, nil, []any{1e20, float32(0.5)}),
	}
	if err := task.Put(context.Background(), recs[:3]); err != nil {
		t.Fatal(err)
	}
	if err := task.Put(context.Background(), recs[3:]); err != nil {
		t.Fatal(err)
	}
	offsets := map[data.TopicPartition]int64{{Topic: "a", Partition: 0}: 12, {Topic: "a", Partition: 1}: 4, {Topic: "b", Partition: 0}: 12}
	got, err := task.PreCommit(context.Background(), offsets)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(offsets) {
		t.Fatalf("PreCommit returned %v, want %v", got, offsets)
	}
	for tp, o := range offsets {
		if got[tp] != o {
			t.Errorf("PreCommit offset of %v: %d, want %d", tp, got[tp], o)
		}
	}
	// Everything put before PreCommit is in the file once it returns.
	want := "foo\n{some_key=0}\nStruct{x=4}\nnull\nraw bytes\n[1, two]\n2.0\n[1.0E20, 0.5]\n"
	if s := readFile(t, path); s != want {
		t.Fatalf("file holds %q, want %q", s, want)
	}
}

func TestSinkBuffersUntilPreCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	task := startSink(t, map[string]string{"file": path})
	if err := task.Put(context.Background(), []*data.SinkRecord{sinkRecord("a", 0, 0, data.StringSchema, "one")}); err != nil {
		t.Fatal(err)
	}
	// A small Put stays buffered: one write per commit, not per record.
	if s := readFile(t, path); s != "" {
		t.Fatalf("file holds %q before PreCommit", s)
	}
	if _, err := task.PreCommit(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if s := readFile(t, path); s != "one\n" {
		t.Fatalf("file holds %q after PreCommit", s)
	}
}

// Large Puts are written in whole lines as the buffer fills, and Stop writes
// the rest.
func TestSinkLargeVolume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	task := startSink(t, map[string]string{"file": path})
	line := strings.Repeat("v", 999)
	const n = 500
	var recs []*data.SinkRecord
	for i := range n {
		recs = append(recs, sinkRecord("a", 0, int64(i), data.StringSchema, line))
	}
	if err := task.Put(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	mid := readFile(t, path)
	if len(mid) == 0 || len(mid)%1000 != 0 {
		t.Fatalf("after a 500 KB Put the file holds %d bytes; want whole lines written as the buffer filled", len(mid))
	}
	if err := task.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := readFile(t, path); s != strings.Repeat(line+"\n", n) {
		t.Fatalf("file holds %d bytes, want %d", len(s), n*1000)
	}
}

func TestSinkAppendsToExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(path, []byte("earlier\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := startSink(t, map[string]string{"file": path})
	if err := task.Put(context.Background(), []*data.SinkRecord{sinkRecord("a", 0, 0, data.StringSchema, "later")}); err != nil {
		t.Fatal(err)
	}
	if err := task.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := readFile(t, path); s != "earlier\nlater\n" {
		t.Fatalf("file holds %q", s)
	}
}

func TestSinkBadPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "out.txt")
	err := (&SinkTask{}).Start(context.Background(), nil, map[string]string{"file": path})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Start with %s: %v; want an error naming the path", path, err)
	}
}

func TestSinkStdout(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	task := &SinkTask{}
	err = task.Start(context.Background(), nil, map[string]string{})
	os.Stdout = old
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Put(context.Background(), []*data.SinkRecord{sinkRecord("a", 0, 0, data.StringSchema, "to stdout")}); err != nil {
		t.Fatal(err)
	}
	if _, err := task.PreCommit(context.Background(), nil); err != nil {
		t.Fatalf("PreCommit on a pipe: %v", err)
	}
	if err := task.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	var buf bytes.Buffer
	_ = r.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := buf.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "to stdout\n" {
		t.Fatalf("stdout got %q", buf.String())
	}
}

func TestSinkConnector(t *testing.T) {
	c := &SinkConnector{}
	props := map[string]string{"file": "/tmp/out", "topics": "a,b"}
	if err := c.Start(context.Background(), nil, props); err != nil {
		t.Fatal(err)
	}
	cfgs, err := c.TaskConfigs(context.Background(), 3)
	if err != nil || len(cfgs) != 3 {
		t.Fatalf("TaskConfigs(3) = %v, %v", cfgs, err)
	}
	for _, cfg := range cfgs {
		if cfg["file"] != "/tmp/out" || cfg["topics"] != "a,b" {
			t.Errorf("task config %v", cfg)
		}
	}
	names := sinkDef().Names()
	if len(names) != 1 || names[0] != "file" {
		t.Errorf("sink keys %v; Kafka's sink declares only file", names)
	}
	if ok, err := c.AlterOffsets(context.Background(), props, nil); !ok || err != nil {
		t.Errorf("AlterOffsets = %v, %v", ok, err)
	}
}

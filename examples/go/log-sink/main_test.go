package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/conformance"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

func TestConformance(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.log")
	recs := conformance.DefaultSinkRecords()
	conformance.Run(t, conformance.BuildGo(t, "."), conformance.Options{
		Classes: map[string]conformance.ClassOptions{
			"io.sluice.examples.LogSink": {
				ValidConfig:   map[string]string{"file": file},
				InvalidConfig: map[string]string{"file": ""},
				InvalidKeys:   []string{"file"},
				SinkRecords:   recs,
			},
		},
	})
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read the sink's file: %v", err)
	}
	var want strings.Builder
	for _, r := range recs {
		want.WriteString(r.Value.(string) + "\n")
	}
	if string(b) != want.String() {
		t.Fatalf("file holds\n%s\nwant\n%s", b, want.String())
	}
}

func TestText(t *testing.T) {
	s := &data.Schema{Type: data.StructType, Fields: []data.Field{
		{Name: "id", Index: 0, Schema: data.Int64Schema},
		{Name: "at", Index: 1, Schema: data.TimestampSchema(true)},
		{Name: "tags", Index: 2, Schema: &data.Schema{Type: data.Array, ValueSchema: data.StringSchema}},
	}}
	st := data.NewStruct(s).MustPut("id", int64(7)).MustPut("at", time.UnixMilli(0).UTC()).MustPut("tags", []any{"a", "b"})
	for _, tc := range []struct {
		in   any
		want string
	}{
		{"plain text", "plain text"},
		{[]byte("bytes"), "bytes"},
		{nil, "null"},
		{int64(42), "42"},
		{st, `{"at":"1970-01-01T00:00:00Z","id":7,"tags":["a","b"]}`},
		{map[string]any{"k": []byte{1, 2}}, `{"k":"AQI="}`},
	} {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

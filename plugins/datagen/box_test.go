package main

import (
	"bytes"
	"reflect"
	"runtime"
	"strconv"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// A boxed data.Raw behaves as any(data.Raw(b)) does, and stays valid after
// the boxes that made it moved on and the garbage collector ran.
func TestRawBoxes(t *testing.T) {
	var boxes rawBoxes
	var got []any
	for i := range 3 * rawBoxChunk {
		got = append(got, boxes.box([]byte("value "+strconv.Itoa(i))))
	}
	boxes = rawBoxes{}
	runtime.GC()
	want := reflect.TypeOf(data.Raw(nil))
	for i, v := range got {
		if reflect.TypeOf(v) != want {
			t.Fatalf("box %d holds a %T", i, v)
		}
		raw, ok := v.(data.Raw)
		if !ok || !bytes.Equal(raw, []byte("value "+strconv.Itoa(i))) {
			t.Fatalf("box %d holds %q", i, raw)
		}
		switch x := v.(type) {
		case data.Raw:
			if len(x) != len(raw) {
				t.Fatalf("box %d: type switch saw %q", i, x)
			}
		default:
			t.Fatalf("box %d: type switch saw %T", i, x)
		}
		if !data.ValueEqual(v, data.Raw(raw)) || !reflect.DeepEqual(v, any(data.Raw(raw))) {
			t.Fatalf("box %d differs from any(data.Raw(...))", i)
		}
	}
}

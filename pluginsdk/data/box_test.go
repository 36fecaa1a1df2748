package data_test

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// sameAsConverted fails unless got is, to every way of looking at an
// interface, the value want (any(x) of the same x).
func sameAsConverted(t *testing.T, name string, got, want any) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("%s: nil interface %v, want %v", name, got == nil, want == nil)
	}
	if reflect.TypeOf(got) != reflect.TypeOf(want) {
		t.Fatalf("%s: type %T, want %T", name, got, want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: %#v is not DeepEqual to %#v", name, got, want)
	}
	for _, f := range []string{"%v", "%#v", "%T", "%x", "%q"} {
		if g, w := fmt.Sprintf(f, got), fmt.Sprintf(f, want); g != w {
			t.Fatalf("%s: %s prints %s, want %s", name, f, g, w)
		}
	}
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	if gv.Kind() != wv.Kind() || gv.CanAddr() || gv.CanSet() {
		t.Fatalf("%s: reflect sees kind %v (addressable %v), want %v and not addressable", name, gv.Kind(), gv.CanAddr(), wv.Kind())
	}
	if gv.Kind() == reflect.Slice && (gv.IsNil() != wv.IsNil() || gv.Len() != wv.Len() || !bytes.Equal(gv.Bytes(), wv.Bytes())) {
		t.Fatalf("%s: reflect sees nil %v len %d, want nil %v len %d", name, gv.IsNil(), gv.Len(), wv.IsNil(), wv.Len())
	}
	// == panics on slices, alike for both; on int64 it compares values.
	if g, w := compare(got, want), compare(want, want); g != w {
		t.Fatalf("%s: == gives %q, want %q", name, g, w)
	}
}

// compare returns a == b, or the panic it raised.
func compare(a, b any) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = fmt.Sprint("panic: ", r)
		}
	}()
	return fmt.Sprint(a == b)
}

func TestBoxedValuesAreTheConvertedValues(t *testing.T) {
	for _, b := range [][]byte{nil, {}, []byte("x"), []byte("some bytes")} {
		slot := b
		v := data.BytesAt(&slot)
		sameAsConverted(t, fmt.Sprintf("bytes %#v", b), v, any(b))
		if got, ok := v.([]byte); !ok || !bytes.Equal(got, b) || (got == nil) != (b == nil) {
			t.Fatalf("bytes %#v: asserted %#v %v", b, got, ok)
		}
		if _, ok := v.(data.Raw); ok {
			t.Fatalf("bytes %#v: asserts as a Raw", b)
		}
		raw := data.Raw(b)
		r := data.RawAt(&raw)
		sameAsConverted(t, fmt.Sprintf("raw %#v", b), r, any(data.Raw(b)))
		switch x := r.(type) {
		case []byte:
			t.Fatalf("raw %#v: switches as a []byte", b)
		case data.Raw:
			if !bytes.Equal(x, b) || (x == nil) != (b == nil) {
				t.Fatalf("raw %#v: switched to %#v", b, x)
			}
		default:
			t.Fatalf("raw %#v: switches as %T", b, x)
		}
	}
	// The runtime boxes small int64s into a static table; both kinds
	// compare alike.
	for _, n := range []int64{0, 1, -1, 255, 256, 1 << 40, math.MaxInt64, math.MinInt64} {
		slot := n
		v := data.Int64At(&slot)
		sameAsConverted(t, fmt.Sprint("int64 ", n), v, any(n))
		if v != any(n) || v.(int64) != n {
			t.Fatalf("int64 %d: %v", n, v)
		}
		m := map[any]int{v: 1}
		if m[any(n)] != 1 || len(map[any]bool{v: true, any(n): true}) != 1 {
			t.Fatalf("int64 %d: not the same map key as any(int64)", n)
		}
		if !data.ValueEqual(v, any(n)) {
			t.Fatalf("int64 %d: ValueEqual says no", n)
		}
	}
	// A nil slice boxes as a []byte that is nil, not as the nil interface:
	// as converting it does.
	var none []byte
	if v := data.BytesAt(&none); v == nil || v.([]byte) != nil {
		t.Fatalf("nil bytes box as %#v", v)
	}
}

// An interface is a pointer into its block to the garbage collector: the
// block, and what its entries point at, live while the interface does,
// and not after.
func TestBoxesKeepTheirBlockAlive(t *testing.T) {
	t.Run("bytes", func(t *testing.T) {
		block := make([][]byte, 64)
		for i := range block {
			block[i] = []byte(fmt.Sprintf("entry %d", i))
		}
		// The last entries: interior pointers, far from the block's start.
		var boxes []any
		for i := 60; i < 64; i++ {
			boxes = append(boxes, data.BytesAt(&block[i]))
		}
		freed := watch(&block[0])
		block = nil
		churn()
		if freed.Load() {
			t.Fatal("the block was freed while boxes into it were in use")
		}
		for k, v := range boxes {
			if want := fmt.Sprintf("entry %d", 60+k); string(v.([]byte)) != want {
				t.Fatalf("box %d holds %q after collections, want %q", k, v, want)
			}
		}
		boxes = nil
		waitFreed(t, freed)
	})
	t.Run("int64", func(t *testing.T) {
		// A block without pointers: the garbage collector does not scan
		// it, but still keeps it alive.
		block := make([]int64, 512)
		for i := range block {
			block[i] = int64(i) * 1000
		}
		boxes := []any{data.Int64At(&block[300]), data.Int64At(&block[511])}
		freed := watch(&block[0])
		block = nil
		churn()
		if freed.Load() {
			t.Fatal("the block was freed while boxes into it were in use")
		}
		if boxes[0] != any(int64(300_000)) || boxes[1] != any(int64(511_000)) {
			t.Fatalf("boxes hold %v after collections", boxes)
		}
		boxes = nil
		waitFreed(t, freed)
	})
}

// flag is set by a cleanup.
type flag struct{ set chan struct{} }

func (f flag) Load() bool {
	select {
	case <-f.set:
		return true
	default:
		return false
	}
}

// watch returns a flag set once the object p starts is freed.
func watch[T any](p *T) flag {
	f := flag{make(chan struct{})}
	runtime.AddCleanup(p, func(c chan struct{}) { close(c) }, f.set)
	return f
}

// churn collects and allocates, so that freed memory is found and reused.
func churn() {
	for range 4 {
		runtime.GC()
		var junk [][]byte
		for i := range 2000 {
			junk = append(junk, bytes.Repeat([]byte{'#'}, 16+i%64))
		}
		runtime.KeepAlive(junk)
	}
	time.Sleep(10 * time.Millisecond) // cleanups run on their own goroutine
}

// waitFreed fails unless f is set soon: the test's other checks mean
// something only if dropping the boxes frees the block.
func waitFreed(t *testing.T, f flag) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !f.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the block was not freed once its boxes were dropped")
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// A reader who appends to the slice it got out of an interface appends to
// its own copy of the slot: the slot and its neighbour hold. Capped
// slices, as the callers hand out, keep the bytes after the slot's too.
func TestAppendingToABoxedSliceLeavesTheSlots(t *testing.T) {
	for _, capped := range []bool{false, true} {
		buf := []byte("aaaabbbb")
		block := make([][]byte, 2)
		block[0], block[1] = buf[:4], buf[4:8:8]
		if capped {
			block[0] = buf[:4:4]
		}
		v0, v1 := data.BytesAt(&block[0]), data.BytesAt(&block[1])
		x := v0.([]byte)
		x = append(x, "XY"...)
		x[0] = 'Z' // through the slot's array or a new one: either way not the slot
		if len(block[0]) != 4 || len(block[1]) != 4 || &block[1][0] != &buf[4] || len(v0.([]byte)) != 4 || len(v1.([]byte)) != 4 {
			t.Fatalf("capped %v: an append changed a slot: %q %q", capped, block[0], block[1])
		}
		wantFirst, wantSecond := "Zaaa", "XYbb"
		if capped {
			wantFirst, wantSecond = "aaaa", "bbbb"
		}
		if string(v0.([]byte)) != wantFirst || string(v1.([]byte)) != wantSecond || string(x) != "ZaaaXY" {
			t.Fatalf("capped %v: after the append the boxes hold %q %q (the reader %q), want %q %q", capped, v0, v1, x, wantFirst, wantSecond)
		}
	}
}

// Writing a slot changes what its interface holds: what a caller may do
// once the value came back to it, and must not before.
func TestWritingTheSlotChangesTheValue(t *testing.T) {
	slot := []int64{7}
	v := data.Int64At(&slot[0])
	slot[0] = 8
	if v != any(int64(8)) {
		t.Fatalf("after the slot was written the box holds %v", v)
	}
	raws := []data.Raw{data.Raw("one")}
	r := data.RawAt(&raws[0])
	raws[0] = data.Raw("two")
	if string(r.(data.Raw)) != "two" {
		t.Fatalf("after the slot was written the box holds %q", r)
	}
}

func TestBoxingANilPointerPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"BytesAt": func() { data.BytesAt(nil) },
		"RawAt":   func() { data.RawAt(nil) },
		"Int64At": func() { data.Int64At(nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s(nil) did not panic", name)
				}
			}()
			f()
		}()
	}
}

var sink any

func TestBoxingDoesNotAllocate(t *testing.T) {
	bs, raw, n := make([][]byte, 1), make([]data.Raw, 1), make([]int64, 1)
	bs[0], raw[0], n[0] = []byte("abc"), data.Raw("abc"), 1<<40
	for name, f := range map[string]func(){
		"BytesAt": func() { sink = data.BytesAt(&bs[0]) },
		"RawAt":   func() { sink = data.RawAt(&raw[0]) },
		"Int64At": func() { sink = data.Int64At(&n[0]) },
	} {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s: %v allocations", name, a)
		}
	}
	// What it saves: the conversion allocates.
	if a := testing.AllocsPerRun(100, func() { sink = any(bs[0]) }); a != 1 {
		t.Errorf("converting a []byte: %v allocations, want 1", a)
	}
}

func BenchmarkBytesAt(b *testing.B) {
	block := make([][]byte, 1024)
	for i := range block {
		block[i] = []byte("value")
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sink = data.BytesAt(&block[i%len(block)])
	}
}

func BenchmarkBytesConvert(b *testing.B) {
	block := make([][]byte, 1024)
	for i := range block {
		block[i] = []byte("value")
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sink = any(block[i%len(block)])
	}
}

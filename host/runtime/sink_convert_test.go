package runtime

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/convert"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// A boxed []byte is what converting it to any gives: the same slice (no
// copy), a []byte to type switches, reflection and comparison, across
// blocks; nil bytes are the nil interface. The boxes outlive the boxer
// and a garbage collection.
func TestBytesBoxes(t *testing.T) {
	const n = 3*bytesBoxBlock + 7
	in := make([][]byte, n)
	for i := range in {
		switch i % 5 {
		case 0:
			in[i] = nil
		case 1:
			in[i] = []byte{}
		default:
			in[i] = fmt.Appendf(make([]byte, 0, 64), "value %d", i)
		}
	}
	boxed := func() []any {
		var bb bytesBoxes
		out := make([]any, n)
		for i, b := range in {
			out[i] = bb.box(b)
		}
		return out
	}()
	runtime.GC()
	// Garbage where a freed block would be reused.
	junk := make([][]byte, 0, 4*n)
	for range 4 * n {
		junk = append(junk, bytes.Repeat([]byte{0xa5}, 24))
	}
	runtime.GC()
	for i, v := range boxed {
		want := in[i]
		if want == nil {
			if v != nil {
				t.Fatalf("box %d: nil bytes boxed as %#v", i, v)
			}
			continue
		}
		if !reflect.DeepEqual(v, any(want)) || reflect.TypeOf(v) != reflect.TypeFor[[]byte]() {
			t.Fatalf("box %d: %#v (%T), want %#v", i, v, v, want)
		}
		switch x := v.(type) {
		case data.Raw:
			t.Fatalf("box %d is data.Raw", i)
		case []byte:
			if len(x) != len(want) || cap(x) != cap(want) || unsafe.SliceData(x) != unsafe.SliceData(want) {
				t.Fatalf("box %d: len %d cap %d at %p, want %d %d at %p", i, len(x), cap(x), unsafe.SliceData(x), len(want), cap(want), unsafe.SliceData(want))
			}
		default:
			t.Fatalf("box %d: %T", i, v)
		}
		if got := fmt.Sprint(v); got != fmt.Sprint(want) {
			t.Fatalf("box %d prints %s", i, got)
		}
	}
	runtime.KeepAlive(junk)
}

// Only ByteArrayConverter is done by the runner; any other converter is
// called.
// A converted batch's boxes are the batch's alone. franz-go slices keys
// and values out of its fetch buffers, so a box kept by the task keeps a
// whole buffer alive: once a batch is dropped, nothing of the task may
// still refer to its bytes, neither while the next batch lives (their
// boxes share no block) nor when the task goes idle after it.
func TestBytesBoxesReleaseFetch(t *testing.T) {
	conv := convert.ByteArrayConverter{}
	task := &sinkTask{cfg: SinkConfig{Pipeline: Pipeline{KeyConverter: conv, ValueConverter: conv, HeaderConverter: conv}},
		bytesKeys: true, bytesValues: true}
	// fetched converts n records sliced out of a fetch buffer of their
	// own; the weak pointer tells whether the buffer is still reachable.
	fetched := func(n int) (*sinkBatch, weak.Pointer[byte]) {
		fetch := make([]byte, 8<<20)
		recs := make([]*kgo.Record, n)
		for i := range recs {
			at := 100 * i
			recs[i] = &kgo.Record{Topic: "t", Offset: int64(i),
				Key: fetch[at : at+10 : at+10], Value: fetch[at+10 : at+100 : at+100]}
		}
		b, err := task.convert(context.Background(), recs)
		if err != nil {
			t.Fatal(err)
		}
		if b.put.Len() != n {
			t.Fatalf("%d records put, want %d", b.put.Len(), n)
		}
		return b, weak.Make(&fetch[0])
	}
	gc := func() {
		runtime.GC()
		runtime.GC()
	}

	first, firstFetch := fetched(3)
	gc()
	if firstFetch.Value() == nil {
		t.Fatal("the fetch buffer was freed while its batch lives")
	}
	runtime.KeepAlive(first)
	first = nil
	second, secondFetch := fetched(2)
	gc()
	if firstFetch.Value() != nil {
		t.Error("the first batch's fetch buffer is still reachable after the batch was dropped, while the next batch lives")
	}
	if secondFetch.Value() == nil {
		t.Fatal("the second fetch buffer was freed while its batch lives")
	}
	if v, ok := second.put.Records()[1].Value.([]byte); !ok || len(v) != 90 {
		t.Fatalf("second batch's last value: %#v", second.put.Records()[1].Value)
	}
	second = nil
	gc()
	if secondFetch.Value() != nil {
		t.Error("an idle task keeps the last batch's fetch buffer reachable")
	}
	runtime.KeepAlive(task) // the task lives on, idle
}

func TestPassesBytes(t *testing.T) {
	str, err := convert.New("org.apache.kafka.connect.storage.StringConverter", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName, err := convert.New("org.apache.kafka.connect.converters.ByteArrayConverter", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		c    Converter
		want bool
	}{
		{convert.ByteArrayConverter{}, true},
		{&convert.ByteArrayConverter{}, true},
		{byName, true},
		{str, false},
		{prefixConverter{}, false},
		{bytesConverter{}, false},
	} {
		if got := passesBytes(c.c); got != c.want {
			t.Errorf("%T: %v", c.c, got)
		}
	}
	cfg := SinkConfig{ID: TaskID{"snk", 0}, Launch: newFakeSink(&events{}).launch, Topics: []string{"t"},
		Pipeline: Pipeline{KeyConverter: byName, ValueConverter: str, HeaderConverter: convert.ByteArrayConverter{}}}
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st := task.(*sinkTask); !st.bytesKeys || st.bytesValues {
		t.Fatalf("bytes keys %v, bytes values %v", st.bytesKeys, st.bytesValues)
	}
}

// consumedMatrix is consumed records of every shape ByteArrayConverter
// sees: null, empty and long keys and values (a null value is a
// tombstone), with and without headers (a null header value among them),
// zero, negative and real timestamps.
func consumedMatrix() []*kgo.Record {
	bodies := [][]byte{nil, {}, []byte("k"), bytes.Repeat([]byte{0, 0xff, 'x'}, 700)}
	headers := [][]kgo.RecordHeader{nil, {{Key: "h", Value: []byte("hv")}, {Key: "h", Value: nil}, {Key: "e", Value: []byte{}}}}
	stamps := []time.Time{{}, time.UnixMilli(-5), time.UnixMilli(0), time.UnixMilli(1700000000123)}
	var out []*kgo.Record
	i := 0
	for _, k := range bodies {
		for _, v := range bodies {
			for _, hs := range headers {
				for _, ts := range stamps {
					out = append(out, &kgo.Record{Topic: []string{"t", "tôpic"}[i%2], Partition: int32(i % 3), Offset: int64(i * 1000),
						Key: k, Value: v, Headers: hs, Timestamp: ts})
					i++
				}
			}
		}
	}
	return out
}

// The runner's ByteArrayConverter path makes exactly the records the
// converter does, keys and values alike, through the transforms and into
// the bytes of the Put; and every key and value is given as the consumed
// bytes themselves.
func TestSinkByteArrayPathMatchesConverter(t *testing.T) {
	recs := consumedMatrix()
	conv := convert.ByteArrayConverter{}
	pipeline := Pipeline{KeyConverter: conv, ValueConverter: conv, HeaderConverter: conv}
	tagged := Pipeline{KeyConverter: conv, ValueConverter: conv, HeaderConverter: conv,
		Transforms: transformFunc(func(r *data.Record) (*data.Record, error) {
			out := *r
			out.Topic += "-x"
			if b, ok := r.Value.([]byte); ok && len(b) == 1 {
				return nil, nil // dropped
			}
			return &out, nil
		})}
	for _, p := range []Pipeline{pipeline, tagged} {
		called := &sinkTask{cfg: SinkConfig{Pipeline: p}}
		for _, flags := range [][2]bool{{true, true}, {true, false}, {false, true}} {
			own := &sinkTask{cfg: SinkConfig{Pipeline: p}, bytesKeys: flags[0], bytesValues: flags[1]}
			want, err := called.convert(context.Background(), recs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := own.convert(context.Background(), recs)
			if err != nil {
				t.Fatal(err)
			}
			if got.bytes != recordBytes(recs) || want.bytes != got.bytes || len(got.consumed) != len(recs) {
				t.Fatalf("batch of %d bytes from %d records; want %d bytes from %d", got.bytes, len(got.consumed), recordBytes(recs), len(recs))
			}
			gr, wr := got.put.Records(), want.put.Records()
			if len(gr) != len(wr) || len(wr) == 0 {
				t.Fatalf("%d records, the converter made %d", len(gr), len(wr))
			}
			for i := range wr {
				if !reflect.DeepEqual(gr[i], wr[i]) {
					t.Fatalf("flags %v, record %d:\n%+v\nthe converter's\n%+v", flags, i, gr[i], wr[i])
				}
			}
			gb, err := got.put.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			wb, err := want.put.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gb, wb) {
				t.Fatalf("flags %v: the Put's bytes differ", flags)
			}
		}
	}
	own := &sinkTask{cfg: SinkConfig{Pipeline: pipeline}, bytesKeys: true, bytesValues: true}
	b, err := own.convert(context.Background(), recs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range b.put.Records() {
		kr := recs[i]
		for _, c := range []struct {
			got  any
			want []byte
		}{{r.Key, kr.Key}, {r.Value, kr.Value}} {
			if c.want == nil {
				if c.got != nil {
					t.Fatalf("record %d: null bytes as %#v", i, c.got)
				}
				continue
			}
			if g, ok := c.got.([]byte); !ok || len(g) != len(c.want) || unsafe.SliceData(g) != unsafe.SliceData(c.want) {
				t.Fatalf("record %d: %#v is not the consumed bytes", i, c.got)
			}
		}
		if r.KeySchema != data.OptionalBytesSchema || r.ValueSchema != data.OptionalBytesSchema {
			t.Fatalf("record %d: schemas %v, %v", i, r.KeySchema, r.ValueSchema)
		}
	}
}

// A sink task with ByteArrayConverter delivers null keys, tombstones,
// empty values and headers as the plugin's records, through shared memory
// and inline alike.
func TestSinkByteArrayDelivers(t *testing.T) {
	c := newCluster(t, 1, map[string]int32{"a": 1})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	const n = 120
	var produced []*kgo.Record
	for i := range n {
		r := &kgo.Record{Topic: "a", Value: fmt.Appendf(nil, "v%d", i)}
		switch i % 4 {
		case 0:
			r.Key = nil
		case 1:
			r.Key, r.Value = []byte("gone"), nil
		case 2:
			r.Key, r.Value = []byte{}, []byte{}
		default:
			r.Key = fmt.Appendf(nil, "k%d", i)
			r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("hv")}}
		}
		produced = append(produced, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, produced...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	f := newFakeSink(&events{})
	cfg := sinkConfig(c, f, newRecListener(), "a")
	conv := convert.ByteArrayConverter{}
	cfg.Pipeline = Pipeline{KeyConverter: conv, ValueConverter: conv, HeaderConverter: conv}
	cfg.MaxPollRecords = 10
	task, err := NewSinkTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := runTask(t, task)
	eventually(t, "all records delivered", func() bool { return len(f.deliveredList()) >= n })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	shared, calls := f.shared, f.calls
	f.mu.Unlock()
	if shared == 0 || shared == calls {
		t.Errorf("%d of %d Puts through shared memory; want some of each", shared, calls)
	}
	got := f.deliveredList()
	if len(got) != n {
		t.Fatalf("%d records delivered, want %d", len(got), n)
	}
	// What the plugin reads: bytes as given, nulls as nulls (a null or
	// an empty bytes value decodes as []byte or nil, as the wire says).
	asBytes := func(v any) ([]byte, bool) {
		if v == nil {
			return nil, true
		}
		b, ok := v.([]byte)
		return b, ok && b != nil
	}
	for i, r := range got {
		p := produced[r.Offset]
		k, kok := asBytes(r.Key)
		v, vok := asBytes(r.Value)
		if int(r.Offset) != i || !kok || !vok || !bytes.Equal(k, p.Key) || !bytes.Equal(v, p.Value) ||
			(p.Key == nil) != (r.Key == nil) || (p.Value == nil) != (r.Value == nil) {
			t.Fatalf("record %d: key %#v value %#v, produced %q %q", i, r.Key, r.Value, p.Key, p.Value)
		}
		if r.KeySchema == nil || r.KeySchema.Type != data.Bytes || !r.KeySchema.Optional ||
			r.ValueSchema == nil || r.ValueSchema.Type != data.Bytes || !r.ValueSchema.Optional {
			t.Fatalf("record %d: schemas %v, %v", i, r.KeySchema, r.ValueSchema)
		}
		wantHeaders := len(p.Headers)
		if len(r.Headers) != wantHeaders || (wantHeaders == 1 && !bytes.Equal(r.Headers[0].Value.([]byte), []byte("hv"))) {
			t.Fatalf("record %d: headers %v", i, r.Headers)
		}
		if r.TimestampType != data.CreateTime || r.Timestamp.IsZero() {
			t.Fatalf("record %d: timestamp %v (%v)", i, r.Timestamp, r.TimestampType)
		}
	}
	if !slices.ContainsFunc(got, func(r *data.SinkRecord) bool { return r.Key == nil }) {
		t.Fatal("no null key delivered")
	}
}

// Fresh records of partitions that are not open are left out of the
// batch altogether (neither delivered nor counted as consumed), group by
// group, a partition's groups wherever they come; nothing open, or a
// closed task, gives no batch.
func TestSinkConvertNewSkipsClosedPartitions(t *testing.T) {
	var recs []*kgo.Record
	add := func(topic string, partition int32, from, n int) {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Offset: int64(from + i),
				Key: []byte("k"), Value: fmt.Appendf(nil, "%s-%d@%d", topic, partition, from+i),
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}})
		}
	}
	add("a", 0, 10, 3)
	add("a", 1, 0, 2)
	add("a", 0, 13, 2)
	add("a", 2, 5, 1)
	add("b", 0, 7, 2)
	add("a", 1, 2, 1)
	conv := convert.ByteArrayConverter{}
	task := &sinkTask{cfg: SinkConfig{Pipeline: Pipeline{KeyConverter: conv, ValueConverter: conv, HeaderConverter: conv}},
		bytesKeys: true, bytesValues: true,
		assigned: map[topicPartition]bool{{"a", 0}: true, {"a", 2}: true, {"b", 1}: true}}
	b, err := task.convertNew(context.Background(), slices.Clone(recs))
	if err != nil {
		t.Fatal(err)
	}
	var open []*kgo.Record
	for _, r := range recs {
		if task.assigned[topicPartition{r.Topic, r.Partition}] {
			open = append(open, r)
		}
	}
	if !slices.Equal(b.consumed, open) || b.bytes != recordBytes(open) {
		t.Fatalf("consumed %d records of %d bytes, want %d of %d", len(b.consumed), b.bytes, len(open), recordBytes(open))
	}
	var got []string
	for _, r := range b.put.Records() {
		got = append(got, string(r.Value.([]byte)))
	}
	if want := []string{"a-0@10", "a-0@11", "a-0@12", "a-0@13", "a-0@14", "a-2@5"}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	if want := map[topicPartition]int64{{"a", 0}: 15, {"a", 2}: 6}; !maps.Equal(b.next, want) {
		t.Fatalf("next %v, want %v", b.next, want)
	}
	task.assigned = map[topicPartition]bool{{"c", 0}: true}
	if b, err := task.convertNew(context.Background(), slices.Clone(recs)); b != nil || err != nil {
		t.Fatalf("nothing open: %v, %v", b, err)
	}
	task.assigned = map[topicPartition]bool{{"a", 0}: true}
	task.closed = true
	if b, err := task.convertNew(context.Background(), slices.Clone(recs)); b != nil || err != nil {
		t.Fatalf("closed: %v, %v", b, err)
	}
	// Without openOnly, every record is taken.
	task.closed = false
	b, err = task.convertMore(context.Background(), nil, recs, false)
	if err != nil || !slices.Equal(b.consumed, recs) || b.put.Len() != len(recs) || len(b.next) != 4 || b.next[topicPartition{"a", 1}] != 3 {
		t.Fatalf("all records: %d consumed, %d put, next %v (%v)", len(b.consumed), b.put.Len(), b.next, err)
	}
}

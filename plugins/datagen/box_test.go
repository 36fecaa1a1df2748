package main

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// A boxed value is the value any(x) gives, to every way of looking at it,
// and keeps its value across blocks and garbage collections.
func TestBoxedValuesAreOrdinaryInterfaces(t *testing.T) {
	raws := rawBoxer{per: 3}
	var got []any
	for i := range 10 {
		got = append(got, raws.box(data.Raw(fmt.Sprintf("value %d", i))))
	}
	runtime.GC()
	runtime.GC()
	for i := range 10 {
		want := any(data.Raw(fmt.Sprintf("value %d", i)))
		r, ok := got[i].(data.Raw)
		if !ok || string(r) != fmt.Sprintf("value %d", i) || !reflect.DeepEqual(got[i], want) {
			t.Fatalf("raw %d: %#v, want %#v", i, got[i], want)
		}
		if fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Fatalf("%d prints as %v, want %v", i, got[i], want)
		}
		if reflect.TypeOf(got[i]) != reflect.TypeFor[data.Raw]() {
			t.Fatalf("%d: type %T", i, got[i])
		}
	}
	// Three to a block: four blocks.
	if len(raws.block) != 2 {
		t.Fatalf("%d slots left in the last block, want 2", len(raws.block))
	}
}

func TestNoZeroHasRoomAndNoLength(t *testing.T) {
	for _, n := range []int{1, 100, arenaChunk, 3*arenaChunk + 5} {
		b := noZero(n)
		if len(b) != 0 || cap(b) != n {
			t.Fatalf("noZero(%d): len %d cap %d", n, len(b), cap(b))
		}
		b = append(b, bytes.Repeat([]byte{'x'}, n)...)
		if cap(b) != n || bytes.Count(b, []byte{'x'}) != n {
			t.Fatalf("noZero(%d) did not take %d bytes in place", n, n)
		}
	}
}

// Poll's records (boxed keys, values and offsets, values in the arena)
// encode to the bytes the same records with ordinary interface values,
// fresh slices and maps of their own give, both through the SDK's batch
// writer and through the generated messages; and they keep doing so after
// later polls and garbage collections.
func TestPolledRecordsEncodeAsOrdinaryRecords(t *testing.T) {
	for _, size := range []string{"0", "1024", "20000"} {
		t.Run("record.size="+size, func(t *testing.T) {
			task := startTask(t, nil, map[string]string{topicKey: "t", formatKey: formatRaw, quickstartKey: "pageviews",
				keyFieldKey: "pageid", recordSizeKey: size, batchSizeKey: "300"})
			first := pollCtx(t, task, time.Second)
			plain := make([]*data.SourceRecord, len(first))
			for i, r := range first {
				c := *r
				c.Key = data.Raw(bytes.Clone(r.Key.(data.Raw)))
				c.Value = data.Raw(bytes.Clone(r.Value.(data.Raw)))
				c.SourcePartition = map[string]any{taskField: r.SourcePartition[taskField].(int64)}
				c.SourceOffset = map[string]any{seqField: r.SourceOffset[seqField].(int64)}
				plain[i] = &c
			}
			want := encodeBoth(t, plain)
			for range 20 {
				pollCtx(t, task, time.Second)
			}
			runtime.GC()
			if got := encodeBoth(t, first); !bytes.Equal(got, want) {
				t.Fatalf("polled records encode to %d bytes that differ from the %d of the same records made plainly", len(got), len(want))
			}
			for i, r := range first {
				if r.SourceOffset[seqField] != any(int64(i)) {
					t.Fatalf("record %d: offset %v", i, r.SourceOffset)
				}
			}
		})
	}
}

// encodeBoth returns the batch writer's encoding of recs after checking
// that protobuf's encoding of the generated messages is the same.
func encodeBoth(t *testing.T, recs []*data.SourceRecord) []byte {
	t.Helper()
	var b wire.SourceBatch
	for _, r := range recs {
		if ok, err := b.Add(r, 64<<20); !ok || err != nil {
			t.Fatalf("add: %v %v", ok, err)
		}
	}
	fused, err := b.Marshal(7)
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.Proto(7)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fused, pb) {
		t.Fatal("the batch writer and protobuf disagree")
	}
	return fused
}

// A task whose records come back (RecycleRecords) makes the records the
// generator makes, byte for byte on the wire, in every format; records it
// was not given back stay as they were; and records come back in parts,
// as the SDK splits batches.
func TestRecycledRecordsAreRefilledExactly(t *testing.T) {
	for _, c := range []map[string]string{
		{formatKey: formatRaw, quickstartKey: "pageviews", keyFieldKey: "pageid", recordSizeKey: "1024"},
		{formatKey: formatRaw, quickstartKey: "orders", recordSizeKey: "0"},
		{formatKey: formatRaw, quickstartKey: "users", keyFieldKey: "userid", recordSizeKey: "20000"},
		{formatKey: formatStruct, quickstartKey: "pageviews", keyFieldKey: "pageid", recordSizeKey: "300"},
	} {
		props := map[string]string{topicKey: "t", seedKey: "9", batchSizeKey: "90"}
		maps.Copy(props, c)
		t.Run(c[formatKey]+"/"+c[quickstartKey]+"/"+c[recordSizeKey], func(t *testing.T) {
			recycled := startTask(t, nil, props)
			// The records as the generator makes them (what the golden
			// digests pin), each new.
			ref := newGenerator(mustSettings(t, props))
			part := map[string]any{taskField: int64(0)}
			type kept struct {
				recs []*data.SourceRecord
				enc  []byte
			}
			var keep []kept
			seq := int64(0)
			for round := range 12 {
				got := pollCtx(t, recycled, time.Second)
				if len(got) != 90 {
					t.Fatalf("round %d: %d records", round, len(got))
				}
				want := make([]*data.SourceRecord, len(got))
				for i := range want {
					s := seq + int64(i)
					ks, k, vs, v := ref.record(s)
					want[i] = &data.SourceRecord{Record: data.Record{Topic: "t", Partition: data.NoPartition, KeySchema: ks, Key: k, ValueSchema: vs, Value: v},
						SourcePartition: part, SourceOffset: map[string]any{seqField: s}}
				}
				if g, w := encodeBoth(t, got), encodeBoth(t, want); !bytes.Equal(g, w) {
					t.Fatalf("round %d: the records encode otherwise than the generator's", round)
				}
				for _, r := range got {
					if r.SourceOffset[seqField] != any(seq) {
						t.Fatalf("round %d: offset %v, want seq %d", round, r.SourceOffset, seq)
					}
					seq++
				}
				// Give back all but a few, in two parts; keep the rest
				// for a while.
				recycled.RecycleRecords(got[:40])
				recycled.RecycleRecords(got[40:80])
				keep = append(keep, kept{got[80:], encodeBoth(t, got[80:])})
				if round%4 == 3 {
					for _, k := range keep {
						if !bytes.Equal(encodeBoth(t, k.recs), k.enc) {
							t.Fatalf("round %d: records not given back changed", round)
						}
						recycled.RecycleRecords(k.recs)
					}
					keep = nil
				}
			}
			if len(recycled.free) == 0 {
				t.Fatal("nothing was given back to fill")
			}
		})
	}
}

// RecycleRecords takes back only records the task made: a record of
// another task, or one the task never made, panics before it is taken
// (filling it as a polled would write over memory that is not one).
func TestRecycleRecordsRefusesForeignRecords(t *testing.T) {
	props := map[string]string{topicKey: "t", seedKey: "9", batchSizeKey: "10", formatKey: formatRaw, quickstartKey: "orders"}
	task, other := startTask(t, nil, props), startTask(t, nil, props)
	own, theirs := pollCtx(t, task, time.Second), pollCtx(t, other, time.Second)
	if len(own) != 10 || len(theirs) != 10 {
		t.Fatalf("%d and %d records", len(own), len(theirs))
	}
	made := &data.SourceRecord{Record: data.Record{Topic: "t", Value: data.Raw("v")},
		SourcePartition: map[string]any{taskField: int64(0)}, SourceOffset: map[string]any{seqField: int64(0)}}
	for _, c := range []struct {
		name string
		rec  *data.SourceRecord
	}{
		{"another task's", theirs[0]},
		{"one made elsewhere", made},
		{"one without a source partition", &data.SourceRecord{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			free := len(task.free)
			defer func() {
				if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "did not make") {
					t.Fatalf("recovered %v, want the foreign record refused", v)
				}
				if len(task.free) != free {
					t.Fatalf("%d records taken, want none", len(task.free)-free)
				}
			}()
			task.RecycleRecords([]*data.SourceRecord{c.rec})
		})
	}
	task.RecycleRecords(own)
	if len(task.free) != len(own) {
		t.Fatalf("%d of its own %d records taken back", len(task.free), len(own))
	}
}

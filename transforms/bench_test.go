package transforms

import (
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// BenchmarkChainHoistInsert is the test_transformations chain on a line of
// text: the per-record cost a FileStreamSource pays for it.
func BenchmarkChainHoistInsert(b *testing.B) {
	chain, err := Chain(map[string]string{
		"transforms": "h,i", "transforms.h.type": "HoistField$Value", "transforms.h.field": "content",
		"transforms.i.type": "InsertField$Value", "transforms.i.timestamp.field": "ts",
	})
	if err != nil {
		b.Fatal(err)
	}
	r := &data.Record{Topic: "t", ValueSchema: data.StringSchema, Value: "a line of text", Timestamp: time.UnixMilli(1)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chain.Apply(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplaceFieldStruct renames and drops fields of a 10-field struct.
func BenchmarkReplaceFieldStruct(b *testing.B) {
	sb := data.StructBuilder()
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		sb.Field(n, data.Int64Schema)
	}
	s := sb.MustBuild()
	st := data.NewStruct(s)
	for i := range s.Fields {
		st.SetIndex(i, int64(i))
	}
	tr, err := New("ReplaceField$Value", props("exclude", "b,c", "renames", "a:x"))
	if err != nil {
		b.Fatal(err)
	}
	r := &data.Record{Topic: "t", ValueSchema: s, Value: st}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.Apply(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFilterPredicate is a record that a TopicNameMatches predicate
// lets through untouched.
func BenchmarkFilterPredicate(b *testing.B) {
	chain, err := Chain(filterOnTopic(false))
	if err != nil {
		b.Fatal(err)
	}
	r := &data.Record{Topic: "bar-topic", Value: "v"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chain.Apply(r); err != nil {
			b.Fatal(err)
		}
	}
}

package transforms

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// golden is one transformation case: a record in, the record out (or
// dropped, or an error with Kafka's message).
type golden struct {
	name  string
	class string
	props map[string]string
	// in builds the input; it is called twice so that the test can check
	// the transformation left its input as it was.
	in func() *data.Record
	// offset, when set, applies the transformation as to a sink record.
	offset *int64
	want   *data.Record
	drop   bool
	// err is the exact message expected; errClass the Java class.
	err      string
	errClass string
}

func off(n int64) *int64 { return &n }

func runGolden(t *testing.T, cases []golden) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := New(c.class, c.props)
			if err != nil {
				t.Fatalf("New(%s): %v", c.class, err)
			}
			in := c.in()
			var got *data.Record
			if c.offset != nil {
				st, ok := tr.(SinkTransformation)
				if !ok {
					t.Fatalf("%s is not a SinkTransformation", c.class)
				}
				got, err = st.ApplySink(in, *c.offset)
			} else {
				got, err = tr.Apply(in)
			}
			if ok, diff := recordsEqual(in, c.in()); !ok {
				t.Errorf("input record modified: %s", diff)
			}
			if c.err != "" {
				if err == nil {
					t.Fatalf("got %v, want error %q", describe(got), c.err)
				}
				if err.Error() != c.err {
					t.Fatalf("error %q, want %q", err.Error(), c.err)
				}
				if c.errClass != "" {
					var ex *Exception
					if !errors.As(err, &ex) || ex.Class != c.errClass {
						t.Fatalf("error class of %v is not %s", err, c.errClass)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if c.drop {
				if got != nil {
					t.Fatalf("record not dropped: %s", describe(got))
				}
				return
			}
			if got == nil {
				t.Fatalf("record dropped, want %s", describe(c.want))
			}
			if ok, diff := recordsEqual(got, c.want); !ok {
				t.Fatalf("%s\n got: %s\nwant: %s", diff, describe(got), describe(c.want))
			}
			// A struct out must be valid for the schema out.
			for _, p := range [][2]any{{got.KeySchema, got.Key}, {got.ValueSchema, got.Value}} {
				if s, _ := p[0].(*data.Schema); s != nil && p[1] != nil {
					if err := data.Validate(s, p[1]); err != nil {
						t.Fatalf("output invalid for its schema: %v", err)
					}
				}
			}
		})
	}
}

func describe(r *data.Record) string {
	if r == nil {
		return "<nil>"
	}
	return recordString(r) + " keySchema=" + schemaDump(r.KeySchema) + " valueSchema=" + schemaDump(r.ValueSchema)
}

// schemaDump prints a schema with everything SchemaEqual compares.
func schemaDump(s *data.Schema) string {
	if s == nil {
		return "null"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "{%s opt=%v", upperType(s.Type), s.Optional)
	if s.HasName() {
		fmt.Fprintf(&b, " name=%q", s.Name)
	}
	if s.Version != nil {
		fmt.Fprintf(&b, " v=%d", *s.Version)
	}
	if s.HasDoc() {
		fmt.Fprintf(&b, " doc=%q", s.Doc)
	}
	if len(s.Parameters) > 0 {
		fmt.Fprintf(&b, " params=%v", s.Parameters)
	}
	if s.Default != nil {
		fmt.Fprintf(&b, " default=%s", data.FormatValue(s.Default))
	}
	for _, f := range s.Fields {
		fmt.Fprintf(&b, " %s:%s", f.Name, schemaDump(f.Schema))
	}
	if s.KeySchema != nil {
		b.WriteString(" key=" + schemaDump(s.KeySchema))
	}
	if s.ValueSchema != nil {
		b.WriteString(" value=" + schemaDump(s.ValueSchema))
	}
	b.WriteString("}")
	return b.String()
}

func recordsEqual(a, b *data.Record) (bool, string) {
	switch {
	case a.Topic != b.Topic:
		return false, fmt.Sprintf("topic %q != %q", a.Topic, b.Topic)
	case a.Partition != b.Partition:
		return false, fmt.Sprintf("partition %d != %d", a.Partition, b.Partition)
	case !a.Timestamp.Equal(b.Timestamp):
		return false, fmt.Sprintf("timestamp %v != %v", a.Timestamp, b.Timestamp)
	case !data.SchemaEqual(a.KeySchema, b.KeySchema):
		return false, "key schema " + schemaDump(a.KeySchema) + " != " + schemaDump(b.KeySchema)
	case !data.ValueEqual(a.Key, b.Key):
		return false, "key " + data.FormatValue(a.Key) + " != " + data.FormatValue(b.Key)
	case !data.SchemaEqual(a.ValueSchema, b.ValueSchema):
		return false, "value schema " + schemaDump(a.ValueSchema) + " != " + schemaDump(b.ValueSchema)
	case !data.ValueEqual(a.Value, b.Value):
		return false, "value " + data.FormatValue(a.Value) + " != " + data.FormatValue(b.Value)
	case len(a.Headers) != len(b.Headers):
		return false, fmt.Sprintf("%d headers != %d", len(a.Headers), len(b.Headers))
	}
	for i := range a.Headers {
		ha, hb := a.Headers[i], b.Headers[i]
		if ha.Key != hb.Key || !data.SchemaEqual(ha.Schema, hb.Schema) || !data.ValueEqual(ha.Value, hb.Value) {
			return false, fmt.Sprintf("header %d: %s=%s (%s) != %s=%s (%s)", i, ha.Key, data.FormatValue(ha.Value),
				schemaDump(ha.Schema), hb.Key, data.FormatValue(hb.Value), schemaDump(hb.Schema))
		}
	}
	return true, ""
}

var ts1000 = time.UnixMilli(1000).UTC()

// rec builds a record on topic "test", partition 0, timestamp 1000 ms.
func rec(keySchema *data.Schema, key any, valueSchema *data.Schema, value any) *data.Record {
	return &data.Record{Topic: "test", Partition: 0, KeySchema: keySchema, Key: key,
		ValueSchema: valueSchema, Value: value, Timestamp: ts1000}
}

func valueRec(s *data.Schema, v any) *data.Record { return rec(nil, nil, s, v) }

func keyRec(s *data.Schema, k any) *data.Record { return rec(s, k, nil, nil) }

func ver(n int32) *int32 { return &n }

func mustStruct(s *data.Schema, kv ...any) *data.Struct {
	st := data.NewStruct(s)
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			continue // left unset; MustPut refuses null for a required field
		}
		st.MustPut(kv[i].(string), kv[i+1])
	}
	return st
}

func props(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// copyBasics (SchemaUtil.copySchemaBasics) keeps the order of the
// parameters it copies, so that a transformed schema's JSON lists them as
// the source's did.
func TestCopyBasicsKeepsParameterOrder(t *testing.T) {
	src := data.NewSchemaBuilder(data.StructType).Name("row").
		Parameter("z", "1").Parameter("a", "2").MustBuild()
	out := copyBasics(src, data.StructType)
	if got := out.ParameterKeys(); len(got) != 2 || got[0] != "z" || got[1] != "a" {
		t.Fatalf("keys %v, want [z a]", got)
	}
	out.Parameters["z"] = "changed"
	if src.Parameters["z"] != "1" {
		t.Fatal("the copy shares its parameters with the source")
	}
}

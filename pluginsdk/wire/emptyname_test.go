package wire

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// emptyNamed is a struct schema whose name and doc were set to "" (Kafka
// Connect's name() and doc() are then "", not null), with a field whose
// schema has neither.
func emptyNamed(t testing.TB) *data.Schema {
	t.Helper()
	return data.StructBuilder().Name("").Doc("").Field("id", data.Int64Schema).MustBuild()
}

func checkEmptyNamed(t *testing.T, where string, s *data.Schema) {
	t.Helper()
	if !s.HasName() || !s.HasDoc() || s.Name != "" || s.Doc != "" {
		t.Fatalf("%s: name %q (set %v), doc %q (set %v); want both set to \"\"", where, s.Name, s.HasName(), s.Doc, s.HasDoc())
	}
	if f := s.Field("id"); f == nil || f.Schema.HasName() || f.Schema.HasDoc() {
		t.Fatalf("%s: the field's schema gained a name or doc: %+v", where, f)
	}
}

// A name or doc set to "" crosses the contract as present (the proto
// fields are optional), and one not set stays absent.
func TestSchemaEmptyNameRoundTrip(t *testing.T) {
	p, err := EncodeSchema(emptyNamed(t))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name == nil || p.Doc == nil {
		t.Fatalf("name %v, doc %v sent; want both present and empty", p.Name, p.Doc)
	}
	if fp := p.GetFields()[0].GetSchema(); fp.Name != nil || fp.Doc != nil {
		t.Fatalf("the field's schema sent name %v, doc %v; want none", fp.Name, fp.Doc)
	}
	b, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back pluginv1.Schema
	if err := proto.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	s, err := DecodeSchema(&back)
	if err != nil {
		t.Fatal(err)
	}
	checkEmptyNamed(t, "decoded", s)
	if data.SchemaEqual(s, data.StructBuilder().Field("id", data.Int64Schema).MustBuild()) {
		t.Fatal("a schema named \"\" equals one with no name; Kafka's equals tells them apart")
	}
}

// Through the shared region both ways, as the records' schemas travel.
func TestEmptyNameThroughTheRegion(t *testing.T) {
	schema := emptyNamed(t)
	put, poll := schemasThroughRegion(t, schema, data.NewStruct(schema).MustPut("id", int64(7)))
	checkEmptyNamed(t, "put", put)
	checkEmptyNamed(t, "poll", poll)
}

package wire

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

func orderSchema() *data.Schema {
	return data.StructBuilder().Name("order").
		Field("id", data.Int64Schema).
		Field("amount", data.DecimalSchema(2, false)).
		Field("at", data.TimestampSchema(true)).
		Field("note", data.OptionalStringSchema).
		Field("ok", data.BooleanSchema).
		MustBuild()
}

func order(s *data.Schema, id int64) *data.Struct {
	return data.NewStruct(s).MustPut("id", id).
		MustPut("amount", data.Decimal{Unscaled: big.NewInt(id * 100), Scale: 2}).
		MustPut("at", time.UnixMilli(1700000000000+id).UTC()).
		MustPut("note", "n").
		MustPut("ok", id%2 == 0)
}

func sourceBatch() []*data.SourceRecord {
	s := orderSchema()
	sameContent := orderSchema() // equal schema, other pointer: one table entry
	hdrSchema := data.MapOf(data.Int32Schema, data.StringSchema)
	return []*data.SourceRecord{
		{
			Record: data.Record{Topic: "orders", Partition: 3, KeySchema: data.StringSchema, Key: "k1",
				ValueSchema: s, Value: order(s, 1), Timestamp: time.UnixMilli(1234).UTC(),
				Headers: data.Headers{
					{Key: "h", Schema: hdrSchema, Value: data.Map{{Key: int32(1), Value: "one"}, {Key: int32(2), Value: "two"}}},
					{Key: "h", Value: data.Raw("raw header")},
					{Key: "empty"},
					{Key: "schemaless", Value: map[string]any{"a": int64(1)}},
				}},
			SourcePartition: map[string]any{"file": "/tmp/x"},
			SourceOffset:    map[string]any{"pos": int64(10), "f": 1.0},
			Transaction:     data.CommitAfter,
		},
		{
			Record:          data.Record{Topic: "orders", Partition: data.NoPartition, Key: data.Raw("rawkey"), ValueSchema: sameContent, Value: order(sameContent, 2)},
			SourcePartition: map[string]any{"file": "/tmp/x"},
			Transaction:     data.AbortAfter,
		},
		{
			// Tombstone with a key schema and a null value of an optional schema.
			Record: data.Record{Topic: "t2", Partition: 0, KeySchema: data.StringSchema, Key: "k3", ValueSchema: data.OptionalStringSchema,
				Timestamp: time.UnixMilli(0).UTC()},
		},
		{
			Record: data.Record{Topic: "t2", Partition: data.NoPartition, Value: data.Raw{}},
		},
	}
}

func recordsEqual(t *testing.T, i int, a, b *data.Record) {
	t.Helper()
	if a.Topic != b.Topic || a.Partition != b.Partition || !a.Timestamp.Equal(b.Timestamp) || a.Timestamp.IsZero() != b.Timestamp.IsZero() {
		t.Fatalf("record %d: topic/partition/timestamp %s/%d/%v, want %s/%d/%v", i, b.Topic, b.Partition, b.Timestamp, a.Topic, a.Partition, a.Timestamp)
	}
	// A raw key or value travels without its schema.
	wantKS, wantVS := a.KeySchema, a.ValueSchema
	if _, ok := a.Key.(data.Raw); ok {
		wantKS = nil
	}
	if _, ok := a.Value.(data.Raw); ok {
		wantVS = nil
	}
	if !data.SchemaEqual(wantKS, b.KeySchema) || !data.ValueEqual(a.Key, b.Key) {
		t.Fatalf("record %d: key %v %s, want %v %s", i, b.KeySchema, data.FormatValue(b.Key), wantKS, data.FormatValue(a.Key))
	}
	if !data.SchemaEqual(wantVS, b.ValueSchema) || !data.ValueEqual(a.Value, b.Value) {
		t.Fatalf("record %d: value %v %s, want %v %s", i, b.ValueSchema, data.FormatValue(b.Value), wantVS, data.FormatValue(a.Value))
	}
	if len(a.Headers) != len(b.Headers) {
		t.Fatalf("record %d: %d headers, want %d", i, len(b.Headers), len(a.Headers))
	}
	for j := range a.Headers {
		ha, hb := a.Headers[j], b.Headers[j]
		if ha.Key != hb.Key || !data.SchemaEqual(ha.Schema, hb.Schema) || !data.ValueEqual(ha.Value, hb.Value) {
			t.Fatalf("record %d header %d: %s=%s, want %s=%s", i, j, hb.Key, data.FormatValue(hb.Value), ha.Key, data.FormatValue(ha.Value))
		}
		if _, raw := ha.Value.(data.Raw); raw {
			if _, ok := hb.Value.(data.Raw); !ok {
				t.Fatalf("record %d header %d: raw header decoded as %T", i, j, hb.Value)
			}
		}
	}
}

func TestSourceRecordsRoundTrip(t *testing.T) {
	in := sourceBatch()
	schemas, recs, err := EncodeSourceRecords(in)
	if err != nil {
		t.Fatal(err)
	}
	// string, order (twice by content), map header schema, optional string.
	if len(schemas) != 4 {
		t.Fatalf("%d schemas in the table, want 4", len(schemas))
	}
	if recs[0].KafkaPartition == nil || *recs[0].KafkaPartition != 3 || recs[1].KafkaPartition != nil {
		t.Fatal("kafka_partition not mapped from NoPartition")
	}
	if recs[0].TimestampMs == nil || *recs[0].TimestampMs != 1234 || recs[1].TimestampMs != nil || recs[2].TimestampMs == nil || *recs[2].TimestampMs != 0 {
		t.Fatal("timestamp_ms presence wrong")
	}
	if _, ok := recs[1].Key.Kind.(*pluginv1.Data_Raw); !ok || recs[1].Key.Schema != 0 {
		t.Fatalf("raw key travels as %v", recs[1].Key)
	}
	if recs[3].Key != nil {
		t.Fatal("null schemaless key should be an absent Data")
	}
	if recs[1].Value.Schema != recs[0].Value.Schema {
		t.Fatal("equal schemas got different table entries")
	}
	if string(recs[0].SourceOffset) != `{"f":1.0,"pos":10}` || recs[2].SourceOffset != nil {
		t.Fatalf("source offset bytes %q / %q", recs[0].SourceOffset, recs[2].SourceOffset)
	}
	req := viaBytes(t, &pluginv1.PollResponse{Schemas: schemas, Records: recs}, &pluginv1.PollResponse{})
	out, err := DecodeSourceRecords(req.Schemas, req.Records)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d records, want %d", len(out), len(in))
	}
	for i := range in {
		recordsEqual(t, i, &in[i].Record, &out[i].Record)
		if !data.ValueEqual(in[i].SourcePartition, out[i].SourcePartition) || !data.ValueEqual(in[i].SourceOffset, out[i].SourceOffset) {
			t.Fatalf("record %d: partition/offset %v %v", i, out[i].SourcePartition, out[i].SourceOffset)
		}
		if in[i].Transaction != out[i].Transaction {
			t.Fatalf("record %d: transaction %d, want %d", i, out[i].Transaction, in[i].Transaction)
		}
	}
	if out[0].ValueSchema != out[1].ValueSchema {
		t.Fatal("records sharing a table entry should share the decoded schema")
	}
}

func TestSinkRecordsRoundTrip(t *testing.T) {
	src := sourceBatch()
	var in []*data.SinkRecord
	for i, r := range src {
		rec := r.Record
		if rec.Partition == data.NoPartition {
			rec.Partition = 0
		}
		if _, ok := rec.Value.(data.Raw); ok {
			continue // the sink side never carries raw values
		}
		in = append(in, &data.SinkRecord{Record: rec, Offset: int64(100 + i), TimestampType: data.TimestampType(i % 3),
			OriginalTopic: "orig", OriginalPartition: int32(i), OriginalOffset: int64(i * 7)})
	}
	schemas, recs, err := EncodeSinkRecords(in)
	if err != nil {
		t.Fatal(err)
	}
	if recs[1].TimestampMs != -1 || recs[2].TimestampMs != 0 {
		t.Fatalf("timestamps %d %d, want -1 (none) and 0 (epoch)", recs[1].TimestampMs, recs[2].TimestampMs)
	}
	req := viaBytes(t, &pluginv1.PutRequest{Schemas: schemas, Records: recs}, &pluginv1.PutRequest{})
	out, err := DecodeSinkRecords(req.Schemas, req.Records)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d records, want %d", len(out), len(in))
	}
	for i := range in {
		recordsEqual(t, i, &in[i].Record, &out[i].Record)
		a, b := in[i], out[i]
		if a.Offset != b.Offset || a.TimestampType != b.TimestampType || a.OriginalTopic != b.OriginalTopic ||
			a.OriginalPartition != b.OriginalPartition || a.OriginalOffset != b.OriginalOffset {
			t.Fatalf("record %d: %+v, want %+v", i, b, a)
		}
	}
}

func TestRecordErrorsNameTheRecord(t *testing.T) {
	s := orderSchema()
	bad := order(s, 1)
	bad.SetIndex(1, data.Decimal{Unscaled: big.NewInt(1), Scale: 5})
	_, _, err := EncodeSourceRecords([]*data.SourceRecord{
		{Record: data.Record{Topic: "a", Partition: data.NoPartition}},
		{Record: data.Record{Topic: "orders", Partition: data.NoPartition, ValueSchema: s, Value: bad}},
	})
	want := "source record 1 (topic orders): value: field amount: Decimal value has mismatching scale 5 (schema scale 2)"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant   %s", err, want)
	}
	_, _, err = EncodeSourceRecords([]*data.SourceRecord{{Record: data.Record{Topic: "x", Partition: data.NoPartition,
		Headers: data.Headers{{Key: "h1", Schema: data.Int8Schema, Value: "nope"}}}}})
	if err == nil || !strings.Contains(err.Error(), "header h1: value of type string does not match schema type int8") {
		t.Fatalf("header error %v", err)
	}
	_, _, err = EncodeSourceRecords([]*data.SourceRecord{{Record: data.Record{Topic: "x"}, SourceOffset: map[string]any{"f": func() {}}}})
	if err == nil || !strings.Contains(err.Error(), "source offset: key f") {
		t.Fatalf("offset error %v", err)
	}
	_, err = DecodeSourceRecords(nil, []*pluginv1.SourceRecord{{Topic: "x", Value: &pluginv1.Data{Kind: &pluginv1.Data_Value{Value: &pluginv1.Value{}}, Schema: 2}}})
	if err == nil || !strings.Contains(err.Error(), "source record 0 (topic x): value: schema reference 2 outside the batch's table of 0") {
		t.Fatalf("bad reference error %v", err)
	}
	_, err = DecodeSinkRecords([]*pluginv1.Schema{{}}, nil)
	if err == nil || !strings.Contains(err.Error(), "schema table entry 1") {
		t.Fatalf("bad table error %v", err)
	}
}

func TestSchemaEncoderDedup(t *testing.T) {
	var enc SchemaEncoder
	a, b := orderSchema(), orderSchema()
	c := data.BuilderFrom(orderSchema()).Doc("different").MustBuild()
	refs := make([]uint32, 0, 5)
	for _, s := range []*data.Schema{a, b, nil, c, a, data.Int8Schema} {
		r, err := enc.Ref(s)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
	}
	want := []uint32{1, 1, 0, 2, 1, 3}
	for i := range want {
		if refs[i] != want[i] {
			t.Fatalf("refs %v, want %v", refs, want)
		}
	}
	if n := len(enc.Schemas()); n != 3 {
		t.Fatalf("%d schemas, want 3", n)
	}
	dec, err := NewSchemaDecoder(enc.Schemas())
	if err != nil {
		t.Fatal(err)
	}
	for ref, s := range map[uint32]*data.Schema{1: a, 2: c, 3: data.Int8Schema, 0: nil} {
		got, err := dec.Schema(ref)
		if err != nil || !data.SchemaEqual(got, s) {
			t.Fatalf("Schema(%d) = %v, %v", ref, got, err)
		}
	}
	held := enc.Schemas()
	enc.Reset()
	if len(enc.Schemas()) != 0 {
		t.Fatal("Reset kept schemas")
	}
	if r, _ := enc.Ref(c); r != 1 {
		t.Fatalf("first ref after Reset = %d", r)
	}
	if len(held) != 3 || held[0].GetName() != "order" || held[0].GetDoc() != "" {
		t.Fatal("Reset overwrote a table handed out earlier")
	}
	if _, err := enc.Ref(&data.Schema{Type: data.Array}); err == nil {
		t.Fatal("Ref of an invalid schema succeeded")
	}
}

// Top-level bytes and strings take the batch encoder's slab path; they must
// encode exactly as EncodeValue does, and type mismatches still fail.
func TestSinkPlainValuesMatchEncodeValue(t *testing.T) {
	in := []*data.SinkRecord{
		{Record: data.Record{Topic: "t", KeySchema: data.BytesSchema, Key: []byte("k"), ValueSchema: data.OptionalBytesSchema, Value: []byte{}}},
		{Record: data.Record{Topic: "t", KeySchema: data.StringSchema, Key: "", ValueSchema: data.OptionalStringSchema, Value: "v"}},
		{Record: data.Record{Topic: "t", ValueSchema: data.OptionalBytesSchema, Value: nil}},
	}
	_, recs, err := EncodeSinkRecords(in)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range in {
		for _, c := range []struct {
			s    *data.Schema
			v    any
			got  *pluginv1.Data
			what string
		}{{r.KeySchema, r.Key, recs[i].Key, "key"}, {r.ValueSchema, r.Value, recs[i].Value, "value"}} {
			if c.s == nil {
				continue
			}
			want, err := EncodeValue(c.s, c.v)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(c.got.GetValue(), want) {
				t.Fatalf("record %d %s: %v, want %v", i, c.what, c.got.GetValue(), want)
			}
		}
	}
	if _, _, err := EncodeSinkRecords([]*data.SinkRecord{{Record: data.Record{Topic: "t", ValueSchema: data.StringSchema, Value: []byte("x")}}}); err == nil {
		t.Fatal("[]byte under a STRING schema encoded")
	}
	if _, _, err := EncodeSinkRecords([]*data.SinkRecord{{Record: data.Record{Topic: "t", ValueSchema: data.BytesSchema, Value: "x"}}}); err == nil {
		t.Fatal("string under a BYTES schema encoded")
	}
}

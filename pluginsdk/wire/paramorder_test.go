package wire

import (
	"math"
	"math/big"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// orderedDecimal is a Decimal schema whose parameters were set out of
// sorted order, as Debezium sets them (scale, then precision).
func orderedDecimal(t testing.TB) *data.Schema {
	t.Helper()
	return data.BuilderFrom(data.DecimalSchema(2, true)).Parameter("connect.decimal.precision", "10").MustBuild()
}

// orderedStruct holds orderedDecimal as a field, so that the order has to
// survive a nested schema too.
func orderedStruct(t testing.TB) *data.Schema {
	t.Helper()
	return data.StructBuilder().Name("row").Field("amount", orderedDecimal(t)).MustBuild()
}

var wantOrder = []string{"scale", "connect.decimal.precision"}

func amountKeys(s *data.Schema) []string {
	if f := s.Field("amount"); f != nil {
		return f.Schema.ParameterKeys()
	}
	return nil
}

// The order of a schema's parameters crosses the contract: EncodeSchema
// sends it (parameter_order), DecodeSchema keeps it.
func TestSchemaParameterOrderRoundTrip(t *testing.T) {
	p, err := EncodeSchema(orderedStruct(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back pluginv1.Schema
	if err := proto.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.GetFields()[0].GetSchema().GetParameterOrder(); !slices.Equal(got, wantOrder) {
		t.Fatalf("parameter_order sent %v, want %v", got, wantOrder)
	}
	s, err := DecodeSchema(&back)
	if err != nil {
		t.Fatal(err)
	}
	if got := amountKeys(s); !slices.Equal(got, wantOrder) {
		t.Fatalf("decoded keys %v, want %v", got, wantOrder)
	}
	if one, _ := EncodeSchema(data.DecimalSchema(2, false)); one.ParameterOrder != nil {
		t.Errorf("one parameter sent an order %v", one.ParameterOrder)
	}
}

// A schema from a sender without parameter_order, or with one that does
// not name each parameter once, decodes with no order: its keys come
// sorted.
func TestDecodeSchemaParameterOrderFallback(t *testing.T) {
	params := map[string]string{"scale": "2", "connect.decimal.precision": "10"}
	sorted := []string{"connect.decimal.precision", "scale"}
	for _, order := range [][]string{nil, {"scale"}, {"scale", "scale"}, {"scale", "connect.decimal.precision", "x"}} {
		s, err := DecodeSchema(&pluginv1.Schema{Type: pluginv1.SchemaType_SCHEMA_TYPE_BYTES, Parameters: params, ParameterOrder: order})
		if err != nil {
			t.Fatal(err)
		}
		if s.ParameterOrder != nil || !slices.Equal(s.ParameterKeys(), sorted) {
			t.Errorf("order %v: decoded order %v, keys %v; want none, sorted", order, s.ParameterOrder, s.ParameterKeys())
		}
	}
}

// Through the shared region both ways: a Put's records and a Poll's
// records keep their schemas' parameter order.
func TestParameterOrderThroughTheRegion(t *testing.T) {
	schema := orderedStruct(t)
	value := data.NewStruct(schema).MustPut("amount", data.Decimal{Unscaled: big.NewInt(1234), Scale: 2})
	put, poll := schemasThroughRegion(t, schema, value)
	if keys := amountKeys(put); !slices.Equal(keys, wantOrder) {
		t.Fatalf("put: keys %v, want %v", keys, wantOrder)
	}
	if keys := amountKeys(poll); !slices.Equal(keys, wantOrder) {
		t.Fatalf("poll: keys %v, want %v", keys, wantOrder)
	}
}

// schemasThroughRegion sends a record with value and its schema through a
// shared region as a Put and as a Poll answer, and returns the value
// schema each side decoded.
func schemasThroughRegion(t *testing.T, schema *data.Schema, value any) (put, poll *data.Schema) {
	t.Helper()
	region := newTestRegion(t, 1<<20)
	sink := &data.SinkRecord{Record: data.Record{Topic: "t", ValueSchema: schema, Value: value}, Offset: 7}
	ref, ok := region.PlacePut(addAll(t, []*data.SinkRecord{sink}))
	if !ok {
		t.Fatal("put not placed")
	}
	var buf BorrowBuffer
	got, err := region.BorrowSinkRecordsInto(ref, &buf)
	if err != nil {
		t.Fatal(err)
	}

	var sb SourceBatch
	src := &data.SourceRecord{Record: data.Record{Topic: "t", ValueSchema: schema, Value: value}}
	if ok, err := sb.Add(src, math.MaxInt); !ok || err != nil {
		t.Fatal(ok, err)
	}
	pref, ok := region.PlacePoll(&sb, 1)
	if !ok {
		t.Fatal("poll not placed")
	}
	pb, err := region.TakePoll(pref)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := pb.Records()
	if err != nil {
		t.Fatal(err)
	}
	return got[0].ValueSchema, recs[0].ValueSchema
}

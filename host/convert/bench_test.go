package convert

import (
	"strings"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

var benchSchema = data.StructBuilder().Name("com.example.Order").
	Field("id", data.Int64Schema).
	Field("customer", data.StringSchema).
	Field("amount", data.Float64Schema).
	Field("paid", data.BooleanSchema).
	Field("note", data.OptionalStringSchema).
	MustBuild()

func benchStruct() *data.Struct {
	return data.NewStruct(benchSchema).
		MustPut("id", int64(123456789)).
		MustPut("customer", "ACME Corporation").
		MustPut("amount", 1234.5).
		MustPut("paid", true).
		MustPut("note", "deliver before noon")
}

func benchFrom(b *testing.B, c Converter, s *data.Schema, v any) {
	b.Helper()
	out, err := c.FromConnectData("t", nil, s, v)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.FromConnectData("t", nil, s, v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONFromConnectStruct5(b *testing.B) {
	benchFrom(b, newTestJSON(nil), benchSchema, benchStruct())
}

func BenchmarkJSONFromConnectStruct5NoSchema(b *testing.B) {
	benchFrom(b, newTestJSON(noSchemas), benchSchema, benchStruct())
}

func BenchmarkJSONFromConnectString1KiB(b *testing.B) {
	benchFrom(b, newTestJSON(nil), data.StringSchema, strings.Repeat("abcdefgh", 128))
}

func BenchmarkJSONToConnectStruct5(b *testing.B) {
	c := newTestJSON(nil)
	in, err := c.FromConnectData("t", nil, benchSchema, benchStruct())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.ToConnectData("t", nil, in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStringFromConnect(b *testing.B) {
	c, _ := NewStringConverter("UTF-8")
	benchFrom(b, c, data.StringSchema, strings.Repeat("abcdefgh", 128))
}

func BenchmarkByteArrayFromConnect(b *testing.B) {
	benchFrom(b, ByteArrayConverter{}, data.BytesSchema, make([]byte, 1024))
}

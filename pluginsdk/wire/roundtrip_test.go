package wire

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// gen produces random schemas and values of them, covering every type,
// nesting, optionality, defaults and the logical types.
type gen struct {
	r     *rand.Rand
	names int
}

var primitiveTypes = []data.Type{data.Int8, data.Int16, data.Int32, data.Int64, data.Float32, data.Float64, data.Boolean, data.String, data.Bytes}

func (g *gen) schema(depth int) *data.Schema {
	var b *data.SchemaBuilder
	k := g.r.IntN(16)
	if depth <= 0 && k >= 13 {
		k = g.r.IntN(13)
	}
	switch {
	case k < 9:
		b = data.NewSchemaBuilder(primitiveTypes[k])
	case k == 9:
		b = data.BuilderFrom(data.DecimalSchema(int32(g.r.IntN(10)-2), false))
	case k == 10:
		b = data.BuilderFrom(data.DateSchema(false))
	case k == 11:
		b = data.BuilderFrom(data.TimeSchema(false))
	case k == 12:
		b = data.BuilderFrom(data.TimestampSchema(false))
	case k == 13:
		b = data.ArrayBuilder(g.schema(depth - 1))
	case k == 14:
		key := g.schema(0)
		if g.r.IntN(2) == 0 {
			key = data.StringSchema
		}
		b = data.MapBuilder(key, g.schema(depth-1))
	default:
		b = data.StructBuilder()
		n := g.r.IntN(5)
		for i := 0; i < n; i++ {
			b.Field(fmt.Sprintf("f%d", i), g.schema(depth-1))
		}
	}
	if g.r.IntN(3) == 0 {
		b.Optional()
	}
	if g.r.IntN(4) == 0 && b.MustBuild().Name == "" {
		g.names++
		b.Name(fmt.Sprintf("com.example.T%d", g.names)).Version(int32(g.r.IntN(5))).Doc("doc "+fmt.Sprint(g.names)).Parameter("p", "q")
	}
	if g.r.IntN(4) == 0 {
		b.Default(g.value(b.MustBuild(), false))
	}
	return b.MustBuild()
}

// value returns a random value of s; null only where s allows it: an
// optional schema (a default does not make null valid, as in Kafka's
// ConnectSchema.validateValue) or, below, an unset struct field with a default.
func (g *gen) value(s *data.Schema, mayBeNull bool) any {
	if mayBeNull && s.Optional && g.r.IntN(5) == 0 {
		return nil
	}
	switch s.Name {
	case data.DecimalName:
		scale, _ := data.DecimalScale(s)
		n := new(big.Int).Lsh(big.NewInt(g.r.Int64()), uint(g.r.IntN(100)))
		if g.r.IntN(2) == 0 {
			n.Neg(n)
		}
		return data.Decimal{Unscaled: n, Scale: scale}
	case data.DateName:
		return time.UnixMilli(int64(g.r.IntN(200000)-100000) * 86400000).UTC()
	case data.TimeName:
		return time.UnixMilli(int64(g.r.IntN(86400000))).UTC()
	case data.TimestampName:
		return time.UnixMilli(g.r.Int64N(1<<45) - 1<<44).UTC()
	}
	switch s.Type {
	case data.Int8:
		return int8(g.r.Uint32())
	case data.Int16:
		return int16(g.r.Uint32())
	case data.Int32:
		return int32(g.r.Uint32())
	case data.Int64:
		return int64(g.r.Uint64())
	case data.Float32:
		return float32(g.r.NormFloat64() * 1e6)
	case data.Float64:
		return g.r.NormFloat64() * 1e300
	case data.Boolean:
		return g.r.IntN(2) == 0
	case data.String:
		return strings.Repeat("é\x00\"x", g.r.IntN(4))
	case data.Bytes:
		b := make([]byte, g.r.IntN(5))
		for i := range b {
			b[i] = byte(g.r.Uint32())
		}
		return b
	case data.Array:
		arr := make([]any, g.r.IntN(4))
		for i := range arr {
			arr[i] = g.value(s.ValueSchema, true)
		}
		return arr
	case data.MapType:
		n := g.r.IntN(4)
		if s.KeySchema.Type == data.String && s.KeySchema.Name == "" && g.r.IntN(2) == 0 {
			m := make(map[string]any, n)
			for i := 0; i < n; i++ {
				m[fmt.Sprintf("k%d", i)] = g.value(s.ValueSchema, true)
			}
			return m
		}
		var m data.Map
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			k := g.value(s.KeySchema, true)
			ks := data.FormatValue(k)
			if seen[ks] {
				continue
			}
			seen[ks] = true
			m = append(m, data.MapEntry{Key: k, Value: g.value(s.ValueSchema, true)})
		}
		return m
	case data.StructType:
		st := data.NewStruct(s)
		for i, f := range s.Fields {
			if f.Schema.Default != nil && g.r.IntN(5) == 0 {
				continue // unset: valid (Struct.validate) and read as the default
			}
			st.SetIndex(i, g.value(f.Schema, true))
		}
		return st
	}
	panic("unhandled schema " + s.String())
}

// viaBytes marshals and unmarshals a message, as gRPC would.
func viaBytes[M proto.Message](t testing.TB, m M, into M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
	return into
}

func TestSchemaAndValueRoundTripProperty(t *testing.T) {
	g := &gen{r: rand.New(rand.NewPCG(1, 2))}
	kinds := map[string]int{}
	for i := 0; i < 3000; i++ {
		s := g.schema(3)
		v := g.value(s, true)
		kinds[s.Type.String()]++
		if s.Name != "" {
			kinds["named"]++
		}
		if s.Default != nil {
			kinds["default"]++
		}
		ps, err := EncodeSchema(s)
		if err != nil {
			t.Fatalf("case %d: EncodeSchema(%s): %v", i, s, err)
		}
		ps = viaBytes(t, ps, &pluginv1.Schema{})
		s2, err := DecodeSchema(ps)
		if err != nil {
			t.Fatalf("case %d: DecodeSchema: %v", i, err)
		}
		if !data.SchemaEqual(s, s2) {
			t.Fatalf("case %d: schema round trip differs:\n%+v\n%+v", i, s, s2)
		}
		pv, err := EncodeValue(s, v)
		if err != nil {
			t.Fatalf("case %d: EncodeValue(%s, %s): %v", i, s, data.FormatValue(v), err)
		}
		pv = viaBytes(t, pv, &pluginv1.Value{})
		v2, err := DecodeValue(s2, pv)
		if err != nil {
			t.Fatalf("case %d: DecodeValue: %v", i, err)
		}
		if !data.ValueEqual(v, v2) {
			t.Fatalf("case %d: value round trip of %s differs:\n%s\n%s", i, s, data.FormatValue(v), data.FormatValue(v2))
		}
		if err := data.Validate(s2, v2); err != nil {
			t.Fatalf("case %d: decoded value invalid: %v", i, err)
		}
	}
	// The generator must actually have covered the space.
	for _, k := range []string{"int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes", "array", "map", "struct", "named", "default"} {
		if kinds[k] < 20 {
			t.Errorf("only %d cases of %s", kinds[k], k)
		}
	}
}

func TestDecodedGoTypes(t *testing.T) {
	cases := []struct {
		s    *data.Schema
		v    any
		want string // %T of the decoded value
	}{
		{data.Int8Schema, int8(-3), "int8"},
		{data.Int16Schema, int16(-3), "int16"},
		{data.Int32Schema, int32(-3), "int32"},
		{data.Int64Schema, int64(-3), "int64"},
		{data.Float32Schema, float32(1.5), "float32"},
		{data.Float64Schema, 1.5, "float64"},
		{data.DecimalSchema(2, false), data.Decimal{Unscaled: big.NewInt(5), Scale: 2}, "data.Decimal"},
		{data.DateSchema(false), time.Unix(0, 0).UTC(), "time.Time"},
		{data.MapOf(data.StringSchema, data.Int8Schema), data.Map{{Key: "a", Value: int8(1)}}, "map[string]interface {}"},
		{data.MapOf(data.Int8Schema, data.Int8Schema), data.Map{{Key: int8(2), Value: int8(1)}}, "data.Map"},
		{data.MapOf(data.OptionalStringSchema, data.Int8Schema), data.Map{{Key: nil, Value: int8(1)}}, "data.Map"},
	}
	for _, c := range cases {
		pv, err := EncodeValue(c.s, c.v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeValue(c.s, pv)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%T", got) != c.want {
			t.Errorf("%s: decoded %T, want %s", c.s, got, c.want)
		}
	}
}

func TestSchemalessValues(t *testing.T) {
	in := map[string]any{
		"i":   7, // Go int is accepted and comes back int64
		"i8":  int8(1),
		"f32": float32(0.5),
		"f":   2.5,
		"s":   "x",
		"b":   true,
		"y":   []byte{1, 2},
		"arr": []any{int64(1), "two", nil},
		"m":   map[string]any{"k": false},
		"im":  data.Map{{Key: int64(1), Value: "one"}},
		"nil": nil,
	}
	want := map[string]any{
		"i": int64(7), "i8": int64(1), "f32": 0.5, "f": 2.5, "s": "x", "b": true,
		"y": []byte{1, 2}, "arr": []any{int64(1), "two", nil}, "m": map[string]any{"k": false},
		"im": data.Map{{Key: int64(1), Value: "one"}}, "nil": nil,
	}
	pv, err := EncodeValue(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeValue(nil, viaBytes(t, pv, &pluginv1.Value{}))
	if err != nil {
		t.Fatal(err)
	}
	if !data.ValueEqual(got, want) {
		t.Fatalf("got %s\nwant %s", data.FormatValue(got), data.FormatValue(want))
	}
	if _, ok := got.(map[string]any)["im"].(data.Map); !ok {
		t.Fatalf("non-string keys decoded as %T", got.(map[string]any)["im"])
	}
	for _, bad := range []any{
		data.NewStruct(data.StructBuilder().MustBuild()),
		data.Decimal{Unscaled: big.NewInt(1)},
		time.Now(),
		data.Raw("x"),
		struct{}{},
		[]string{"typed slices are not Connect values"},
	} {
		if _, err := EncodeValue(nil, bad); err == nil {
			t.Errorf("schemaless %T encoded", bad)
		}
	}
}

func TestEncodeErrorsNameThePath(t *testing.T) {
	line := data.StructBuilder().Name("line").
		Field("sku", data.StringSchema).
		Field("amount", data.DecimalSchema(2, false)).
		MustBuild()
	order := data.StructBuilder().Name("order").
		Field("id", data.Int64Schema).
		Field("lines", data.ArrayOf(line)).
		Field("attrs", data.MapOf(data.StringSchema, data.Int32Schema)).
		MustBuild()
	good := func() *data.Struct {
		return data.NewStruct(order).MustPut("id", int64(1)).
			MustPut("lines", []any{data.NewStruct(line).MustPut("sku", "a").MustPut("amount", data.Decimal{Unscaled: big.NewInt(1), Scale: 2})}).
			MustPut("attrs", map[string]any{"a": int32(1)})
	}
	if _, err := EncodeValue(order, good()); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mod  func(*data.Struct)
		want string
	}{
		{"wrong width", func(s *data.Struct) { s.SetIndex(0, int32(1)) }, "field id: value of type int32 does not match schema type int64"},
		{"required null", func(s *data.Struct) { s.SetIndex(0, nil) }, "field id: null used for required int64"},
		{"nested decimal scale", func(s *data.Struct) {
			s.SetIndex(1, []any{data.NewStruct(line).MustPut("sku", "a").MustPut("amount", data.Decimal{Unscaled: big.NewInt(1), Scale: 2})})
			s.Values()[1].([]any)[0].(*data.Struct).SetIndex(1, data.Decimal{Unscaled: big.NewInt(1), Scale: 3})
		}, "field lines: element 0: field amount: Decimal value has mismatching scale 3 (schema scale 2)"},
		{"map value", func(s *data.Struct) { s.SetIndex(2, map[string]any{"k": "x"}) }, `field attrs: map value for key "k": value of type string`},
		{"null element", func(s *data.Struct) { s.SetIndex(1, []any{nil}) }, "field lines: element 0: null used for required struct"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := good()
			c.mod(st)
			_, err := EncodeValue(order, st)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("EncodeValue error = %v, want containing %q", err, c.want)
			}
		})
	}
	other := data.StructBuilder().Name("other").Field("id", data.Int64Schema).MustBuild()
	if _, err := EncodeValue(order, data.NewStruct(other)); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("struct of another schema: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	iv := func(n int64) *pluginv1.Value { return &pluginv1.Value{Kind: &pluginv1.Value_IntValue{IntValue: n}} }
	sv := func(s string) *pluginv1.Value {
		return &pluginv1.Value{Kind: &pluginv1.Value_StringValue{StringValue: s}}
	}
	list := func(vs ...*pluginv1.Value) *pluginv1.ValueList { return &pluginv1.ValueList{Values: vs} }
	st := data.StructBuilder().Field("a", data.Int8Schema).Field("b", data.StringSchema).MustBuild()
	cases := []struct {
		name string
		s    *data.Schema
		p    *pluginv1.Value
		want string
	}{
		{"int8 overflow", data.Int8Schema, iv(128), "value 128 out of range for int8"},
		{"int16 overflow", data.Int16Schema, iv(-32769), "out of range for int16"},
		{"int32 overflow", data.Int32Schema, iv(math.MaxInt32 + 1), "out of range for int32"},
		{"kind mismatch", data.Int32Schema, sv("x"), "string_value does not match schema type int32"},
		{"struct arity", st, &pluginv1.Value{Kind: &pluginv1.Value_StructValue{StructValue: list(iv(1))}}, "struct has 1 values for 2 schema fields"},
		{"struct field", st, &pluginv1.Value{Kind: &pluginv1.Value_StructValue{StructValue: list(iv(1), iv(2))}}, "field b: int_value does not match schema type string"},
		{"struct required null", st, &pluginv1.Value{Kind: &pluginv1.Value_StructValue{StructValue: list(iv(1), &pluginv1.Value{})}}, "field b: null used for required string"},
		{"date out of int32", data.DateSchema(false), iv(1 << 40), "out of range for int32"},
		{"schemaless struct", nil, &pluginv1.Value{Kind: &pluginv1.Value_StructValue{StructValue: list()}}, "struct_value without a schema"},
		{"array element", data.ArrayOf(data.Int8Schema), &pluginv1.Value{Kind: &pluginv1.Value_ArrayValue{ArrayValue: list(iv(1), iv(300))}}, "element 1: value 300 out of range for int8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeValue(c.s, c.p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("DecodeValue error = %v, want containing %q", err, c.want)
			}
		})
	}
}

func TestDecodeSchemaErrors(t *testing.T) {
	i32 := &pluginv1.Schema{Type: pluginv1.SchemaType_SCHEMA_TYPE_INT32}
	cases := []struct {
		name string
		p    *pluginv1.Schema
		want string
	}{
		{"unspecified type", &pluginv1.Schema{}, "invalid type"},
		{"array without items", &pluginv1.Schema{Type: pluginv1.SchemaType_SCHEMA_TYPE_ARRAY}, "element schema"},
		{"map without key", &pluginv1.Schema{Type: pluginv1.SchemaType_SCHEMA_TYPE_MAP, ValueSchema: i32}, "key and a value"},
		{"field without schema", &pluginv1.Schema{Type: pluginv1.SchemaType_SCHEMA_TYPE_STRUCT, Fields: []*pluginv1.Field{{Name: "a"}}}, "field a: decode schema: field has no schema"},
		{"duplicate field", &pluginv1.Schema{Type: pluginv1.SchemaType_SCHEMA_TYPE_STRUCT, Fields: []*pluginv1.Field{{Name: "a", Schema: i32}, {Name: "a", Schema: i32}}}, "duplicate field a"},
		{"nested in primitive", &pluginv1.Schema{Type: pluginv1.SchemaType_SCHEMA_TYPE_INT32, ValueSchema: i32}, "int32 schema has nested schemas"},
		{"bad default", &pluginv1.Schema{Type: pluginv1.SchemaType_SCHEMA_TYPE_INT32, DefaultValue: &pluginv1.Value{Kind: &pluginv1.Value_StringValue{}}}, "default value: string_value does not match"},
		{"deep", &pluginv1.Schema{Type: pluginv1.SchemaType_SCHEMA_TYPE_STRUCT, Fields: []*pluginv1.Field{{Name: "x", Schema: &pluginv1.Schema{Type: pluginv1.SchemaType_SCHEMA_TYPE_ARRAY, ValueSchema: &pluginv1.Schema{}}}}}, "field x: array element: decode schema: invalid type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeSchema(c.p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("DecodeSchema error = %v, want containing %q", err, c.want)
			}
		})
	}
	if _, err := EncodeSchema(&data.Schema{Type: data.Array}); err == nil {
		t.Fatal("array schema without element encoded")
	}
	if _, err := EncodeSchema(&data.Schema{Type: data.Int32, Default: "x"}); err == nil || !strings.Contains(err.Error(), "default value") {
		t.Fatalf("bad default encoded: %v", err)
	}
}

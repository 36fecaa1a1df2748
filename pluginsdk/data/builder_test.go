package data

import (
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSchemaBuilder(t *testing.T) {
	s, err := StructBuilder().Name("com.example.Order").Version(3).Doc("an order").
		Parameter("p", "1").
		Field("id", Int64Schema).
		Field("tags", ArrayOf(StringSchema)).
		Field("attrs", MapOf(StringSchema, OptionalStringSchema)).
		Field("amount", DecimalSchema(2, true)).
		Optional().Build()
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != StructType || !s.Optional || s.Name != "com.example.Order" || *s.Version != 3 ||
		s.Doc != "an order" || s.Parameters["p"] != "1" || len(s.Fields) != 4 {
		t.Fatalf("built %+v", s)
	}
	for i, want := range []string{"id", "tags", "attrs", "amount"} {
		if s.Fields[i].Name != want || s.Fields[i].Index != i {
			t.Fatalf("field %d = %+v, want %s at index %d", i, s.Fields[i], want, i)
		}
	}
	if s.Field("tags").Schema.Type != Array || s.Field("tags").Schema.ValueSchema != StringSchema {
		t.Fatalf("tags schema %+v", s.Field("tags").Schema)
	}
	if a := s.Field("attrs").Schema; a.Type != MapType || a.KeySchema != StringSchema || a.ValueSchema != OptionalStringSchema {
		t.Fatalf("attrs schema %+v", a)
	}
	if s.String() != "Schema{com.example.Order:STRUCT}" {
		t.Fatalf("String() = %s", s)
	}
}

func TestSchemaBuilderBuildsIndependentSchemas(t *testing.T) {
	b := StructBuilder().Field("a", Int32Schema).Parameter("k", "v")
	s1 := b.MustBuild()
	b.Field("b", Int32Schema).Parameter("k", "w")
	s2 := b.MustBuild()
	if len(s1.Fields) != 1 || s1.Parameters["k"] != "v" {
		t.Fatalf("first schema changed by later builder calls: %+v", s1)
	}
	if len(s2.Fields) != 2 || s2.Parameters["k"] != "w" {
		t.Fatalf("second schema %+v", s2)
	}
}

func TestSchemaBuilderErrors(t *testing.T) {
	cases := []struct {
		name string
		b    *SchemaBuilder
		err  string
	}{
		{"duplicate field", StructBuilder().Field("a", Int32Schema).Field("a", StringSchema), "field name duplication a"},
		{"field on primitive", NewSchemaBuilder(Int32).Field("a", Int32Schema), "cannot create fields on type INT32"},
		{"nil field schema", StructBuilder().Field("a", nil), "field schema for field a cannot be null"},
		{"empty field name", StructBuilder().Field("", Int32Schema), "field name cannot be empty"},
		{"name twice", StructBuilder().Name("a").Name("b"), "name has already been set"},
		{"version twice", StructBuilder().Version(1).Version(2), "version has already been set"},
		{"optional twice", StructBuilder().Optional().Required(), "optional has already been set"},
		{"bad default", NewSchemaBuilder(Int32).Default("x"), "invalid default value"},
		{"default of wrong width", NewSchemaBuilder(Int64).Default(int32(1)), "invalid default value"},
		{"array via NewSchemaBuilder", NewSchemaBuilder(Array), "use ArrayBuilder"},
		{"array without element", ArrayBuilder(nil), "element schema"},
		{"map without value", MapBuilder(StringSchema, nil), "key and a value schema"},
		{"invalid type", NewSchemaBuilder(TypeInvalid), "invalid schema type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.b.Build()
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Build() = %v, %v; want error containing %q", s, err, c.err)
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Fatal("MustBuild did not panic on a bad builder")
		}
	}()
	StructBuilder().Field("a", nil).MustBuild()
}

func TestSchemaBuilderDefaults(t *testing.T) {
	for _, c := range []struct {
		b *SchemaBuilder
		v any
	}{
		{NewSchemaBuilder(Int32).Default(int32(7)), int32(7)},
		{NewSchemaBuilder(Bytes).Name(DecimalName).Parameter(DecimalScaleParam, "1").Default(Decimal{big.NewInt(5), 1}), Decimal{big.NewInt(5), 1}},
		{NewSchemaBuilder(Int64).Name(TimestampName).Default(time.UnixMilli(5)), time.UnixMilli(5)},
		{ArrayBuilder(Int8Schema).Default([]any{int8(1)}), []any{int8(1)}},
	} {
		s, err := c.b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if !ValueEqual(s.Default, c.v) {
			t.Fatalf("default %v, want %v", s.Default, c.v)
		}
	}
}

func TestBuilderFrom(t *testing.T) {
	orig := StructBuilder().Name("n").Version(2).Parameter("a", "b").Field("x", Int32Schema).Optional().MustBuild()
	cp := BuilderFrom(orig).Field("y", StringSchema).MustBuild()
	if cp.Name != "n" || *cp.Version != 2 || cp.Parameters["a"] != "b" || !cp.Optional || len(cp.Fields) != 2 {
		t.Fatalf("copy %+v", cp)
	}
	if len(orig.Fields) != 1 {
		t.Fatal("BuilderFrom changed the original")
	}
	cp.Parameters["a"] = "c"
	if orig.Parameters["a"] != "b" {
		t.Fatal("BuilderFrom shares parameters with the original")
	}
	if _, err := BuilderFrom(nil).Build(); err == nil {
		t.Fatal("BuilderFrom(nil) built")
	}
}

// Parameters keep the order they were set in, as Kafka's SchemaBuilder
// keeps them (a LinkedHashMap): a key set again keeps its place, a map of
// them joins in sorted order, BuilderFrom carries the order over, and
// schema equality ignores it.
func TestSchemaBuilderParameterOrder(t *testing.T) {
	s := NewSchemaBuilder(Bytes).Name(DecimalName).
		Parameter("scale", "2").Parameter("connect.decimal.precision", "10").Parameter("scale", "3").MustBuild()
	if got, want := s.ParameterKeys(), []string{"scale", "connect.decimal.precision"}; !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	if s.Parameters["scale"] != "3" {
		t.Fatalf("scale %q, want the last value 3", s.Parameters["scale"])
	}
	m := NewSchemaBuilder(String).Parameter("z", "1").Parameters(map[string]string{"b": "2", "a": "3", "z": "4"}).MustBuild()
	if got, want := m.ParameterKeys(), []string{"z", "a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("keys after Parameters %v, want %v", got, want)
	}
	cp := BuilderFrom(s).Parameter("a", "x").MustBuild()
	if got, want := cp.ParameterKeys(), []string{"scale", "connect.decimal.precision", "a"}; !slices.Equal(got, want) {
		t.Fatalf("BuilderFrom keys %v, want %v", got, want)
	}
	if !slices.Equal(s.ParameterKeys(), []string{"scale", "connect.decimal.precision"}) {
		t.Fatal("BuilderFrom changed the original's order")
	}
	sorted := &Schema{Type: Bytes, Name: DecimalName, Parameters: map[string]string{"scale": "3", "connect.decimal.precision": "10"}}
	if !SchemaEqual(s, sorted) {
		t.Fatal("schemas that differ only in parameter order are not equal")
	}
	if got, want := sorted.ParameterKeys(), []string{"connect.decimal.precision", "scale"}; !slices.Equal(got, want) {
		t.Fatalf("keys of a literal without order %v, want them sorted %v", got, want)
	}
}

// An order that does not name each parameter exactly once is no order.
func TestParameterKeysIgnoresABadOrder(t *testing.T) {
	params := map[string]string{"b": "1", "a": "2"}
	for _, order := range [][]string{nil, {"b"}, {"b", "b"}, {"b", "c"}, {"b", "a", "c"}} {
		s := &Schema{Type: String, Parameters: params, ParameterOrder: order}
		if got := s.ParameterKeys(); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("order %v: keys %v, want [a b]", order, got)
		}
	}
	if got := (&Schema{Type: String, Parameters: params, ParameterOrder: []string{"b", "a"}}).ParameterKeys(); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("a good order: keys %v, want [b a]", got)
	}
	if got := (&Schema{Type: String}).ParameterKeys(); got != nil {
		t.Errorf("no parameters: keys %v, want nil", got)
	}
}

// A name or doc set to "" is set: Kafka's name() and doc() are then "",
// not null, its equals tells the two apart, and so does its toString.
func TestBuilderEmptyNameAndDoc(t *testing.T) {
	set := StructBuilder().Name("").Doc("").Field("id", Int64Schema).MustBuild()
	unset := StructBuilder().Field("id", Int64Schema).MustBuild()
	if !set.HasName() || !set.HasDoc() || unset.HasName() || unset.HasDoc() {
		t.Fatalf("HasName/HasDoc: set %v %v, unset %v %v", set.HasName(), set.HasDoc(), unset.HasName(), unset.HasDoc())
	}
	if SchemaEqual(set, unset) {
		t.Fatal(`a schema named "" equals one with no name`)
	}
	if !SchemaEqual(set, BuilderFrom(set).MustBuild()) {
		t.Fatal("BuilderFrom lost the empty name or doc")
	}
	if got := set.String(); got != "Schema{:STRUCT}" {
		t.Fatalf("String() = %q, want Schema{:STRUCT}", got)
	}
	if _, err := StructBuilder().Name("").Name("x").Build(); err == nil {
		t.Fatal(`Name("") then Name("x"): no error; the name was set already`)
	}
}

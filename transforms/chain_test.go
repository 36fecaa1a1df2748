package transforms

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Kafka's test_transformations system test, as a unit: a FileStreamSource
// line (a STRING value) through HoistField$Value(field=content) and
// InsertField$Value(timestamp.field=ts) becomes struct{content: string,
// ts: optional Timestamp} with ts the record's timestamp.
func TestKafkaTransformationsScenario(t *testing.T) {
	chain, err := Chain(map[string]string{
		"transforms":                                      "hoistToStruct,insertTimestampField",
		"transforms.hoistToStruct.type":                   "org.apache.kafka.connect.transforms.HoistField$Value",
		"transforms.hoistToStruct.field":                  "content",
		"transforms.insertTimestampField.type":            "org.apache.kafka.connect.transforms.InsertField$Value",
		"transforms.insertTimestampField.timestamp.field": "ts",
	})
	if err != nil {
		t.Fatal(err)
	}
	created := time.UnixMilli(1700000000123).UTC()
	in := &data.Record{Topic: "test", Partition: data.NoPartition, ValueSchema: data.StringSchema, Value: "hello", Timestamp: created}
	out, err := chain.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	want := &data.Schema{Type: data.StructType, Fields: []data.Field{
		{Name: "content", Index: 0, Schema: data.StringSchema},
		{Name: "ts", Index: 1, Schema: data.TimestampSchema(true)},
	}}
	if !data.SchemaEqual(out.ValueSchema, want) {
		t.Fatalf("schema %s, want %s", schemaDump(out.ValueSchema), schemaDump(want))
	}
	st := out.Value.(*data.Struct)
	if st.Get("content") != "hello" || !st.Get("ts").(time.Time).Equal(created) {
		t.Fatalf("value %s", st)
	}
	if in.Value != "hello" || in.ValueSchema != data.StringSchema {
		t.Fatal("input record modified")
	}
}

func filterOnTopic(negate bool) map[string]string {
	cfg := map[string]string{
		"transforms":                    "drop",
		"transforms.drop.type":          "Filter",
		"transforms.drop.predicate":     "isFoo",
		"predicates":                    "isFoo",
		"predicates.isFoo.type":         "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
		"predicates.isFoo.pattern":      "foo.*",
		"transforms.drop.ignored.extra": "x",
	}
	if negate {
		cfg["transforms.drop.negate"] = "true"
	}
	return cfg
}

func TestChainPredicates(t *testing.T) {
	for _, negate := range []bool{false, true} {
		chain, err := Chain(filterOnTopic(negate))
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, topic := range []string{"foo", "foobar", "bar", "afoo"} {
			out, err := chain.Apply(&data.Record{Topic: topic, Value: "v"})
			if err != nil {
				t.Fatal(err)
			}
			if out != nil {
				kept = append(kept, out.Topic)
			}
		}
		want := []string{"bar", "afoo"}
		if negate {
			want = []string{"foo", "foobar"}
		}
		if !slices.Equal(kept, want) {
			t.Errorf("negate=%v: kept %v, want %v", negate, kept, want)
		}
	}
}

// counting is a transformation that counts its calls and renames the topic.
type counting struct {
	mu sync.Mutex
	n  int
}

func (c *counting) Apply(r *data.Record) (*data.Record, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	out := *r
	out.Topic += "+"
	return &out, nil
}

type failing struct{}

func (failing) Apply(*data.Record) (*data.Record, error) { return nil, dataErr("boom") }

type failingPredicate struct{}

func (failingPredicate) Test(*data.Record) (bool, error) { return false, errors.New("cannot tell") }

func TestChainStages(t *testing.T) {
	first, last := &counting{}, &counting{}
	tomb, _ := NewPredicate("RecordIsTombstone", nil)
	c := &ChainT{stages: []stage{
		{alias: "first", class: "c1", t: first},
		{alias: "dropTombstones", class: pkgTransforms + "Filter", t: filter{}, pred: tomb},
		{alias: "last", class: "c2", t: last},
	}}
	out, err := c.Apply(&data.Record{Topic: "t", Value: "v"})
	if err != nil || out == nil || out.Topic != "t++" {
		t.Fatalf("live record: %v %v", describe(out), err)
	}
	out, err = c.Apply(&data.Record{Topic: "t"})
	if err != nil || out != nil {
		t.Fatalf("tombstone not dropped: %v %v", describe(out), err)
	}
	// The stage after the drop never saw the tombstone.
	if first.n != 2 || last.n != 1 {
		t.Fatalf("calls: first %d, last %d", first.n, last.n)
	}

	c = &ChainT{stages: []stage{{alias: "f", class: "org.example.Failing", t: failing{}}}}
	_, err = c.Apply(&data.Record{Topic: "t"})
	var se *StageError
	var ex *Exception
	if !errors.As(err, &se) || se.Alias != "f" || se.Class != "org.example.Failing" || !errors.As(err, &ex) || ex.Class != DataException || ex.Message != "boom" {
		t.Fatalf("stage error: %#v", err)
	}
	if err.Error() != "transformation f (org.example.Failing): boom" {
		t.Fatalf("message %q", err.Error())
	}
	c = &ChainT{stages: []stage{{alias: "p", class: "c", t: first, pred: failingPredicate{}}}}
	if _, err = c.Apply(&data.Record{}); !errors.As(err, &se) || se.Alias != "p" {
		t.Fatalf("predicate error: %v", err)
	}

	empty, err := Chain(map[string]string{})
	if err != nil || empty.Len() != 0 {
		t.Fatalf("empty chain: %v", err)
	}
	r := &data.Record{Topic: "t"}
	if out, err := empty.Apply(r); out != r || err != nil {
		t.Fatal("empty chain must return its input")
	}
	var none *ChainT
	if out, err := none.Apply(r); out != r || err != nil || none.Len() != 0 {
		t.Fatal("nil chain must return its input")
	}
}

func TestChainApplySinkInsertsOffset(t *testing.T) {
	chain, err := Chain(map[string]string{
		"transforms":                  "off",
		"transforms.off.type":         "InsertField$Value",
		"transforms.off.offset.field": "offset",
	})
	if err != nil {
		t.Fatal(err)
	}
	sr := &data.SinkRecord{Record: data.Record{Topic: "t", Value: map[string]any{}}, Offset: 77}
	out, err := chain.ApplySink(sr)
	if err != nil {
		t.Fatal(err)
	}
	if !data.ValueEqual(out.Value, map[string]any{"offset": int64(77)}) {
		t.Fatalf("value %s", data.FormatValue(out.Value))
	}
	if _, err := chain.Apply(&sr.Record); err == nil || !strings.Contains(err.Error(), "Only SinkRecord supported for [field insertion]") {
		t.Fatalf("source-side offset insertion: %v", err)
	}
}

func TestChainConcurrentUse(t *testing.T) {
	chain, err := Chain(map[string]string{
		"transforms": "a,b", "transforms.a.type": "InsertField$Value", "transforms.a.topic.field": "topic",
		"transforms.b.type": "ReplaceField$Value", "transforms.b.renames": "topic:t",
	})
	if err != nil {
		t.Fatal(err)
	}
	schemas := make([]*data.Schema, 20) // more than the cache holds
	for i := range schemas {
		schemas[i] = data.StructBuilder().Field("n", data.Int32Schema).Version(int32(i)).MustBuild()
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				s := schemas[(g+i)%len(schemas)]
				out, err := chain.Apply(&data.Record{Topic: "top", ValueSchema: s, Value: mustStruct(s, "n", int32(i))})
				if err != nil {
					t.Error(err)
					return
				}
				st := out.Value.(*data.Struct)
				if st.Get("t") != "top" || st.Get("n") != int32(i) || *out.ValueSchema.Version != *s.Version {
					t.Errorf("got %s", st)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// errorsByKey collects the validation errors per key.
func errorsByKey(vs []config.ConfigValue) map[string][]string {
	out := map[string][]string{}
	for _, v := range vs {
		if len(v.Errors) > 0 {
			out[v.Name] = v.Errors
		}
	}
	return out
}

func TestValidateConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  map[string]string
		want map[string][]string
	}{
		{"valid", filterOnTopic(true), map[string][]string{}},
		{"missing type", map[string]string{"transforms": "a"},
			map[string][]string{"transforms.a.type": {`Missing required configuration "transforms.a.type" which has no default value.`}}},
		{"unknown class", map[string]string{"transforms": "t", "transforms.t.type": "WheresTheFruit"},
			map[string][]string{"transforms.t.type": {"Invalid value WheresTheFruit for configuration transforms.t.type: Class WheresTheFruit could not be found."}}},
		{"abstract class", map[string]string{"transforms": "t", "transforms.t.type": "org.apache.kafka.connect.transforms.InsertField"},
			map[string][]string{"transforms.t.type": {"This class is abstract and cannot be created. Did you mean org.apache.kafka.connect.transforms.InsertField$Key, org.apache.kafka.connect.transforms.InsertField$Value?"}}},
		{"predicate as transformation", map[string]string{"transforms": "t", "transforms.t.type": "RecordIsTombstone"},
			map[string][]string{"transforms.t.type": {"Class class org.apache.kafka.connect.transforms.predicates.RecordIsTombstone does not implement the Transformation interface"}}},
		{"transformation as predicate", map[string]string{"predicates": "p", "predicates.p.type": "Filter"},
			map[string][]string{"predicates.p.type": {"Class class org.apache.kafka.connect.transforms.Filter does not implement the Predicate interface"}}},
		{"unknown predicate class", map[string]string{"predicates": "p", "predicates.p.type": "WheresTheFruit"},
			map[string][]string{"predicates.p.type": {"Invalid value WheresTheFruit for configuration predicates.p.type: Class WheresTheFruit could not be found."}}},
		{"duplicate transforms", map[string]string{"transforms": "t, t", "transforms.t.type": "Filter"},
			map[string][]string{"transforms": {"Invalid value [t, t] for configuration transforms: Duplicate alias provided."}}},
		{"duplicate predicates", map[string]string{"predicates": "p, p", "predicates.p.type": "RecordIsTombstone"},
			map[string][]string{"predicates": {"Invalid value [p, p] for configuration predicates: Duplicate alias provided."}}},
		{"negate without predicate", map[string]string{"transforms": "t", "transforms.t.type": "Filter", "transforms.t.negate": "true"},
			map[string][]string{"transforms.t.type": {"Config 'transforms.t.negate' was provided but there is no config 'transforms.t.predicate' defining a predicate to be negated."}}},
		{"undefined predicate", map[string]string{"transforms": "t", "transforms.t.type": "Filter", "transforms.t.predicate": "nope"},
			map[string][]string{"transforms.t.predicate": {"Invalid value nope for configuration predicate: The predicate 'nope' is not defined in predicates"}}},
		{"bad regex", map[string]string{"transforms": "r", "transforms.r.type": "RegexRouter", "transforms.r.regex": "(", "transforms.r.replacement": "x"},
			map[string][]string{"transforms.r.regex": {"Invalid value ( for configuration regex: Invalid regex: error parsing regexp: missing closing ): `(`"}}},
		{"Java-only regex", map[string]string{"transforms": "r", "transforms.r.type": "RegexRouter", "transforms.r.regex": "[a-z&&[^t]]+", "transforms.r.replacement": "x"},
			map[string][]string{"transforms.r.regex": {"Invalid value [a-z&&[^t]]+ for configuration regex: Invalid regex: a class intersection (&&), which java.util.regex and Go's RE2 both accept but read differently; Sluice does not support it"}}},
		{"bad predicate regex", map[string]string{"predicates": "p", "predicates.p.type": "TopicNameMatches", "predicates.p.pattern": "["},
			map[string][]string{"predicates.p.pattern": {"Invalid value [ for configuration pattern: Invalid regex: error parsing regexp: missing closing ]: `[`"}}},
		{"own missing setting", map[string]string{"transforms": "m", "transforms.m.type": "MaskField$Value"},
			map[string][]string{"transforms.m.fields": {
				`Missing required configuration "transforms.m.fields" which has no default value.`,
				"Invalid value null for configuration fields: Empty list"}}},
		{"own bad setting", map[string]string{"transforms": "c", "transforms.c.type": "Cast$Value", "transforms.c.spec": "a:bytes"},
			map[string][]string{"transforms.c.spec": {"Cast transformation does not support casting to BYTES; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"}}},
		{"refused when configured, no key", map[string]string{"transforms": "i", "transforms.i.type": "InsertField$Value"},
			map[string][]string{"transforms.i.type": {"No field insertion configured"}}},
		{"refused when configured, with key", map[string]string{"transforms": "i", "transforms.i.type": "InsertField$Value", "transforms.i.static.field": "s"},
			map[string][]string{"transforms.i.static.value": {"Invalid value null for configuration static.value: No value specified for static field: s"}}},
		{"string timestamps without format", map[string]string{"transforms": "c", "transforms.c.type": "TimestampConverter$Value", "transforms.c.target.type": "string"},
			map[string][]string{"transforms.c.format": {"TimestampConverter requires format option to be specified when using string timestamps"}}},
		{"bad timestamp format", map[string]string{"transforms": "c", "transforms.c.type": "TimestampConverter$Value", "transforms.c.target.type": "string", "transforms.c.format": "yyyy-bb"},
			map[string][]string{"transforms.c.format": {"TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: yyyy-bb"}}},
		{"bad field path", map[string]string{"transforms": "e", "transforms.e.type": "ExtractField$Value", "transforms.e.field": "`a", "transforms.e.field.syntax.version": "V2"},
			map[string][]string{"transforms.e.field": {"Incomplete backtick pair in path: [`a], consider adding a backslash before backtick at position 0 to escape it"}}},
		{"fields and headers of different lengths", map[string]string{"transforms": "h", "transforms.h.type": "HeaderFrom$Value", "transforms.h.fields": "a,b", "transforms.h.headers": "h", "transforms.h.operation": "copy"},
			map[string][]string{"transforms.h.fields": {"'fields' config must have the same number of elements as 'headers' config."}}},
		{"predicate settings", map[string]string{"predicates": "p", "predicates.p.type": "HasHeaderKey"},
			map[string][]string{"predicates.p.name": {`Missing required configuration "predicates.p.name" which has no default value.`}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := errorsByKey(ValidateConfig(c.cfg))
			if len(got) != len(c.want) {
				t.Fatalf("errors %v, want %v", got, c.want)
			}
			for k, want := range c.want {
				if !slices.Equal(got[k], want) {
					t.Errorf("%s: %q, want %q", k, got[k], want)
				}
			}
			_, err := Chain(c.cfg)
			if len(c.want) == 0 && err != nil || len(c.want) > 0 && err == nil {
				t.Fatalf("Chain error %v, want errors %v", err, c.want)
			}
			for _, msgs := range c.want {
				for _, m := range msgs {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("Chain error %q lacks %q", err, m)
					}
				}
			}
		})
	}
}

func TestAliasDef(t *testing.T) {
	cfg := map[string]string{
		"transforms": "b, a", "transforms.a.type": "InsertField$Value", "transforms.b.type": "NoSuchClass",
		"predicates": "p", "predicates.p.type": "TopicNameMatches",
	}
	d := AliasDef(cfg)
	if got, want := d.Groups(), []string{"Transforms: b", "Transforms: a", "Predicates: p"}; !slices.Equal(got, want) {
		t.Fatalf("groups %v, want %v", got, want)
	}
	var names []string
	for _, k := range d.Keys() {
		if strings.HasPrefix(k.Name, "transforms.a.") {
			names = append(names, strings.TrimPrefix(k.Name, "transforms.a."))
		}
	}
	// type first, then the implicit and the class's settings in Kafka's
	// documentation order (here: all MEDIUM, by name).
	want := []string{"type", "negate", "offset.field", "partition.field", "predicate", "replace.null.with.default",
		"static.field", "static.value", "timestamp.field", "topic.field"}
	if !slices.Equal(names, want) {
		t.Fatalf("keys %v, want %v", names, want)
	}
	typ, _ := d.Key("transforms.a.type")
	if typ.Group != "Transforms: a" || typ.OrderInGroup != 0 || typ.DisplayName != "Transformation type for a" ||
		typ.Doc != "Class for the 'a' transformation." || !typ.Required || !slices.Contains(typ.Recommended, "org.apache.kafka.connect.transforms.Filter") {
		t.Fatalf("type key %+v", typ)
	}
	neg, _ := d.Key("transforms.a.negate")
	if neg.Group != "Transforms: a" || neg.OrderInGroup != 1 {
		t.Fatalf("negate key %+v", neg)
	}
	// An unknown class contributes its type key only.
	if _, ok := d.Key("transforms.b.predicate"); ok {
		t.Fatal("unknown class got settings")
	}
	if _, ok := d.Key("predicates.p.pattern"); !ok {
		t.Fatal("predicate settings missing")
	}
	if _, ok := d.Key("predicates.p.negate"); ok {
		t.Fatal("a predicate has no negate")
	}
	full := Def(cfg)
	if _, ok := full.Key(KeyTransforms); !ok || full.Len() != d.Len()+2 {
		t.Fatalf("Def has %d keys, AliasDef %d", full.Len(), d.Len())
	}
}

func TestRegistry(t *testing.T) {
	classes := Classes()
	var transforms, predicates []string
	for _, c := range classes {
		if c.Config == nil || c.Version != Version || c.Doc == "" {
			t.Errorf("%s incomplete: %+v", c.Name, c)
		}
		for _, n := range append([]string{c.Name}, c.Aliases...) {
			if got, ok := Lookup(n); !ok || got.Name != c.Name {
				t.Errorf("Lookup(%s) = %v %v", n, got.Name, ok)
			}
		}
		switch c.Type {
		case TypeTransformation:
			transforms = append(transforms, strings.TrimPrefix(c.Name, pkgTransforms))
			if _, ok := (Catalog{}).Transform(c.Name); !ok {
				t.Errorf("Catalog misses %s", c.Name)
			}
		case TypePredicate:
			predicates = append(predicates, strings.TrimPrefix(c.Name, pkgPredicates))
			if _, ok := (Catalog{}).Predicate(c.Name); !ok {
				t.Errorf("Catalog misses %s", c.Name)
			}
		default:
			t.Errorf("%s: type %q", c.Name, c.Type)
		}
	}
	want := []string{
		"Cast$Key", "Cast$Value", "DropHeaders", "ExtractField$Key", "ExtractField$Value", "Filter",
		"Flatten$Key", "Flatten$Value", "HeaderFrom$Key", "HeaderFrom$Value", "HoistField$Key", "HoistField$Value",
		"InsertField$Key", "InsertField$Value", "InsertHeader", "MaskField$Key", "MaskField$Value", "RegexRouter",
		"ReplaceField$Key", "ReplaceField$Value", "SetSchemaMetadata$Key", "SetSchemaMetadata$Value",
		"TimestampConverter$Key", "TimestampConverter$Value", "TimestampRouter", "ValueToKey",
	}
	if !slices.Equal(transforms, want) {
		t.Errorf("transformations %v", transforms)
	}
	if !slices.Equal(predicates, []string{"HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"}) {
		t.Errorf("predicates %v", predicates)
	}
	// Kafka's aliases: the simple name of classes without variants.
	for _, a := range []string{"RegexRouter", "TimestampRouter", "ValueToKey", "Filter", "InsertHeader", "DropHeaders",
		"TopicNameMatches", "HasHeaderKey", "RecordIsTombstone"} {
		if _, ok := Lookup(a); !ok {
			t.Errorf("alias %s", a)
		}
	}
	for _, n := range []string{"Value", "Key", "InsertField", "org.apache.kafka.connect.transforms.InsertField"} {
		if _, ok := Lookup(n); ok {
			t.Errorf("%s must not resolve", n)
		}
	}
	if _, ok := (Catalog{}).Transform("TopicNameMatches"); ok {
		t.Error("a predicate is no transformation")
	}
	if _, err := New("org.apache.kafka.connect.transforms.InsertField", nil); err == nil || !strings.HasPrefix(err.Error(), "This class is abstract") {
		t.Errorf("abstract: %v", err)
	}
}

// TestConfigKeyOrder checks each class declares Kafka's settings in
// Kafka's order (Apache Kafka 4.4.0's ConfigDef of each class), which the
// validate endpoint and GET /connector-plugins/{plugin}/config show.
// Sluice's own extra settings may follow.
func TestConfigKeyOrder(t *testing.T) {
	for class, want := range map[string][]string{
		"org.apache.kafka.connect.transforms.Cast$Value":                   {"spec", "replace.null.with.default"},
		"org.apache.kafka.connect.transforms.DropHeaders":                  {"headers"},
		"org.apache.kafka.connect.transforms.ExtractField$Value":           {"field", "replace.null.with.default", "field.syntax.version"},
		"org.apache.kafka.connect.transforms.Filter":                       {},
		"org.apache.kafka.connect.transforms.Flatten$Value":                {"delimiter"},
		"org.apache.kafka.connect.transforms.HeaderFrom$Value":             {"fields", "headers", "operation", "replace.null.with.default"},
		"org.apache.kafka.connect.transforms.HoistField$Value":             {"field"},
		"org.apache.kafka.connect.transforms.InsertField$Value":            {"topic.field", "partition.field", "offset.field", "timestamp.field", "static.field", "static.value", "replace.null.with.default"},
		"org.apache.kafka.connect.transforms.InsertHeader":                 {"header", "value.literal"},
		"org.apache.kafka.connect.transforms.MaskField$Value":              {"fields", "replacement", "replace.null.with.default"},
		"org.apache.kafka.connect.transforms.RegexRouter":                  {"regex", "replacement"},
		"org.apache.kafka.connect.transforms.ReplaceField$Value":           {"exclude", "include", "renames", "replace.null.with.default"},
		"org.apache.kafka.connect.transforms.SetSchemaMetadata$Value":      {"schema.name", "schema.version", "replace.null.with.default"},
		"org.apache.kafka.connect.transforms.TimestampConverter$Value":     {"field", "target.type", "format", "unix.precision", "replace.null.with.default"},
		"org.apache.kafka.connect.transforms.TimestampRouter":              {"topic.format", "timestamp.format"},
		"org.apache.kafka.connect.transforms.ValueToKey":                   {"fields", "replace.null.with.default", "field.syntax.version"},
		"org.apache.kafka.connect.transforms.predicates.HasHeaderKey":      {"name"},
		"org.apache.kafka.connect.transforms.predicates.RecordIsTombstone": {},
		"org.apache.kafka.connect.transforms.predicates.TopicNameMatches":  {"pattern"},
	} {
		c, ok := Lookup(class)
		if !ok {
			t.Errorf("%s: not found", class)
			continue
		}
		got := c.Config.Names()
		if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
			t.Errorf("%s: settings %v, want %v first", class, got, want)
		}
	}
}

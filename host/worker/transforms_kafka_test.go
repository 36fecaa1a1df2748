package worker_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/convert"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/transforms"
)

// TestKafkaGolden runs every case of testdata/kafka-transforms/cases.jsonl through
// Sluice's transformation or predicate and compares the outcome with
// testdata/kafka-transforms/expected.jsonl: what Apache Kafka 4.4.0's own classes
// (connect-transforms-4.4.0.jar, Java 17) made of the same input. Inputs are
// JsonConverter envelopes (schemas.enable=true); outcomes are a typed dump
// of the resulting record (schemas, values with their Java types, topic,
// partition, timestamp, headers), the exception class and message, or the
// configuration error's message. It lives here, where the worker joins
// converters and transforms, because it reads its inputs with the worker's
// JsonConverter and transforms/ does not import host/.
func TestKafkaGolden(t *testing.T) {
	cases := readJSONLines(t, filepath.Join("testdata", "kafka-transforms", "cases.jsonl"))
	expected := readJSONLines(t, filepath.Join("testdata", "kafka-transforms", "expected.jsonl"))
	if len(cases) != len(expected) || len(cases) == 0 {
		t.Fatalf("%d cases, %d expectations", len(cases), len(expected))
	}
	conv := convert.NewJSONConverter(convert.DefaultJSONConfig())
	for i, c := range cases {
		want := expected[i]
		name, _ := c["name"].(string)
		if want["name"] != name {
			t.Fatalf("case %d: %q has expectation %q", i, name, want["name"])
		}
		t.Run(name, func(t *testing.T) {
			if reason, ok := kafkaGoldenKnown[name]; ok {
				t.Skip("known difference: " + reason)
			}
			if reason, ok := kafkaGoldenTodo[name]; ok {
				t.Skip("to fix: " + reason)
			}
			got := runKafkaCase(t, conv, c)
			delete(want, "name")
			g, w := normDump(got), normDump(map[string]any(want))
			if !reflect.DeepEqual(g, w) {
				gj, _ := json.Marshal(g)
				wj, _ := json.Marshal(w)
				t.Fatalf("\n got: %s\nwant: %s", gj, wj)
			}
		})
	}
}

// kafkaGoldenKnown lists the cases where Sluice differs from Kafka on
// purpose, with the reason (transforms/doc.go, "Differences from Kafka").
var kafkaGoldenKnown = map[string]string{
	"cast/decimal->int8":                            logicalCast,
	"cast/decimal->int16":                           logicalCast,
	"cast/decimal->int32":                           logicalCast,
	"cast/decimal->int64":                           logicalCast,
	"cast/decimal->float32":                         logicalCast,
	"cast/decimal->float64":                         logicalCast,
	"cast/decimal->boolean":                         logicalCast,
	"cast/decimal->string":                          logicalCast,
	"cast/date->string":                             logicalCast,
	"cast/date->int64":                              logicalCast,
	"cast/date->int32":                              logicalCast,
	"cast/date->float64":                            logicalCast,
	"cast/date->boolean":                            logicalCast,
	"cast/time->string":                             logicalCast,
	"cast/time->int64":                              logicalCast,
	"cast/time->int32":                              logicalCast,
	"cast/time->float64":                            logicalCast,
	"cast/time->boolean":                            logicalCast,
	"cast/timestamp->string":                        logicalCast,
	"cast/timestamp->int64":                         logicalCast,
	"cast/timestamp->int32":                         logicalCast,
	"cast/timestamp->float64":                       logicalCast,
	"cast/timestamp->boolean":                       logicalCast,
	"cast/int32->decimal":                           "Kafka's message wraps Java's IllegalArgumentException text in a misused ConfigException; Sluice says the part users grep for",
	"cast/config[a:date]":                           "as cast/int32->decimal",
	"cast/config[a]":                                "as cast/int32->decimal",
	"cast/config[a:int32,]":                         "as cast/int32->decimal",
	"cast/config[a:decimal]":                        "as cast/int32->decimal",
	"tsconv/bad-format":                             "as cast/int32->decimal: Kafka's message embeds Java's IllegalArgumentException",
	"insert/static-no-value":                        "Kafka's message prints an object hash (InsertionSpec@5a4aa2f2); Sluice names the field",
	"insertheader/[12:30:00]":                       "Values.parseString cuts a number at a delimiter (transforms/doc.go)",
	"insertheader/[12:30]":                          "Values.parseString cuts a number at a delimiter (transforms/doc.go)",
	"insertheader/[[1,2]]":                          "arrays and maps in value.literal stay strings (transforms/doc.go)",
	"insertheader/[{\"a\":1}]":                      "arrays and maps in value.literal stay strings (transforms/doc.go)",
	"headerfrom/missing-field":                      "Kafka fails with a NullPointerException; Sluice names the field",
	"tsconv/from-string-noformat":                   "Kafka fails with a NullPointerException; Sluice says the pattern is empty",
	"mask/dec":                                      "a masked Decimal keeps the value's scale (doc.go); Kafka's does not match its schema",
	"mask/dec-rep[7]":                               "a masked Decimal keeps the value's scale (transforms/doc.go)",
	"mask/dec-rep[1.5]":                             "a masked Decimal keeps the value's scale (transforms/doc.go)",
	"dropheaders/empty":                             "Kafka 4.4 reworded the empty-list message; Sluice keeps 4.0's (\"Empty list\")",
	"mask/empty-fields":                             "as dropheaders/empty",
	"v2k/empty":                                     "as dropheaders/empty",
	"regexrouter/[t(?=est)]->[z]":                   "regular expressions are RE2: no lookaround (doc.go); refused when configured",
	"regexrouter/[(?<=t)est]->[lb]":                 "regular expressions are RE2: no lookaround (transforms/doc.go)",
	"regexrouter/[(t)\\1]->[z]":                     "regular expressions are RE2: no backreferences (transforms/doc.go)",
	"regexrouter/[a++]->[p]":                        "regular expressions are RE2: no possessive quantifiers (transforms/doc.go)",
	"regexrouter/[\\p{Lower}+]->[low]":              "regular expressions are RE2: no Java POSIX classes (transforms/doc.go)",
	"regexrouter/[[]->[bad]":                        "RE2's parse error text is not java.util.regex's",
	"topicmatches/[t(?=e)st]":                       "regular expressions are RE2: no lookaround (transforms/doc.go)",
	"topicmatches/[\\p{Alpha}+]":                    "regular expressions are RE2: no Java POSIX classes (transforms/doc.go)",
	"regexrouter/silent[[a-z&&[^t]]+]":              "refused when configured: RE2 would read Java's class intersection as plain characters",
	"topicmatches/silent[[a-z&&[^t]]+]":             "refused when configured: RE2 would read Java's class intersection as plain characters",
	"regexrouter/silent[[a-d[s-t]]+]":               "refused when configured: RE2 would read Java's class union as plain characters",
	"topicmatches/silent[[a-d[s-t]]+]":              "refused when configured: RE2 would read Java's class union as plain characters",
	"regexrouter/silent[(?U)\\w+]":                  "refused when configured: (?U) is lazy quantifiers in RE2, Unicode classes in Java",
	"topicmatches/silent[(?U)\\w+]":                 "refused when configured: (?U) is lazy quantifiers in RE2, Unicode classes in Java",
	"regexrouter/silent[(?iU)T]":                    "refused when configured, as regexrouter/silent[(?U)\\w+]",
	"topicmatches/silent[(?iU)T]":                   "refused when configured, as regexrouter/silent[(?U)\\w+]",
	"regexrouter/[[a-z&&[^t]]+]->[cls]":             "refused when configured, as regexrouter/silent[[a-z&&[^t]]+]",
	"r2/cast-f32-str[123456789.0]":                  "Float.toString is JDK-dependent: JDK 19+ (and Sluice) print the shortest digits, 1.2345679E8; the JDK 17 that made these cases prints 1.23456792E8",
	"r2/cast-bool-badbool":                          "as cast/int32->decimal",
	"r2/tsconv-sec-string":                          "as tsconv/from-string-noformat",
	"r2/tsconv-parse[yyyy-MM-dd z][2023-11-14 PST]": "zone names other than GMT/UTC are not parsed (transforms/doc.go)",
	"r2/replace-whitelist":                          "ReplaceField still reads whitelist, which Kafka 4.0 removed (transforms/doc.go)",
	"r2/extract-v2-empty":                           "Kafka fails on an empty V2 path (fromIndex(0) > toIndex(-1)); Sluice reads the field named \"\"",
	"r4/mask-sl[dec]":                               "a masked Decimal keeps the value's scale (transforms/doc.go)",
	"r4/mask-sl-rep[dec]":                           "a masked Decimal keeps the value's scale (transforms/doc.go)",
	"r4/mask-sl-rep[map]":                           "harness: its typed maps are LinkedHashMaps, Sluice names the HashMap JsonConverter makes",
	"r4/tsconv-sl[map]->unix":                       "as r4/mask-sl-rep[map]",
	"r4/tsconv-sl[map]->string":                     "as r4/mask-sl-rep[map]",
	"r4/tsconv-sl[map]->Timestamp":                  "as r4/mask-sl-rep[map]",
	"r5/replace{\"exclude\": \"a,,b\"}":             "Kafka 4.4 refuses empty list entries (\"values must not be empty\"); Sluice follows 4.0, which accepts them",
	"r5/replace{\"exclude\": \",\"}":                "as r5/replace{\"exclude\": \"a,,b\"}",
	"r5/replace{\"include\": \"a,\"}":               "as r5/replace{\"exclude\": \"a,,b\"}",
	"r5/setschema-version[ 3 ]":                     "as setschema/int[schema.name=n]",
	"r5/setschema-version[+3]":                      "as setschema/int[schema.name=n]",
	"r6/parse[yy][-5]->unix":                        "a signed year under yy is not parsed (Java's lenient parser reads -5 as the year 6 BC)",
	"r6/parse[yy][-5]->Date":                        "as r6/parse[yy][-5]->unix",
	"r6/parse[yyyy-MM-dd zzzz][2024-01-01 Coordinated Universal Time]->unix": "zone names other than GMT/UTC are not parsed (transforms/doc.go)",
	"r6/parse[yyyy-MM-dd zzzz][2024-01-01 Coordinated Universal Time]->Date": "zone names other than GMT/UTC are not parsed (transforms/doc.go)",
	"r6/parse[yyyy-MM-dd Z][2024-01-01 +05]->unix":                           "zones are read as offsets whatever the letter (doc.go): Java's Z wants +hhmm",
	"r6/parse[yyyy-MM-dd Z][2024-01-01 +05]->Date":                           "as r6/parse[yyyy-MM-dd Z][2024-01-01 +05]->unix",
	"r6/parse[yyyy-MM-dd X][2024-01-01 +0530]->unix":                         "zones are read as offsets whatever the letter (doc.go): Java's single X reads +hh and ignores the rest",
	"r6/tsrouter-old":                                                     "a record timestamp of exactly 0001-01-01T00:00Z is Go's zero time, which Sluice's records take for no timestamp",
	"topicmatches/[[]":                                                    "RE2's parse error text is not java.util.regex's",
	"tsrouter/nullts":                                                     "Kafka's message prints SourceRecord{...}, a class Sluice's records do not have",
	"tsrouter/badformat":                                                  "a bad timestamp.format is refused when configured, naming the key; Kafka fails on the first record",
	"setschema/int[schema.name=n]":                                        "Kafka 4.x fails on any non-struct schema (\"Cannot list fields on non-struct type\"); Sluice sets the metadata as Kafka 3.x did",
	"setschema/int[schema.version=4]":                                     "as setschema/int[schema.name=n]",
	"setschema/int[schema.name=n&schema.version=5]":                       "as setschema/int[schema.name=n]",
	"r3/SetSchemaMetadata$Key{\"schema.name\": \"n\"}/int-null":           "as setschema/int[schema.name=n]",
	"r3/SetSchemaMetadata$Key{\"schema.name\": \"n\"}/int-null-default":   "as setschema/int[schema.name=n]",
	"r3/SetSchemaMetadata$Value{\"schema.name\": \"n\"}/int-null":         "as setschema/int[schema.name=n]",
	"r3/SetSchemaMetadata$Value{\"schema.name\": \"n\"}/int-null-default": "as setschema/int[schema.name=n]",
	"setschema/decimal":                                                   "as setschema/int[schema.name=n]",
}

const logicalCast = "whole-value Cast of a logical type drops the logical name (doc.go); Kafka keeps it on a schema its value no longer matches"

// kafkaGoldenTodo lists the cases where Sluice still differs from Kafka
// by mistake.
var kafkaGoldenTodo = map[string]string{}

func readJSONLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || strings.HasPrefix(string(line), "//") {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(string(line)))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func runKafkaCase(t *testing.T, conv *convert.JSONConverter, c map[string]any) map[string]any {
	t.Helper()
	topic := "test"
	if s, ok := c["topic"].(string); ok {
		topic = s
	}
	envelope := func(v any) (*data.Schema, any) {
		if v == nil {
			return nil, nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		s, val, err := conv.ToConnectData(topic, nil, b)
		if err != nil {
			t.Fatalf("read input %s: %v", b, err)
		}
		return s, val
	}
	r := &data.Record{Topic: topic, Timestamp: time.UnixMilli(1000).UTC()}
	if n, ok := c["partition"].(json.Number); ok {
		p, _ := n.Int64()
		r.Partition = int32(p)
	}
	if c["partition_null"] == true {
		r.Partition = data.NoPartition
	}
	if v, ok := c["timestamp"]; ok {
		if v == nil {
			r.Timestamp = time.Time{}
		} else {
			ms, _ := v.(json.Number).Int64()
			r.Timestamp = time.UnixMilli(ms).UTC()
		}
	}
	r.KeySchema, r.Key = envelope(c["key"])
	r.ValueSchema, r.Value = envelope(c["value"])
	// key_typed and value_typed are schemaless values in the dump's form,
	// for the Java types JsonConverter never reads (Byte, Float, Date...).
	if v, ok := c["key_typed"]; ok {
		r.KeySchema, r.Key = nil, valueParseJava(t, v)
	}
	if v, ok := c["value_typed"]; ok {
		r.ValueSchema, r.Value = nil, valueParseJava(t, v)
	}
	if hs, ok := c["headers"].([]any); ok {
		for _, h := range hs {
			hm := h.(map[string]any)
			s, v := envelope(hm["value"])
			r.Headers = append(r.Headers, data.Header{Key: hm["key"].(string), Schema: s, Value: v})
		}
	}
	props := map[string]string{}
	if pm, ok := c["props"].(map[string]any); ok {
		for k, v := range pm {
			props[k] = v.(string)
		}
	}
	class := c["class"].(string)
	errDump := func(err error) map[string]any {
		var ex *transforms.Exception
		if !errors.As(err, &ex) {
			return map[string]any{"error": map[string]any{"class": "(none)", "message": err.Error()}}
		}
		return map[string]any{"error": map[string]any{"class": ex.Class, "message": ex.Message}}
	}
	if strings.HasPrefix(class, "org.apache.kafka.connect.transforms.predicates.") {
		p, err := transforms.NewPredicate(class, props)
		if err != nil {
			return map[string]any{"config_error": err.Error(), "config_error_class": transforms.ConfigException}
		}
		ok, err := p.Test(r)
		if err != nil {
			return errDump(err)
		}
		return map[string]any{"test": ok}
	}
	tr, err := transforms.New(class, props)
	if err != nil {
		return map[string]any{"config_error": err.Error(), "config_error_class": transforms.ConfigException}
	}
	var out *data.Record
	if n, ok := c["offset"].(json.Number); ok {
		st, isSink := tr.(transforms.SinkTransformation)
		if !isSink {
			out, err = tr.Apply(r)
		} else {
			o, _ := n.Int64()
			out, err = st.ApplySink(r, o)
		}
	} else {
		out, err = tr.Apply(r)
	}
	if err != nil {
		return errDump(err)
	}
	if out == nil {
		return map[string]any{"dropped": true}
	}
	d := map[string]any{
		"topic": out.Topic, "keySchema": schemaDumpJava(out.KeySchema), "key": valueDumpJava(out.Key),
		"valueSchema": schemaDumpJava(out.ValueSchema), "value": valueDumpJava(out.Value),
	}
	if out.Partition != data.NoPartition {
		d["partition"] = json.Number(strconv.Itoa(int(out.Partition)))
	}
	if out.Timestamp.IsZero() {
		d["timestamp"] = nil
	} else {
		d["timestamp"] = json.Number(strconv.FormatInt(out.Timestamp.UnixMilli(), 10))
	}
	hs := []any{}
	for _, h := range out.Headers {
		hs = append(hs, map[string]any{"key": h.Key, "schema": schemaDumpJava(h.Schema), "value": valueDumpJava(h.Value)})
	}
	d["headers"] = hs
	return d
}

// schemaDumpJava is the harness's dump of a Connect schema.
func schemaDumpJava(s *data.Schema) any {
	if s == nil {
		return nil
	}
	o := map[string]any{"type": strings.ToUpper(s.Type.String()), "optional": s.Optional}
	if s.HasName() {
		o["name"] = s.Name
	}
	if s.Version != nil {
		o["version"] = json.Number(strconv.Itoa(int(*s.Version)))
	}
	if s.HasDoc() {
		o["doc"] = s.Doc
	}
	if len(s.Parameters) > 0 {
		p := map[string]any{}
		for k, v := range s.Parameters {
			p[k] = v
		}
		o["parameters"] = p
	}
	if s.Default != nil {
		o["default"] = valueDumpJava(s.Default)
	}
	switch s.Type {
	case data.StructType:
		fs := []any{}
		for _, f := range s.Fields {
			fs = append(fs, map[string]any{"name": f.Name, "schema": schemaDumpJava(f.Schema)})
		}
		o["fields"] = fs
	case data.MapType:
		o["keys"] = schemaDumpJava(s.KeySchema)
		o["values"] = schemaDumpJava(s.ValueSchema)
	case data.Array:
		o["values"] = schemaDumpJava(s.ValueSchema)
	}
	return o
}

// valueDumpJava is the harness's dump of a Connect value: the Java type
// Kafka would hold it in, and the value.
func valueDumpJava(v any) any {
	num := func(n int64) json.Number { return json.Number(strconv.FormatInt(n, 10)) }
	switch x := v.(type) {
	case nil:
		return nil
	case int8:
		return map[string]any{"int8": num(int64(x))}
	case int16:
		return map[string]any{"int16": num(int64(x))}
	case int32:
		return map[string]any{"int32": num(int64(x))}
	case int64:
		return map[string]any{"int64": num(x)}
	case float32:
		return map[string]any{"float32": strconv.FormatFloat(float64(x), 'g', -1, 64)}
	case float64:
		return map[string]any{"float64": strconv.FormatFloat(x, 'g', -1, 64)}
	case bool:
		return map[string]any{"boolean": x}
	case string:
		return map[string]any{"string": x}
	case []byte:
		return map[string]any{"bytes": base64.StdEncoding.EncodeToString(x)}
	case data.Raw:
		return map[string]any{"bytes": base64.StdEncoding.EncodeToString(x)}
	case data.Decimal:
		u := x.Unscaled
		if u == nil {
			u = new(big.Int)
		}
		return map[string]any{"decimal": u.String() + "e-" + strconv.Itoa(int(x.Scale))}
	case time.Time:
		return map[string]any{"date": num(x.UnixMilli())}
	case []any:
		a := []any{}
		for _, e := range x {
			a = append(a, valueDumpJava(e))
		}
		return map[string]any{"array": a}
	case map[string]any:
		a := []any{}
		for k, e := range x {
			a = append(a, []any{valueDumpJava(k), valueDumpJava(e)})
		}
		return map[string]any{"map": a}
	case data.Map:
		a := []any{}
		for _, e := range x {
			a = append(a, []any{valueDumpJava(e.Key), valueDumpJava(e.Value)})
		}
		return map[string]any{"map": a}
	case *data.Struct:
		vals := []any{}
		for _, e := range x.Values() {
			vals = append(vals, valueDumpJava(e))
		}
		return map[string]any{"struct": map[string]any{"schema": schemaDumpJava(x.Schema()), "values": vals}}
	}
	return map[string]any{"unknown": reflect.TypeOf(v).String()}
}

// valueParseJava reads a schemaless value in valueDumpJava's form.
func valueParseJava(t *testing.T, d any) any {
	t.Helper()
	if d == nil {
		return nil
	}
	m := d.(map[string]any)
	for k, x := range m {
		integer := func(bits int) int64 {
			n, err := strconv.ParseInt(string(x.(json.Number)), 10, bits)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		float := func(bits int) float64 {
			f, err := strconv.ParseFloat(x.(string), bits)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		switch k {
		case "int8":
			return int8(integer(8))
		case "int16":
			return int16(integer(16))
		case "int32":
			return int32(integer(32))
		case "int64":
			return integer(64)
		case "float32":
			return float32(float(32))
		case "float64":
			return float(64)
		case "boolean":
			return x.(bool)
		case "string":
			return x.(string)
		case "bytes":
			b, err := base64.StdEncoding.DecodeString(x.(string))
			if err != nil {
				t.Fatal(err)
			}
			return b
		case "date":
			return time.UnixMilli(int64(integer(64))).UTC()
		case "decimal":
			mant, scale, _ := strings.Cut(x.(string), "e-")
			u, ok := new(big.Int).SetString(mant, 10)
			sc, err := strconv.Atoi(scale)
			if !ok || err != nil {
				t.Fatalf("decimal %q", x)
			}
			return data.Decimal{Unscaled: u, Scale: int32(sc)}
		case "array":
			out := []any{}
			for _, e := range x.([]any) {
				out = append(out, valueParseJava(t, e))
			}
			return out
		case "map":
			var dm data.Map
			sm := map[string]any{}
			stringKeys := true
			for _, e := range x.([]any) {
				p := e.([]any)
				k, v := valueParseJava(t, p[0]), valueParseJava(t, p[1])
				dm = append(dm, data.MapEntry{Key: k, Value: v})
				if ks, ok := k.(string); ok {
					sm[ks] = v
				} else {
					stringKeys = false
				}
			}
			if stringKeys {
				return sm
			}
			return dm
		}
		t.Fatalf("unknown dump type %q", k)
	}
	return nil
}

// normDump makes two dumps comparable: map entries in a fixed order (Java's
// HashMap and Go's map iterate differently) and floats as Go formats them
// (Java's Double.toString writes 1.0E20).
func normDump(v any) any {
	switch x := v.(type) {
	case map[string]any:
		o := make(map[string]any, len(x))
		for k, e := range x {
			switch k {
			case "float32", "float64":
				if s, ok := e.(string); ok {
					if f, err := strconv.ParseFloat(s, 64); err == nil {
						e = strconv.FormatFloat(f, 'g', -1, 64)
					}
				}
				o[k] = e
			case "map":
				entries := []any{}
				for _, p := range e.([]any) {
					entries = append(entries, normDump(p))
				}
				slices.SortFunc(entries, func(a, b any) int {
					ja, _ := json.Marshal(a)
					jb, _ := json.Marshal(b)
					return strings.Compare(string(ja), string(jb))
				})
				o[k] = entries
			default:
				o[k] = normDump(e)
			}
		}
		return o
	case []any:
		o := make([]any, len(x))
		for i, e := range x {
			o[i] = normDump(e)
		}
		return o
	}
	return v
}

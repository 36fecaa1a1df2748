package convert

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// TestSimpleHeaderTemporalGolden checks Date, Time and Timestamp values,
// alone and inside arrays, maps and structs, against
// testdata/header/temporal.tsv: the text Kafka 4.4.0's SimpleHeaderConverter
// writes for them (chosen from the instant, not the schema: a Date of
// 1970-01-01 or earlier is written as a time of day, a Time of 24:00 as a
// date, a Timestamp at midnight as a date) and the schema and value it
// infers when reading that text back.
func TestSimpleHeaderTemporalGolden(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "header", "temporal.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := SimpleHeaderConverter{}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 4 {
			t.Fatalf("golden line %q: want 4 columns", line)
		}
		spec, wantText, wantSchema, wantValue := cols[0], cols[1], cols[2], cols[3]
		n++
		if !strings.HasPrefix(spec, "read|") {
			s, v := temporalCase(t, spec)
			b, err := h.FromConnectHeader("t", "k", s, v)
			if err != nil || string(b) != wantText {
				t.Errorf("%s: wrote %q, %v; Kafka writes %q", spec, b, err, wantText)
			}
		}
		s, v, err := h.ToConnectHeader("t", "k", []byte(wantText))
		if err != nil {
			t.Errorf("%s: reading %q: %v", spec, wantText, err)
			continue
		}
		if got := describeSchema(s); got != wantSchema {
			t.Errorf("%s: %q reads as schema %s; Kafka infers %s", spec, wantText, got, wantSchema)
		}
		if got := describeValue(v); got != wantValue {
			t.Errorf("%s: %q reads as %s; Kafka reads %s", spec, wantText, got, wantValue)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 80 {
		t.Fatalf("only %d golden cases read", n)
	}
}

// temporalCase builds the schema and value a golden case names.
func temporalCase(t *testing.T, spec string) (*data.Schema, any) {
	t.Helper()
	name, list, ok := strings.Cut(spec, "|")
	if !ok {
		t.Fatalf("case %q: no |", spec)
	}
	var vals []any
	for _, f := range strings.Split(list, ",") {
		ms, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("case %q: %v", spec, err)
		}
		vals = append(vals, timeUTC(ms))
	}
	logical := func(n string) *data.Schema {
		switch n {
		case "Date":
			return data.DateSchema(false)
		case "Time":
			return data.TimeSchema(false)
		case "Timestamp":
			return data.TimestampSchema(false)
		case "none":
			return nil
		}
		t.Fatalf("case %q: unknown type %q", spec, n)
		return nil
	}
	switch {
	case strings.HasPrefix(name, "Array<"):
		return data.ArrayOf(logical(strings.TrimSuffix(strings.TrimPrefix(name, "Array<"), ">"))), vals
	case strings.HasPrefix(name, "Map<String,"):
		m := map[string]any{}
		for i, v := range vals {
			m[fmt.Sprintf("k%d", i)] = v
		}
		return data.MapOf(data.StringSchema, logical(strings.TrimSuffix(strings.TrimPrefix(name, "Map<String,"), ">"))), m
	case strings.HasPrefix(name, "Map<"):
		var m data.Map
		for i, v := range vals {
			m = append(m, data.MapEntry{Key: v, Value: fmt.Sprintf("v%d", i)})
		}
		k, _, _ := strings.Cut(strings.TrimPrefix(name, "Map<"), ",")
		return data.MapOf(logical(k), data.StringSchema), m
	case name == "Struct":
		s := data.StructBuilder().
			Field("d", data.DateSchema(false)).
			Field("t", data.TimeSchema(false)).
			Field("ts", data.TimestampSchema(false)).
			MustBuild()
		return s, data.NewStruct(s).MustPut("d", vals[0]).MustPut("t", vals[1]).MustPut("ts", vals[2])
	}
	return logical(name), vals[0]
}

// describeSchema prints a schema as the golden file does: the type, the
// logical type's simple name, "?" when optional, then element, key and
// value schemas.
func describeSchema(s *data.Schema) string {
	if s == nil {
		return "null"
	}
	r := upperType(s.Type)
	if s.Name != "" {
		r += "(" + strings.TrimPrefix(s.Name, "org.apache.kafka.connect.data.") + ")"
	}
	if s.Optional {
		r += "?"
	}
	switch s.Type {
	case data.Array:
		r += "<" + describeSchema(s.ValueSchema) + ">"
	case data.MapType:
		r += "<" + describeSchema(s.KeySchema) + "," + describeSchema(s.ValueSchema) + ">"
	}
	return r
}

// describeValue prints a value as the golden file does.
func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case time.Time:
		return "@" + strconv.FormatInt(x.UnixMilli(), 10)
	case int8:
		return "i8:" + data.FormatValue(x)
	case int16:
		return "i16:" + data.FormatValue(x)
	case int32:
		return "i32:" + data.FormatValue(x)
	case int64:
		return "i64:" + data.FormatValue(x)
	case float32:
		return "f32:" + data.FormatValue(x)
	case float64:
		return "f64:" + data.FormatValue(x)
	case string:
		return `"` + x + `"`
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = describeValue(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		var parts []string
		for k, e := range x {
			parts = append(parts, describeValue(k)+"="+describeValue(e))
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, ",") + "}"
	case data.Map:
		var parts []string
		for _, e := range x {
			parts = append(parts, describeValue(e.Key)+"="+describeValue(e.Value))
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprintf("%T:%v", v, v)
}

package convert

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

func mustDataError(t *testing.T, err error, wantMsg, wantPath string) {
	t.Helper()
	var de *DataError
	if !errors.As(err, &de) {
		t.Fatalf("error = %v (%T), want a *DataError", err, err)
	}
	if de.Msg != wantMsg || de.Path != wantPath {
		t.Fatalf("error = msg %q path %q, want msg %q path %q", de.Msg, de.Path, wantMsg, wantPath)
	}
}

func TestJSONReadErrors(t *testing.T) {
	cases := []struct {
		name, in   string
		cfg        func(*JSONConfig)
		msg, path  string
		causeMatch string
	}{
		{name: "malformed", in: `{"schema":`, msg: deserializeMsg, causeMatch: "unexpected end of input"},
		{name: "bad literal", in: `{"schema":nul,"payload":1}`, msg: deserializeMsg, causeMatch: "unrecognized token"},
		{name: "leading zero", in: `01`, cfg: noSchemas, msg: deserializeMsg, causeMatch: "leading zeroes"},
		{name: "root number glued", in: `42x`, cfg: noSchemas, msg: deserializeMsg, causeMatch: "after root-level number"},
		{name: "control char", in: "\"a\x01\"", cfg: noSchemas, msg: deserializeMsg, causeMatch: "control character"},
		{name: "bad escape", in: `"\x"`, cfg: noSchemas, msg: deserializeMsg, causeMatch: "escape"},
		{name: "invalid utf8", in: "\"\xff\"", cfg: noSchemas, msg: deserializeMsg, causeMatch: "UTF-8"},
		{name: "NaN literal", in: `NaN`, cfg: noSchemas, msg: deserializeMsg},
		{name: "deep", in: strings.Repeat("[", 2000) + strings.Repeat("]", 2000), cfg: noSchemas, msg: deserializeMsg, causeMatch: "nested deeper"},
		{name: "no envelope", in: `{"a":1}`, msg: envelopeMsg},
		{name: "envelope array", in: `[1,2]`, msg: envelopeMsg},
		{name: "envelope missing payload", in: `{"schema":null}`, msg: envelopeMsg},
		{name: "envelope extra field", in: `{"schema":null,"payload":1,"x":2}`, msg: envelopeMsg},
		{name: "envelope wrong names", in: `{"schema":null,"value":1}`, msg: envelopeMsg},
		{name: "envelope empty doc", in: ``, msg: envelopeMsg},
		{name: "string for int32", in: `{"schema":{"type":"int32","optional":false},"payload":"abc"}`,
			msg: "INT32 values should be encoded as JSON numbers, but found STRING"},
		{name: "int8 overflow", in: `{"schema":{"type":"int8","optional":false},"payload":300}`,
			msg: "Numeric value 300 is out of range for INT8"},
		{name: "int64 overflow", in: `{"schema":{"type":"int64","optional":false},"payload":9223372036854775808}`,
			msg: "Numeric value 9223372036854775808 is out of range for INT64"},
		{name: "fraction for int", in: `{"schema":{"type":"int32","optional":false},"payload":1.5}`,
			msg: "INT32 values must be integral, but found 1.5"},
		{name: "number for string", in: `{"schema":{"type":"string","optional":false},"payload":5}`,
			msg: "STRING values should be encoded as JSON strings, but found NUMBER"},
		{name: "string for boolean", in: `{"schema":{"type":"boolean","optional":false},"payload":"true"}`,
			msg: "BOOLEAN values should be encoded as JSON booleans, but found STRING"},
		{name: "required null", in: `{"schema":{"type":"int32","optional":false},"payload":null}`,
			msg: "Invalid null value for required INT32 field"},
		{name: "missing required field", in: `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false},"payload":{}}`,
			msg: "Invalid null value for required INT64 field", path: "id"},
		{name: "nested path", in: `{"schema":{"type":"struct","fields":[{"type":"array","items":{"type":"struct","fields":[{"type":"int16","optional":false,"field":"qty"}],"optional":false},"optional":false,"field":"lines"}],"optional":false},"payload":{"lines":[{"qty":1},{"qty":"x"}]}}`,
			msg: "INT16 values should be encoded as JSON numbers, but found STRING", path: "lines[1].qty"},
		{name: "struct not object", in: `{"schema":{"type":"struct","fields":[],"optional":false},"payload":[]}`,
			msg: "Structs should be encoded as JSON objects, but found ARRAY"},
		{name: "array not array", in: `{"schema":{"type":"array","items":{"type":"int32","optional":false},"optional":false},"payload":"abc"}`,
			msg: "Arrays should be encoded as JSON arrays, but found STRING"},
		{name: "string map not object", in: `{"schema":{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":[]}`,
			msg: "Maps with string fields should be encoded as JSON objects, but found ARRAY"},
		{name: "int map not array", in: `{"schema":{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":{}}`,
			msg: "Maps with non-string fields should be encoded as JSON array of tuples, but found OBJECT"},
		{name: "int map bad entry", in: `{"schema":{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":[5]}`,
			msg: "Found invalid map entry instead of array tuple: NUMBER", path: "[0]"},
		{name: "int map short entry", in: `{"schema":{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":[[1,2],[1]]}`,
			msg: "Found invalid map entry, expected length 2 but found :1", path: "[1]"},
		{name: "bytes not base64", in: `{"schema":{"type":"bytes","optional":false},"payload":"!!"}`, msg: "Invalid bytes field"},
		{name: "date as float", in: `{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1},"payload":1.5}`,
			msg: "Invalid type for Date, underlying representation should be integer but was NUMBER"},
		{name: "time out of range", in: `{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time","version":1},"payload":86400001}`,
			msg: "Time values must use number of milliseconds greater than 0 and less than 86400000"},
		{name: "timestamp as string", in: `{"schema":{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1},"payload":"2024"}`,
			msg: "Invalid type for Timestamp, underlying representation should be integral but was STRING"},
		{name: "decimal bad base64", in: `{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":"@@"}`,
			msg: "Invalid bytes for Decimal field"},
		{name: "decimal bool", in: `{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":true}`,
			msg: "Invalid type for Decimal, underlying representation should be numeric or bytes but was BOOLEAN"},
		{name: "schema without type", in: `{"schema":{"optional":false},"payload":1}`, msg: "Schema must contain 'type' field", path: "schema"},
		{name: "schema not object", in: `{"schema":5,"payload":1}`, msg: "Schema must contain 'type' field", path: "schema"},
		{name: "unknown type", in: `{"schema":{"type":"int128"},"payload":1}`, msg: "Unknown schema type: int128", path: "schema"},
		{name: "array without items", in: `{"schema":{"type":"array"},"payload":[]}`, msg: "Array schema did not specify the element type", path: "schema"},
		{name: "map without keys", in: `{"schema":{"type":"map","values":{"type":"int8"}},"payload":{}}`, msg: "Map schema did not specify the key type", path: "schema"},
		{name: "map without values", in: `{"schema":{"type":"map","keys":{"type":"int8"}},"payload":{}}`, msg: "Map schema did not specify the value type", path: "schema"},
		{name: "struct fields not array", in: `{"schema":{"type":"struct","fields":{}},"payload":{}}`, msg: `Struct schema's "fields" argument is not an array.`, path: "schema"},
		{name: "struct field without name", in: `{"schema":{"type":"struct","fields":[{"type":"int8"}]},"payload":{}}`, msg: "Struct schema's field name not specified properly", path: "schema"},
		{name: "duplicate field", in: `{"schema":{"type":"struct","fields":[{"type":"int8","field":"a"},{"type":"int8","field":"a"}]},"payload":{}}`,
			msg: "Cannot create field because of field name duplication a", path: "schema"},
		{name: "bad parameter", in: `{"schema":{"type":"int8","parameters":{"a":1}},"payload":1}`, msg: "Schema parameters must have string values.", path: "schema"},
		{name: "null default of required", in: `{"schema":{"type":"int8","default":null},"payload":1}`, msg: "Invalid null value for required INT8 field", path: "schema.default"},
		{name: "bad nested field schema", in: `{"schema":{"type":"struct","fields":[{"type":"nope","field":"a"}]},"payload":{}}`, msg: "Unknown schema type: nope", path: "schema.fields.a"},
		{name: "schemaless big int", in: `123456789012345678901234567890`, cfg: noSchemas, msg: "Integral value 123456789012345678901234567890 is out of range for INT64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, v, err := newTestJSON(tc.cfg).ToConnectData("t", nil, []byte(tc.in))
			if err == nil {
				t.Fatalf("no error; got schema %v value %#v", s, v)
			}
			mustDataError(t, err, tc.msg, tc.path)
			if tc.causeMatch != "" && !strings.Contains(err.Error(), tc.causeMatch) {
				t.Fatalf("error %q does not mention %q", err, tc.causeMatch)
			}
		})
	}
}

func TestJSONEnvelopeMessageIsKafkas(t *testing.T) {
	_, _, err := newTestJSON(nil).ToConnectData("t", nil, []byte(`{"id":1}`))
	want := `JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration.`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

func TestJSONWriteErrors(t *testing.T) {
	wrongScale := dec(5, 1)
	cases := []struct {
		name      string
		cfg       func(*JSONConfig)
		schema    *data.Schema
		value     any
		msg, path string
	}{
		{name: "required null", schema: data.Int32Schema, value: nil, msg: requiredNull},
		{name: "required null noreplace", cfg: noReplace, schema: &data.Schema{Type: data.Int32, Default: int32(1)}, value: nil, msg: requiredNull},
		{name: "wrong go type", schema: data.Int32Schema, value: "x", msg: "Invalid type for INT32: string"},
		{name: "int for int64", schema: data.Int64Schema, value: 5, msg: "Invalid type for INT64: int"},
		{name: "bytes wrong type", schema: data.BytesSchema, value: "x", msg: "Invalid type for bytes type: string"},
		{name: "struct for map", schema: intMapSchema, value: section62Value(), msg: "Invalid type for MAP: *data.Struct"},
		{name: "mismatching struct", schema: lineSchema, value: section62Value(), msg: "Mismatching schema."},
		{name: "schemaless struct", schema: nil, value: section62Value(), msg: "Mismatching schema."},
		{name: "schemaless go int", schema: nil, value: 5, msg: "Go type int does not have corresponding schema type."},
		{name: "schemaless decimal", schema: nil, value: dec(1, 0), msg: "Go type data.Decimal does not have corresponding schema type."},
		{name: "decimal scale", schema: data.DecimalSchema(2, false), value: wrongScale, msg: "BigDecimal has mismatching scale value for given Decimal schema"},
		{name: "decimal type", schema: data.DecimalSchema(2, false), value: 1.5, msg: "Invalid type for Decimal, expected data.Decimal but was float64"},
		{name: "date with time", schema: data.DateSchema(false), value: utc(2024, 1, 15, 1, 0, 0, 0),
			msg: "Kafka Connect Date type should not have any time fields set to non-zero values."},
		{name: "time with date", schema: data.TimeSchema(false), value: utc(2024, 1, 15, 1, 0, 0, 0),
			msg: "Kafka Connect Time type should not have any date fields set to non-zero values."},
		{name: "timestamp type", schema: data.TimestampSchema(false), value: int64(5), msg: "Invalid type for Timestamp, expected Date but was int64"},
		{name: "nested field", schema: orderSchema,
			value: func() any {
				v := orderValue()
				v.SetIndex(3, data.NewStruct(lineSchema).MustPut("sku", "S"))
				return v
			}(),
			msg: requiredNull, path: "line.qty"},
		{name: "array element", schema: data.ArrayOf(data.Int8Schema), value: []any{int8(1), int16(2)}, msg: "Invalid type for INT8: int16", path: "[1]"},
		{name: "string map key", schema: data.MapOf(data.StringSchema, data.Int8Schema), value: data.Map{{Key: int8(1), Value: int8(1)}},
			msg: "Invalid type for STRING: int8", path: "[0]"},
		{name: "int map given string keys", schema: intMapSchema, value: map[string]any{"a": "x"}, msg: "Invalid type for INT32: string", path: "[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := newTestJSON(tc.cfg).FromConnectData("t", nil, tc.schema, tc.value)
			if err == nil {
				t.Fatalf("no error; wrote %s", b)
			}
			mustDataError(t, err, tc.msg, tc.path)
		})
	}
}

func TestJSONNullHandling(t *testing.T) {
	c := newTestJSON(nil)
	b, err := c.FromConnectData("t", nil, nil, nil)
	if err != nil || b != nil {
		t.Fatalf("tombstone: got %q, %v; want nil bytes", b, err)
	}
	s, v, err := c.ToConnectData("t", nil, nil)
	if err != nil || s != nil || v != nil {
		t.Fatalf("null bytes: got %v %v %v", s, v, err)
	}
	// An empty document is no value when schemas are off (Jackson's MissingNode).
	s, v, err = newTestJSON(noSchemas).ToConnectData("t", nil, []byte("  \n"))
	if err != nil || s != nil || v != nil {
		t.Fatalf("empty document: got %v %v %v", s, v, err)
	}
	// A raw value is already serialized and passes through.
	raw := data.Raw(`{"x":1}`)
	if b, err := c.FromConnectData("t", nil, data.StringSchema, raw); err != nil || string(b) != string(raw) {
		t.Fatalf("raw: got %q, %v", b, err)
	}
}

func TestJSONReadQuirks(t *testing.T) {
	cases := []struct {
		name   string
		cfg    func(*JSONConfig)
		in     string
		schema *data.Schema
		want   any
	}{
		{name: "duplicate keys keep last", cfg: noSchemas, in: `{"a":1,"b":2,"a":3}`, want: map[string]any{"a": int64(3), "b": int64(2)}},
		{name: "trailing content ignored", in: `{"schema":null,"payload":1} {"x"`, want: int64(1)},
		{name: "root number then space", cfg: noSchemas, in: "42 junk", want: int64(42)},
		{name: "byte order mark", cfg: noSchemas, in: "\xef\xbb\xbf\"x\"", want: "x"},
		{name: "negative zero reads as zero", cfg: noSchemas, in: `-0.0`, want: 0.0},
		{name: "exponent float", cfg: noSchemas, in: `1e2`, want: 100.0},
		{name: "huge float is infinite", cfg: noSchemas, in: `1e400`, want: math.Inf(1)},
		{name: "unicode escapes", cfg: noSchemas, in: `"\u00e9\ud83d\ude00\/"`, want: "é😀/"},
		{name: "lone surrogate", cfg: noSchemas, in: `"a\ud800b"`, want: "a\uFFFDb"},
		{name: "integral float for int32", in: `{"schema":{"type":"int32","optional":false},"payload":3.0}`,
			schema: data.Int32Schema, want: int32(3)},
		{name: "exponent for int64", in: `{"schema":{"type":"int64","optional":false},"payload":3e2}`,
			schema: data.Int64Schema, want: int64(300)},
		{name: "int for double", in: `{"schema":{"type":"double","optional":false},"payload":5}`,
			schema: data.Float64Schema, want: 5.0},
		{name: "NaN string for float", in: `{"schema":{"type":"float","optional":false},"payload":"NaN"}`,
			schema: data.Float32Schema, want: nil},
		{name: "numeric decimal rescaled", in: `{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":1.5}`,
			schema: data.DecimalSchema(2, false), want: dec(150, 2)},
		{name: "numeric decimal with more digits keeps its scale", in: `{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":1.555}`,
			schema: data.DecimalSchema(2, false), want: dec(1555, 3)},
		{name: "base64 decimal read by numeric converter", cfg: numeric, in: `{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":"AN4="}`,
			schema: data.DecimalSchema(2, false), want: dec(222, 2)},
		{name: "int map duplicate key", in: `{"schema":{"type":"map","keys":{"type":"int8","optional":false},"values":{"type":"string","optional":false},"optional":false},"payload":[[1,"a"],[2,"b"],[1,"c"]]}`,
			schema: data.MapOf(data.Int8Schema, data.StringSchema), want: data.Map{{Key: int8(1), Value: "c"}, {Key: int8(2), Value: "b"}}},
		{name: "no replace keeps null", cfg: noReplace, in: `{"schema":{"type":"int32","optional":true,"default":7},"payload":null}`,
			schema: &data.Schema{Type: data.Int32, Optional: true, Default: int32(7)}, want: nil},
		{name: "replace reads default", in: `{"schema":{"type":"int32","optional":true,"default":7},"payload":null}`,
			schema: &data.Schema{Type: data.Int32, Optional: true, Default: int32(7)}, want: int32(7)},
		{name: "schema fields in any order", in: `{"payload":{"b":"x"},"schema":{"optional":true,"fields":[{"field":"b","optional":false,"type":"string"}],"type":"struct","name":"n","version":2,"doc":"d","parameters":{}}}`,
			schema: &data.Schema{Type: data.StructType, Optional: true, Name: "n", Version: ver(2), Doc: "d", Parameters: map[string]string{},
				Fields: []data.Field{{Name: "b", Index: 0, Schema: data.StringSchema}}},
			want: "struct"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, v, err := newTestJSON(tc.cfg).ToConnectData("t", nil, []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !data.SchemaEqual(s, tc.schema) {
				t.Fatalf("schema = %+v, want %+v", s, tc.schema)
			}
			switch w := tc.want.(type) {
			case nil:
				if tc.name == "NaN string for float" {
					if f, ok := v.(float32); !ok || !math.IsNaN(float64(f)) {
						t.Fatalf("value = %#v, want NaN", v)
					}
					return
				}
			case string:
				if w == "struct" {
					st, ok := v.(*data.Struct)
					if !ok || st.Get("b") != "x" || st.Schema() != s {
						t.Fatalf("value = %#v", v)
					}
					return
				}
			case float64:
				if g, ok := v.(float64); ok && w == 0 && g == 0 && math.Signbit(g) {
					t.Fatalf("value is negative zero")
				}
			}
			if !data.ValueEqual(v, tc.want) {
				t.Fatalf("value = %#v, want %#v", v, tc.want)
			}
		})
	}
}

func TestJSONSchemaCaches(t *testing.T) {
	doc := []byte(`{"schema":{"type":"string","optional":false},"payload":"a"}`)
	c := newTestJSON(nil)
	s1, _, _ := c.ToConnectData("t", nil, doc)
	s2, _, _ := c.ToConnectData("t", nil, doc)
	if s1 != s2 {
		t.Fatal("the same schema text should come back as the same cached schema")
	}
	if n := c.toConnect.len(); n != 1 {
		t.Fatalf("toConnect cache holds %d schemas, want 1", n)
	}
	off := newTestJSON(func(c *JSONConfig) { c.SchemasCacheSize = 0 })
	a, _, _ := off.ToConnectData("t", nil, doc)
	b, _, _ := off.ToConnectData("t", nil, doc)
	if a == b || !data.SchemaEqual(a, b) {
		t.Fatal("with schemas.cache.size=0 every record parses its own (equal) schema")
	}
	small := newTestJSON(func(c *JSONConfig) { c.SchemasCacheSize = 2 })
	for _, s := range []*data.Schema{data.Int8Schema, data.Int16Schema, data.Int32Schema, data.Int64Schema} {
		if _, err := small.FromConnectData("t", nil, s, nil); err == nil {
			t.Fatal("required null should fail")
		}
		if _, err := small.FromConnectData("t", nil, &data.Schema{Type: s.Type, Optional: true}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := small.toJSON.len(); n != 2 {
		t.Fatalf("toJSON cache holds %d schemas, want its size 2", n)
	}
}

func TestJSONMapOrderAndDuplicates(t *testing.T) {
	c := newTestJSON(noSchemas)
	b, err := c.FromConnectData("t", nil, nil, data.Map{{Key: "b", Value: int64(1)}, {Key: "a", Value: int64(2)}, {Key: "b", Value: int64(3)}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"b":3,"a":2}`; string(b) != want {
		t.Fatalf("got %s, want %s (entry order, repeated key at first position with last value)", b, want)
	}
	b, err = c.FromConnectData("t", nil, data.MapOf(data.OptionalStringSchema, data.Int8Schema), data.Map{{Key: nil, Value: int8(1)}})
	if err != nil || string(b) != `{"null":1}` {
		t.Fatalf("null key: got %s, %v", b, err)
	}
}

func TestJSONConfigFromProps(t *testing.T) {
	c, err := newJSONFromProps("value", map[string]string{"schemas.enable": " FALSE ", "decimal.format": "numeric", "schemas.cache.size": "5", "replace.null.with.default": "false"})
	if err != nil {
		t.Fatal(err)
	}
	want := JSONConfig{SchemasEnable: false, SchemasCacheSize: 5, DecimalFormat: DecimalNumeric, ReplaceNullWithDefault: false}
	if c.cfg != want {
		t.Fatalf("config = %+v, want %+v", c.cfg, want)
	}
	_, err = newJSONFromProps("key", map[string]string{"schemas.enable": "maybe", "decimal.format": "hex", "schemas.cache.size": "many"})
	for _, msg := range []string{
		"Invalid value maybe for configuration schemas.enable: Expected value to be either true or false",
		"Invalid value hex for configuration decimal.format: String must be one of (case insensitive): BASE64, NUMERIC",
		"Invalid value many for configuration schemas.cache.size: Not a number of type INT",
	} {
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("error %v should contain %q", err, msg)
		}
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Errorf("error %v should hold a *config.Error", err)
	}
	// converter.type is the framework's: a user's value is overridden.
	if _, err := newJSONFromProps("header", map[string]string{"converter.type": "bogus"}); err != nil {
		t.Errorf("converter.type given by the user: %v", err)
	}
}

func TestNilStructIsNull(t *testing.T) {
	var st *data.Struct
	b, err := newTestJSON(nil).FromConnectData("t", nil, &data.Schema{Type: data.StructType, Optional: true}, st)
	if err != nil || string(b) != `{"schema":{"type":"struct","fields":[],"optional":true},"payload":null}` {
		t.Fatalf("typed nil struct: %s %v", b, err)
	}
	if b, err := (SimpleHeaderConverter{}).FromConnectHeader("t", "h", nil, []any{st}); err != nil || string(b) != "[null]" {
		t.Fatalf("header: %s %v", b, err)
	}
	if s := javaString([]any{st}); s != "[null]" {
		t.Fatalf("javaString: %s", s)
	}
}

// One converter serves many goroutines (its caches are shared).
func TestJSONConcurrentUse(t *testing.T) {
	c := newTestJSON(func(cfg *JSONConfig) { cfg.SchemasCacheSize = 2 })
	schemas := []*data.Schema{section62Schema, orderSchema, data.StringSchema, intMapSchema}
	values := []any{section62Value(), orderValue(), "s", data.Map{{Key: int32(1), Value: "a"}}}
	done := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 200; i++ {
				k := (g + i) % len(schemas)
				b, err := c.FromConnectData("t", nil, schemas[k], values[k])
				if err != nil {
					done <- err
					return
				}
				s, v, err := c.ToConnectData("t", nil, b)
				if err != nil {
					done <- err
					return
				}
				if !data.SchemaEqual(s, schemas[k]) || !data.ValueEqual(v, values[k]) {
					done <- errors.New("round trip mismatch for " + string(b))
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// Kafka's Time accepts 0 through 86400000 ms inclusive (24:00:00.000) both
// ways, so a value read from Kafka Connect's output can be written again.
func TestJSONTimeEndOfDay(t *testing.T) {
	c := newTestJSON(nil)
	b, err := c.FromConnectData("t", nil, data.TimeSchema(false), timeUTC(msPerDay))
	want := `{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time","version":1},"payload":86400000}`
	if err != nil || string(b) != want {
		t.Fatalf("FromConnectData(24:00) = %s, %v; want %s", b, err, want)
	}
	if _, v, err := c.ToConnectData("t", nil, b); err != nil || !v.(time.Time).Equal(timeUTC(msPerDay)) {
		t.Fatalf("read back %v, %v", v, err)
	}
	_, err = c.FromConnectData("t", nil, data.TimeSchema(false), timeUTC(msPerDay+1))
	mustDataError(t, err, "Kafka Connect Time type should not have any date fields set to non-zero values.", "")
}

// schema.content (KIP-1054): with schemas.enable, every message read is a
// bare payload of the configured schema; writing keeps the envelope.
func TestJSONSchemaContent(t *testing.T) {
	schema := `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},` +
		`{"type":"string","optional":true,"field":"name"},{"type":"int64","optional":false,"default":7,"field":"n"}],"optional":false,"name":"order"}`
	c, err := newJSONFromProps("value", map[string]string{"schema.content": schema})
	if err != nil {
		t.Fatal(err)
	}
	s, v, err := c.ToConnectData("t", nil, []byte(`{"id":42,"name":"x","n":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if s == nil || s.Name != "order" || len(s.Fields) != 3 {
		t.Fatalf("schema = %+v, want the configured struct", s)
	}
	st, ok := v.(*data.Struct)
	if !ok {
		t.Fatalf("value = %T %v, want a struct", v, v)
	}
	if id := st.Get("id"); id != int32(42) {
		t.Errorf("id = %v (%T), want int32 42", id, id)
	}
	if name := st.Get("name"); name != "x" {
		t.Errorf("name = %v, want x", name)
	}
	if n := st.Get("n"); n != int64(7) {
		t.Errorf("n = %v (%T), want the default 7", n, n)
	}
	// Every message gets the one parsed schema.
	s2, _, err := c.ToConnectData("t", nil, []byte(`{"id":1,"n":2}`))
	if err != nil || s2 != s {
		t.Fatalf("second message: schema %p (%v), want %p", s2, err, s)
	}
	// An envelope is not unwrapped: it is a payload missing the required id.
	if _, _, err := c.ToConnectData("t", nil, []byte(`{"schema":null,"payload":{"id":1,"n":2}}`)); err == nil {
		t.Error("an envelope read with schema.content should fail as a payload without its required fields")
	}
	// A tombstone stays one.
	if s, v, err := c.ToConnectData("t", nil, nil); s != nil || v != nil || err != nil {
		t.Errorf("tombstone = %v, %v, %v", s, v, err)
	}
	// Writing is unaffected: the envelope, with the record's own schema.
	b, err := c.FromConnectData("t", nil, data.Int32Schema, int32(5))
	if err != nil || string(b) != `{"schema":{"type":"int32","optional":false},"payload":5}` {
		t.Errorf("write = %s, %v", b, err)
	}

	// With schemas.enable=false the setting does not apply.
	plain, err := newJSONFromProps("value", map[string]string{"schema.content": schema, "schemas.enable": "false"})
	if err != nil {
		t.Fatal(err)
	}
	s, v, err = plain.ToConnectData("t", nil, []byte(`{"id":42}`))
	if err != nil || s != nil {
		t.Fatalf("schemas.enable=false: schema %v, err %v; want no schema", s, err)
	}
	if m, ok := v.(map[string]any); !ok || m["id"] != int64(42) {
		t.Errorf("schemas.enable=false: value %#v, want the plain map", v)
	}

	// Empty is unset.
	empty, err := newJSONFromProps("value", map[string]string{"schema.content": ""})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := empty.ToConnectData("t", nil, []byte(`{"id":1}`)); err == nil || !strings.Contains(err.Error(), `requires "schema" and "payload"`) {
		t.Errorf("empty schema.content: %v, want the envelope error", err)
	}

	// A schema that does not parse names the setting.
	for _, bad := range []string{`{"type":"nope"}`, `{"type":`} {
		_, err := newJSONFromProps("value", map[string]string{"schema.content": bad})
		var ce *config.Error
		if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), "for configuration schema.content") {
			t.Errorf("schema.content %s: %v, want a config error naming schema.content", bad, err)
		}
	}
}

// TestJSONNonBMPEscaped checks that a character beyond the Basic
// Multilingual Plane is written as the escapes of its UTF-16 surrogates in
// schema names, field names, map keys and values alike, as Kafka's
// JsonConverter writes it (bytes taken from Kafka 4.4's JsonConverter), and
// reads back to the same string.
func TestJSONNonBMPEscaped(t *testing.T) {
	s := data.StructBuilder().Name("n😀").
		Field("f😀", data.MapOf(data.StringSchema, data.StringSchema)).MustBuild()
	v := data.NewStruct(s).MustPut("f😀", map[string]any{"k😀": "中😀"})
	want := `{"schema":{"type":"struct","fields":[{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"string","optional":false},"optional":false,"field":"f\uD83D\uDE00"}],"optional":false,"name":"n\uD83D\uDE00"},"payload":{"f\uD83D\uDE00":{"k\uD83D\uDE00":"中\uD83D\uDE00"}}}`
	c := newTestJSON(nil)
	got, err := c.FromConnectData("t", nil, s, v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	rs, rv, err := c.ToConnectData("t", nil, got)
	if err != nil {
		t.Fatal(err)
	}
	if !data.SchemaEqual(rs, s) || !data.ValueEqual(rv, v) {
		t.Fatalf("read back %v %v, want %v %v", rs, rv, s, v)
	}
}

// TestJSONDecimalScaleParameter checks a Decimal schema whose scale
// parameter is missing or not a number as Kafka's JsonConverter handles it:
// a numeric payload needs no scale and reads at the literal's own; a base64
// payload, or a write, fails with Kafka's message naming the parameter.
func TestJSONDecimalScaleParameter(t *testing.T) {
	c := newTestJSON(nil)
	const noScale = `{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal"}`
	const badScale = `{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"x"}}`
	for _, schema := range []string{noScale, badScale} {
		_, v, err := c.ToConnectData("t", nil, []byte(`{"schema":`+schema+`,"payload":1.5}`))
		if err != nil || !data.ValueEqual(v, dec(15, 1)) {
			t.Errorf("numeric payload with %s = %#v, %v; want 1.5", schema, v, err)
		}
	}
	for _, tc := range []struct{ schema, want string }{
		{noScale, "Invalid bytes for Decimal field: Invalid Decimal schema: scale parameter not found."},
		{badScale, `Invalid bytes for Decimal field: Invalid scale parameter found in Decimal schema: "x" is not an integer`},
	} {
		_, _, err := c.ToConnectData("t", nil, []byte(`{"schema":`+tc.schema+`,"payload":"AQ=="}`))
		if err == nil || err.Error() != tc.want {
			t.Errorf("base64 payload with %s: error %v, want %q", tc.schema, err, tc.want)
		}
	}
	for _, tc := range []struct {
		params map[string]string
		want   string
	}{
		{nil, "Invalid Decimal schema: scale parameter not found."},
		{map[string]string{"scale": "x"}, `Invalid scale parameter found in Decimal schema: "x" is not an integer`},
	} {
		s := &data.Schema{Type: data.Bytes, Name: data.DecimalName, Parameters: tc.params}
		if _, err := c.FromConnectData("t", nil, s, dec(15, 1)); err == nil || err.Error() != tc.want {
			t.Errorf("write with parameters %v: error %v, want %q", tc.params, err, tc.want)
		}
	}
}

// TestJSONMapLogicalKeysDeduplicated checks that map entries whose keys are
// equal instants or equal decimals are one entry holding the last value, as
// in the Java HashMap Kafka's JsonConverter reads into.
func TestJSONMapLogicalKeysDeduplicated(t *testing.T) {
	c := newTestJSON(nil)
	for _, tc := range []struct {
		keys, payload string
		want          data.Map
	}{
		{`{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1}`,
			`[[5,"a"],[6,"b"],[5,"c"]]`,
			data.Map{{Key: timeUTC(5), Value: "c"}, {Key: timeUTC(6), Value: "b"}}},
		{`{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"1"}}`,
			`[["AQ==","a"],[0.1,"b"],["Ag==","c"]]`,
			data.Map{{Key: dec(1, 1), Value: "b"}, {Key: dec(2, 1), Value: "c"}}},
	} {
		in := `{"schema":{"type":"map","keys":` + tc.keys + `,"values":{"type":"string","optional":false},"optional":false},"payload":` + tc.payload + `}`
		_, v, err := c.ToConnectData("t", nil, []byte(in))
		m, ok := v.(data.Map)
		if err != nil || !ok || len(m) != len(tc.want) {
			t.Errorf("%s read as %#v, %v; want %v", tc.payload, v, err, tc.want)
			continue
		}
		for i := range m {
			if !data.ValueEqual(m[i].Key, tc.want[i].Key) || m[i].Value != tc.want[i].Value {
				t.Errorf("%s entry %d = %v:%v, want %v:%v", tc.payload, i, m[i].Key, m[i].Value, tc.want[i].Key, tc.want[i].Value)
			}
		}
	}
}

// Schema parameters are written in the order they were set, as Kafka's
// JsonConverter writes its LinkedHashMap of them (Debezium sets a Decimal's
// scale, then connect.decimal.precision), and read in document order, so a
// schema read and written again comes out as it went in; a repeated key
// keeps its first place and its last value, as in a Jackson object. A
// schema with no order (a literal) has them sorted.
func TestJSONParameterOrder(t *testing.T) {
	c := newTestJSON(nil)
	s := data.BuilderFrom(data.DecimalSchema(2, false)).Parameter("connect.decimal.precision", "10").MustBuild()
	got, err := c.FromConnectData("t", nil, s, dec(1234, 2))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,` +
		`"parameters":{"scale":"2","connect.decimal.precision":"10"}},"payload":"BNI="}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	back, _, err := c.ToConnectData("t", nil, got)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := c.FromConnectData("t", nil, back, dec(1234, 2)); err != nil || string(again) != want {
		t.Fatalf("read and written again: %s, %v", again, err)
	}

	dup := []byte(`{"schema":{"type":"string","optional":false,"parameters":{"z":"1","a":"2","z":"3"}},"payload":"x"}`)
	ds, _, err := c.ToConnectData("t", nil, dup)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.FromConnectData("t", nil, ds, "x")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"schema":{"type":"string","optional":false,"parameters":{"z":"3","a":"2"}},"payload":"x"}`; string(out) != want {
		t.Fatalf("repeated key: got %s, want %s", out, want)
	}

	literal := &data.Schema{Type: data.String, Parameters: map[string]string{"z": "1", "a": "2"}}
	out, err = c.FromConnectData("t", nil, literal, "x")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"schema":{"type":"string","optional":false,"parameters":{"a":"2","z":"1"}},"payload":"x"}`; string(out) != want {
		t.Fatalf("no order: got %s, want %s", out, want)
	}
}

// A schema whose name or doc was set to "" is written with "name":"" and
// "doc":"", as Kafka's JsonConverter writes every non-null name and doc,
// and reads back the same; one with neither set has neither.
func TestJSONEmptyNameAndDoc(t *testing.T) {
	c := newTestJSON(nil)
	s := data.StructBuilder().Name("").Doc("").Field("id", data.Int64Schema).MustBuild()
	got, err := c.FromConnectData("t", nil, s, data.NewStruct(s).MustPut("id", int64(7)))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false,` +
		`"name":"","doc":""},"payload":{"id":7}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	back, v, err := c.ToConnectData("t", nil, got)
	if err != nil {
		t.Fatal(err)
	}
	if !back.HasName() || !back.HasDoc() {
		t.Fatalf("read back without the empty name or doc: %+v", back)
	}
	if again, err := c.FromConnectData("t", nil, back, v); err != nil || string(again) != want {
		t.Fatalf("read and written again: %s, %v", again, err)
	}

	none := data.StructBuilder().Field("id", data.Int64Schema).MustBuild()
	out, err := c.FromConnectData("t", nil, none, data.NewStruct(none).MustPut("id", int64(7)))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false},"payload":{"id":7}}`; string(out) != want {
		t.Fatalf("no name: got %s, want %s", out, want)
	}
}

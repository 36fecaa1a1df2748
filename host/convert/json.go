package convert

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// DecimalFormat is how JsonConverter writes Decimal values (decimal.format).
type DecimalFormat int

// Decimal formats.
const (
	// DecimalBase64 writes the unscaled value's two's-complement bytes in base64.
	DecimalBase64 DecimalFormat = iota
	// DecimalNumeric writes a JSON number, as Java's BigDecimal.toString prints it.
	DecimalNumeric
)

// JSONConfig holds JsonConverter's settings.
type JSONConfig struct {
	// SchemasEnable wraps every value in {"schema":...,"payload":...}.
	SchemasEnable bool
	// SchemasCacheSize bounds each of the two schema caches.
	SchemasCacheSize int
	DecimalFormat    DecimalFormat
	// ReplaceNullWithDefault writes (and reads) a null that has a schema
	// default as the default.
	ReplaceNullWithDefault bool
	// Schema, when not nil and SchemasEnable is on, is the schema of every
	// message read: messages are bare payloads, without the envelope
	// (schema.content, KIP-1054). Writing is unaffected.
	Schema *data.Schema
}

// DefaultJSONConfig returns Kafka's defaults: schemas on, 1000 cached
// schemas, BASE64 decimals, nulls replaced by defaults.
func DefaultJSONConfig() JSONConfig {
	return JSONConfig{SchemasEnable: true, SchemasCacheSize: 1000, DecimalFormat: DecimalBase64, ReplaceNullWithDefault: true}
}

// JSONConverter is Kafka Connect's JsonConverter. Its output is byte for
// byte what Kafka Connect writes (see the package documentation for the few
// exceptions); it reads everything Kafka Connect's JsonConverter reads and
// rejects some values Kafka silently coerces. It is safe for concurrent use.
type JSONConverter struct {
	cfg JSONConfig
	// toJSON caches the JSON form of schemas by pointer: schemas are values
	// not modified after use, and the cache keeps its keys alive.
	toJSON *lru[*data.Schema, []byte]
	// toConnect caches parsed schemas by the text of their JSON.
	toConnect *lru[string, *data.Schema]
	// sizeHint is the length of the last output, to size the next buffer
	// in one allocation (records of a topic tend to be alike).
	sizeHint atomic.Int64
}

// NewJSONConverter returns a JsonConverter with the given settings.
func NewJSONConverter(cfg JSONConfig) *JSONConverter {
	return &JSONConverter{
		cfg:       cfg,
		toJSON:    newLRU[*data.Schema, []byte](cfg.SchemasCacheSize),
		toConnect: newLRU[string, *data.Schema](cfg.SchemasCacheSize),
	}
}

func newJSONFromProps(usage string, props map[string]string) (*JSONConverter, error) {
	vals, err := parseConfig(jsonConfigDef, usage, props)
	if err != nil {
		return nil, err
	}
	cfg := JSONConfig{
		SchemasEnable:          vals.Bool(SchemasEnableConfig),
		SchemasCacheSize:       vals.Int(SchemasCacheSizeConfig),
		DecimalFormat:          DecimalBase64,
		ReplaceNullWithDefault: vals.Bool(ReplaceNullWithDefaultConfig),
	}
	if strings.EqualFold(vals.String(DecimalFormatConfig), "NUMERIC") {
		cfg.DecimalFormat = DecimalNumeric
	}
	c := NewJSONConverter(cfg)
	if content := vals.String(SchemaContentConfig); content != "" {
		// Parsed whatever schemas.enable says, as Kafka's configure does: a
		// schema that does not parse is an error either way.
		s, err := c.parseSchemaContent([]byte(content))
		if err != nil {
			return nil, config.Invalid(SchemaContentConfig, content, err.Error())
		}
		c.cfg.Schema = s
	}
	return c, nil
}

// parseSchemaContent reads schema.content: a schema in the envelope's JSON
// form. JSON null (or nothing) is no schema, as in an envelope.
func (c *JSONConverter) parseSchemaContent(b []byte) (*data.Schema, error) {
	root, err := parseJSON(b)
	if err != nil {
		return nil, &DataError{Msg: deserializeMsg, Err: err}
	}
	if root.kind == jMissing {
		return nil, nil
	}
	return c.connectSchema(b, &root)
}

// Messages Kafka Connect uses verbatim.
const (
	envelopeMsg = "JsonConverter with schemas.enable requires \"schema\" and \"payload\" fields and may not contain additional fields." +
		" If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration."
	deserializeMsg = "Converting byte[] to Kafka Connect data failed due to serialization error"
	requiredNull   = "Conversion error: null value for field that is required and has no default value"
)

// maxNesting bounds the recursion over schemas and values Go code builds,
// which (unlike parsed JSON) could be cyclic.
const maxNesting = 1000

// FromConnectData implements Converter.
func (c *JSONConverter) FromConnectData(_ string, _ data.Headers, s *data.Schema, v any) ([]byte, error) {
	if s == nil && v == nil {
		return nil, nil
	}
	if r, ok := v.(data.Raw); ok {
		return r, nil
	}
	hint := int(c.sizeHint.Load())
	hint += hint / 8
	if !c.cfg.SchemasEnable {
		b, err := c.appendValue(make([]byte, 0, max(hint, 64)), s, v, 0)
		c.sizeHint.Store(int64(len(b)))
		return b, err
	}
	sj, err := c.schemaJSON(s)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, max(hint, len(sj)+96))
	b = append(b, `{"schema":`...)
	if sj == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, sj...)
	}
	b = append(b, `,"payload":`...)
	if b, err = c.appendValue(b, s, v, 0); err != nil {
		return nil, err
	}
	b = append(b, '}')
	c.sizeHint.Store(int64(len(b)))
	return b, nil
}

// ToConnectData implements Converter.
func (c *JSONConverter) ToConnectData(_ string, _ data.Headers, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return nil, nil, nil // tombstone
	}
	root, err := parseDoc(b, c.cfg.SchemasEnable && c.cfg.Schema == nil)
	if err != nil {
		return nil, nil, &DataError{Msg: deserializeMsg, Err: err}
	}
	if !c.cfg.SchemasEnable {
		v, err := c.toConnectValue(nil, &root)
		return nil, v, err
	}
	if s := c.cfg.Schema; s != nil {
		// schema.content: the message is the payload.
		v, err := c.toConnectValue(s, &root)
		if err != nil {
			return nil, nil, err
		}
		return s, v, nil
	}
	if root.kind != jObject || len(root.keys) != 2 {
		return nil, nil, &DataError{Msg: envelopeMsg}
	}
	sn, pn := root.get("schema", 0), root.get("payload", 1)
	if sn == nil || pn == nil {
		return nil, nil, &DataError{Msg: envelopeMsg}
	}
	s, err := c.connectSchema(b, sn)
	if err != nil {
		return nil, nil, atField(err, "schema")
	}
	v, err := c.toConnectValue(s, pn)
	if err != nil {
		return nil, nil, err
	}
	return s, v, nil
}

// FromConnectHeader implements HeaderConverter, writing a header value as a
// record value.
func (c *JSONConverter) FromConnectHeader(topic, _ string, s *data.Schema, v any) ([]byte, error) {
	return c.FromConnectData(topic, nil, s, v)
}

// ToConnectHeader implements HeaderConverter.
func (c *JSONConverter) ToConnectHeader(topic, _ string, b []byte) (*data.Schema, any, error) {
	return c.ToConnectData(topic, nil, b)
}

// schemaJSON returns the JSON form of a schema (nil for no schema), cached.
func (c *JSONConverter) schemaJSON(s *data.Schema) ([]byte, error) {
	if s == nil {
		return nil, nil
	}
	if b, ok := c.toJSON.get(s); ok {
		return b, nil
	}
	b, err := c.appendSchema(nil, s, 0)
	if err != nil {
		return nil, err
	}
	c.toJSON.put(s, b)
	return b, nil
}

// jsonTypeNames are the "type" values of JSON schemas, by schema type.
var jsonTypeNames = map[data.Type]string{
	data.Boolean: "boolean", data.Int8: "int8", data.Int16: "int16", data.Int32: "int32",
	data.Int64: "int64", data.Float32: "float", data.Float64: "double", data.Bytes: "bytes",
	data.String: "string", data.Array: "array", data.MapType: "map", data.StructType: "struct",
}

// appendSchema writes a schema as JsonConverter.asJsonSchema builds it, in
// Jackson's insertion order: type; items, keys and values, or fields;
// optional; name; version; doc; parameters; default. A struct field's schema
// ends with "field". Parameters go in the order they were set, as Kafka
// keeps it (Schema.ParameterKeys; sorted for a schema that has none).
func (c *JSONConverter) appendSchema(b []byte, s *data.Schema, depth int) ([]byte, error) {
	if s == nil {
		return append(b, "null"...), nil
	}
	if depth > maxNesting {
		return nil, dataErr("schema nested deeper than %d levels", maxNesting)
	}
	name, ok := jsonTypeNames[s.Type]
	if !ok {
		return nil, dataErr("Couldn't translate unsupported schema type %s.", s)
	}
	b = append(b, `{"type":"`...)
	b = append(b, name...)
	b = append(b, '"')
	var err error
	switch s.Type {
	case data.Array:
		b = append(b, `,"items":`...)
		if b, err = c.appendSchema(b, s.ValueSchema, depth+1); err != nil {
			return nil, err
		}
	case data.MapType:
		b = append(b, `,"keys":`...)
		if b, err = c.appendSchema(b, s.KeySchema, depth+1); err != nil {
			return nil, err
		}
		b = append(b, `,"values":`...)
		if b, err = c.appendSchema(b, s.ValueSchema, depth+1); err != nil {
			return nil, err
		}
	case data.StructType:
		b = append(b, `,"fields":[`...)
		for i, f := range s.Fields {
			if i > 0 {
				b = append(b, ',')
			}
			if f.Schema == nil {
				return nil, dataErr("struct field %s has no schema", f.Name)
			}
			if b, err = c.appendSchema(b, f.Schema, depth+1); err != nil {
				return nil, atField(err, f.Name)
			}
			b = b[:len(b)-1] // reopen the field's schema object
			b = append(b, `,"field":`...)
			b = appendJSONString(b, f.Name)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"optional":`...)
	b = strconv.AppendBool(b, s.Optional)
	if s.HasName() {
		b = append(b, `,"name":`...)
		b = appendJSONString(b, s.Name)
	}
	if s.Version != nil {
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, int64(*s.Version), 10)
	}
	if s.HasDoc() {
		b = append(b, `,"doc":`...)
		b = appendJSONString(b, s.Doc)
	}
	if s.Parameters != nil {
		b = append(b, `,"parameters":{`...)
		for i, k := range s.ParameterKeys() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, s.Parameters[k])
		}
		b = append(b, '}')
	}
	if s.Default != nil {
		b = append(b, `,"default":`...)
		if b, err = c.appendValue(b, s, s.Default, depth+1); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendValue writes a value as JsonConverter.convertToJson does.
func (c *JSONConverter) appendValue(b []byte, s *data.Schema, v any, depth int) ([]byte, error) {
	if v == nil {
		switch {
		case s == nil:
			return append(b, "null"...), nil
		case s.Default != nil && c.cfg.ReplaceNullWithDefault:
			return c.appendValue(b, s, s.Default, depth+1)
		case s.Optional:
			return append(b, "null"...), nil
		}
		return nil, dataErr(requiredNull)
	}
	if depth > maxNesting {
		return nil, dataErr("value nested deeper than %d levels", maxNesting)
	}
	if s != nil && s.Name != "" {
		switch s.Name {
		case data.DecimalName:
			return c.appendDecimal(b, s, v)
		case data.DateName, data.TimeName, data.TimestampName:
			return appendTemporal(b, s, v)
		}
	}
	var t data.Type
	if s != nil {
		t = s.Type
	} else if t = inferType(v); t == data.TypeInvalid {
		return nil, dataErr("Go type %T does not have corresponding schema type.", v)
	}
	bad := func() ([]byte, error) {
		return nil, dataErr("Invalid type for %s: %T", upperType(t), v)
	}
	switch t {
	case data.Int8:
		x, ok := v.(int8)
		if !ok {
			return bad()
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case data.Int16:
		x, ok := v.(int16)
		if !ok {
			return bad()
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case data.Int32:
		x, ok := v.(int32)
		if !ok {
			return bad()
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case data.Int64:
		x, ok := v.(int64)
		if !ok {
			return bad()
		}
		return strconv.AppendInt(b, x, 10), nil
	case data.Float32:
		x, ok := v.(float32)
		if !ok {
			return bad()
		}
		return appendJSONFloat(b, float64(x), 32), nil
	case data.Float64:
		x, ok := v.(float64)
		if !ok {
			return bad()
		}
		return appendJSONFloat(b, x, 64), nil
	case data.Boolean:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		return strconv.AppendBool(b, x), nil
	case data.String:
		x, ok := v.(string)
		if !ok {
			return bad()
		}
		return appendJSONString(b, x), nil
	case data.Bytes:
		x, ok := v.([]byte)
		if !ok {
			return nil, dataErr("Invalid type for bytes type: %T", v)
		}
		return appendBase64(b, x), nil
	case data.Array:
		arr, ok := v.([]any)
		if !ok {
			return bad()
		}
		var es *data.Schema
		if s != nil {
			es = s.ValueSchema
		}
		b = append(b, '[')
		for i, e := range arr {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = c.appendValue(b, es, e, depth+1); err != nil {
				return nil, atIndex(err, i)
			}
		}
		return append(b, ']'), nil
	case data.MapType:
		return c.appendMap(b, s, v, depth)
	case data.StructType:
		st, ok := v.(*data.Struct)
		if !ok {
			return bad()
		}
		if st == nil { // a typed nil is a null
			return c.appendValue(b, s, nil, depth)
		}
		if s == nil || (st.Schema() != s && !data.SchemaEqual(st.Schema(), s)) {
			return nil, dataErr("Mismatching schema.")
		}
		b = append(b, '{')
		for i, f := range s.Fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f.Name)
			b = append(b, ':')
			fv := st.Values()[i]
			if c.cfg.ReplaceNullWithDefault {
				fv = st.GetIndex(i)
			}
			var err error
			if b, err = c.appendValue(b, f.Schema, fv, depth+1); err != nil {
				return nil, atField(err, f.Name)
			}
		}
		return append(b, '}'), nil
	}
	return nil, dataErr("Couldn't convert %v to JSON.", v)
}

// inferType is ConnectSchema.schemaType for a schemaless value.
func inferType(v any) data.Type {
	switch v.(type) {
	case int8:
		return data.Int8
	case int16:
		return data.Int16
	case int32:
		return data.Int32
	case int64:
		return data.Int64
	case float32:
		return data.Float32
	case float64:
		return data.Float64
	case bool:
		return data.Boolean
	case string:
		return data.String
	case []byte:
		return data.Bytes
	case []any:
		return data.Array
	case map[string]any, data.Map:
		return data.MapType
	case *data.Struct:
		return data.StructType
	}
	return data.TypeInvalid
}

// appendMap writes a map: as a JSON object when its keys are strings (by
// schema, or, without one, when every key is a string), otherwise as an
// array of [key, value] pairs. map[string]any is written in sorted key
// order; data.Map in its own order.
func (c *JSONConverter) appendMap(b []byte, s *data.Schema, v any, depth int) ([]byte, error) {
	var ks, vs *data.Schema
	if s != nil {
		ks, vs = s.KeySchema, s.ValueSchema
	}
	objectMode := func(allStrings bool) bool {
		if s == nil || ks == nil {
			return allStrings
		}
		return ks.Type == data.String
	}
	var err error
	switch m := v.(type) {
	case map[string]any:
		keys := sortedKeys(m)
		if objectMode(true) {
			b = append(b, '{')
			for i, k := range keys {
				if i > 0 {
					b = append(b, ',')
				}
				if b, err = c.appendKeyText(b, ks, k); err != nil {
					return nil, err
				}
				b = append(b, ':')
				if b, err = c.appendValue(b, vs, m[k], depth+1); err != nil {
					return nil, atField(err, k)
				}
			}
			return append(b, '}'), nil
		}
		b = append(b, '[')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = c.appendPair(b, ks, vs, k, m[k], depth); err != nil {
				return nil, atIndex(err, i)
			}
		}
		return append(b, ']'), nil
	case data.Map:
		allStrings := true
		for _, e := range m {
			if _, ok := e.Key.(string); !ok {
				allStrings = false
				break
			}
		}
		if objectMode(allStrings) {
			// A JSON object holds a name once: a repeated key keeps its first
			// position and its last value, as Jackson's ObjectNode.set does.
			last := make(map[string]int, len(m))
			for i, e := range m {
				if k, ok := e.Key.(string); ok {
					last[k] = i
				}
			}
			b = append(b, '{')
			n := 0
			for i, e := range m {
				k, isString := e.Key.(string)
				if isString {
					if _, pending := last[k]; !pending {
						continue // already written
					}
				}
				if n > 0 {
					b = append(b, ',')
				}
				n++
				if b, err = c.appendKeyText(b, ks, e.Key); err != nil {
					return nil, atIndex(err, i)
				}
				b = append(b, ':')
				val := e.Value
				if isString {
					val = m[last[k]].Value
					delete(last, k)
				}
				if b, err = c.appendValue(b, vs, val, depth+1); err != nil {
					return nil, atIndex(err, i)
				}
			}
			return append(b, '}'), nil
		}
		b = append(b, '[')
		for i, e := range m {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = c.appendPair(b, ks, vs, e.Key, e.Value, depth); err != nil {
				return nil, atIndex(err, i)
			}
		}
		return append(b, ']'), nil
	}
	return nil, dataErr("Invalid type for MAP: %T", v)
}

// appendKeyText writes an object member name: the key converted with the
// key schema, as text (Jackson's asText, so a null key is "null").
func (c *JSONConverter) appendKeyText(b []byte, ks *data.Schema, k any) ([]byte, error) {
	var tmp [64]byte
	kj, err := c.appendValue(tmp[:0], ks, k, 0)
	if err != nil {
		return nil, err
	}
	if len(kj) > 0 && kj[0] == '"' {
		return append(b, kj...), nil
	}
	// A number, boolean or null key: its literal becomes the name.
	return appendJSONString(b, string(kj)), nil
}

func (c *JSONConverter) appendPair(b []byte, ks, vs *data.Schema, k, v any, depth int) ([]byte, error) {
	b = append(b, '[')
	b, err := c.appendValue(b, ks, k, depth+1)
	if err != nil {
		return nil, err
	}
	b = append(b, ',')
	if b, err = c.appendValue(b, vs, v, depth+1); err != nil {
		return nil, err
	}
	return append(b, ']'), nil
}

func (c *JSONConverter) appendDecimal(b []byte, s *data.Schema, v any) ([]byte, error) {
	d, ok := v.(data.Decimal)
	if !ok {
		return nil, dataErr("Invalid type for Decimal, expected data.Decimal but was %T", v)
	}
	if c.cfg.DecimalFormat == DecimalNumeric {
		return data.AppendJavaDecimal(b, d), nil
	}
	scale, err := decimalScale(s)
	if err != nil {
		return nil, err
	}
	if d.Scale != scale {
		return nil, dataErr("BigDecimal has mismatching scale value for given Decimal schema")
	}
	return appendBase64(b, data.TwosComplement(d.Unscaled)), nil
}

const msPerDay = 24 * 60 * 60 * 1000

func appendTemporal(b []byte, s *data.Schema, v any) ([]byte, error) {
	kind := strings.TrimPrefix(s.Name, "org.apache.kafka.connect.data.")
	t, ok := v.(time.Time)
	if !ok {
		return nil, dataErr("Invalid type for %s, expected Date but was %T", kind, v)
	}
	ms := t.UnixMilli()
	switch s.Name {
	case data.DateName:
		if ms%msPerDay != 0 {
			return nil, dataErr("Kafka Connect Date type should not have any time fields set to non-zero values.")
		}
		return strconv.AppendInt(b, int64(int32(ms/msPerDay)), 10), nil
	case data.TimeName:
		// Kafka's bound is inclusive: 24:00:00.000 is a Time.
		if ms < 0 || ms > msPerDay {
			return nil, dataErr("Kafka Connect Time type should not have any date fields set to non-zero values.")
		}
		return strconv.AppendInt(b, ms, 10), nil
	}
	return strconv.AppendInt(b, ms, 10), nil
}

// timeUTC is the instant ms milliseconds after the epoch, in UTC.
func timeUTC(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// describe names a JSON node's type for messages.
func describe(n *jnode) string {
	if n == nil {
		return jMissing.String()
	}
	return n.kind.String()
}

package convert

import (
	"math"
	"strconv"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// connectSchema turns the envelope's "schema" node into a schema, as
// JsonConverter.asConnectSchema does; JSON null means no schema. Parsed
// schemas are cached by their JSON text, so records of one schema share one
// *data.Schema.
func (c *JSONConverter) connectSchema(doc []byte, n *jnode) (*data.Schema, error) {
	if n.kind == jNull {
		return nil, nil
	}
	text := doc[n.start:n.end]
	if s, ok := getBytes(c.toConnect, text); ok {
		return s, nil
	}
	if n.kind == jRaw {
		// The envelope parse only validated the schema; build it now.
		full, err := parseJSON(text)
		if err != nil {
			return nil, &DataError{Msg: deserializeMsg, Err: err}
		}
		n = &full
	}
	s, err := c.parseSchema(n)
	if err != nil {
		return nil, err
	}
	c.toConnect.put(string(text), s)
	return s, nil
}

var schemaTypes = map[string]data.Type{
	"boolean": data.Boolean, "int8": data.Int8, "int16": data.Int16, "int32": data.Int32,
	"int64": data.Int64, "float": data.Float32, "double": data.Float64, "bytes": data.Bytes,
	"string": data.String, "array": data.Array, "map": data.MapType, "struct": data.StructType,
}

func (c *JSONConverter) parseSchema(n *jnode) (*data.Schema, error) {
	tn := n.get("type", 0)
	if tn == nil || tn.kind != jString {
		return nil, dataErr("Schema must contain 'type' field")
	}
	t, ok := schemaTypes[tn.s]
	if !ok {
		return nil, dataErr("Unknown schema type: %s", tn.s)
	}
	s := &data.Schema{Type: t}
	var err error
	switch t {
	case data.Array:
		items := n.get("items", 1)
		if items == nil || items.kind == jNull {
			return nil, dataErr("Array schema did not specify the element type")
		}
		if s.ValueSchema, err = c.parseSchema(items); err != nil {
			return nil, atField(err, "items")
		}
	case data.MapType:
		keys := n.get("keys", 1)
		if keys == nil {
			return nil, dataErr("Map schema did not specify the key type")
		}
		values := n.get("values", 2)
		if values == nil {
			return nil, dataErr("Map schema did not specify the value type")
		}
		if keys.kind == jNull {
			return nil, dataErr("keySchema cannot be null.")
		}
		if values.kind == jNull {
			return nil, dataErr("valueSchema cannot be null.")
		}
		if s.KeySchema, err = c.parseSchema(keys); err != nil {
			return nil, atField(err, "keys")
		}
		if s.ValueSchema, err = c.parseSchema(values); err != nil {
			return nil, atField(err, "values")
		}
	case data.StructType:
		fields := n.get("fields", 1)
		if fields == nil || fields.kind != jArray {
			return nil, dataErr(`Struct schema's "fields" argument is not an array.`)
		}
		s.Fields = make([]data.Field, 0, len(fields.kids))
		for i := range fields.kids {
			fn := &fields.kids[i]
			name := fn.get("field", -1)
			if name == nil || name.kind != jString {
				return nil, dataErr("Struct schema's field name not specified properly")
			}
			if s.Field(name.s) != nil {
				return nil, dataErr("Cannot create field because of field name duplication %s", name.s)
			}
			fs, err := c.parseSchema(fn)
			if err != nil {
				return nil, atField(err, "fields."+name.s)
			}
			s.Fields = append(s.Fields, data.Field{Name: name.s, Index: i, Schema: fs})
		}
	}
	if o := n.get("optional", -1); o != nil && o.kind == jBool && o.b {
		s.Optional = true
	}
	if nn := n.get("name", -1); nn != nil && nn.kind == jString {
		s.Name, s.EmptyName = nn.s, nn.s == ""
	}
	if vn := n.get("version", -1); vn != nil && vn.kind == jInt {
		if v, err := strconv.ParseInt(vn.s, 10, 64); err == nil {
			ver := int32(v) // Java's intValue keeps the low 32 bits
			s.Version = &ver
		}
	}
	if dn := n.get("doc", -1); dn != nil && dn.kind == jString {
		s.Doc, s.EmptyDoc = dn.s, dn.s == ""
	}
	if pn := n.get("parameters", -1); pn != nil && pn.kind == jObject {
		s.Parameters = make(map[string]string, len(pn.keys))
		for i, k := range pn.keys {
			if pn.kids[i].kind != jString {
				return nil, dataErr("Schema parameters must have string values.")
			}
			// In document order, as Jackson's object keeps them: a
			// repeated key keeps its first place and takes the last value.
			if _, ok := s.Parameters[k]; !ok {
				s.ParameterOrder = append(s.ParameterOrder, k)
			}
			s.Parameters[k] = pn.kids[i].s
		}
	}
	if dn := n.get("default", -1); dn != nil {
		// The default is read with the schema built so far (no default yet),
		// so a JSON null default is null for an optional schema and an error
		// for a required one, as in Kafka.
		if s.Default, err = c.toConnectValue(s, dn); err != nil {
			return nil, atField(err, "default")
		}
	}
	return s, nil
}

// toConnectValue converts a JSON node to a Connect value of the schema (or a
// schemaless value for a nil schema), as JsonConverter.convertToConnect
// does. Where Kafka silently coerces a mismatched JSON type (a string for an
// INT32 reads as 0), this returns a DataError naming the problem.
func (c *JSONConverter) toConnectValue(s *data.Schema, n *jnode) (any, error) {
	if s == nil {
		return schemalessValue(n)
	}
	if n == nil || n.kind == jNull || n.kind == jMissing {
		switch {
		case s.Default != nil && c.cfg.ReplaceNullWithDefault:
			return s.Default, nil
		case s.Optional:
			return nil, nil
		}
		return nil, dataErr("Invalid null value for required %s field", upperType(s.Type))
	}
	switch s.Name {
	case data.DecimalName:
		return readDecimal(s, n)
	case data.DateName, data.TimeName:
		label := "Date"
		if s.Name == data.TimeName {
			label = "Time"
		}
		v, ok := int32Node(n)
		if !ok {
			return nil, dataErr("Invalid type for %s, underlying representation should be integer but was %s", label, describe(n))
		}
		if s.Name == data.DateName {
			return timeUTC(int64(v) * msPerDay), nil
		}
		if v < 0 || v > msPerDay {
			return nil, dataErr("Time values must use number of milliseconds greater than 0 and less than 86400000")
		}
		return timeUTC(int64(v)), nil
	case data.TimestampName:
		if n.kind != jInt {
			return nil, dataErr("Invalid type for Timestamp, underlying representation should be integral but was %s", describe(n))
		}
		v, err := strconv.ParseInt(n.s, 10, 64)
		if err != nil {
			return nil, dataErr("Timestamp value %s is out of range for INT64", n.s)
		}
		return timeUTC(v), nil
	}
	switch s.Type {
	case data.Int8, data.Int16, data.Int32, data.Int64:
		return readInt(s.Type, n)
	case data.Float32, data.Float64:
		return readFloat(s.Type, n)
	case data.Boolean:
		if n.kind != jBool {
			return nil, dataErr("BOOLEAN values should be encoded as JSON booleans, but found %s", describe(n))
		}
		return n.b, nil
	case data.String:
		if n.kind != jString {
			return nil, dataErr("STRING values should be encoded as JSON strings, but found %s", describe(n))
		}
		return n.s, nil
	case data.Bytes:
		if n.kind != jString {
			return nil, dataErr("BYTES values should be encoded as base64 JSON strings, but found %s", describe(n))
		}
		b, err := decodeBase64(n.s)
		if err != nil {
			return nil, &DataError{Msg: "Invalid bytes field", Err: err}
		}
		return b, nil
	case data.Array:
		if n.kind != jArray {
			return nil, dataErr("Arrays should be encoded as JSON arrays, but found %s", describe(n))
		}
		out := make([]any, len(n.kids))
		for i := range n.kids {
			v, err := c.toConnectValue(s.ValueSchema, &n.kids[i])
			if err != nil {
				return nil, atIndex(err, i)
			}
			out[i] = v
		}
		return out, nil
	case data.MapType:
		return c.readMap(s, n)
	case data.StructType:
		if n.kind != jObject {
			return nil, dataErr("Structs should be encoded as JSON objects, but found %s", describe(n))
		}
		st := data.NewStruct(s)
		for i, f := range s.Fields {
			v, err := c.toConnectValue(f.Schema, n.get(f.Name, i))
			if err != nil {
				return nil, atField(err, f.Name)
			}
			st.SetIndex(i, v)
		}
		return st, nil
	}
	return nil, dataErr("Unknown schema type: %s", upperType(s.Type))
}

func (c *JSONConverter) readMap(s *data.Schema, n *jnode) (any, error) {
	if s.KeySchema == nil || s.KeySchema.Type == data.String {
		if n.kind != jObject {
			return nil, dataErr("Maps with string fields should be encoded as JSON objects, but found %s", describe(n))
		}
		out := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			v, err := c.toConnectValue(s.ValueSchema, &n.kids[i])
			if err != nil {
				return nil, atField(err, k)
			}
			out[k] = v
		}
		return out, nil
	}
	if n.kind != jArray {
		return nil, dataErr("Maps with non-string fields should be encoded as JSON array of tuples, but found %s", describe(n))
	}
	out := make(data.Map, 0, len(n.kids))
	for i := range n.kids {
		e := &n.kids[i]
		if e.kind != jArray {
			return nil, atIndex(dataErr("Found invalid map entry instead of array tuple: %s", describe(e)), i)
		}
		if len(e.kids) != 2 {
			return nil, atIndex(dataErr("Found invalid map entry, expected length 2 but found :%d", len(e.kids)), i)
		}
		k, err := c.toConnectValue(s.KeySchema, &e.kids[0])
		if err != nil {
			return nil, atIndex(err, i)
		}
		v, err := c.toConnectValue(s.ValueSchema, &e.kids[1])
		if err != nil {
			return nil, atIndex(err, i)
		}
		out = putEntry(out, k, v)
	}
	return out, nil
}

// putEntry adds an entry to a Map, replacing the value of an equal key in
// place, as Java's HashMap.put does. Keys are equal as Java's equals has
// them for the types it compares by value: primitives, instants
// (Date.equals) and decimals of the same value and scale
// (BigDecimal.equals).
func putEntry(m data.Map, k, v any) data.Map {
	var eq func(any) bool
	switch x := k.(type) {
	case int8, int16, int32, int64, float32, float64, bool, string:
		eq = func(o any) bool { return o == k }
	case time.Time:
		eq = func(o any) bool { t, ok := o.(time.Time); return ok && t.Equal(x) }
	case data.Decimal:
		eq = func(o any) bool {
			d, ok := o.(data.Decimal)
			return ok && d.Scale == x.Scale && d.Unscaled != nil && x.Unscaled != nil && d.Unscaled.Cmp(x.Unscaled) == 0
		}
	}
	if eq != nil {
		for i := range m {
			if eq(m[i].Key) {
				m[i].Value = v
				return m
			}
		}
	}
	return append(m, data.MapEntry{Key: k, Value: v})
}

func schemalessValue(n *jnode) (any, error) {
	switch n.kind {
	case jMissing, jNull:
		return nil, nil
	case jBool:
		return n.b, nil
	case jInt:
		v, err := strconv.ParseInt(n.s, 10, 64)
		if err != nil {
			return nil, dataErr("Integral value %s is out of range for INT64", n.s)
		}
		return v, nil
	case jFloat:
		return parseJSONFloat(n.s, 64), nil
	case jString:
		return n.s, nil
	case jArray:
		out := make([]any, len(n.kids))
		for i := range n.kids {
			v, err := schemalessValue(&n.kids[i])
			if err != nil {
				return nil, atIndex(err, i)
			}
			out[i] = v
		}
		return out, nil
	}
	out := make(map[string]any, len(n.keys))
	for i, k := range n.keys {
		v, err := schemalessValue(&n.kids[i])
		if err != nil {
			return nil, atField(err, k)
		}
		out[k] = v
	}
	return out, nil
}

// parseJSONFloat reads a validated JSON number literal as a float. Kafka
// reads through BigDecimal, which has no negative zero, so "-0.0" reads as
// 0.0; out-of-range literals read as infinities, as BigDecimal.doubleValue
// gives them.
func parseJSONFloat(lit string, bitSize int) float64 {
	f, _ := strconv.ParseFloat(lit, bitSize)
	if f == 0 {
		return 0
	}
	return f
}

var intRanges = map[data.Type][2]int64{
	data.Int8:  {math.MinInt8, math.MaxInt8},
	data.Int16: {math.MinInt16, math.MaxInt16},
	data.Int32: {math.MinInt32, math.MaxInt32},
	data.Int64: {math.MinInt64, math.MaxInt64},
}

// readInt reads an integer schema's value. Kafka truncates fractions and
// wraps overflows silently; this accepts integral values only ("3", "3.0",
// "3e2") and reports anything else.
func readInt(t data.Type, n *jnode) (any, error) {
	tn := upperType(t)
	var v int64
	switch n.kind {
	case jInt:
		x, err := strconv.ParseInt(n.s, 10, 64)
		if err != nil {
			return nil, dataErr("Numeric value %s is out of range for %s", n.s, tn)
		}
		v = x
	case jFloat:
		d, ok := parseDecimal(n.s)
		if !ok {
			return nil, dataErr("Numeric value %s is out of range for %s", n.s, tn)
		}
		x, integral, fits := decimalInt64(d)
		if !integral {
			return nil, dataErr("%s values must be integral, but found %s", tn, n.s)
		}
		if !fits {
			return nil, dataErr("Numeric value %s is out of range for %s", n.s, tn)
		}
		v = x
	default:
		return nil, dataErr("%s values should be encoded as JSON numbers, but found %s", tn, describe(n))
	}
	r := intRanges[t]
	if v < r[0] || v > r[1] {
		return nil, dataErr("Numeric value %s is out of range for %s", n.s, tn)
	}
	switch t {
	case data.Int8:
		return int8(v), nil
	case data.Int16:
		return int16(v), nil
	case data.Int32:
		return int32(v), nil
	}
	return v, nil
}

// readFloat reads a FLOAT32 or FLOAT64 value. Besides numbers it accepts the
// strings "NaN", "Infinity" and "-Infinity", which is how Jackson writes
// those values (Kafka itself reads them back as 0.0).
func readFloat(t data.Type, n *jnode) (any, error) {
	bits := 64
	if t == data.Float32 {
		bits = 32
	}
	var f float64
	switch n.kind {
	case jInt, jFloat:
		f = parseJSONFloat(n.s, bits)
	case jString:
		switch n.s {
		case "NaN":
			f = math.NaN()
		case "Infinity":
			f = math.Inf(1)
		case "-Infinity":
			f = math.Inf(-1)
		default:
			return nil, dataErr("%s values should be encoded as JSON numbers, but found STRING", upperType(t))
		}
	default:
		return nil, dataErr("%s values should be encoded as JSON numbers, but found %s", upperType(t), describe(n))
	}
	if bits == 32 {
		return float32(f), nil
	}
	return f, nil
}

// int32Node reads an integral literal that fits 32 bits (Jackson's IntNode).
func int32Node(n *jnode) (int32, bool) {
	if n.kind != jInt {
		return 0, false
	}
	v, err := strconv.ParseInt(n.s, 10, 32)
	return int32(v), err == nil
}

// readDecimal reads a Decimal from a number (decimal.format NUMERIC) or a
// base64 string of the unscaled value's bytes (BASE64); both are accepted
// whatever the converter's own format. A number is returned at the schema's
// scale when that loses no digits (Kafka keeps the literal's scale); it
// needs no scale parameter, as in Kafka, where bytes do.
func readDecimal(s *data.Schema, n *jnode) (any, error) {
	switch n.kind {
	case jInt, jFloat:
		d, ok := parseDecimal(n.s)
		if !ok {
			return nil, dataErr("Invalid Decimal value %s", n.s)
		}
		if scale, err := decimalScale(s); err == nil {
			d, _ = rescale(d, scale)
		}
		return d, nil
	case jString:
		b, err := decodeBase64(n.s)
		if err != nil {
			return nil, &DataError{Msg: "Invalid bytes for Decimal field", Err: err}
		}
		if len(b) == 0 {
			return nil, dataErr("Invalid bytes for Decimal field: Zero length BigInteger")
		}
		scale, err := decimalScale(s)
		if err != nil {
			return nil, &DataError{Msg: "Invalid bytes for Decimal field", Err: err}
		}
		return data.Decimal{Unscaled: data.FromTwosComplement(b), Scale: scale}, nil
	}
	return nil, dataErr("Invalid type for Decimal, underlying representation should be numeric or bytes but was %s", describe(n))
}

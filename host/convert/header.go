package convert

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// SimpleHeaderConverter is Kafka Connect's default header converter. It
// writes a header value as text (Values.convertToString: primitives as
// Java prints them, arrays "[1,2]", maps and structs {"k":v}, dates and
// times in ISO 8601 in the form the instant suggests, whatever its schema)
// and reads text back by inferring a schema (Values.parseString): null,
// booleans, the smallest integer type that holds the number, FLOAT32 for
// other numbers, ISO dates and times (dates before 1582-10-15 in the Julian
// calendar, as Java's SimpleDateFormat has them), arrays and maps of those,
// and a STRING for anything else. It keeps no state; the zero value is
// ready to use.
//
// As in Kafka, a Date, Time or Timestamp is written by its instant, not its
// schema: before the end of 1970-01-01 UTC (so any instant before the
// epoch) as a time of day ("23:59:59.999Z"), at a later midnight UTC as a
// date ("2024-01-15"), otherwise as a timestamp. A Date of 1970-01-01 or
// earlier is therefore written as "00:00:00.000Z" and reads back as a Time,
// a Time of 24:00 as "1970-01-02", a Timestamp at midnight as a date. Kafka
// formats in the JVM's default time zone; the text here is what a Kafka
// worker whose JVM runs in UTC writes.
//
// Differences from Kafka, all on input Kafka parses inconsistently: a value
// must be wholly one number, date, array or map ("12,5" is the string
// "12,5", where Kafka reads 12 and drops the rest); \" and \\ in quoted
// strings inside arrays and maps are unescaped (Kafka keeps the
// backslashes); times are UTC; bytes that are not valid UTF-8 read as BYTES
// instead of a string with replacement characters.
type SimpleHeaderConverter struct{}

// FromConnectHeader implements HeaderConverter.
func (SimpleHeaderConverter) FromConnectHeader(_, _ string, s *data.Schema, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case data.Raw:
		return x, nil
	}
	var sb strings.Builder
	if err := appendValues(&sb, v, false); err != nil {
		return nil, err
	}
	return []byte(sb.String()), nil
}

// ToConnectHeader implements HeaderConverter.
func (SimpleHeaderConverter) ToConnectHeader(_, _ string, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return nil, nil, nil
	}
	if !utf8.Valid(b) {
		return data.BytesSchema, b, nil
	}
	str := string(b)
	if str == "" {
		return data.StringSchema, str, nil
	}
	s, v := parseHeaderString(str)
	return s, v, nil
}

// Values' ISO 8601 forms as Go layouts. Only isoTime formats (a time of day
// is the same in Java's calendar and Go's); the others give the lengths
// Values.parseString tells the forms apart by, and dates are written by
// appendJavaISODate.
const (
	isoDate      = "2006-01-02"
	isoTime      = "15:04:05.000"
	isoTimestamp = "2006-01-02T15:04:05.000"
)

// appendValues is Values.append: the text form of a value; embedded values
// (inside arrays, maps and structs) quote their strings. Like Kafka's, it
// takes no schema: the value alone decides the form.
func appendValues(sb *strings.Builder, v any, embedded bool) error {
	var tmp [48]byte
	if st, ok := v.(*data.Struct); ok && st == nil {
		v = nil
	}
	switch x := v.(type) {
	case nil:
		sb.WriteString("null")
	case string:
		if embedded {
			sb.WriteByte('"')
			sb.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(x))
			sb.WriteByte('"')
		} else {
			sb.WriteString(x)
		}
	case bool, int8, int16, int32, int64, float32, float64, data.Decimal:
		sb.WriteString(data.FormatValue(x))
	case []byte:
		appendBase64Text(sb, x, embedded)
	case data.Raw:
		appendBase64Text(sb, x, embedded)
	case time.Time:
		sb.Write(appendISO(tmp[:0], x))
	case []any:
		sb.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				sb.WriteByte(',')
			}
			if err := appendValues(sb, e, true); err != nil {
				return atIndex(err, i)
			}
		}
		sb.WriteByte(']')
	case map[string]any:
		sb.WriteByte('{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				sb.WriteByte(',')
			}
			if err := appendEntry(sb, k, x[k]); err != nil {
				return atField(err, k)
			}
		}
		sb.WriteByte('}')
	case data.Map:
		sb.WriteByte('{')
		for i, e := range x {
			if i > 0 {
				sb.WriteByte(',')
			}
			if err := appendEntry(sb, e.Key, e.Value); err != nil {
				return atIndex(err, i)
			}
		}
		sb.WriteByte('}')
	case *data.Struct:
		sb.WriteByte('{')
		for i, f := range x.Schema().Fields {
			if i > 0 {
				sb.WriteByte(',')
			}
			if err := appendEntry(sb, f.Name, x.GetIndex(i)); err != nil {
				return atField(err, f.Name)
			}
		}
		sb.WriteByte('}')
	default:
		return dataErr("Failed to serialize unexpected value type %T: %v", v, v)
	}
	return nil
}

func appendEntry(sb *strings.Builder, k, v any) error {
	if err := appendValues(sb, k, true); err != nil {
		return err
	}
	sb.WriteByte(':')
	return appendValues(sb, v, true)
}

func appendBase64Text(sb *strings.Builder, b []byte, embedded bool) {
	if embedded {
		sb.WriteByte('"')
	}
	sb.WriteString(base64.StdEncoding.EncodeToString(b))
	if embedded {
		sb.WriteByte('"')
	}
}

// appendISO writes a time in the ISO 8601 form Values.dateFormatFor picks
// from the instant alone, whatever the value's logical type: before the end
// of the first day of 1970 (any negative instant included), a time of day;
// at a later midnight, a date; otherwise a timestamp.
func appendISO(b []byte, t time.Time) []byte {
	t = t.UTC()
	switch ms := t.UnixMilli(); {
	case ms < msPerDay:
		return append(t.AppendFormat(b, isoTime), 'Z')
	case ms%msPerDay == 0:
		return appendJavaISODate(b, t)
	}
	b = append(appendJavaISODate(b, t), 'T')
	return append(t.AppendFormat(b, isoTime), 'Z')
}

// appendJavaISODate writes t's date as SimpleDateFormat's yyyy-MM-dd does:
// in Java's calendar (Julian before 1582-10-15), the year of the era (1 BC
// is 0001, with no era marker) with at least four digits. appendISO calls
// it only for instants from 1970-01-02 on (earlier ones are written as a
// time of day), so in practice only the year's width matters there.
func appendJavaISODate(b []byte, t time.Time) []byte {
	year, month, day := data.JavaCalendarDate(t)
	if year < 1 {
		year = 1 - year
	}
	for p := 1000; p > 1 && year < p; p /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(year), 10)
	return append(b, '-', byte('0'+month/10), byte('0'+month%10), '-', byte('0'+day/10), byte('0'+day%10))
}

// javaTrim is String.trim: it strips every character up to ' ' at both ends.
func javaTrim(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	return s[i:j]
}

// parseHeaderString is Values.parseString for a non-empty string.
func parseHeaderString(str string) (*data.Schema, any) {
	t := javaTrim(str)
	switch t {
	case "":
		return data.StringSchema, str
	case "null":
		return nil, nil
	case "true":
		return data.BooleanSchema, true
	case "false":
		return data.BooleanSchema, false
	}
	if t[0] == '[' || t[0] == '{' {
		p := headerParser{s: t}
		if v, err := p.value(); err == nil && p.pos == len(p.s) {
			return v.s, v.v
		}
		return data.StringSchema, str
	}
	if v, ok := parseScalar(t); ok {
		return v.s, v.v
	}
	return data.StringSchema, str
}

// parsed is one parsed value; null marks a null literal (Kafka's null
// SchemaAndValue), which carries no schema.
type parsed struct {
	s    *data.Schema
	v    any
	null bool
}

// parseScalar reads a date, time, timestamp or number.
func parseScalar(t string) (parsed, bool) {
	if t == "" {
		return parsed{}, false
	}
	c := t[0]
	if c >= '0' && c <= '9' {
		if v, ok := parseTemporal(t); ok {
			return v, true
		}
	}
	if (c >= '0' && c <= '9') || c == '+' || c == '-' {
		if d, ok := parseDecimal(t); ok {
			return inferNumber(t, d), true
		}
	}
	return parsed{}, false
}

// parseTemporal reads an ISO date, time or timestamp, chosen by the
// literal's length, as Kafka does with a lenient SimpleDateFormat: each
// field is a run of digits of any length, out-of-range fields roll over
// (2024-02-30 is March 1, 24:00:00.000Z the end of the first day) and text
// after the last field is ignored. A backslash-escaped colon counts as a
// colon.
func parseTemporal(t string) (parsed, bool) {
	if strings.Contains(t, `\:`) {
		t = strings.ReplaceAll(t, `\:`, ":")
	}
	var f [7]int64 // year, month, day, hour, minute, second, millisecond
	switch len(t) {
	case len(isoDate):
		if lenientFields(t, "n-n-n", f[:3]) {
			return parsed{s: data.DateSchema(false), v: lenientTime(f)}, true
		}
	case len(isoTime) + 1:
		f[0], f[1], f[2] = 1970, 1, 1
		if lenientFields(t, "n:n:n.nZ", f[3:]) {
			return parsed{s: data.TimeSchema(false), v: lenientTime(f)}, true
		}
	case len(isoTimestamp) + 1:
		if lenientFields(t, "n-n-nTn:n:n.nZ", f[:]) {
			return parsed{s: data.TimestampSchema(false), v: lenientTime(f)}, true
		}
	}
	return parsed{}, false
}

// lenientFields matches s against layout, where each 'n' is an integer
// (blanks, an optional minus sign, one or more ASCII digits, as
// SimpleDateFormat's number parser reads it) stored in the next element of
// out, and every other byte must appear as is. What follows the layout is
// ignored.
func lenientFields(s, layout string, out []int64) bool {
	pos, field := 0, 0
	for i := 0; i < len(layout); i++ {
		if layout[i] != 'n' {
			if pos >= len(s) || s[pos] != layout[i] {
				return false
			}
			pos++
			continue
		}
		for pos < len(s) && (s[pos] == ' ' || s[pos] == '\t') {
			pos++ // SimpleDateFormat skips blanks before a number
		}
		neg := pos < len(s) && s[pos] == '-'
		if neg {
			pos++
		}
		start := pos
		var v int64
		for pos < len(s) && s[pos] >= '0' && s[pos] <= '9' && pos-start < 18 {
			v = v*10 + int64(s[pos]-'0')
			pos++
		}
		if pos == start {
			return false
		}
		if neg {
			v = -v
		}
		out[field] = int64(int32(v)) // Java's Number.intValue
		field++
	}
	return true
}

// lenientTime is the UTC instant of the fields, normalized as a lenient
// GregorianCalendar normalizes them, in Java's calendar (Julian before
// 1582-10-15).
func lenientTime(f [7]int64) time.Time {
	return data.JavaCalendarTime(int(f[0]), time.Month(f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[5]), int(f[6]))
}

// inferNumber picks the schema Kafka infers for a number: the smallest of
// INT8, INT16, INT32 and INT64 that holds an integral value exactly, else
// FLOAT32 for a value with fraction digits or an exponent (even where that
// rounds), FLOAT64 when FLOAT32 overflows, else a Decimal.
func inferNumber(lit string, d data.Decimal) parsed {
	if v, integral, fits := decimalInt64(d); integral && fits {
		switch {
		case v >= math.MinInt8 && v <= math.MaxInt8:
			return parsed{s: data.Int8Schema, v: int8(v)}
		case v >= math.MinInt16 && v <= math.MaxInt16:
			return parsed{s: data.Int16Schema, v: int16(v)}
		case v >= math.MinInt32 && v <= math.MaxInt32:
			return parsed{s: data.Int32Schema, v: int32(v)}
		}
		return parsed{s: data.Int64Schema, v: v}
	}
	if d.Scale != 0 {
		if f, _ := strconv.ParseFloat(lit, 32); !math.IsInf(f, 0) {
			return parsed{s: data.Float32Schema, v: float32(f)}
		}
		if f, _ := strconv.ParseFloat(lit, 64); !math.IsInf(f, 0) {
			return parsed{s: data.Float64Schema, v: f}
		}
	}
	return parsed{s: data.DecimalSchema(d.Scale, false), v: d}
}

// headerParser reads the values embedded in an array or map.
type headerParser struct {
	s     string
	pos   int
	depth int
}

type headerSyntax string

func (e headerSyntax) Error() string { return string(e) }

func (p *headerParser) ws() {
	for p.pos < len(p.s) && p.s[p.pos] <= ' ' {
		p.pos++
	}
}

func (p *headerParser) peek(c byte) bool { return p.pos < len(p.s) && p.s[p.pos] == c }

func isHeaderDelim(c byte) bool {
	switch c {
	case ',', ':', '[', ']', '{', '}', '"':
		return true
	}
	return false
}

func (p *headerParser) value() (parsed, error) {
	p.ws()
	if p.pos >= len(p.s) {
		return parsed{}, headerSyntax("missing value")
	}
	switch p.s[p.pos] {
	case '"':
		content := p.quoted()
		if v, ok := parseTemporal(content); ok {
			return v, nil
		}
		return parsed{s: data.StringSchema, v: content}, nil
	case '[':
		return p.array()
	case '{':
		return p.object()
	}
	tok := javaTrim(p.token())
	switch tok {
	case "null":
		return parsed{null: true}, nil
	case "true":
		return parsed{s: data.BooleanSchema, v: true}, nil
	case "false":
		return parsed{s: data.BooleanSchema, v: false}, nil
	}
	if v, ok := parseScalar(tok); ok {
		return v, nil
	}
	return parsed{}, headerSyntax("Failed to parse embedded value")
}

// quoted reads a quoted string, unescaping \" and \\.
func (p *headerParser) quoted() string {
	p.pos++
	var sb strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		p.pos++
		switch {
		case c == '"':
			return sb.String()
		case c == '\\' && p.pos < len(p.s) && (p.s[p.pos] == '"' || p.s[p.pos] == '\\'):
			sb.WriteByte(p.s[p.pos])
			p.pos++
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// token reads an unquoted value up to the next delimiter. A time or
// timestamp holds colons, so one is recognized before splitting at them.
func (p *headerParser) token() string {
	rest := p.s[p.pos:]
	if len(rest) > 0 && rest[0] >= '0' && rest[0] <= '9' {
		for _, n := range []int{len(isoTimestamp) + 1, len(isoTime) + 1} {
			if len(rest) >= n && (len(rest) == n || isHeaderDelim(rest[n]) || rest[n] <= ' ') {
				if _, ok := parseTemporal(rest[:n]); ok {
					p.pos += n
					return rest[:n]
				}
			}
		}
	}
	start := p.pos
	escaped := false
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '\\' {
			escaped = !escaped
		} else if isHeaderDelim(c) && !escaped {
			break
		} else {
			escaped = false
		}
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *headerParser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return headerSyntax("nested too deeply")
	}
	return nil
}

func (p *headerParser) array() (parsed, error) {
	if err := p.enter(); err != nil {
		return parsed{}, err
	}
	defer func() { p.depth-- }()
	p.pos++
	var elems []any
	var common schemaMerger
	for {
		p.ws()
		if p.pos >= len(p.s) {
			return parsed{}, headerSyntax("Array is missing terminating ']'")
		}
		if p.peek(']') {
			p.pos++
			break
		}
		if p.peek(',') {
			return parsed{}, headerSyntax("Unable to parse an empty array element")
		}
		e, err := p.value()
		if err != nil {
			return parsed{}, err
		}
		common.merge(e)
		elems = append(elems, e.v)
		p.ws()
		switch {
		case p.peek(']'):
		case p.peek(','):
			p.pos++
		default:
			return parsed{}, headerSyntax("Array elements missing ',' delimiter")
		}
	}
	if elems == nil {
		elems = []any{}
	}
	if common.s == nil {
		// Every element is null, or they share no schema.
		return parsed{s: &data.Schema{Type: data.Array}, v: elems}, nil
	}
	for i, e := range elems {
		v, err := alignTo(common.s, e)
		if err != nil {
			return parsed{}, err
		}
		elems[i] = v
	}
	return parsed{s: &data.Schema{Type: data.Array, ValueSchema: common.s}, v: elems}, nil
}

func (p *headerParser) object() (parsed, error) {
	if err := p.enter(); err != nil {
		return parsed{}, err
	}
	defer func() { p.depth-- }()
	p.pos++
	var entries data.Map
	var km, vm schemaMerger
	for {
		p.ws()
		if p.pos >= len(p.s) {
			return parsed{}, headerSyntax("Map is missing terminating '}'")
		}
		if p.peek('}') {
			p.pos++
			break
		}
		if p.peek(',') {
			return parsed{}, headerSyntax("Unable to parse a map entry with no key or value")
		}
		k, err := p.value()
		if err != nil {
			return parsed{}, err
		}
		if k.null {
			return parsed{}, headerSyntax("Map entry may not have a null key")
		}
		p.ws()
		if !p.peek(':') {
			return parsed{}, headerSyntax("Map entry is missing ':'")
		}
		p.pos++
		v, err := p.value()
		if err != nil {
			return parsed{}, err
		}
		entries = putEntry(entries, k.v, v.v)
		p.ws()
		if p.peek(',') {
			p.pos++
		}
		km.merge(k)
		vm.merge(v)
	}
	ks, vs := km.s, vm.s
	s := &data.Schema{Type: data.MapType}
	if ks != nil {
		s.KeySchema = ks
		if vs != nil {
			s.ValueSchema = vs
		}
		// Converted keys go into a new map, as in Kafka, so keys that have
		// become equal (00 and 1970-01-01 as dates) are one entry.
		aligned := make(data.Map, 0, len(entries))
		for _, e := range entries {
			k, err := alignTo(ks, e.Key)
			if err != nil {
				return parsed{}, err
			}
			v := e.Value
			if vs != nil {
				if v, err = alignTo(vs, v); err != nil {
					return parsed{}, err
				}
			}
			aligned = putEntry(aligned, k, v)
		}
		entries = aligned
	}
	// String keys make a map[string]any, as everywhere in the data model.
	m := make(map[string]any, len(entries))
	for _, e := range entries {
		k, ok := e.Key.(string)
		if !ok {
			return parsed{s: s, v: entries}, nil
		}
		m[k] = e.Value
	}
	return parsed{s: s, v: m}, nil
}

// numericRank orders the number types for widening (Values.commonSchemaFor).
func numericRank(t data.Type) int {
	switch t {
	case data.Int8:
		return 1
	case data.Int16:
		return 2
	case data.Int32:
		return 3
	case data.Int64:
		return 4
	case data.Float32:
		return 5
	case data.Float64:
		return 6
	}
	return 0
}

// schemaMerger is Values.SchemaMerger: it finds the schema that holds
// every element of an array (or every key or value of a map), ignoring
// nulls. Once two elements share no schema it gives up for good, so
// [1,"a",2] has no element schema and keeps its elements as they are
// (older Kafka started over at 2, then failed to convert "a").
type schemaMerger struct {
	s            *data.Schema
	incompatible bool
}

func (m *schemaMerger) merge(next parsed) {
	if next.null || m.incompatible {
		return
	}
	if m.s == nil {
		m.s = next.s
		return
	}
	m.s = mergeSchemas(m.s, next.s)
	m.incompatible = m.s == nil
}

// mergeSchemas is Values.mergeSchemas: the schema that holds values of
// both, widening numbers, or nil when there is none.
func mergeSchemas(prev, ns *data.Schema) *data.Schema {
	if prev.Type != ns.Type {
		pr, nr := numericRank(prev.Type), numericRank(ns.Type)
		if pr == 0 || nr == 0 {
			return nil
		}
		if nr > pr {
			return ns
		}
		return prev
	}
	if prev.Optional == ns.Optional {
		if prev.Optional {
			return prev
		}
		return ns
	}
	if !data.SchemaEqual(prev, ns) {
		return nil
	}
	return prev
}

// alignTo converts a parsed value to the common schema of its array or map
// (Values.convertTo for the conversions parsing can need).
func alignTo(to *data.Schema, v any) (any, error) {
	if v == nil {
		if to.Optional {
			return nil, nil
		}
		return nil, headerSyntax("Unable to convert a null value to a schema that requires a value")
	}
	switch to.Name {
	case data.DateName, data.TimeName, data.TimestampName:
		if _, ok := v.(time.Time); ok {
			return v, nil
		}
		n, ok := asInt64(v)
		if !ok {
			return nil, headerSyntax("Unable to convert value to " + to.Name)
		}
		if to.Name == data.DateName {
			return timeUTC(int64(int32(n)) * msPerDay), nil
		}
		if to.Name == data.TimeName {
			// Time.toLogical's range check, which fails the whole parse.
			if ms := int32(n); ms >= 0 && ms <= msPerDay {
				return timeUTC(int64(ms)), nil
			}
			return nil, headerSyntax("Time values must use number of milliseconds greater than 0 and less than 86400000")
		}
		return timeUTC(n), nil
	case data.DecimalName:
		if _, ok := v.(data.Decimal); ok {
			return v, nil
		}
		return nil, headerSyntax("Unable to convert value to a Decimal")
	}
	switch to.Type {
	case data.Int8, data.Int16, data.Int32, data.Int64:
		n, ok := asInt64(v)
		if !ok {
			return nil, headerSyntax("Unable to convert value to a number")
		}
		switch to.Type {
		case data.Int8:
			return int8(n), nil
		case data.Int16:
			return int16(n), nil
		case data.Int32:
			return int32(n), nil
		}
		return n, nil
	case data.Float32, data.Float64:
		f, ok := asFloat64(v)
		if !ok {
			return nil, headerSyntax("Unable to convert value to a number")
		}
		if to.Type == data.Float32 {
			return float32(f), nil
		}
		return f, nil
	case data.String:
		var sb strings.Builder
		if err := appendValues(&sb, v, false); err != nil {
			return nil, err
		}
		return sb.String(), nil
	case data.Boolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case data.Array:
		if a, ok := v.([]any); ok {
			return a, nil
		}
	case data.MapType:
		switch v.(type) {
		case map[string]any, data.Map:
			return v, nil
		}
	}
	return nil, headerSyntax("Unable to convert value to " + upperType(to.Type))
}

// asInt64 is Values.asLong for parsed values: Java's longValue, which
// truncates fractions.
func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case float32:
		return javaLong(float64(x)), true
	case float64:
		return javaLong(x), true
	}
	return 0, false
}

// javaLong is Java's (long) cast of a double: truncating, saturating, NaN 0.
func javaLong(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func asFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	n, ok := asInt64(v)
	return float64(n), ok
}

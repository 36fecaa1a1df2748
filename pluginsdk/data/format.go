package data

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// String formats the schema as Kafka Connect does in messages:
// "Schema{INT32}", or "Schema{com.example.Order:STRUCT}" for a named schema.
func (s *Schema) String() string {
	if s == nil {
		return "Schema{null}"
	}
	if s.HasName() {
		return "Schema{" + s.Name + ":" + typeNameUpper(s.Type) + "}"
	}
	return "Schema{" + typeNameUpper(s.Type) + "}"
}

// String formats the struct as Kafka Connect's Struct.toString does:
// "Struct{id=5,name=x}", fields in schema order, null fields left out.
func (s *Struct) String() string {
	var b strings.Builder
	b.WriteString("Struct{")
	first := true
	for i, v := range s.values {
		if v == nil {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(s.schema.Fields[i].Name)
		b.WriteByte('=')
		writeValue(&b, v)
	}
	b.WriteByte('}')
	return b.String()
}

// String formats the map as "{k1=v1, k2=v2}" in entry order.
func (m Map) String() string {
	var b strings.Builder
	writeValue(&b, m)
	return b.String()
}

// FormatValue renders a Connect value as Java's toString renders the Java
// object Kafka Connect holds for it, which is what FileStreamSink writes and
// what Kafka Connect's messages show: numbers exactly (1.0, 1.0E20, NaN; a
// Decimal as BigDecimal.toString), lists "[a, b]", maps "{k=v, k2=v2}",
// structs "Struct{a=1}" without null fields, times as java.util.Date.toString
// in UTC ("Thu Jan 01 00:00:00 UTC 1970"), null as "null". Where Java has no
// useful or no fixed form it differs: bytes are base64 (Java prints an
// array reference), and a map[string]any's keys are sorted (Java's HashMap
// order is its own).
func FormatValue(v any) string {
	var b strings.Builder
	writeValue(&b, v)
	return b.String()
}

func writeValue(b *strings.Builder, v any) {
	var tmp [48]byte
	if st, ok := v.(*Struct); ok && st == nil {
		v = nil
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		b.WriteString(x)
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int8:
		b.Write(strconv.AppendInt(tmp[:0], int64(x), 10))
	case int16:
		b.Write(strconv.AppendInt(tmp[:0], int64(x), 10))
	case int32:
		b.Write(strconv.AppendInt(tmp[:0], int64(x), 10))
	case int64:
		b.Write(strconv.AppendInt(tmp[:0], x, 10))
	case float32:
		b.Write(AppendJavaFloat(tmp[:0], float64(x), 32))
	case float64:
		b.Write(AppendJavaFloat(tmp[:0], x, 64))
	case []byte:
		b.WriteString(base64.StdEncoding.EncodeToString(x))
	case Raw:
		b.WriteString(base64.StdEncoding.EncodeToString(x))
	case time.Time:
		b.WriteString(JavaDate(x))
	case Decimal:
		b.Write(AppendJavaDecimal(tmp[:0], x))
	case *Struct:
		b.WriteString(x.String())
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k)
			b.WriteByte('=')
			writeValue(b, x[k])
		}
		b.WriteByte('}')
	case Map:
		b.WriteByte('{')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e.Key)
			b.WriteByte('=')
			writeValue(b, e.Value)
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, v)
	}
}

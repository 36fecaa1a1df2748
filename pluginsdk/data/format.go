package data

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"
)

// String formats the schema as Kafka Connect does in messages:
// "Schema{INT32}", or "Schema{com.example.Order:STRUCT}" for a named schema.
func (s *Schema) String() string {
	if s == nil {
		return "Schema{null}"
	}
	if s.Name != "" {
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

// FormatValue renders any Connect value for logs and error messages, in the
// spirit of Java's toString: lists "[a, b]", maps "{k=v, k2=v2}" (string
// keys sorted), structs "Struct{a=1}", bytes as base64, times as RFC 3339,
// null as "null".
func FormatValue(v any) string {
	var b strings.Builder
	writeValue(&b, v)
	return b.String()
}

func writeValue(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		b.WriteString(x)
	case []byte:
		b.WriteString(base64.StdEncoding.EncodeToString(x))
	case Raw:
		b.WriteString(base64.StdEncoding.EncodeToString(x))
	case time.Time:
		b.WriteString(x.UTC().Format(time.RFC3339Nano))
	case Decimal:
		b.WriteString(x.String())
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

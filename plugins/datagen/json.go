package main

import (
	"strconv"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// appendJSON appends a generated value as schemaless JSON, the way the
// worker's JsonConverter with schemas.enable=false writes it (a Timestamp as
// epoch milliseconds, structs as objects in field order, null for an unset
// optional field). It covers the types the quickstarts use; format=raw
// values and the record.size measure both come from it.
func appendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendJSONString(b, x)
	case bool:
		return strconv.AppendBool(b, x)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case time.Time:
		return strconv.AppendInt(b, x.UnixMilli(), 10)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	case *data.Struct:
		b = append(b, '{')
		for i, f := range x.Schema().Fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f.Name)
			b = append(b, ':')
			b = appendJSON(b, x.GetIndex(i))
		}
		return append(b, '}')
	}
	// Not reached for generated values; keep the output valid JSON anyway.
	return appendJSONString(b, data.FormatValue(v))
}

const hexDigits = "0123456789abcdef"

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

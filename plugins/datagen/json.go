package main

import (
	"strconv"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Records are written as schemaless JSON the way the worker's JsonConverter
// with schemas.enable=false writes them: a Timestamp as epoch milliseconds,
// structs as objects in field order, null for an unset optional field.
// format=raw values and the record.size measure both come from here; the
// quickstarts write their values straight into a reused buffer, with field
// names and the strings they pick from encoded once, so a record costs
// appends rather than an encoder's walk over a data.Struct.

// jsonRecord is one record's JSON object being written. Fields are written
// in schema order, each after field(i). It notes where the key field's
// value lies, so a raw key is a slice of what was written.
type jsonRecord struct {
	b []byte
	// prefix[i] opens field i: `{"name":` for the first field, `,"name":`
	// for the others.
	prefix []string
	keyIdx int // -1: no key field
	cur    int // the field being written, -1 before the first

	keyStart, keyEnd int // the key field's value is b[keyStart:keyEnd]
}

func newJSONRecord(s *data.Schema, keyIdx int) *jsonRecord {
	return &jsonRecord{prefix: fieldPrefixes(s), keyIdx: keyIdx, cur: -1}
}

// fieldPrefixes returns what opens each field of an object of schema s.
func fieldPrefixes(s *data.Schema) []string {
	out := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		b := []byte{','}
		if i == 0 {
			b[0] = '{'
		}
		b = appendJSONString(b, f.Name)
		out[i] = string(append(b, ':'))
	}
	return out
}

// reset starts a new record.
func (w *jsonRecord) reset() {
	w.b = w.b[:0]
	w.cur = -1
}

// field starts field i.
func (w *jsonRecord) field(i int) {
	w.closeField()
	w.b = append(w.b, w.prefix[i]...)
	if i == w.keyIdx {
		w.keyStart = len(w.b)
	}
	w.cur = i
}

func (w *jsonRecord) closeField() {
	if w.cur >= 0 && w.cur == w.keyIdx {
		w.keyEnd = len(w.b)
	}
}

// end closes the object.
func (w *jsonRecord) end() {
	w.closeField()
	w.cur = -1
	w.b = append(w.b, '}')
}

// int writes field i as a number.
func (w *jsonRecord) int(i int, n int64) {
	w.field(i)
	w.b = strconv.AppendInt(w.b, n, 10)
}

// text writes field i as js, which is JSON already (a quoted string from
// choices, or null).
func (w *jsonRecord) text(i int, js string) {
	w.field(i)
	w.b = append(w.b, js...)
}

// key returns the key field's value as the text a raw key carries: a
// number's digits, or a string's contents without its quotes. The strings
// the quickstarts pick need no escapes, so the contents are the string.
func (w *jsonRecord) key(quoted bool) []byte {
	if quoted {
		return w.b[w.keyStart+1 : w.keyEnd-1]
	}
	return w.b[w.keyStart:w.keyEnd]
}

// appendCents appends cents/100 as strconv.AppendFloat(b, cents/100.0, 'g',
// -1, 64) does, for 0 ≤ cents ≤ 10^6 (the test checks each): the shortest
// decimal that reads back as that float64 is the one with at most two
// fractional digits, trailing zeros dropped (any other decimal with so few
// digits is at least 0.01 away), and 'g' writes no exponent below 10^6.
func appendCents(b []byte, cents int) []byte {
	b = strconv.AppendInt(b, int64(cents/100), 10)
	switch c := cents % 100; {
	case c == 0:
	case c%10 == 0:
		b = append(b, '.', byte('0'+c/10))
	default:
		b = append(b, '.', byte('0'+c/10), byte('0'+c%10))
	}
	return b
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

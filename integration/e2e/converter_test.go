//go:build integration

package e2e

import (
	"bytes"
	"fmt"
	"testing"
	"time"
	"unicode/utf16"
)

// TestConverterBytes follows Kafka's connect_test.py: the same input file
// read by three FileStreamSources whose value converters differ (the worker
// default JsonConverter with schemas, a per-connector JsonConverter without
// schemas, a per-connector StringConverter). The bytes on each topic are
// exactly Kafka Connect's (Jackson's string escaping included), the keys
// are null, and each FileStreamSink, reading with the matching converter,
// writes back the input.
func TestConverterBytes(t *testing.T) {
	e := newEnv(t)
	lines := []string{
		"foo",
		"bar baz",
		// Jackson escapes the quote, the backslash and control characters
		// (short forms for \t \b \f, \u00XX upper-case otherwise), writes
		// a character beyond U+FFFF as its two UTF-16 surrogates escaped
		// (its UTF-8 generator does not combine them), and escapes nothing
		// else: not '/', '<', '>', '&', DEL, U+2028 or other non-ASCII.
		"quote \" backslash \\ slash / html <b>&amp; tab\tbell\x07 bs\b ff\f us\x1f del\x7f é 日本 😀 ls\u2028ps\u2029",
		"",
	}
	jsonString := func(s string) string {
		var b bytes.Buffer
		b.WriteByte('"')
		for _, r := range s {
			switch {
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r == '\t':
				b.WriteString(`\t`)
			case r == '\b':
				b.WriteString(`\b`)
			case r == '\f':
				b.WriteString(`\f`)
			case r < 0x20:
				fmt.Fprintf(&b, `\u%04X`, r)
			case r > 0xFFFF:
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04X\u%04X`, hi, lo)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
		return b.String()
	}
	// The expected encoding of the third line, spelled out rather than
	// only computed by jsonString above, so a shared mistake cannot hide.
	const third = `"quote \" backslash \\ slash / html <b>&amp; tab\tbell\u0007 bs\b ff\f us\u001F del` + "\x7f é 日本 " + `\uD83D\uDE00` + " ls\u2028ps\u2029" + `"`
	if got := jsonString(lines[2]); got != third {
		t.Fatalf("test's own encoder: %s, want %s", got, third)
	}

	in := e.path("in.txt")
	appendLines(t, in, lines)
	type variant struct {
		name      string
		converter map[string]string // connector-level settings; nil: the worker's
		want      func(line string) string
	}
	variants := []variant{
		{"schemas", nil, func(l string) string {
			return `{"schema":{"type":"string","optional":false},"payload":` + jsonString(l) + `}`
		}},
		{"schemaless", map[string]string{"value.converter": jsonConverter, "value.converter.schemas.enable": "false"}, jsonString},
		{"string", map[string]string{"value.converter": stringConverter}, func(l string) string { return l }},
	}
	worker := e.workerProps(map[string]string{
		"key.converter":                  jsonConverter,
		"value.converter":                jsonConverter,
		"key.converter.schemas.enable":   "true",
		"value.converter.schemas.enable": "true",
	})
	var files []string
	topics := map[string]string{}
	outs := map[string]string{}
	for _, v := range variants {
		topics[v.name] = e.topic("conv-" + v.name)
		outs[v.name] = e.path(v.name + "-out.txt")
		src := sourceConfig(e.name(v.name+"-src"), in, topics[v.name])
		sink := sinkConfig(e.name(v.name+"-sink"), outs[v.name], topics[v.name])
		for k, val := range v.converter {
			src[k], sink[k] = val, val
		}
		files = append(files, e.connector(src), e.connector(sink))
	}
	w := e.startWorker(worker, files...)

	for _, v := range variants {
		recs := e.readTopic(topics[v.name], len(lines))
		for i, r := range recs {
			if r.Key != nil {
				t.Errorf("%s record %d: key %q, want null", v.name, i, r.Key)
			}
			if want := v.want(lines[i]); string(r.Value) != want {
				t.Errorf("%s record %d:\n got %q\nwant %q", v.name, i, r.Value, want)
			}
		}
	}
	for _, v := range variants {
		waitLines(t, outs[v.name], len(lines))
	}
	time.Sleep(quiet)
	for _, v := range variants {
		requireLines(t, v.name+" sink file", lines, readLines(t, outs[v.name]))
		if end := e.endOffset(topics[v.name]); end != int64(len(lines)) {
			t.Errorf("%s topic end offset %d, want %d", v.name, end, len(lines))
		}
	}
	w.stop()
}

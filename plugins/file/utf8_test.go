package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Bytes that are not UTF-8 become U+FFFD as Java's UTF-8 decoder (Kafka's
// task reads through one) makes them: one per maximal ill-formed subpart, so
// two bad bytes in a row are two U+FFFD, and a sequence cut short is one.
func TestSourceInvalidUTF8AsJava(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ok", "ok"},
		{"\xff\xfe", "\uFFFD\uFFFD"},                         // two bytes that start nothing
		{"a\xe2\x82!", "a\uFFFD!"},                           // a 3-byte sequence cut short after 2
		{"\xf0\x9f\x98z", "\uFFFDz"},                         // a 4-byte sequence cut short after 3
		{"\xed\xa0\x80", "\uFFFD"},                           // an encoded surrogate: Java decodes it whole, then rejects it
		{"\xc0\xaf", "\uFFFD\uFFFD"},                         // an overlong encoding
		{"\xe0\x80\x80", "\uFFFD\uFFFD\uFFFD"},               // overlong, 3 bytes
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},     // past U+10FFFF
		{"\x80\x80", "\uFFFD\uFFFD"},                         // continuation bytes alone
		{"\uFFFD\u00e9\U0001F600", "\uFFFD\u00e9\U0001F600"}, // valid text as is
		{"\xe2\x82", "\uFFFD"},                               // cut short by the line end
	}
	var in strings.Builder
	for _, tt := range tests {
		in.WriteString(tt.in + "\n")
	}
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, in.String())
	task := startSource(t, &fakeSourceContext{}, map[string]string{"file": path, "topic": "t"})
	recs := pollN(t, task, len(tests))
	for i, tt := range tests {
		if recs[i].Value != tt.want {
			t.Errorf("line %q became %q, want %q", tt.in, recs[i].Value, tt.want)
		}
	}
}

package main

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

func TestLineSplitter(t *testing.T) {
	type line struct {
		text string
		end  int64
	}
	tests := []struct {
		name   string
		start  int64
		chunks []string
		want   []line
		rest   int // bytes still pending
	}{
		{name: "lf", chunks: []string{"a\nbb\n"}, want: []line{{"a", 2}, {"bb", 5}}},
		{name: "crlf", chunks: []string{"a\r\nbb\r\n"}, want: []line{{"a", 3}, {"bb", 7}}},
		{name: "lone cr", chunks: []string{"a\rb\n"}, want: []line{{"a", 2}, {"b", 4}}},
		{name: "cr at end waits for lf", chunks: []string{"a\r"}, rest: 2},
		{name: "crlf split across reads", chunks: []string{"a\r", "\nb\n"}, want: []line{{"a", 3}, {"b", 5}}},
		{name: "cr then other byte in next read", chunks: []string{"a\r", "b\n"}, want: []line{{"a", 2}, {"b", 4}}},
		{name: "partial last line", chunks: []string{"a\nbc"}, want: []line{{"a", 2}}, rest: 2},
		{name: "partial completed later", chunks: []string{"a\nb", "c", "d\n"}, want: []line{{"a", 2}, {"bcd", 6}}},
		{name: "empty lines", chunks: []string{"\n\r\n\n"}, want: []line{{"", 1}, {"", 3}, {"", 4}}},
		{name: "positions from a resume point", start: 100, chunks: []string{"x\ny\n"}, want: []line{{"x", 102}, {"y", 104}}},
		{name: "multibyte text", chunks: []string{"grüße\n"}, want: []line{{"grüße", 8}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s lineSplitter
			s.reset(tt.start)
			var got []line
			for _, c := range tt.chunks {
				s.feed([]byte(c))
				for {
					l, end, ok := s.next()
					if !ok {
						break
					}
					got = append(got, line{string(l), end})
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("lines %v, want %v", got, tt.want)
			}
			if s.pending() != tt.rest {
				t.Errorf("pending %d bytes, want %d", s.pending(), tt.rest)
			}
		})
	}
}

// The buffer is compacted as lines are consumed, so a long stream read in
// small pieces does not grow it.
func TestLineSplitterBufferStaysSmall(t *testing.T) {
	var s lineSplitter
	s.reset(0)
	var n int
	for i := range 10000 {
		s.feed([]byte(fmt.Sprintf("line %d\n", i)))
		for {
			l, _, ok := s.next()
			if !ok {
				break
			}
			if want := fmt.Sprintf("line %d", n); string(l) != want {
				t.Fatalf("line %q, want %q", l, want)
			}
			n++
		}
	}
	if n != 10000 {
		t.Fatalf("%d lines, want 10000", n)
	}
	if c := cap(s.buf); c > 1024 {
		t.Errorf("buffer capacity %d after 10000 short lines; it should be compacted", c)
	}
}

// A line far longer than one read arrives in many pieces; each piece must be
// searched for a line end once, not the whole line again with every piece
// (which made a 32 MiB line take minutes).
func TestLineSplitterLongLineIsLinear(t *testing.T) {
	const chunk, chunks = 64 << 10, 512
	piece := bytes.Repeat([]byte{'a'}, chunk)
	var s lineSplitter
	s.reset(0)
	start := time.Now()
	for range chunks {
		s.feed(piece)
		if l, _, ok := s.next(); ok {
			t.Fatalf("line of %d bytes before its end", len(l))
		}
	}
	s.feed([]byte("\r"))
	if _, _, ok := s.next(); ok {
		t.Fatal("line cut at a trailing \\r that may start \\r\\n")
	}
	s.feed([]byte("\nb\n"))
	l, end, ok := s.next()
	if !ok || len(l) != chunk*chunks || end != chunk*chunks+2 {
		t.Fatalf("long line: %d bytes ending at %d (ok %v); want %d ending at %d", len(l), end, ok, chunk*chunks, chunk*chunks+2)
	}
	if l, end, ok := s.next(); !ok || string(l) != "b" || end != chunk*chunks+4 {
		t.Fatalf("next line %q at %d (ok %v)", l, end, ok)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("splitting one %d MiB line took %v", chunk*chunks>>20, d)
	}
}

package main

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// lineSplitter cuts a byte stream into lines and knows the stream position
// after each one, which is what the source records as its offset.
//
// A line ends at "\n", "\r\n" or a lone "\r" (Kafka's task accepts all
// three). A "\r" at the very end of the bytes seen so far is not yet a line
// end: the next read may bring the "\n" that makes it "\r\n", and cutting
// early would emit an empty line that was never there. Bytes after the last
// line end wait for the rest of their line.
type lineSplitter struct {
	buf   []byte // buf[start:] is not yet returned
	start int
	pos   int64 // stream position of buf[start]
	// clean is how many bytes of buf[start:] are known to hold no line end,
	// so a line longer than one read is searched once, not again with every
	// read that extends it.
	clean int
}

// reset positions the splitter at pos with nothing buffered.
func (s *lineSplitter) reset(pos int64) {
	s.buf, s.start, s.pos, s.clean = s.buf[:0], 0, pos, 0
}

// feed appends bytes read from the stream.
func (s *lineSplitter) feed(b []byte) {
	if s.start > 0 && s.start >= len(s.buf)/2 {
		// Most of the buffer is consumed: move the rest to the front rather
		// than letting the buffer grow with every read.
		n := copy(s.buf, s.buf[s.start:])
		s.buf, s.start = s.buf[:n], 0
	}
	s.buf = append(s.buf, b...)
}

// next returns the next complete line without its terminator, and the
// stream position just after the terminator. The line aliases the buffer and
// is valid until the next feed.
func (s *lineSplitter) next() (line []byte, end int64, ok bool) {
	rest := s.buf[s.start:]
	i := bytes.IndexAny(rest[s.clean:], "\r\n")
	if i < 0 {
		s.clean = len(rest)
		return nil, 0, false
	}
	i += s.clean
	n := i + 1
	if rest[i] == '\r' {
		if i+1 == len(rest) {
			// Search from this "\r" again once more bytes arrive.
			s.clean = i
			return nil, 0, false
		}
		if rest[i+1] == '\n' {
			n = i + 2
		}
	}
	s.start += n
	s.pos += int64(n)
	s.clean = 0
	return rest[:i], s.pos, true
}

// pending is the number of bytes held that belong to no complete line yet.
func (s *lineSplitter) pending() int { return len(s.buf) - s.start }

// javaUTF8 decodes a line as Java's UTF-8 decoder does with malformed input
// replaced (Kafka's task reads through an InputStreamReader): valid text is
// kept as it is, and each ill-formed sequence becomes one U+FFFD, its length
// being what that decoder reports (malformedLen).
func javaUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r != utf8.RuneError || n > 1 {
			sb.Write(b[:n])
			b = b[n:]
			continue
		}
		sb.WriteRune(utf8.RuneError)
		b = b[malformedLen(b):]
	}
	return sb.String()
}

// malformedLen is how many bytes at the start of b, which are not valid
// UTF-8, Java's decoder takes as one malformed sequence: the bytes that could
// still begin a valid sequence (so a sequence cut short is one U+FFFD), at
// least one; and a whole encoded surrogate, which Java decodes before
// rejecting it.
func malformedLen(b []byte) int {
	cont := func(i int) bool { return i < len(b) && b[i]&0xc0 == 0x80 }
	switch b1 := b[0]; {
	case b1 >= 0xe0 && b1 <= 0xef:
		if !cont(1) || (b1 == 0xe0 && b[1] < 0xa0) {
			return 1
		}
		if !cont(2) {
			return 2
		}
		return 3 // a surrogate, U+D800 to U+DFFF
	case b1 >= 0xf0 && b1 <= 0xf4:
		if !cont(1) || (b1 == 0xf0 && b[1] < 0x90) || (b1 == 0xf4 && b[1] > 0x8f) {
			return 1
		}
		if !cont(2) {
			return 2
		}
		return 3
	}
	return 1
}

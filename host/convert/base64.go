package convert

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// decodeBase64 reads base64 text as Kafka's JsonConverter does (Jackson's
// TextNode.binaryValue with its default variant, MIME without line feeds):
// the text is trimmed as Java's String.trim trims it, white space (any
// character up to U+0020) may come before each group of four, a group that
// ends in padding may be followed by another, and padding is required. Go's
// decoder differs on each point (it skips only CR and LF, anywhere, and
// stops at the first padding), so data written by producers that wrap or
// pad their base64 read differently; this keeps them reading as in Kafka.
func decodeBase64(s string) ([]byte, error) {
	// Text with no white space and padding only at its end reads the same
	// either way: Go's decoder is faster (its errors are not Jackson's, so
	// a failure is read again below for the message).
	if p := strings.IndexByte(s, '='); (p < 0 || p >= len(s)-2) && !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' }) {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return b, nil
		}
	}
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	out := make([]byte, 0, len(s)*3/4)
	for i := 0; ; {
		for i < len(s) && s[i] <= ' ' {
			i++
		}
		if i >= len(s) {
			return out, nil
		}
		// A group of four: n characters of data, then padding (as the
		// third and fourth, or the fourth).
		var q [4]int
		n := 0
		for pos := 0; pos < 4; pos++ {
			if i >= len(s) {
				return nil, errBase64EOF
			}
			c := s[i]
			i++
			if c == '=' && pos >= 2 {
				if pos == 2 {
					if i >= len(s) {
						return nil, errBase64EOF
					}
					if c := s[i]; c != '=' {
						return nil, fmt.Errorf("%w: expected padding character '='", illegalBase64(c, 3))
					}
					i++
				}
				break
			}
			v := base64Value(c)
			if v < 0 {
				return nil, illegalBase64(c, pos)
			}
			q[pos] = v
			n++
		}
		b := [3]byte{byte(q[0]<<2 | q[1]>>4), byte(q[1]<<4 | q[2]>>2), byte(q[2]<<6 | q[3])}
		out = append(out, b[:n-1]...)
	}
}

var errBase64EOF = fmt.Errorf("Unexpected end of base64-encoded String: base64 variant 'MIME-NO-LINEFEEDS' expects padding (one or more '=' characters) at the end")

func base64Value(c byte) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return int(c - 'A')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 26
	case c >= '0' && c <= '9':
		return int(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	}
	return -1
}

// illegalBase64 is Jackson's message for c where character pos (from 0)
// of a group of four is due.
func illegalBase64(c byte, pos int) error {
	switch {
	case c <= ' ':
		return fmt.Errorf("Illegal white space character (code 0x%x) as character #%d of 4-char base64 unit: can only used between units", c, pos+1)
	case c == '=':
		return fmt.Errorf("Unexpected padding character ('=') as character #%d of 4-char base64 unit: padding only legal as 3rd or 4th character", pos+1)
	case c < 0x20 || c == 0x7f || c >= 0x80:
		return fmt.Errorf("Illegal character (code 0x%x) in base64 content", c)
	}
	return fmt.Errorf("Illegal character '%c' (code 0x%x) in base64 content", rune(c), c)
}

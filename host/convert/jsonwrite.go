package convert

import (
	"encoding/base64"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

const hexUpper = "0123456789ABCDEF"

// plainASCII marks the bytes written as they are: printable ASCII except
// '"' and '\'.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString appends s as a JSON string the way Jackson's UTF-8
// generator writes it: '"' and '\' escaped, \b \t \n \f \r for those
// controls, \u00XX (upper-case hex) for the other controls, a character
// beyond the Basic Multilingual Plane as the \uXXXX escapes of its two UTF-16
// surrogates ("\uD83D\uDE00": Jackson writes Java's chars one by one and
// escapes each surrogate), everything else (DEL, other non-ASCII, U+2028)
// as UTF-8 bytes. Invalid UTF-8, which a Java string cannot hold, is
// written as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plainASCII[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\uFFFD"...)
				i++
				start = i
				continue
			}
			if size == 4 {
				b = append(b, s[start:i]...)
				hi, lo := utf16.EncodeRune(r)
				b = appendUnicodeEscape(b, hi)
				b = appendUnicodeEscape(b, lo)
				i += size
				start = i
				continue
			}
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\f':
			b = append(b, '\\', 'f')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hexUpper[c>>4], hexUpper[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendUnicodeEscape appends \uXXXX with upper-case hex, as Jackson does.
func appendUnicodeEscape(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexUpper[r>>12&0xf], hexUpper[r>>8&0xf], hexUpper[r>>4&0xf], hexUpper[r&0xf])
}

// appendJSONFloat appends a float as Jackson writes a float or double node:
// Java's toString form, with NaN and the infinities as quoted strings
// (Jackson's default QUOTE_NON_NUMERIC_NUMBERS).
func appendJSONFloat(b []byte, f float64, bitSize int) []byte {
	if f != f || f > maxFloat(bitSize) || f < -maxFloat(bitSize) {
		b = append(b, '"')
		b = data.AppendJavaFloat(b, f, bitSize)
		return append(b, '"')
	}
	return data.AppendJavaFloat(b, f, bitSize)
}

func maxFloat(bitSize int) float64 {
	if bitSize == 32 {
		return 3.4028234663852886e38
	}
	return 1.7976931348623157e308
}

// appendBase64 appends bytes as Jackson writes a binary node: standard
// base64 with padding and no line breaks, quoted.
func appendBase64(b []byte, p []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, p)
	return append(b, '"')
}

package config

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ParseProperties reads Java .properties text: "key=value", "key: value" or
// "key value"; '#' and '!' comments; a trailing backslash continues a line;
// lines end at "\n", "\r\n" or a lone "\r"; \t \n \r \f \uXXXX escapes (an
// escaped UTF-16 surrogate pair is one character). The key may be empty
// ("=v"), as java.util.Properties allows. Later keys win, as in
// java.util.Properties. An error names the line.
//
// The text is read as UTF-8, what editors write today, after a UTF-8 byte
// order mark if there is one. Text with any byte that is not valid UTF-8
// is read, all of it, as ISO-8859-1, the encoding Kafka reads these files
// in (Properties.load of a stream), so a file saved by a Latin-1 editor
// means what it means to Kafka. Not line by line: a stray Latin-1 byte
// says the file is not UTF-8, and reading the rest as Kafka does keeps
// every file that works with Kafka working (Java's PropertyResourceBundle
// falls back the same way).
// (A UTF-8 file with characters beyond ASCII reads differently in Kafka,
// which sees each byte as a character: Sluice reads what was written.)
// Text that starts with a UTF-16 byte order mark is read as UTF-16.
func ParseProperties(r io.Reader) (map[string]string, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	lines := splitLines(decodeProperties(raw))
	out := map[string]string{}
	for n := 0; n < len(lines); {
		start := n + 1
		line := strings.TrimLeft(lines[n], " \t\f")
		n++
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continues(line) {
			// A backslash on the last line continues nothing.
			line = line[:len(line)-1]
			if line == "" || n == len(lines) {
				break
			}
			line += strings.TrimLeft(lines[n], " \t\f")
			n++
		}
		if line == "" {
			// Only continuations so far: java.util.Properties is still at
			// the start of a logical line, so a comment or blank line that
			// follows is skipped, not read as a key.
			continue
		}
		key, value, err := splitProperty(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		out[key] = value
	}
	return out, nil
}

// decodeProperties returns the text of a properties file: UTF-8 after a
// byte order mark, or ISO-8859-1 where the bytes are not valid UTF-8.
func decodeProperties(raw []byte) string {
	raw = bytes.TrimPrefix(decodeUTF16(raw), []byte(utf8BOM))
	if utf8.Valid(raw) {
		return string(raw)
	}
	var b strings.Builder
	b.Grow(len(raw) * 2)
	for _, c := range raw {
		b.WriteRune(rune(c))
	}
	return b.String()
}

// decodeUTF16 returns text that starts with a UTF-16 byte order mark (as
// Windows PowerShell 5 writes files) as UTF-8, without the mark; other
// text as it is. Jackson reads such JSON, and nobody means the NUL bytes a
// byte-wise reading would give.
func decodeUTF16(raw []byte) []byte {
	var order binary.ByteOrder
	switch {
	case bytes.HasPrefix(raw, []byte{0xff, 0xfe}):
		order = binary.LittleEndian
	case bytes.HasPrefix(raw, []byte{0xfe, 0xff}):
		order = binary.BigEndian
	default:
		return raw
	}
	raw = raw[2:]
	units := make([]uint16, 0, len(raw)/2)
	for i := 0; i+1 < len(raw); i += 2 {
		units = append(units, order.Uint16(raw[i:]))
	}
	out := []byte(string(utf16.Decode(units)))
	if len(raw)%2 == 1 {
		out = utf8.AppendRune(out, utf8.RuneError)
	}
	return out
}

// utf8BOM is the UTF-8 encoding of U+FEFF, the byte order mark.
const utf8BOM = "\xef\xbb\xbf"

// splitLines splits s at "\n", "\r\n" and a lone "\r", the line
// terminators of java.util.Properties.
func splitLines(s string) []string {
	var lines []string
	for s != "" {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return lines
}

// ReadPropertiesFile reads a .properties file; errors name the file and line.
func ReadPropertiesFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	props, err := ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

// continues reports whether the line ends in an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func splitProperty(line string) (string, string, error) {
	var key strings.Builder
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' && i+1 < len(line) {
			r, n, err := unescape(line[i:])
			if err != nil {
				return "", "", fmt.Errorf("%w in a key", err)
			}
			key.WriteString(r)
			i += n
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		key.WriteByte(c)
		i++
	}
	// Skip white space, one separator, white space.
	for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\f') {
		i++
	}
	if i < len(line) && (line[i] == '=' || line[i] == ':') {
		i++
	}
	for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\f') {
		i++
	}
	var val strings.Builder
	for i < len(line) {
		if line[i] == '\\' && i+1 < len(line) {
			r, n, err := unescape(line[i:])
			if err != nil {
				// The value is not quoted: it may be a password.
				return "", "", fmt.Errorf("%w in the value of %q", err, key.String())
			}
			val.WriteString(r)
			i += n
			continue
		}
		val.WriteByte(line[i])
		i++
	}
	return key.String(), val.String(), nil
}

// errMalformedEscape is java.util.Properties' message, which users search for.
var errMalformedEscape = errors.New("Malformed \\uxxxx encoding")

// unescape decodes the escape at the start of s (which begins with '\').
func unescape(s string) (string, int, error) {
	switch c := s[1]; c {
	case 't':
		return "\t", 2, nil
	case 'n':
		return "\n", 2, nil
	case 'r':
		return "\r", 2, nil
	case 'f':
		return "\f", 2, nil
	case 'u':
		if len(s) < 6 {
			return "", 0, errMalformedEscape
		}
		n, err := strconv.ParseUint(s[2:6], 16, 16)
		if err != nil {
			return "", 0, errMalformedEscape
		}
		r := rune(n)
		// A high surrogate followed by an escaped low one is a single
		// character, as the two UTF-16 units are in Java.
		if utf16.IsSurrogate(r) && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if lo, err := strconv.ParseUint(s[8:12], 16, 16); err == nil {
				if c := utf16.DecodeRune(r, rune(lo)); c != utf8.RuneError {
					return string(c), 12, nil
				}
			}
		}
		return string(r), 6, nil
	default:
		// Any other escaped character stands for itself, a whole
		// character: the text is UTF-8 by now (ISO-8859-1 files were
		// converted), so take all of its bytes, not just the first.
		_, size := utf8.DecodeRuneInString(s[1:])
		return s[1 : 1+size], 1 + size, nil
	}
}

package config

import (
	"bufio"
	"bytes"
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
func ParseProperties(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	sc.Split(scanLines)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		start := lineNo
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continues(line) {
			line = line[:len(line)-1]
			if !sc.Scan() {
				break
			}
			lineNo++
			line += strings.TrimLeft(sc.Text(), " \t\f")
		}
		key, value, err := splitProperty(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		out[key] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", lineNo+1, err)
	}
	return out, nil
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
				return "", "", err
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
				return "", "", err
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
			return "", 0, fmt.Errorf("malformed \\uxxxx encoding in %q", s)
		}
		n, err := strconv.ParseUint(s[2:6], 16, 16)
		if err != nil {
			return "", 0, fmt.Errorf("malformed \\uxxxx encoding in %q", s)
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
		return string(c), 2, nil
	}
}

// scanLines splits at "\n", "\r\n" and a lone "\r", the line terminators of
// java.util.Properties.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if atEOF {
			return i + 1, data[:i], nil
		}
		// A "\r" at the end of what was read: a "\n" may follow.
		return 0, nil, nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

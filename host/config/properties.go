package config

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ParseProperties reads Java .properties text: "key=value", "key: value" or
// "key value"; '#' and '!' comments; a trailing backslash continues a line;
// \t \n \r \f \uXXXX escapes. Later keys win, as in java.util.Properties. An
// error names the line.
func ParseProperties(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
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
	if key.Len() == 0 {
		return "", "", fmt.Errorf("missing key in %q", line)
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
		return string(rune(n)), 6, nil
	default:
		return string(c), 2, nil
	}
}

package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"
)

// Target states a connector may be created in (KIP-980 initial_state).
const (
	StateRunning = "RUNNING"
	StatePaused  = "PAUSED"
	StateStopped = "STOPPED"
)

// ConnectorFile is one connector given on the standalone command line.
type ConnectorFile struct {
	Name         string
	Config       map[string]string
	InitialState string // empty = RUNNING
}

// ReadConnectorFile reads a connector configuration the way connect-standalone
// does, trying in order: a JSON object of string settings (with "name"), a
// JSON create request {"name","config","initial_state"} (config.name, if
// present, must equal name), a .properties file (with "name").
func ReadConnectorFile(path string) (*ConnectorFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read connector config: %w", err)
	}
	cf, err := ParseConnectorConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cf, nil
}

// ErrNoName is wrapped by the error of ParseConnectorConfig for a file
// without a connector name.
var ErrNoName = errors.New(`no "name"`)

// ParseConnectorConfig parses the bytes of a connector config file, which
// must name the connector: without a name the error wraps ErrNoName.
func ParseConnectorConfig(raw []byte) (*ConnectorFile, error) {
	cf, err := ParseConnectorSettings(raw)
	if err != nil {
		return nil, err
	}
	if cf.Name == "" {
		// A create request whose config has a name but which has none
		// itself is refused, as connect-standalone refuses it: the
		// config's name does not match the request's (null) one.
		if n := cf.Config["name"]; n != "" {
			return nil, fmt.Errorf("connector name configuration in \"config\" (%q) doesn't match the one in \"name\" (none)", n)
		}
		return nil, fmt.Errorf("connector configuration has %w", ErrNoName)
	}
	return cf, nil
}

// ParseConnectorSettings parses the bytes of a connector config file as
// ParseConnectorConfig does, but a file without a name is no error: Name is
// empty (the CLI takes the name from its command line).
func ParseConnectorSettings(raw []byte) (*ConnectorFile, error) {
	// Jackson skips a UTF-8 byte order mark before JSON; ParseProperties
	// skips it too.
	raw = decodeUTF16(raw)
	text := bytes.TrimPrefix(raw, []byte(utf8BOM))
	trimmed := bytes.TrimSpace(text)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		// Go's decoder would read bytes that are not UTF-8 (a file saved
		// by a Latin-1 editor) as U+FFFD, a value nobody wrote; Jackson
		// refuses them too.
		if _, err := DecodeJSONText(text); err != nil {
			return nil, err
		}
		// The text with its leading blank lines, so that an error's
		// line is the one the user's editor shows; other white space
		// (U+00A0, say) is not JSON's, so that is parsed without it.
		if j := bytes.TrimLeft(text, " \t\r\n"); len(j) > 0 && j[0] == '{' {
			return parseConnectorJSON(text)
		}
		return parseConnectorJSON(trimmed)
	}
	// Valid JSON that is not an object (an array of connectors, say) would
	// read as a .properties file without a name: say what is wrong.
	if len(trimmed) > 0 && json.Valid(trimmed) {
		return nil, fmt.Errorf("connector config must be a JSON object, not %s", jsonKind(trimmed[0]))
	}
	props, err := ParseProperties(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return &ConnectorFile{Name: props["name"], Config: props}, nil
}

// DecodeJSONText returns the text of a JSON file as Jackson reads it:
// UTF-16 after a UTF-16 byte order mark, a UTF-8 byte order mark skipped.
// Bytes that are not UTF-8 are an error naming their line: Go's decoder
// would read them as U+FFFD, a value nobody wrote.
func DecodeJSONText(raw []byte) ([]byte, error) {
	text := bytes.TrimPrefix(decodeUTF16(raw), []byte(utf8BOM))
	if !utf8.Valid(text) {
		line, col := position(text, invalidUTF8(text))
		return nil, fmt.Errorf("malformed JSON: line %d column %d: not UTF-8 (a JSON file is UTF-8, or UTF-16 after a byte order mark)", line, col)
	}
	return text, nil
}

func parseConnectorJSON(raw []byte) (*ConnectorFile, error) {
	var generic map[string]json.RawMessage
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", describeJSONError(raw, err))
	}
	if cfgRaw, ok := generic["config"]; ok && bytes.HasPrefix(bytes.TrimSpace(cfgRaw), []byte("{")) {
		var req struct {
			Name         string       `json:"name"`
			Config       stringValues `json:"config"`
			InitialState string       `json:"initial_state"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("create request: %w", describeJSONError(raw, err))
		}
		// A request without "name" has none, as in Kafka; its
		// config.name is left for the caller (ParseConnectorConfig
		// refuses it, the CLI may take it).
		if n, ok := req.Config["name"]; ok && req.Name != "" && n != req.Name {
			return nil, fmt.Errorf("connector name configuration in \"config\" (%q) doesn't match the one in \"name\" (%q)", n, req.Name)
		}
		st := strings.ToUpper(req.InitialState)
		switch st {
		case "", StateRunning, StatePaused, StateStopped:
		default:
			return nil, fmt.Errorf("invalid initial_state %q: must be one of RUNNING, PAUSED, STOPPED", req.InitialState)
		}
		if req.Config == nil {
			req.Config = map[string]string{}
		}
		if req.Name != "" {
			req.Config["name"] = req.Name
		}
		return &ConnectorFile{Name: req.Name, Config: req.Config, InitialState: st}, nil
	}
	var flat stringValues
	if err := json.Unmarshal(raw, &flat); err != nil {
		return nil, fmt.Errorf("connector config must be a JSON object of strings: %w", describeJSONError(raw, err))
	}
	return &ConnectorFile{Name: flat["name"], Config: flat}, nil
}

// stringValues is a JSON object read into strings as Kafka's Jackson reads
// a Map<String, String>: a number or a boolean counts as its text, so
// "tasks.max": 1 is "1"; null, an object or an array is refused.
type stringValues map[string]string

func (m *stringValues) UnmarshalJSON(b []byte) error {
	// Walk the object in file order, so that of several bad values the
	// first one written is reported, every time.
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil {
		return err
	} else if t != json.Delim('{') {
		return fmt.Errorf("want a JSON object, not %v", t)
	}
	out := stringValues{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		switch v[0] {
		case '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return err
			}
			out[k] = s
		case 't', 'f', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			// Compact: the number or boolean as written.
			out[k] = string(v)
		default:
			return fmt.Errorf("value of %q must be a string, a number or a boolean, not %s", k, jsonKind(v[0]))
		}
	}
	*m = out
	return nil
}

func jsonKind(c byte) string {
	switch c {
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case '[':
		return "an array"
	default:
		return "a number"
	}
}

// describeJSONError adds the line and column of a syntax error.
func describeJSONError(raw []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case asErr(err, &se):
		off = se.Offset
	case asErr(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return err
	}
	line, col := position(raw, int(off))
	return fmt.Errorf("line %d column %d: %w", line, col, err)
}

// position is the line and column of byte off of raw, counting from 1.
func position(raw []byte, off int) (line, col int) {
	line, col = 1, 1
	for _, c := range raw[:min(off, len(raw))] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// invalidUTF8 is the offset of the first byte of raw that is not UTF-8.
func invalidUTF8(raw []byte) int {
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(raw)
}

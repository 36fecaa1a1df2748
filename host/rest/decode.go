package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/sluice-io/sluice/host/herder"
)

// Request bodies are decoded here, strictly: a body that Kafka Connect's
// Jackson would reject is a 400 naming the problem (Kafka answers those
// with 500). Config values are JSON strings, stored and echoed exactly as
// given; a number or a boolean is taken as its text, as Jackson reads one
// into a Map<String, String> ("tasks.max": 1 is "1"), and as connector
// files are read.

// readBody reads the whole body, at most the configured limit.
func (s *Server) readBody(c echo.Context) ([]byte, error) {
	r := http.MaxBytesReader(c.Response(), c.Request().Body, s.cfg.maxBody)
	b, err := io.ReadAll(r)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, badRequest("Request body is larger than the limit of %d bytes", s.cfg.maxBody)
	case err != nil:
		return nil, badRequest("Cannot read request body: %v", err)
	}
	return b, nil
}

// createRequest is Kafka Connect's CreateConnectorRequest.
type createRequest struct {
	name   string
	config map[string]string
	// nulls are the config's keys whose value was null.
	nulls   []string
	initial herder.TargetState
}

// decodeObject reads a body that must be one JSON object, keeping each
// member raw; what names the body in messages.
func decodeObject(body []byte, what string) (map[string]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, badRequest("Request body is empty; %s must be a JSON object", what)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, jsonProblem(err, what)
	}
	if raw == nil {
		return nil, badRequest("%s must be a JSON object, not null", capitalize(what))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest("Malformed JSON in %s: unexpected data after the JSON object", what)
	}
	return raw, nil
}

// jsonProblem turns a decoding error into a 400 that says what was wrong
// and where.
func jsonProblem(err error, what string) error {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		return badRequest("Malformed JSON in %s at byte %d: %v", what, se.Offset, se)
	case errors.As(err, &te):
		if te.Field == "" {
			return badRequest("%s must be a JSON object, not %s", capitalize(what), te.Value)
		}
		return badRequest("Field %q of %s must not be %s", te.Field, what, te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badRequest("Malformed JSON in %s: unexpected end of input", what)
	}
	return badRequest("Malformed JSON in %s: %v", what, err)
}

// kindOf names the JSON type of a raw value for messages.
func kindOf(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "empty"
	}
	switch t[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// decodeScalar reads a raw JSON string, or the text of a number or a
// boolean, as Jackson's StringDeserializer reads them.
func decodeScalar(raw json.RawMessage) (string, bool) {
	switch kindOf(raw) {
	case "a number", "a boolean":
		return string(bytes.TrimSpace(raw)), true
	}
	return decodeString(raw)
}

// decodeString reads a raw JSON string.
func decodeString(raw json.RawMessage) (string, bool) {
	if kindOf(raw) != "a string" {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// decodeConfigMembers reads an object of string settings (numbers and
// booleans as their text); null values are kept as nil (PATCH removes
// them, validation refuses them). want is what the message says a value
// must be.
func decodeConfigMembers(raw map[string]json.RawMessage, what, want string) (map[string]*string, error) {
	out := make(map[string]*string, len(raw))
	for _, k := range sortedKeys(raw) {
		v := raw[k]
		if isNull(v) {
			out[k] = nil
			continue
		}
		s, ok := decodeScalar(v)
		if !ok {
			return nil, badRequest("Value of %q in %s must be %s, not %s", k, what, want, kindOf(v))
		}
		out[k] = &s
	}
	return out, nil
}

// decodeConfig reads a flat {"key":"value"} config (PUT config, validate);
// nulls are the keys whose value was null, in order.
func decodeConfig(body []byte) (cfg map[string]string, nulls []string, err error) {
	raw, err := decodeObject(body, "the connector configuration")
	if err != nil {
		return nil, nil, err
	}
	return stringConfig(raw, "the connector configuration")
}

// stringConfig is a config of strings and the keys whose value was null,
// which Kafka's validation refuses one by one (see withNullErrors).
func stringConfig(raw map[string]json.RawMessage, what string) (map[string]string, []string, error) {
	m, err := decodeConfigMembers(raw, what, "a string")
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]string, len(m))
	var nulls []string
	for _, k := range sortedKeys(m) {
		if m[k] == nil {
			nulls = append(nulls, k)
			continue
		}
		out[k] = *m[k]
	}
	return out, nulls, nil
}

// decodePatch reads a PATCH config body: string values, null removes.
func decodePatch(body []byte) (map[string]*string, error) {
	raw, err := decodeObject(body, "the configuration patch")
	if err != nil {
		return nil, err
	}
	return decodeConfigMembers(raw, "the configuration patch", "a string or null")
}

// decodeCreate reads POST /connectors: {"name","config","initial_state"}.
// Unknown members are refused, as Kafka's Jackson does (with a 500 there).
func decodeCreate(body []byte) (*createRequest, error) {
	const what = "the create request"
	raw, err := decodeObject(body, what)
	if err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(raw) {
		switch k {
		case "name", "config", "initial_state":
		default:
			return nil, badRequest("Unrecognized field %q in %s: the fields are \"name\", \"config\" and \"initial_state\"", k, what)
		}
	}
	req := &createRequest{initial: herder.TargetStarted}
	nameRaw, ok := raw["name"]
	if !ok || isNull(nameRaw) {
		return nil, badRequest("Field \"name\" of %s is required", what)
	}
	name, ok := decodeString(nameRaw)
	if !ok {
		return nil, badRequest("Field \"name\" of %s must be a string, not %s", what, kindOf(nameRaw))
	}
	req.name = javaTrim(name)

	cfgRaw, ok := raw["config"]
	if !ok || isNull(cfgRaw) {
		return nil, badRequest("Field \"config\" of %s is required", what)
	}
	var members map[string]json.RawMessage
	if kindOf(cfgRaw) != "an object" {
		return nil, badRequest("Field \"config\" of %s must be an object of strings, not %s", what, kindOf(cfgRaw))
	}
	if err := json.Unmarshal(cfgRaw, &members); err != nil {
		return nil, jsonProblem(err, what)
	}
	if req.config, req.nulls, err = stringConfig(members, "\"config\""); err != nil {
		return nil, err
	}

	if stRaw, ok := raw["initial_state"]; ok && !isNull(stRaw) {
		st, ok := decodeString(stRaw)
		if !ok {
			return nil, badRequest("Field \"initial_state\" of %s must be a string, not %s", what, kindOf(stRaw))
		}
		switch strings.ToUpper(st) {
		case "RUNNING":
			req.initial = herder.TargetStarted
		case "PAUSED":
			req.initial = herder.TargetPaused
		case "STOPPED":
			req.initial = herder.TargetStopped
		default:
			return nil, badRequest("Invalid initial_state %q: must be RUNNING, PAUSED or STOPPED", st)
		}
	}
	return req, nil
}

// decodeOffsets reads a PATCH offsets body: {"offsets":[{"partition":{},
// "offset":{}|null}]}. Numbers stay json.Number so offsets beyond 2^53
// survive; the herder checks the shape for the connector type.
func decodeOffsets(body []byte) (*herder.ConnectorOffsets, error) {
	const what = "the offsets request"
	raw, err := decodeObject(body, what)
	if err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(raw) {
		if k != "offsets" {
			return nil, badRequest("Unrecognized field %q in %s: the only field is \"offsets\"", k, what)
		}
	}
	list, ok := raw["offsets"]
	if !ok || isNull(list) {
		return nil, badRequest("Partitions / offsets need to be provided for an alter offsets request")
	}
	if kindOf(list) != "an array" {
		return nil, badRequest("Field \"offsets\" of %s must be an array, not %s", what, kindOf(list))
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(list, &entries); err != nil {
		return nil, jsonProblem(err, what)
	}
	if len(entries) == 0 {
		return nil, badRequest("Partitions / offsets need to be provided for an alter offsets request")
	}
	out := &herder.ConnectorOffsets{Offsets: make([]herder.ConnectorOffset, 0, len(entries))}
	for i, e := range entries {
		if kindOf(e) != "an object" {
			return nil, badRequest("Entry %d of \"offsets\" must be an object, not %s", i, kindOf(e))
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(e, &members); err != nil {
			return nil, jsonProblem(err, what)
		}
		var off herder.ConnectorOffset
		for _, k := range sortedKeys(members) {
			v := members[k]
			var dst *map[string]any
			switch k {
			case "partition":
				dst = &off.Partition
			case "offset":
				dst = &off.Offset
			default:
				return nil, badRequest("Unrecognized field %q in entry %d of \"offsets\": the fields are \"partition\" and \"offset\"", k, i)
			}
			if isNull(v) {
				continue
			}
			if kindOf(v) != "an object" {
				return nil, badRequest("Field %q of entry %d of \"offsets\" must be an object or null, not %s", k, i, kindOf(v))
			}
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.UseNumber()
			if err := dec.Decode(dst); err != nil {
				return nil, jsonProblem(err, what)
			}
		}
		out.Offsets = append(out.Offsets, off)
	}
	return out, nil
}

// decodeLoggerLevel reads PUT /admin/loggers/{name}: {"level":"DEBUG"}.
// Like Kafka's Map<String,String> body, other members are ignored, but
// every value must be a string or null.
func decodeLoggerLevel(body []byte) (string, error) {
	const what = "the logger level request"
	raw, err := decodeObject(body, what)
	if err != nil {
		return "", err
	}
	m, err := decodeConfigMembers(raw, what, "a string or null")
	if err != nil {
		return "", err
	}
	lvl := m["level"]
	if lvl == nil {
		return "", badRequest("Desired 'level' parameter was not specified in request.")
	}
	return *lvl, nil
}

// javaTrim trims as Java's String.trim, which Kafka applies to the name of
// a new connector: every code point up to U+0020 at either end, control
// characters included, and no Unicode space above it (strings.TrimSpace
// would keep a leading U+0001 and drop a U+00A0).
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

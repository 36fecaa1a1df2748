package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The config topic's records (Kafka Connect's KafkaConfigBackingStore). Keys
// are plain strings; values are the JSON of Connect Structs written with
// schemas.enable=false, so their fields come in the Struct's order.
const (
	connectorPrefix   = "connector-"
	taskPrefix        = "task-"
	commitPrefix      = "commit-"
	targetStatePrefix = "target-state-"
	taskCountPrefix   = "tasks-fencing-"
	restartPrefix     = "restart-connector-"
	loggerPrefix      = "logger-cluster-"
	sessionKeyKey     = "session-key"
)

// TaskID names one task of a connector.
type TaskID struct {
	Connector string
	Task      int
}

// String is Kafka Connect's "<connector>-<task>".
func (id TaskID) String() string { return id.Connector + "-" + strconv.Itoa(id.Task) }

// TargetState is the state a connector is asked to be in.
type TargetState string

// Target states.
const (
	TargetStarted TargetState = "STARTED"
	TargetPaused  TargetState = "PAUSED"
	TargetStopped TargetState = "STOPPED"
)

func (s TargetState) valid() bool {
	return s == TargetStarted || s == TargetPaused || s == TargetStopped
}

// RestartRequest is a KIP-745 restart of a connector and, optionally, its
// tasks.
type RestartRequest struct {
	Connector    string
	IncludeTasks bool
	OnlyFailed   bool
}

// SessionKey is the KIP-507 key the leader distributes for signing requests
// between workers.
type SessionKey struct {
	Key               []byte
	Algorithm         string
	CreationTimestamp int64 // ms since the epoch
}

func connectorKey(c string) []byte   { return []byte(connectorPrefix + c) }
func taskKey(id TaskID) []byte       { return []byte(taskPrefix + id.String()) }
func commitKey(c string) []byte      { return []byte(commitPrefix + c) }
func targetStateKey(c string) []byte { return []byte(targetStatePrefix + c) }
func taskCountKey(c string) []byte   { return []byte(taskCountPrefix + c) }
func restartKey(c string) []byte     { return []byte(restartPrefix + c) }
func loggerKey(ns string) []byte     { return []byte(loggerPrefix + ns) }

// encodeProperties is the value of connector-{c} and task-{c}-{t}.
func encodeProperties(props map[string]string) []byte {
	var o jsonObject
	return o.strMap("properties", props).bytes()
}

// encodeCommit is the value of commit-{c}.
func encodeCommit(tasks int) []byte {
	var o jsonObject
	return o.int("tasks", int64(tasks)).bytes()
}

// encodeTargetState is the value of target-state-{c}. "state" is what
// workers before STOPPED existed read, so STOPPED is PAUSED there; "state.v2"
// holds the real state.
func encodeTargetState(s TargetState) []byte {
	legacy := s
	if s == TargetStopped {
		legacy = TargetPaused
	}
	var o jsonObject
	return o.str("state", string(legacy)).str("state.v2", string(s)).bytes()
}

// encodeTaskCount is the value of tasks-fencing-{c} (exactly-once source).
func encodeTaskCount(n int) []byte {
	var o jsonObject
	return o.int("task-count", int64(n)).bytes()
}

// encodeSessionKey is the value of session-key.
func encodeSessionKey(k SessionKey) []byte {
	var o jsonObject
	return o.str("key", base64.StdEncoding.EncodeToString(k.Key)).
		str("algorithm", k.Algorithm).
		int("creation-timestamp", k.CreationTimestamp).bytes()
}

// encodeRestart is the value of restart-connector-{c}.
func encodeRestart(r RestartRequest) []byte {
	var o jsonObject
	return o.bool("include-tasks", r.IncludeTasks).bool("only-failed", r.OnlyFailed).bytes()
}

// encodeLoggerLevel is the value of logger-cluster-{namespace}.
func encodeLoggerLevel(level string) []byte {
	var o jsonObject
	return o.str("level", level).bytes()
}

// Reading is lenient, as Java's is: unknown fields are ignored, and a value
// of the wrong shape is reported and skipped by the caller.

// jsonFields decodes a JSON object value.
func jsonFields(v []byte) (map[string]any, error) {
	d, err := decodeJSON(v)
	if err != nil {
		return nil, err
	}
	m, ok := d.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("value is %s, not an object", jsonKind(d))
	}
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

func fieldInt(m map[string]any, k string) (int64, error) {
	n, ok := m[k].(json.Number)
	if !ok {
		return 0, fmt.Errorf("field %q is %s, not a number", k, jsonKind(m[k]))
	}
	i, err := n.Int64()
	if err != nil {
		return 0, fmt.Errorf("field %q: %w", k, err)
	}
	return i, nil
}

func fieldString(m map[string]any, k string) (string, error) {
	s, ok := m[k].(string)
	if !ok {
		return "", fmt.Errorf("field %q is %s, not a string", k, jsonKind(m[k]))
	}
	return s, nil
}

// fieldBool reads a boolean that defaults to false when missing or invalid,
// as restart requests are read.
func fieldBool(m map[string]any, k string) bool {
	b, _ := m[k].(bool)
	return b
}

// decodeProperties reads {"properties":{...}}. Null property values (which
// Java's schema allows) are dropped; numbers and booleans, which no Connect
// writer produces, are kept as their JSON text.
func decodeProperties(v []byte) (map[string]string, error) {
	m, err := jsonFields(v)
	if err != nil {
		return nil, err
	}
	props, ok := m["properties"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("field \"properties\" is %s, not an object", jsonKind(m["properties"]))
	}
	out := make(map[string]string, len(props))
	for k, pv := range props {
		switch x := pv.(type) {
		case nil:
		case string:
			out[k] = x
		case json.Number:
			out[k] = string(x)
		case bool:
			out[k] = strconv.FormatBool(x)
		default:
			return nil, fmt.Errorf("property %q is %s, not a string", k, jsonKind(pv))
		}
	}
	return out, nil
}

// decodeTargetState prefers "state.v2" and falls back on "state", which is
// all a record from a worker before KIP-875 has.
func decodeTargetState(v []byte) (TargetState, error) {
	m, err := jsonFields(v)
	if err != nil {
		return "", err
	}
	key := "state.v2"
	if _, ok := m[key]; !ok {
		key = "state"
	}
	s, err := fieldString(m, key)
	if err != nil {
		return "", err
	}
	if ts := TargetState(s); ts.valid() {
		return ts, nil
	}
	return "", fmt.Errorf("field %q: unknown target state %q", key, s)
}

func decodeSessionKey(v []byte) (SessionKey, error) {
	m, err := jsonFields(v)
	if err != nil {
		return SessionKey{}, err
	}
	var k SessionKey
	enc, err := fieldString(m, "key")
	if err != nil {
		return k, err
	}
	if k.Key, err = base64.StdEncoding.DecodeString(enc); err != nil {
		return k, fmt.Errorf("field \"key\": %w", err)
	}
	if k.Algorithm, err = fieldString(m, "algorithm"); err != nil {
		return k, err
	}
	if k.CreationTimestamp, err = fieldInt(m, "creation-timestamp"); err != nil {
		return k, err
	}
	return k, nil
}

// parseTaskKey splits "<connector>-<task>" at its last dash.
func parseTaskKey(rest string) (TaskID, bool) {
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return TaskID{}, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil || n < 0 {
		return TaskID{}, false
	}
	return TaskID{Connector: rest[:i], Task: n}, true
}

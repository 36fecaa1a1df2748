package herder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Herder is what the REST API needs from a worker: the operations of Kafka
// Connect's Herder. The standalone herder and the distributed herder both
// implement it; host/rest speaks only to this interface. Every method takes a
// context whose deadline is the REST request timeout.
type Herder interface {
	// ServerInfo answers GET /.
	ServerInfo(ctx context.Context) (ServerInfo, error)
	// Health answers GET /health; ErrStarting while the worker starts.
	Health(ctx context.Context) error

	Connectors(ctx context.Context) ([]string, error)
	ConnectorInfo(ctx context.Context, name string) (*ConnectorInfo, error)
	ConnectorConfig(ctx context.Context, name string) (map[string]string, error)
	// PutConnectorConfig creates (allowReplace false: ErrAlreadyExists when
	// it exists) or replaces a connector; created reports which. The config is
	// stored exactly as given (plus "name").
	PutConnectorConfig(ctx context.Context, name string, config map[string]string, allowReplace bool, initial TargetState) (info *ConnectorInfo, created bool, err error)
	// PatchConnectorConfig merges patch into the stored config; a nil value
	// removes the key.
	PatchConnectorConfig(ctx context.Context, name string, patch map[string]*string) (*ConnectorInfo, error)
	DeleteConnector(ctx context.Context, name string) error

	ConnectorStatus(ctx context.Context, name string) (*ConnectorStateInfo, error)
	TaskStatus(ctx context.Context, id TaskID) (*TaskState, error)
	TaskConfigs(ctx context.Context, name string) ([]TaskInfo, error)

	// RestartConnector with includeTasks and onlyFailed both false restarts
	// the connector instance only and returns a nil plan; otherwise it
	// returns the plan (instances to restart shown RESTARTING).
	RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (*ConnectorStateInfo, error)
	RestartTask(ctx context.Context, id TaskID) error
	PauseConnector(ctx context.Context, name string) error
	ResumeConnector(ctx context.Context, name string) error
	StopConnector(ctx context.Context, name string) error

	ConnectorOffsets(ctx context.Context, name string) (*ConnectorOffsets, error)
	// AlterConnectorOffsets and ResetConnectorOffsets return the message of
	// the 200 answer.
	AlterConnectorOffsets(ctx context.Context, name string, offsets *ConnectorOffsets) (string, error)
	ResetConnectorOffsets(ctx context.Context, name string) (string, error)

	ConnectorActiveTopics(ctx context.Context, name string) ([]string, error)
	ResetConnectorActiveTopics(ctx context.Context, name string) error

	// ValidateConfig validates a connector config for the class in
	// connector.class (PUT /connector-plugins/{p}/config/validate).
	ValidateConfig(ctx context.Context, config map[string]string) (*ConfigInfos, error)
	Plugins(ctx context.Context, connectorsOnly bool) ([]PluginInfo, error)
	// PluginConfig lists a plugin's config definition; ErrNotFound for an
	// unknown plugin.
	PluginConfig(ctx context.Context, plugin string) ([]ConfigKeyInfo, error)
}

// TargetState is the state a connector is asked to be in.
type TargetState string

// Target states, as stored in the config topic.
const (
	TargetStarted TargetState = "STARTED"
	TargetPaused  TargetState = "PAUSED"
	TargetStopped TargetState = "STOPPED"
)

// Instance states shown in status.
const (
	StateUnassigned = "UNASSIGNED"
	StateRunning    = "RUNNING"
	StatePaused     = "PAUSED"
	StateFailed     = "FAILED"
	StateRestarting = "RESTARTING"
	StateStopped    = "STOPPED"
)

// TaskID names a task; its string form is "<connector>-<task>".
type TaskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

func (id TaskID) String() string { return fmt.Sprintf("%s-%d", id.Connector, id.Task) }

// ServerInfo is GET / .
type ServerInfo struct {
	Version        string `json:"version"`
	Commit         string `json:"commit"`
	KafkaClusterID string `json:"kafka_cluster_id"`
}

// ConnectorInfo is Kafka Connect's ConnectorInfo.
type ConnectorInfo struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []TaskID          `json:"tasks"`
	Type   string            `json:"type"` // source, sink, unknown
}

// ConnectorState is the connector part of a status.
type ConnectorState struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// TaskState is one task's status.
type TaskState struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// ConnectorStateInfo is GET /connectors/{c}/status.
type ConnectorStateInfo struct {
	Name      string         `json:"name"`
	Connector ConnectorState `json:"connector"`
	Tasks     []TaskState    `json:"tasks"`
	Type      string         `json:"type"`
}

// TaskInfo is one entry of GET /connectors/{c}/tasks.
type TaskInfo struct {
	ID     TaskID            `json:"id"`
	Config map[string]string `json:"config"`
}

// ConnectorOffsets is the body of the offsets endpoints.
type ConnectorOffsets struct {
	Offsets []ConnectorOffset `json:"offsets"`
}

// ConnectorOffset is one partition's offset; a null Offset resets it.
type ConnectorOffset struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
}

// PluginInfo is one entry of GET /connector-plugins.
type PluginInfo struct {
	Class   string `json:"class"`
	Type    string `json:"type"`
	Version string `json:"version,omitempty"`
}

// ConfigKeyInfo is a config definition entry.
type ConfigKeyInfo struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Required      bool     `json:"required"`
	DefaultValue  *string  `json:"default_value"`
	Importance    string   `json:"importance"`
	Documentation string   `json:"documentation"`
	Group         *string  `json:"group"`
	Order         int      `json:"order"`
	Width         string   `json:"width"`
	DisplayName   string   `json:"display_name"`
	Dependents    []string `json:"dependents"`
}

// ConfigValueInfo is a validation result entry.
type ConfigValueInfo struct {
	Name              string   `json:"name"`
	Value             *string  `json:"value"`
	RecommendedValues []string `json:"recommended_values"`
	Errors            []string `json:"errors"`
	Visible           bool     `json:"visible"`
}

// ConfigInfo pairs a definition and a value.
type ConfigInfo struct {
	Definition *ConfigKeyInfo   `json:"definition"`
	Value      *ConfigValueInfo `json:"value"`
}

// ConfigInfos is the validate response.
type ConfigInfos struct {
	Name       string       `json:"name"`
	ErrorCount int          `json:"error_count"`
	Groups     []string     `json:"groups"`
	Configs    []ConfigInfo `json:"configs"`
}

// Errors the REST layer maps to HTTP statuses (host/rest does it, in one place).
var (
	// ErrNotFound → 404.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists → 409.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict → 409 (rebalance in progress, stale config, no leader).
	ErrConflict = errors.New("conflict")
	// ErrBadRequest → 400.
	ErrBadRequest = errors.New("bad request")
	// ErrForbidden → 403 (e.g. topic tracking disabled, an internal
	// request whose signature does not match).
	ErrForbidden = errors.New("forbidden")
	// ErrStarting → 503 from /health while the worker starts.
	ErrStarting = errors.New("starting")
	// ErrUnavailable → 503: the worker cannot serve the request yet (an
	// internal request arrived before any session key was read).
	ErrUnavailable = errors.New("unavailable")
)

// Error is a herder error with the exact message Kafka Connect answers.
// Kind is one of the sentinels above (or nil: 500).
type Error struct {
	Kind    error
	Message string
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Kind }

// Errorf builds an *Error of the kind.
func Errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// MarshalJSON keeps a nil task list as [] (Kafka never answers null lists).
func (c ConnectorInfo) MarshalJSON() ([]byte, error) {
	type plain ConnectorInfo
	if c.Tasks == nil {
		c.Tasks = []TaskID{}
	}
	if c.Config == nil {
		c.Config = map[string]string{}
	}
	return marshalPlain(plain(c))
}

// MarshalJSON keeps a nil task list as [].
func (c ConnectorStateInfo) MarshalJSON() ([]byte, error) {
	type plain ConnectorStateInfo
	if c.Tasks == nil {
		c.Tasks = []TaskState{}
	}
	return marshalPlain(plain(c))
}

// marshalPlain encodes v as Jackson does, leaving <, > and & as they are:
// json.Marshal would escape them, and an encoder's SetEscapeHTML(false)
// does not undo escapes a MarshalJSON method already wrote.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

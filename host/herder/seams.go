package herder

import (
	"context"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// The standalone herder decides; it does not launch anything itself. What it
// needs from the rest of the worker (plugin processes, task runners, Kafka)
// is the small set of interfaces below. host/worker implements them with
// host/plugin, host/runtime and franz-go; tests implement them with fakes.

// Class is a connector class the worker can run.
type Class struct {
	// Name is the full class name.
	Name string
	// Type is "source" or "sink".
	Type    string
	Version string
	// TaskClass is the full class name of the class's tasks as the plugin
	// declared it; empty when it declared none.
	TaskClass string
	// Def is the plugin's description of the class: its own config keys
	// (without the framework's common ones) and documentation.
	Def *pluginv1.ConnectorClass
}

// TaskClassName is what task.class names in the class's task configs:
// the declared task class, else the connector class itself, which is all a
// plugin built before the contract carried task classes lets the worker
// know.
func (c Class) TaskClassName() string {
	if c.TaskClass != "" {
		return c.TaskClass
	}
	return c.Name
}

// Connector types as ConnectorInfo and PluginInfo spell them.
const (
	TypeSource  = "source"
	TypeSink    = "sink"
	TypeUnknown = "unknown"
)

// Instances starts connector instances and task runners for the herder.
// Every method that talks to a plugin honours ctx and its deadline.
type Instances interface {
	// Lookup resolves a connector.class value (full name, simple name,
	// simple name without "Connector", alias). The error names the value
	// and, when there are any, close names.
	Lookup(ctx context.Context, class string) (Class, error)
	// Classes lists every connector class known now.
	Classes() []Class
	// Validate asks a plugin process that is not running the connector to
	// validate config for class; it answers one value per setting the
	// plugin checked.
	Validate(ctx context.Context, class Class, config map[string]string) ([]*pluginv1.ConfigValue, error)
	// StartConnector launches the connector's plugin process and starts it
	// with config. cb receives the connector's requests until the instance
	// is stopped.
	StartConnector(ctx context.Context, name string, class Class, config map[string]string, cb ConnectorCallbacks) (ConnectorInstance, error)
	// NewTask prepares a task runner; nothing runs before Run. l receives the
	// task's state changes.
	NewTask(ctx context.Context, spec TaskSpec, l TaskListener) (TaskRunner, error)
	// AlterOffsets asks the connector class, on a process of its own, about
	// an offsets change of a stopped connector (KIP-875): handled reports
	// that the connector changed its external system too. A class that does
	// not implement the hook answers handled=false and no error.
	AlterOffsets(ctx context.Context, class Class, config map[string]string, offsets []ConnectorOffset) (handled bool, err error)
}

// ConnectorCallbacks are a running connector's requests to the worker. They
// may come at any time from any goroutine, also while the herder is inside a
// call to the same connector, so implementations must not block.
type ConnectorCallbacks interface {
	// RequestTaskReconfiguration asks the herder to call TaskConfigs again.
	RequestTaskReconfiguration()
	// RaiseError fails the connector.
	RaiseError(message, trace string)
}

// ConnectorInstance is one running connector (a plugin process).
type ConnectorInstance interface {
	// TaskConfigs asks for at most maxTasks task configurations.
	TaskConfigs(ctx context.Context, maxTasks int) ([]map[string]string, error)
	// Stop stops the connector and ends its process, killing it if it does
	// not stop within ctx.
	Stop(ctx context.Context) error
	// Done is closed when the process has ended, for whatever reason.
	Done() <-chan struct{}
	// Err says why the process ended when it ended on its own (a crash):
	// the message and the plugin's last output as trace. Nil before Done
	// and after Stop.
	Err() (message, trace string)
}

// TaskSpec is what a task runner is built from.
type TaskSpec struct {
	ID    TaskID
	Class Class
	// ConnectorConfig is the connector's config as submitted (converters,
	// errors.*, client overrides come from it).
	ConnectorConfig map[string]string
	// TaskConfig is the connector's answer for this task plus task.class
	// (and topics / topics.regex for sinks).
	TaskConfig map[string]string
}

// TaskRunner is one task (host/runtime's Task). Run owns the task until it
// returns: it launches the plugin, moves data and, after Stop or when ctx
// ends, drains and ends the plugin. Pause and Resume may be called at any
// time, also before Run (the task then starts paused).
type TaskRunner interface {
	Run(ctx context.Context) error
	Pause()
	Resume()
	Stop()
}

// TaskListener receives one task's state changes. Calls may come from any
// goroutine and must not block.
type TaskListener interface {
	OnRunning()
	OnPaused()
	// OnFailed: the task stopped on an error; trace is the plugin's trace or,
	// after a crash, its last output lines.
	OnFailed(err error, trace string)
	OnStopped()
}

// ConsumerGroups reads and changes sink connectors' consumer group offsets
// (host/worker does it with kadm).
type ConsumerGroups interface {
	// Offsets returns the committed offsets of the group: topic → partition
	// → next offset to consume.
	Offsets(ctx context.Context, group string) (map[string]map[int32]int64, error)
	// HasMembers reports whether the group still has active members.
	HasMembers(ctx context.Context, group string) (bool, error)
	// Alter commits the given offsets and deletes the committed offsets of
	// the partitions in reset.
	Alter(ctx context.Context, group string, set map[string]map[int32]int64, reset map[string][]int32) error
	// Delete deletes the group and all its offsets; a missing group is not
	// an error.
	Delete(ctx context.Context, group string) error
}

package storage

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ConfigListener hears about config topic changes read after the store
// started (the initial read is not reported: take a Snapshot after Start).
// Calls come from the store's reading goroutine, one at a time and in topic
// order; they must not block, and must not call the store's writes or
// Refresh, which wait for that goroutine.
type ConfigListener interface {
	// ConnectorConfigUpdated: a connector was created or its config changed.
	ConnectorConfigUpdated(connector string)
	// ConnectorConfigRemoved: a connector was deleted.
	ConnectorConfigRemoved(connector string)
	// TaskConfigsCommitted: a commit record applied new task configs; tasks
	// lists the tasks whose configs it applied (empty when a connector went
	// to zero tasks or its configs were inconsistent).
	TaskConfigsCommitted(connector string, tasks []TaskID)
	// TargetStateChanged: a connector's target state was written.
	TargetStateChanged(connector string)
	// RestartRequested: a restart request was written.
	RestartRequested(req RestartRequest)
	// SessionKeyUpdated: the leader wrote a new session key.
	SessionKeyUpdated(key SessionKey)
	// LoggerLevelChanged: a cluster-wide log level was written (KIP-976).
	LoggerLevelChanged(namespace, level string)
}

// NopConfigListener ignores everything; embed it to implement only some of
// ConfigListener.
type NopConfigListener struct{}

func (NopConfigListener) ConnectorConfigUpdated(string)              {}
func (NopConfigListener) ConnectorConfigRemoved(string)              {}
func (NopConfigListener) TaskConfigsCommitted(string, []TaskID)      {}
func (NopConfigListener) TargetStateChanged(string)                  {}
func (NopConfigListener) RestartRequested(RestartRequest)            {}
func (NopConfigListener) SessionKeyUpdated(SessionKey)               {}
func (NopConfigListener) LoggerLevelChanged(namespace, level string) {}

// ConfigStore keeps connector configurations, task configurations and target
// states on the config topic (config.storage.topic), Kafka Connect's
// KafkaConfigBackingStore. The topic has one partition, so it is one ordered
// log; in a cluster only the leader writes it.
//
// Task configs are applied atomically: task-{c}-{t} records are buffered
// until a commit-{c} record arrives, and only then become visible, all
// together. A commit whose buffered tasks do not cover 0..N-1 (a write cut
// short, or compaction removing records an earlier commit needed) marks the
// connector inconsistent: it shows no tasks until the leader writes a fresh
// set.
type ConfigStore struct {
	log      *KafkaLog
	logger   hclog.Logger
	listener ConfigListener

	mu      sync.Mutex
	started bool
	st      configState
}

// configState is everything read from the topic; ConfigSnapshot copies it.
type configState struct {
	offset           int64
	connectors       map[string]map[string]string
	targetStates     map[string]TargetState
	taskCounts       map[string]int
	taskConfigs      map[TaskID]map[string]string
	deferred         map[string]map[int]map[string]string
	inconsistent     map[string]bool
	generations      map[string]int
	applied          map[string]map[string]string
	taskCountRecords map[string]int
	pendingFencing   map[string]bool
	sessionKey       *SessionKey
}

// NewConfigStore prepares the store on cfg.Topic; listener may be nil.
func NewConfigStore(cfg LogConfig, listener ConfigListener) *ConfigStore {
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if listener == nil {
		listener = NopConfigListener{}
	}
	s := &ConfigStore{logger: logger, listener: listener, st: configState{
		offset:           -1,
		connectors:       map[string]map[string]string{},
		targetStates:     map[string]TargetState{},
		taskCounts:       map[string]int{},
		taskConfigs:      map[TaskID]map[string]string{},
		deferred:         map[string]map[int]map[string]string{},
		inconsistent:     map[string]bool{},
		generations:      map[string]int{},
		applied:          map[string]map[string]string{},
		taskCountRecords: map[string]int{},
		pendingFencing:   map[string]bool{},
	}}
	s.log = NewKafkaLog(cfg, s.apply)
	return s
}

// Start reads the whole topic and then follows it; the listener hears about
// records read after Start returns. A topic with more than one partition is
// refused (ErrTopicUnfit).
func (s *ConfigStore) Start(ctx context.Context) error {
	if err := s.log.Start(ctx); err != nil {
		return fmt.Errorf("start config store: %w", err)
	}
	if n := s.log.Partitions(); n > 1 {
		s.log.Close()
		return fmt.Errorf("start config store: %w: Topic '%s' supplied via the 'config.storage.topic' property is required to have a single partition in order to guarantee consistency of connector configurations, but found %d partitions.",
			ErrTopicUnfit, s.log.cfg.Topic, n)
	}
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	return nil
}

// Close stops the store.
func (s *ConfigStore) Close() { s.log.Close() }

// Refresh reads the topic to its end: afterwards Snapshot reflects every
// write made before the call.
func (s *ConfigStore) Refresh(ctx context.Context) error {
	if err := s.log.ReadToEnd(ctx); err != nil {
		return fmt.Errorf("refresh configs: %w", err)
	}
	return nil
}

// PutConnectorConfig writes a connector's config, preceded, when target is
// not nil, by its target state in the same batch (a connector created with
// initial_state), and reads the topic to the end.
func (s *ConfigStore) PutConnectorConfig(ctx context.Context, name string, config map[string]string, target *TargetState) error {
	var recs []Entry
	if target != nil {
		if !target.valid() {
			return fmt.Errorf("write config of connector %s: invalid target state %q", name, *target)
		}
		recs = append(recs, Entry{Key: targetStateKey(name), Value: encodeTargetState(*target)})
	}
	recs = append(recs, Entry{Key: connectorKey(name), Value: encodeProperties(config)})
	if err := s.log.Send(ctx, recs...); err != nil {
		return fmt.Errorf("write config of connector %s: %w", name, err)
	}
	if err := s.log.ReadToEnd(ctx); err != nil {
		return fmt.Errorf("write config of connector %s: %w", name, err)
	}
	return nil
}

// RemoveConnector writes tombstones for the connector's config and target
// state and reads the topic to the end. Its task-* records stay, as in Kafka
// Connect; readers drop them with the connector.
func (s *ConfigStore) RemoveConnector(ctx context.Context, name string) error {
	if err := s.log.Send(ctx, Entry{Key: connectorKey(name)}, Entry{Key: targetStateKey(name)}); err != nil {
		return fmt.Errorf("remove connector %s: %w", name, err)
	}
	if err := s.log.ReadToEnd(ctx); err != nil {
		return fmt.Errorf("remove connector %s: %w", name, err)
	}
	return nil
}

// PutTaskConfigs writes a connector's task configs, then the commit record
// that applies them, reading the topic to the end before, between and after.
// The writes are plain, not transactional: readers are protected by the
// commit record. (With exactly-once source support Kafka Connect's leader
// writes them in a transaction; Sluice does not yet.) An empty list writes
// just the commit record with zero tasks, which is how a connector stops.
func (s *ConfigStore) PutTaskConfigs(ctx context.Context, name string, configs []map[string]string) error {
	if err := s.log.ReadToEnd(ctx); err != nil {
		return fmt.Errorf("write task configs of %s: %w", name, err)
	}
	if len(configs) > 0 {
		recs := make([]Entry, len(configs))
		for i, c := range configs {
			recs[i] = Entry{Key: taskKey(TaskID{Connector: name, Task: i}), Value: encodeProperties(c)}
		}
		if err := s.log.Send(ctx, recs...); err != nil {
			return fmt.Errorf("write task configs of %s: %w", name, err)
		}
		if err := s.log.ReadToEnd(ctx); err != nil {
			return fmt.Errorf("write task configs of %s: %w", name, err)
		}
	}
	if err := s.log.Send(ctx, Entry{Key: commitKey(name), Value: encodeCommit(len(configs))}); err != nil {
		return fmt.Errorf("commit task configs of %s: %w", name, err)
	}
	if err := s.log.ReadToEnd(ctx); err != nil {
		return fmt.Errorf("commit task configs of %s: %w", name, err)
	}
	return nil
}

// PutTargetState writes a connector's target state and returns once it is
// acknowledged; it takes effect for every worker when read back.
func (s *ConfigStore) PutTargetState(ctx context.Context, name string, state TargetState) error {
	if !state.valid() {
		return fmt.Errorf("write target state of %s: invalid target state %q", name, state)
	}
	if err := s.log.Send(ctx, Entry{Key: targetStateKey(name), Value: encodeTargetState(state)}); err != nil {
		return fmt.Errorf("write target state of %s: %w", name, err)
	}
	return nil
}

// PutRestartRequest writes a restart request for the connector's owner.
func (s *ConfigStore) PutRestartRequest(ctx context.Context, req RestartRequest) error {
	if err := s.log.Send(ctx, Entry{Key: restartKey(req.Connector), Value: encodeRestart(req)}); err != nil {
		return fmt.Errorf("write restart request of %s: %w", req.Connector, err)
	}
	return nil
}

// PutTaskCountRecord writes the exactly-once task count record
// (tasks-fencing-{c}) after a round of zombie fencing.
func (s *ConfigStore) PutTaskCountRecord(ctx context.Context, name string, tasks int) error {
	if err := s.log.Send(ctx, Entry{Key: taskCountKey(name), Value: encodeTaskCount(tasks)}); err != nil {
		return fmt.Errorf("write task count record of %s: %w", name, err)
	}
	return nil
}

// PutSessionKey writes a new session key (leader only).
func (s *ConfigStore) PutSessionKey(ctx context.Context, key SessionKey) error {
	if err := s.log.Send(ctx, Entry{Key: []byte(sessionKeyKey), Value: encodeSessionKey(key)}); err != nil {
		return fmt.Errorf("write session key: %w", err)
	}
	return nil
}

// PutLoggerLevel writes a cluster-wide log level for a logger namespace.
func (s *ConfigStore) PutLoggerLevel(ctx context.Context, namespace, level string) error {
	if err := s.log.Send(ctx, Entry{Key: loggerKey(namespace), Value: encodeLoggerLevel(level)}); err != nil {
		return fmt.Errorf("write log level of %s: %w", namespace, err)
	}
	return nil
}

// apply handles one record of the config topic.
func (s *ConfigStore) apply(r *kgo.Record) {
	key := string(r.Key)
	var notify func()
	s.mu.Lock()
	// The config offset is that of the next record, as a consumer's
	// position; workers compare it in the group protocol.
	s.st.offset = r.Offset + 1
	started := s.started
	var err error
	switch {
	case strings.HasPrefix(key, targetStatePrefix):
		notify, err = s.applyTargetState(strings.TrimPrefix(key, targetStatePrefix), r.Value)
	case strings.HasPrefix(key, connectorPrefix):
		notify, err = s.applyConnector(strings.TrimPrefix(key, connectorPrefix), r.Value)
	case strings.HasPrefix(key, taskPrefix):
		err = s.applyTask(strings.TrimPrefix(key, taskPrefix), r.Value)
	case strings.HasPrefix(key, commitPrefix):
		notify, err = s.applyCommit(strings.TrimPrefix(key, commitPrefix), r.Value)
	case strings.HasPrefix(key, taskCountPrefix):
		err = s.applyTaskCount(strings.TrimPrefix(key, taskCountPrefix), r.Value)
	case strings.HasPrefix(key, restartPrefix):
		notify, err = s.applyRestart(strings.TrimPrefix(key, restartPrefix), r.Value)
	case strings.HasPrefix(key, loggerPrefix):
		notify, err = s.applyLogger(strings.TrimPrefix(key, loggerPrefix), r.Value)
	case key == sessionKeyKey:
		notify, err = s.applySessionKey(r.Value)
	default:
		s.logger.Warn("ignoring config record with an unknown key", "key", key, "offset", r.Offset)
	}
	s.mu.Unlock()
	if err != nil {
		s.logger.Error("ignoring invalid config record", "key", key, "offset", r.Offset, "error", err)
		return
	}
	if started && notify != nil {
		notify()
	}
}

func (s *ConfigStore) applyTargetState(c string, v []byte) (func(), error) {
	if len(v) == 0 {
		delete(s.st.targetStates, c)
		// A connector whose config somehow survives keeps a valid state.
		if _, ok := s.st.connectors[c]; ok {
			s.st.targetStates[c] = TargetStarted
		}
		// The connector's own tombstone tells the listener.
		return nil, nil
	}
	ts, err := decodeTargetState(v)
	if err != nil {
		return nil, err
	}
	s.st.targetStates[c] = ts
	return func() { s.listener.TargetStateChanged(c) }, nil
}

func (s *ConfigStore) applyConnector(c string, v []byte) (func(), error) {
	if len(v) == 0 {
		s.removeConnectorLocked(c)
		return func() { s.listener.ConnectorConfigRemoved(c) }, nil
	}
	props, err := decodeProperties(v)
	if err != nil {
		return nil, err
	}
	s.st.connectors[c] = props
	// A connector written without a target state (as by old workers) runs.
	if _, ok := s.st.targetStates[c]; !ok {
		s.st.targetStates[c] = TargetStarted
	}
	return func() { s.listener.ConnectorConfigUpdated(c) }, nil
}

// removeConnectorLocked forgets a deleted connector with its task configs,
// so a connector later created under the same name does not inherit the
// task-* records its predecessor left on the topic.
func (s *ConfigStore) removeConnectorLocked(c string) {
	delete(s.st.connectors, c)
	delete(s.st.taskCounts, c)
	for id := range s.st.taskConfigs {
		if id.Connector == c {
			delete(s.st.taskConfigs, id)
		}
	}
	delete(s.st.deferred, c)
	delete(s.st.applied, c)
	delete(s.st.inconsistent, c)
}

func (s *ConfigStore) applyTask(rest string, v []byte) error {
	id, ok := parseTaskKey(rest)
	if !ok {
		return fmt.Errorf("cannot parse task id from key %q", taskPrefix+rest)
	}
	if len(v) == 0 {
		return fmt.Errorf("task config of %s is a tombstone", id)
	}
	props, err := decodeProperties(v)
	if err != nil {
		return err
	}
	d := s.st.deferred[id.Connector]
	if d == nil {
		d = map[int]map[string]string{}
		s.st.deferred[id.Connector] = d
	}
	d[id.Task] = props
	return nil
}

func (s *ConfigStore) applyCommit(c string, v []byte) (func(), error) {
	cfg, ok := s.st.connectors[c]
	if !ok {
		// The connector was deleted, and compaction removed both its
		// config and its tombstone: its task configs mean nothing.
		s.removeConnectorLocked(c)
		return nil, nil
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("task commit of %s is a tombstone", c)
	}
	m, err := jsonFields(v)
	if err != nil {
		return nil, err
	}
	n64, err := fieldInt(m, "tasks")
	if err != nil {
		return nil, err
	}
	if n64 < 0 || n64 > 1<<31-1 {
		return nil, fmt.Errorf("task commit of %s: task count %d out of range", c, n64)
	}
	n := int(n64)
	deferred := s.st.deferred[c]
	var updated []TaskID
	// Only the tasks the commit names must be present: compaction may leave
	// configs of tasks beyond N from an earlier, larger set.
	complete := true
	for t := 0; t < n; t++ {
		if _, ok := deferred[t]; !ok {
			complete = false
			break
		}
	}
	if !complete {
		s.logger.Warn("incomplete task configs for connector, probably after compaction; ignoring them until new ones are written",
			"connector", c, "tasks", n, "have", len(deferred))
		s.st.inconsistent[c] = true
	} else {
		if deferred != nil {
			for t, props := range deferred {
				id := TaskID{Connector: c, Task: t}
				s.st.taskConfigs[id] = props
				updated = append(updated, id)
			}
			if g, ok := s.st.generations[c]; ok {
				s.st.generations[c] = g + 1
			} else {
				s.st.generations[c] = 0
			}
		}
		delete(s.st.inconsistent, c)
	}
	// Buffered configs go either way: after an inconsistent commit only a
	// complete fresh set may apply.
	delete(s.st.deferred, c)
	s.st.taskCounts[c] = n
	s.st.pendingFencing[c] = true
	s.st.applied[c] = cfg
	slices.SortFunc(updated, func(a, b TaskID) int { return a.Task - b.Task })
	return func() { s.listener.TaskConfigsCommitted(c, updated) }, nil
}

func (s *ConfigStore) applyTaskCount(c string, v []byte) error {
	if len(v) == 0 {
		return fmt.Errorf("task count record of %s is a tombstone", c)
	}
	m, err := jsonFields(v)
	if err != nil {
		return err
	}
	n, err := fieldInt(m, "task-count")
	if err != nil {
		return err
	}
	s.st.taskCountRecords[c] = int(n)
	// A task count record after the latest commit: fencing is done.
	delete(s.st.pendingFencing, c)
	return nil
}

func (s *ConfigStore) applyRestart(c string, v []byte) (func(), error) {
	if len(v) == 0 {
		return nil, nil
	}
	m, err := jsonFields(v)
	if err != nil {
		return nil, err
	}
	req := RestartRequest{Connector: c, IncludeTasks: fieldBool(m, "include-tasks"), OnlyFailed: fieldBool(m, "only-failed")}
	return func() { s.listener.RestartRequested(req) }, nil
}

func (s *ConfigStore) applyLogger(ns string, v []byte) (func(), error) {
	if len(v) == 0 {
		return nil, nil
	}
	m, err := jsonFields(v)
	if err != nil {
		return nil, err
	}
	level, err := fieldString(m, "level")
	if err != nil {
		return nil, err
	}
	// Levels are applied only when written after this worker started, so
	// the initial read does not replay history (notify runs only then).
	return func() { s.listener.LoggerLevelChanged(ns, level) }, nil
}

func (s *ConfigStore) applySessionKey(v []byte) (func(), error) {
	if len(v) == 0 {
		return nil, nil
	}
	k, err := decodeSessionKey(v)
	if err != nil {
		return nil, err
	}
	s.st.sessionKey = &k
	return func() { s.listener.SessionKeyUpdated(k) }, nil
}

// Snapshot returns a consistent copy of the state read so far.
func (s *ConfigStore) Snapshot() *ConfigSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.st
	// Inner maps are never modified once stored (records replace them), so
	// copying the outer maps is enough for the snapshot to stay fixed.
	snap := &ConfigSnapshot{
		offset:           st.offset,
		connectors:       maps.Clone(st.connectors),
		targetStates:     maps.Clone(st.targetStates),
		taskCounts:       maps.Clone(st.taskCounts),
		taskConfigs:      maps.Clone(st.taskConfigs),
		inconsistent:     maps.Clone(st.inconsistent),
		generations:      maps.Clone(st.generations),
		applied:          maps.Clone(st.applied),
		taskCountRecords: maps.Clone(st.taskCountRecords),
		pendingFencing:   maps.Clone(st.pendingFencing),
	}
	if st.sessionKey != nil {
		k := *st.sessionKey
		k.Key = slices.Clone(k.Key)
		snap.sessionKey = &k
	}
	return snap
}

// ConfigSnapshot is the config topic's state at one point, Kafka Connect's
// ClusterConfigState. Maps it returns are copies.
type ConfigSnapshot struct {
	offset           int64
	connectors       map[string]map[string]string
	targetStates     map[string]TargetState
	taskCounts       map[string]int
	taskConfigs      map[TaskID]map[string]string
	inconsistent     map[string]bool
	generations      map[string]int
	applied          map[string]map[string]string
	taskCountRecords map[string]int
	pendingFencing   map[string]bool
	sessionKey       *SessionKey
}

// Offset is the config offset: the offset after the last record read, or -1
// before any. Workers exchange it in the group protocol.
func (c *ConfigSnapshot) Offset() int64 { return c.offset }

// Connectors lists the connectors with a config, sorted.
func (c *ConfigSnapshot) Connectors() []string { return slices.Sorted(maps.Keys(c.connectors)) }

// Contains reports whether the connector has a config.
func (c *ConfigSnapshot) Contains(name string) bool { _, ok := c.connectors[name]; return ok }

// ConnectorConfig returns the connector's config, nil when it has none.
func (c *ConfigSnapshot) ConnectorConfig(name string) map[string]string {
	return maps.Clone(c.connectors[name])
}

// TargetState returns the connector's target state.
func (c *ConfigSnapshot) TargetState(name string) (TargetState, bool) {
	ts, ok := c.targetStates[name]
	return ts, ok
}

// TaskCount is the number of tasks of the connector's last commit.
func (c *ConfigSnapshot) TaskCount(name string) int { return c.taskCounts[name] }

// Tasks lists the connector's committed tasks in order; none while the
// connector is inconsistent.
func (c *ConfigSnapshot) Tasks(name string) []TaskID {
	if c.inconsistent[name] {
		return nil
	}
	n := c.taskCounts[name]
	out := make([]TaskID, n)
	for i := range out {
		out[i] = TaskID{Connector: name, Task: i}
	}
	return out
}

// TaskConfig returns a committed task's config, nil when there is none.
func (c *ConfigSnapshot) TaskConfig(id TaskID) map[string]string {
	if c.inconsistent[id.Connector] || id.Task >= c.taskCounts[id.Connector] {
		return nil
	}
	return maps.Clone(c.taskConfigs[id])
}

// TaskConfigs returns the connector's committed task configs in task order.
func (c *ConfigSnapshot) TaskConfigs(name string) []map[string]string {
	ids := c.Tasks(name)
	out := make([]map[string]string, len(ids))
	for i, id := range ids {
		out[i] = maps.Clone(c.taskConfigs[id])
	}
	return out
}

// Inconsistent lists connectors whose task configs could not be applied, sorted.
func (c *ConfigSnapshot) Inconsistent() []string { return slices.Sorted(maps.Keys(c.inconsistent)) }

// TaskConfigGeneration counts the task config commits applied for the
// connector since this worker started reading (0 for the first).
func (c *ConfigSnapshot) TaskConfigGeneration(name string) (int, bool) {
	g, ok := c.generations[name]
	return g, ok
}

// AppliedConnectorConfig is the connector config in force when its task
// configs were last committed: a connector whose config changed since needs
// new task configs even if its connector generates the same ones.
func (c *ConfigSnapshot) AppliedConnectorConfig(name string) map[string]string {
	return maps.Clone(c.applied[name])
}

// TaskCountRecord is the connector's last tasks-fencing record.
func (c *ConfigSnapshot) TaskCountRecord(name string) (int, bool) {
	n, ok := c.taskCountRecords[name]
	return n, ok
}

// PendingFencing reports that task configs were committed after the last
// task count record (exactly-once source: zombies must be fenced first).
func (c *ConfigSnapshot) PendingFencing(name string) bool { return c.pendingFencing[name] }

// SessionKey is the last session key read, nil when none.
func (c *ConfigSnapshot) SessionKey() *SessionKey { return c.sessionKey }

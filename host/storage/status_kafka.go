package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The status topic's records (Kafka Connect's KafkaStatusBackingStore).
const (
	connectorStatusPrefix = "status-connector-"
	taskStatusPrefix      = "status-task-"
	topicStatusPrefix     = "status-topic-"
	topicStatusSeparator  = ":connector-"
)

// Connector and task states on the status topic. StateDestroyed is never
// stored: writing it writes a tombstone.
const (
	StateUnassigned = "UNASSIGNED"
	StateRunning    = "RUNNING"
	StatePaused     = "PAUSED"
	StateFailed     = "FAILED"
	StateRestarting = "RESTARTING"
	StateStopped    = "STOPPED"
	StateDestroyed  = "DESTROYED"
)

func validState(s string) bool {
	switch s {
	case StateUnassigned, StateRunning, StatePaused, StateFailed, StateRestarting, StateStopped, StateDestroyed:
		return true
	}
	return false
}

// Status is a connector's or a task's state as a worker reported it.
type Status struct {
	State string
	// Trace is the failure's trace; empty is written as null.
	Trace string
	// WorkerID is the reporting worker's advertised host:port.
	WorkerID string
	// Generation is the group generation the worker was in.
	Generation int32
}

// TaskStatus is one task's status.
type TaskStatus struct {
	ID TaskID
	Status
}

// TopicStatus records that a connector's task used a topic (KIP-558).
type TopicStatus struct {
	Topic             string
	Connector         string
	Task              int32
	DiscoverTimestamp int64 // ms since the epoch
}

func connectorStatusKey(c string) []byte { return []byte(connectorStatusPrefix + c) }
func taskStatusKey(id TaskID) []byte     { return []byte(taskStatusPrefix + id.String()) }
func topicStatusKey(connector, topic string) []byte {
	return []byte(topicStatusPrefix + topic + topicStatusSeparator + connector)
}

// encodeStatus is the value of status-connector-{c} and status-task-{c}-{t}.
func encodeStatus(s Status) []byte {
	var o jsonObject
	return o.str("state", s.State).strOrNull("trace", s.Trace).
		str("worker_id", s.WorkerID).int("generation", int64(s.Generation)).bytes()
}

// encodeTopicStatus is the value of status-topic-{topic}:connector-{c}.
func encodeTopicStatus(t TopicStatus) []byte {
	var inner jsonObject
	inner.str("name", t.Topic).str("connector", t.Connector).
		int("task", int64(t.Task)).int("discoverTimestamp", t.DiscoverTimestamp)
	var o jsonObject
	return o.raw("topic", inner.bytes()).bytes()
}

func decodeStatus(v []byte) (Status, error) {
	m, err := jsonFields(v)
	if err != nil {
		return Status{}, err
	}
	var s Status
	if s.State, err = fieldString(m, "state"); err != nil {
		return s, err
	}
	if !validState(s.State) {
		return s, fmt.Errorf("unknown state %q", s.State)
	}
	if tr, ok := m["trace"].(string); ok {
		s.Trace = tr
	}
	if w, ok := m["worker_id"].(string); ok {
		s.WorkerID = w
	}
	g, err := fieldInt(m, "generation")
	if err != nil {
		return s, err
	}
	s.Generation = int32(g)
	return s, nil
}

func decodeTopicStatus(v []byte) (TopicStatus, error) {
	m, err := jsonFields(v)
	if err != nil {
		return TopicStatus{}, err
	}
	inner, ok := m["topic"].(map[string]any)
	if !ok {
		return TopicStatus{}, fmt.Errorf("field \"topic\" is %s, not an object", jsonKind(m["topic"]))
	}
	var t TopicStatus
	if t.Topic, err = fieldString(inner, "name"); err != nil {
		return t, err
	}
	if t.Connector, err = fieldString(inner, "connector"); err != nil {
		return t, err
	}
	task, err := fieldInt(inner, "task")
	if err != nil {
		return t, err
	}
	t.Task = int32(task)
	if t.DiscoverTimestamp, err = fieldInt(inner, "discoverTimestamp"); err != nil {
		return t, err
	}
	return t, nil
}

// statusEntry is the cached status of one connector or task.
type statusEntry struct {
	value   *Status
	seq     int  // writes this worker started for the key
	deleted bool // a tombstone was read
}

// canWriteSafely is Kafka Connect's rule for "safe" writes: never overwrite
// another worker's status of a newer generation.
func (e *statusEntry) canWriteSafely(s Status) bool {
	return e.value == nil || e.value.WorkerID == s.WorkerID || e.value.Generation <= s.Generation
}

// StatusStore keeps connector, task and topic statuses on the status topic
// (status.storage.topic), Kafka Connect's KafkaStatusBackingStore. Statuses
// become visible when read back from the topic, for every worker alike.
//
// Stale statuses never win: a safe write (PutConnectorSafe, PutTaskSafe,
// which workers use for UNASSIGNED on shutdown and for FAILED) is dropped
// when the cached status belongs to another worker of a newer generation; a
// failed write is re-sent only while it is still current (its generation is
// still this worker's latest, and for safe writes no newer write of the key
// started and the rule above still holds); and a reader ignores an
// UNASSIGNED task status of an older generation than the RUNNING status it
// holds (KAFKA-12525: the previous owner's late shutdown report).
type StatusStore struct {
	log    *KafkaLog
	logger hclog.Logger

	mu         sync.Mutex
	generation int32
	connectors map[string]*statusEntry
	tasks      map[string]map[int]*statusEntry
	topics     map[string]map[string]TopicStatus // connector → topic
}

// NewStatusStore prepares the store on cfg.Topic. The store sets
// cfg.NoRecordRetries: it decides itself whether a failed write is re-sent.
func NewStatusStore(cfg LogConfig) *StatusStore {
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	cfg.NoRecordRetries = true
	s := &StatusStore{
		logger:     logger,
		connectors: map[string]*statusEntry{},
		tasks:      map[string]map[int]*statusEntry{},
		topics:     map[string]map[string]TopicStatus{},
	}
	s.log = NewKafkaLog(cfg, s.apply)
	return s
}

// Start reads the whole topic and then follows it.
func (s *StatusStore) Start(ctx context.Context) error {
	if err := s.log.Start(ctx); err != nil {
		return fmt.Errorf("start status store: %w", err)
	}
	return nil
}

// Close stops the store.
func (s *StatusStore) Close() { s.log.Close() }

// Refresh reads the topic to its end.
func (s *StatusStore) Refresh(ctx context.Context) error {
	if err := s.log.ReadToEnd(ctx); err != nil {
		return fmt.Errorf("refresh statuses: %w", err)
	}
	return nil
}

// PutConnector writes a connector's status; StateDestroyed writes a
// tombstone. It returns once the write is acknowledged (or dropped as stale).
func (s *StatusStore) PutConnector(ctx context.Context, name string, st Status) error {
	return s.send(ctx, connectorStatusKey(name), st, s.connectorEntry(name), false)
}

// PutConnectorSafe writes a connector's status unless another worker holds a
// newer generation's status for it.
func (s *StatusStore) PutConnectorSafe(ctx context.Context, name string, st Status) error {
	return s.send(ctx, connectorStatusKey(name), st, s.connectorEntry(name), true)
}

// PutTask writes a task's status; StateDestroyed writes a tombstone.
func (s *StatusStore) PutTask(ctx context.Context, id TaskID, st Status) error {
	return s.send(ctx, taskStatusKey(id), st, s.taskEntry(id), false)
}

// PutTaskSafe writes a task's status unless another worker holds a newer
// generation's status for it.
func (s *StatusStore) PutTaskSafe(ctx context.Context, id TaskID, st Status) error {
	return s.send(ctx, taskStatusKey(id), st, s.taskEntry(id), true)
}

// DeleteConnector writes the tombstone of a deleted connector's status;
// readers drop its task statuses with it.
func (s *StatusStore) DeleteConnector(ctx context.Context, name string, workerID string, generation int32) error {
	return s.PutConnector(ctx, name, Status{State: StateDestroyed, WorkerID: workerID, Generation: generation})
}

// DeleteTask writes the tombstone of a task that no longer exists.
func (s *StatusStore) DeleteTask(ctx context.Context, id TaskID, workerID string, generation int32) error {
	return s.PutTask(ctx, id, Status{State: StateDestroyed, WorkerID: workerID, Generation: generation})
}

// PutTopic records that a connector's task used a topic.
func (s *StatusStore) PutTopic(ctx context.Context, ts TopicStatus) error {
	return s.sendPlain(ctx, Entry{Key: topicStatusKey(ts.Connector, ts.Topic), Value: encodeTopicStatus(ts)},
		"topic status of "+ts.Connector)
}

// DeleteTopic forgets that a connector used a topic (a topic reset).
func (s *StatusStore) DeleteTopic(ctx context.Context, connector, topic string) error {
	return s.sendPlain(ctx, Entry{Key: topicStatusKey(connector, topic)}, "topic status of "+connector)
}

func (s *StatusStore) connectorEntry(name string) *statusEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connectorEntryLocked(name)
}

func (s *StatusStore) connectorEntryLocked(name string) *statusEntry {
	e := s.connectors[name]
	if e == nil {
		e = &statusEntry{}
		s.connectors[name] = e
	}
	return e
}

func (s *StatusStore) taskEntry(id TaskID) *statusEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taskEntryLocked(id)
}

func (s *StatusStore) taskEntryLocked(id TaskID) *statusEntry {
	m := s.tasks[id.Connector]
	if m == nil {
		m = map[int]*statusEntry{}
		s.tasks[id.Connector] = m
	}
	e := m[id.Task]
	if e == nil {
		e = &statusEntry{}
		m[id.Task] = e
	}
	return e
}

func retriable(err error) bool {
	return errors.Is(err, kgo.ErrRecordRetries) || errors.Is(err, kgo.ErrRecordTimeout) || kerr.IsRetriable(err)
}

const statusRetryBackoff = 100 * time.Millisecond

func (s *StatusStore) send(ctx context.Context, key []byte, st Status, e *statusEntry, safe bool) error {
	if !validState(st.State) {
		return fmt.Errorf("write status %s: unknown state %q", key, st.State)
	}
	s.mu.Lock()
	s.generation = st.Generation
	if safe && !e.canWriteSafely(st) {
		s.mu.Unlock()
		s.logger.Debug("not writing status: another worker reported a newer generation", "key", string(key), "state", st.State)
		return nil
	}
	e.seq++
	seq := e.seq
	s.mu.Unlock()

	var value []byte
	if st.State != StateDestroyed {
		value = encodeStatus(st)
	}
	for {
		err := s.log.Send(ctx, Entry{Key: key, Value: value})
		if err == nil {
			return nil
		}
		if !retriable(err) || ctx.Err() != nil {
			return fmt.Errorf("write status %s: %w", key, err)
		}
		s.mu.Lock()
		stale := e.deleted || st.Generation != s.generation || (safe && (!e.canWriteSafely(st) || e.seq != seq))
		s.mu.Unlock()
		if stale {
			s.logger.Debug("dropping failed status write, no longer current", "key", string(key), "error", err)
			return nil
		}
		s.logger.Warn("re-sending status after a retriable error", "key", string(key), "error", err)
		t := time.NewTimer(statusRetryBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("write status %s: %w", key, ctx.Err())
		case <-t.C:
		}
	}
}

// sendPlain writes a topic status, re-sending after retriable errors.
func (s *StatusStore) sendPlain(ctx context.Context, e Entry, what string) error {
	for {
		err := s.log.Send(ctx, e)
		if err == nil {
			return nil
		}
		if !retriable(err) || ctx.Err() != nil {
			return fmt.Errorf("write %s: %w", what, err)
		}
		t := time.NewTimer(statusRetryBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("write %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// apply handles one record of the status topic.
func (s *StatusStore) apply(r *kgo.Record) {
	key := string(r.Key)
	var err error
	switch {
	case strings.HasPrefix(key, connectorStatusPrefix):
		err = s.applyConnector(strings.TrimPrefix(key, connectorStatusPrefix), r.Value)
	case strings.HasPrefix(key, taskStatusPrefix):
		err = s.applyTask(strings.TrimPrefix(key, taskStatusPrefix), r.Value)
	case strings.HasPrefix(key, topicStatusPrefix):
		err = s.applyTopic(strings.TrimPrefix(key, topicStatusPrefix), r.Value)
	default:
		err = errors.New("unknown key")
	}
	if err != nil {
		s.logger.Warn("ignoring invalid status record", "key", key, "offset", r.Offset, "partition", r.Partition, "error", err)
	}
}

func (s *StatusStore) applyConnector(c string, v []byte) error {
	if c == "" {
		return errors.New("empty connector name")
	}
	if len(v) == 0 {
		s.mu.Lock()
		defer s.mu.Unlock()
		// The connector was deleted: its tasks' statuses go with it.
		if e := s.connectors[c]; e != nil {
			e.deleted = true
			delete(s.connectors, c)
		}
		for _, e := range s.tasks[c] {
			e.deleted = true
		}
		delete(s.tasks, c)
		return nil
	}
	st, err := decodeStatus(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connectorEntryLocked(c).value = &st
	return nil
}

func (s *StatusStore) applyTask(rest string, v []byte) error {
	id, ok := parseTaskKey(rest)
	if !ok || id.Connector == "" {
		return errors.New("cannot parse task id")
	}
	if len(v) == 0 {
		s.mu.Lock()
		defer s.mu.Unlock()
		if m := s.tasks[id.Connector]; m != nil {
			if e := m[id.Task]; e != nil {
				e.deleted = true
				delete(m, id.Task)
			}
			if len(m) == 0 {
				delete(s.tasks, id.Connector)
			}
		}
		return nil
	}
	st, err := decodeStatus(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.taskEntryLocked(id)
	if st.State == StateUnassigned && e.value != nil && e.value.State == StateRunning && e.value.Generation > st.Generation {
		s.logger.Debug("ignoring stale UNASSIGNED status", "task", id.String(), "generation", st.Generation,
			"running_generation", e.value.Generation)
		return nil
	}
	e.value = &st
	return nil
}

func (s *StatusStore) applyTopic(rest string, v []byte) error {
	i := strings.Index(rest, topicStatusSeparator)
	if i <= 0 || i+len(topicStatusSeparator) == len(rest) {
		return errors.New("cannot parse topic and connector")
	}
	topic, connector := rest[:i], rest[i+len(topicStatusSeparator):]
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(v) == 0 {
		if m := s.topics[connector]; m != nil {
			delete(m, topic)
			if len(m) == 0 {
				delete(s.topics, connector)
			}
		}
		return nil
	}
	ts, err := decodeTopicStatus(v)
	if err != nil {
		return err
	}
	m := s.topics[connector]
	if m == nil {
		m = map[string]TopicStatus{}
		s.topics[connector] = m
	}
	m[topic] = ts
	return nil
}

// Connector returns the connector's status as read so far.
func (s *StatusStore) Connector(name string) (Status, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.connectors[name]; e != nil && e.value != nil {
		return *e.value, true
	}
	return Status{}, false
}

// Task returns the task's status as read so far.
func (s *StatusStore) Task(id TaskID) (Status, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.tasks[id.Connector][id.Task]; e != nil && e.value != nil {
		return *e.value, true
	}
	return Status{}, false
}

// Tasks returns the statuses of the connector's tasks, in task order.
func (s *StatusStore) Tasks(connector string) []TaskStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TaskStatus
	for t, e := range s.tasks[connector] {
		if e.value != nil {
			out = append(out, TaskStatus{ID: TaskID{Connector: connector, Task: t}, Status: *e.value})
		}
	}
	slices.SortFunc(out, func(a, b TaskStatus) int { return a.ID.Task - b.ID.Task })
	return out
}

// Connectors lists the connectors with a status, sorted.
func (s *StatusStore) Connectors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for c, e := range s.connectors {
		if e.value != nil {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// Topic returns the record of a connector's use of a topic.
func (s *StatusStore) Topic(connector, topic string) (TopicStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts, ok := s.topics[connector][topic]
	return ts, ok
}

// Topics lists the topics a connector used, sorted by topic.
func (s *StatusStore) Topics(connector string) []TopicStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TopicStatus, 0, len(s.topics[connector]))
	for _, ts := range s.topics[connector] {
		out = append(out, ts)
	}
	slices.SortFunc(out, func(a, b TopicStatus) int { return strings.Compare(a.Topic, b.Topic) })
	return out
}

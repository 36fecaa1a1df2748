package storage

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaOffsetStore keeps source offsets on the offsets topic
// (offset.storage.topic), Kafka Connect's KafkaOffsetBackingStore: key
// ["<connector>",{<partition>}], value the offset object or null. Keys are
// written canonically (OffsetKey over CanonicalJSON), so a logical partition
// always has one key and lands on one topic partition; keys written by a Java
// worker, whose object keys follow its map's order, are canonicalized when
// read, so both index the same entry. (A Java worker looking up a partition
// of several keys that Sluice wrote finds it only if its map iterates in
// sorted order; single-key partitions, the common case, always match.)
type KafkaOffsetStore struct {
	log    *KafkaLog
	logger hclog.Logger

	mu   sync.Mutex
	data map[string]map[string][]byte // connector → canonical partition → offset
}

var _ OffsetStore = (*KafkaOffsetStore)(nil)

// NewKafkaOffsetStore prepares the store; Start reads the topic.
func NewKafkaOffsetStore(cfg LogConfig) *KafkaOffsetStore {
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	s := &KafkaOffsetStore{logger: logger, data: map[string]map[string][]byte{}}
	s.log = NewKafkaLog(cfg, s.apply)
	return s
}

// Start reads the whole topic, so Get and All answer from complete state,
// and then follows it.
func (s *KafkaOffsetStore) Start(ctx context.Context) error {
	if err := s.log.Start(ctx); err != nil {
		return fmt.Errorf("start offset store: %w", err)
	}
	return nil
}

// Close stops the store.
func (s *KafkaOffsetStore) Close() { s.log.Close() }

// apply indexes one record of the topic; the last record of a key wins.
func (s *KafkaOffsetStore) apply(r *kgo.Record) {
	conn, part, err := ParseOffsetKey(r.Key)
	if err != nil {
		s.logger.Warn("ignoring offsets record with an invalid key", "offset", r.Offset, "partition", r.Partition, "error", err)
		return
	}
	var val []byte
	if len(r.Value) > 0 {
		if val, err = CanonicalJSON(r.Value); err != nil {
			s.logger.Warn("ignoring offsets record with an invalid value", "connector", conn, "key", string(r.Key), "error", err)
			return
		}
		if string(val) == "null" {
			val = nil // a JSON null reads as no offset, as in Java
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if val == nil {
		if m := s.data[conn]; m != nil {
			delete(m, string(part))
			if len(m) == 0 {
				delete(s.data, conn)
			}
		}
		return
	}
	m := s.data[conn]
	if m == nil {
		m = map[string][]byte{}
		s.data[conn] = m
	}
	m[string(part)] = val
}

// Get implements OffsetStore. It first reads the topic to its end, as Kafka
// Connect's store does, so offsets any worker committed before the call are
// seen.
func (s *KafkaOffsetStore) Get(ctx context.Context, connector string, partitions [][]byte) (map[string][]byte, error) {
	canon := make([][]byte, len(partitions))
	for i, p := range partitions {
		cp, err := CanonicalJSON(p)
		if err != nil {
			return nil, fmt.Errorf("get offsets of %s: source partition: %w", connector, err)
		}
		canon[i] = cp
	}
	if err := s.log.ReadToEnd(ctx); err != nil {
		return nil, fmt.Errorf("get offsets of %s: %w", connector, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for _, cp := range canon {
		if v, ok := s.data[connector][string(cp)]; ok {
			out[string(cp)] = v
		}
	}
	return out, nil
}

// All implements OffsetStore, reading the topic to its end first.
func (s *KafkaOffsetStore) All(ctx context.Context, connector string) ([]OffsetEntry, error) {
	if err := s.log.ReadToEnd(ctx); err != nil {
		return nil, fmt.Errorf("list offsets of %s: %w", connector, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]OffsetEntry, 0, len(s.data[connector]))
	for p, v := range s.data[connector] {
		out = append(out, OffsetEntry{Partition: []byte(p), Offset: v})
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i].Partition) < string(out[j].Partition) })
	return out, nil
}

// Connectors lists the connectors with at least one stored offset, as read
// so far (no read to end).
func (s *KafkaOffsetStore) Connectors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.data))
	for c := range s.data {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Set implements OffsetStore: the records are written and acknowledged
// before Set returns (a nil Offset writes a tombstone). They become visible
// to Get once read back, which Get's own read to end guarantees.
func (s *KafkaOffsetStore) Set(ctx context.Context, connector string, entries []OffsetEntry) error {
	recs := make([]Entry, 0, len(entries))
	for _, e := range entries {
		cp, err := CanonicalJSON(e.Partition)
		if err != nil {
			return fmt.Errorf("store offsets of %s: source partition: %w", connector, err)
		}
		rec := Entry{Key: OffsetKey(connector, cp)}
		if e.Offset != nil {
			if rec.Value, err = CanonicalJSON(e.Offset); err != nil {
				return fmt.Errorf("store offsets of %s: source offset: %w", connector, err)
			}
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return nil
	}
	if err := s.log.Send(ctx, recs...); err != nil {
		return fmt.Errorf("store offsets of %s: %w", connector, err)
	}
	return nil
}

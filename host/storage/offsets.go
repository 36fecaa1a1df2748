package storage

import (
	"context"
	"encoding/json"
	"fmt"
)

// OffsetEntry is one source partition's stored offset. Partition and Offset
// are canonical JSON objects; a nil Offset is a tombstone (no offset).
type OffsetEntry struct {
	Partition []byte
	Offset    []byte
}

// OffsetStore stores source offsets per connector.
type OffsetStore interface {
	// Get returns the stored offsets of the partitions (canonical JSON in,
	// map keyed by canonical partition JSON out); partitions with no offset
	// are absent.
	Get(ctx context.Context, connector string, partitions [][]byte) (map[string][]byte, error)
	// Set stores the entries durably before returning.
	Set(ctx context.Context, connector string, entries []OffsetEntry) error
	// All returns every stored offset of the connector.
	All(ctx context.Context, connector string) ([]OffsetEntry, error)
}

// CanonicalJSON re-encodes a JSON value compactly with object keys sorted and
// numbers kept exactly as written, so equal values give equal bytes. Strings
// are escaped as Jackson escapes them (see jsonwrite.go), so a key Sluice
// writes is the key a Java worker computes for the same single-key partition.
func CanonicalJSON(b []byte) ([]byte, error) {
	v, err := decodeJSON(b)
	if err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	out, err := appendCanonical(make([]byte, 0, len(b)), v)
	if err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	return out, nil
}

// OffsetKey returns the offsets-topic key ["<connector>",<partition>] for a
// canonical partition object.
func OffsetKey(connector string, partition []byte) []byte {
	out := make([]byte, 0, len(connector)+len(partition)+5)
	out = append(out, '[')
	out = appendJSONString(out, connector)
	out = append(out, ',')
	out = append(out, partition...)
	return append(out, ']')
}

// ParseOffsetKey splits an offsets-topic key into connector and canonical
// partition. Keys written by other workers (unsorted object keys) are
// canonicalized.
func ParseOffsetKey(key []byte) (string, []byte, error) {
	var parts []json.RawMessage
	if err := json.Unmarshal(key, &parts); err != nil {
		return "", nil, fmt.Errorf("offset key %q: %w", key, err)
	}
	if len(parts) != 2 {
		return "", nil, fmt.Errorf("offset key %q: want [connector, partition]", key)
	}
	var connector string
	if err := json.Unmarshal(parts[0], &connector); err != nil {
		return "", nil, fmt.Errorf("offset key %q: connector name: %w", key, err)
	}
	p, err := CanonicalJSON(parts[1])
	if err != nil {
		return "", nil, fmt.Errorf("offset key %q: %w", key, err)
	}
	return connector, p, nil
}

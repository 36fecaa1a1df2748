package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Protocol is a Kafka Connect group sub-protocol, named as connect.protocol
// names it. Compatible and sessioned are incremental cooperative (KIP-415);
// sessioned adds the session key for signed internal requests (KIP-507),
// which is the herder's business, not the group's. Eager is the original
// stop-the-world protocol: every rebalance stops all work first and the
// leader deals everything out again.
type Protocol string

const (
	// Sessioned is protocol version 2, Kafka Connect's default.
	Sessioned Protocol = "sessioned"
	// Compatible is protocol version 1.
	Compatible Protocol = "compatible"
	// Eager is protocol version 0, named "default" in JoinGroup.
	Eager Protocol = "eager"
)

// Version is the protocol's version number as written in the headers of
// member metadata and assignments.
func (p Protocol) Version() int16 {
	switch p {
	case Sessioned:
		return 2
	case Compatible:
		return 1
	}
	return 0
}

// Name is the protocol's name in JoinGroup and SyncGroup: the config name,
// except for eager, which Kafka Connect calls "default" on the wire.
func (p Protocol) Name() string {
	if p == Eager {
		return "default"
	}
	return string(p)
}

// protocolNamed is the protocol a JoinGroup answer names.
func protocolNamed(name string) (Protocol, bool) {
	switch name {
	case "sessioned":
		return Sessioned, true
	case "compatible":
		return Compatible, true
	case "default":
		return Eager, true
	}
	return "", false
}

// offered is what a worker configured with p offers in JoinGroup, most
// preferred first, as Kafka Connect offers them: each protocol with every
// older one after it, so that the coordinator can settle a mixed group on
// the newest protocol all members speak.
func (p Protocol) offered() []Protocol {
	switch p {
	case Sessioned:
		return []Protocol{Sessioned, Compatible, Eager}
	case Compatible:
		return []Protocol{Compatible, Eager}
	}
	return []Protocol{Eager}
}

// ProtocolType is the group protocol type every Kafka Connect worker joins
// with.
const ProtocolType = "connect"

// Assignment error codes (Kafka Connect's Assignment.NO_ERROR and
// CONFIG_MISMATCH).
const (
	NoError        int16 = 0
	ConfigMismatch int16 = 1
)

// Metadata is a worker's JoinGroup metadata: its REST URL and the config
// topic offset it has read up to (version 0, Kafka Connect's WorkerState),
// and from version 1 on what it runs now (ExtendedWorkerState). Current nil
// is written as null bytes: a worker that runs nothing. Version 0 has no
// such field; Current is not written.
type Metadata struct {
	Version      int16
	URL          string
	ConfigOffset int64
	Current      *WireAssignment
}

// WireAssignment is Kafka Connect's assignment as SyncGroup carries it (and
// as Metadata embeds a worker's current one): who leads, at which config
// offset, what to start, what to stop, and after how long to rejoin. In
// version 0 (eager) Assigned is everything the worker is to run, and there
// is no Revoked nor DelayMs on the wire.
type WireAssignment struct {
	Version      int16
	Error        int16
	Leader       string
	LeaderURL    string
	ConfigOffset int64
	Assigned     Work
	Revoked      Work  // version 1+
	DelayMs      int32 // version 1+
}

// Layout (Kafka protocol types: INT16/INT32/INT64 big-endian, STRING = INT16
// length + UTF-8, ARRAY = INT32 count (-1 = null), NULLABLE_BYTES = INT32
// length (-1 = null) + bytes):
//
//	metadata   = version:INT16 url:STRING config_offset:INT64 [allocation:NULLABLE_BYTES]   (allocation: v1+)
//	assignment = version:INT16 error:INT16 leader:STRING leader_url:STRING config_offset:INT64
//	             assignment:ARRAY(entry) [revoked:ARRAY(entry) delay:INT32]                (v1+)
//
// Version 0 (eager) is the prefix: metadata ends after config_offset, an
// assignment after its assignment array.
//	entry      = connector:STRING tasks:ARRAY(INT32)       (task -1 = the connector itself)

// AppendMetadata appends m's encoding to dst.
func AppendMetadata(dst []byte, m Metadata) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(m.Version))
	dst = appendString(dst, m.URL)
	dst = binary.BigEndian.AppendUint64(dst, uint64(m.ConfigOffset))
	if m.Version >= 1 {
		if m.Current == nil {
			dst = binary.BigEndian.AppendUint32(dst, math.MaxUint32) // -1: null
		} else {
			blob := AppendAssignment(nil, *m.Current)
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(blob)))
			dst = append(dst, blob...)
		}
	}
	return dst
}

// AppendAssignment appends a's encoding to dst. Entries come in Kafka
// Connect's order: one per assigned connector instance (task -1 first), then
// tasks joined to their connector's entry or to a new one.
func AppendAssignment(dst []byte, a WireAssignment) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(a.Version))
	dst = binary.BigEndian.AppendUint16(dst, uint16(a.Error))
	dst = appendString(dst, a.Leader)
	dst = appendString(dst, a.LeaderURL)
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.ConfigOffset))
	dst = appendEntries(dst, a.Assigned)
	if a.Version >= 1 {
		dst = appendEntries(dst, a.Revoked)
		dst = binary.BigEndian.AppendUint32(dst, uint32(a.DelayMs))
	}
	return dst
}

type entry struct {
	connector string
	tasks     []int32
}

func appendEntries(dst []byte, w Work) []byte {
	var entries []entry
	index := map[string]int{}
	for _, c := range w.Connectors {
		if _, ok := index[c]; ok {
			continue
		}
		index[c] = len(entries)
		entries = append(entries, entry{connector: c, tasks: []int32{ConnectorTask}})
	}
	for _, t := range w.Tasks {
		i, ok := index[t.Connector]
		if !ok {
			i = len(entries)
			index[t.Connector] = i
			entries = append(entries, entry{connector: t.Connector})
		}
		entries[i].tasks = append(entries[i].tasks, t.Task)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(entries)))
	for _, e := range entries {
		dst = appendString(dst, e.connector)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(e.tasks)))
		for _, t := range e.tasks {
			dst = binary.BigEndian.AppendUint32(dst, uint32(t))
		}
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

// ErrMalformed is wrapped by decoding errors.
var ErrMalformed = errors.New("malformed connect protocol data")

// DecodeMetadata reads a worker's JoinGroup metadata. As Kafka Connect does,
// it accepts any version from 0 up, reads the fields it knows and ignores
// bytes after them; a missing allocation reads as null.
func DecodeMetadata(b []byte) (Metadata, error) {
	r := reader{b: b}
	var m Metadata
	m.Version = r.int16()
	if r.err == nil && m.Version < 0 {
		return Metadata{}, fmt.Errorf("%w: metadata version %d", ErrMalformed, m.Version)
	}
	m.URL = r.string()
	m.ConfigOffset = r.int64()
	if m.Version >= 1 && r.more() {
		if blob, ok := r.nullableBytes(); ok {
			a, err := DecodeAssignment(blob)
			if err != nil {
				return Metadata{}, fmt.Errorf("current assignment in metadata: %w", err)
			}
			m.Current = &a
		}
	}
	if r.err != nil {
		return Metadata{}, fmt.Errorf("%w: metadata: %v", ErrMalformed, r.err)
	}
	return m, nil
}

// DecodeAssignment reads an assignment. Trailing fields that are missing
// (revoked, delay) take their defaults, as Kafka Connect's tolerant schema
// gives them; a null array reads as empty.
func DecodeAssignment(b []byte) (WireAssignment, error) {
	r := reader{b: b}
	var a WireAssignment
	a.Version = r.int16()
	if r.err == nil && a.Version < 0 {
		return WireAssignment{}, fmt.Errorf("%w: assignment version %d", ErrMalformed, a.Version)
	}
	a.Error = r.int16()
	a.Leader = r.string()
	a.LeaderURL = r.string()
	a.ConfigOffset = r.int64()
	a.Assigned = r.entries()
	if a.Version >= 1 && r.more() {
		a.Revoked = r.entries()
		if r.more() {
			a.DelayMs = r.int32()
		}
	}
	if r.err != nil {
		return WireAssignment{}, fmt.Errorf("%w: assignment: %v", ErrMalformed, r.err)
	}
	return a, nil
}

type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("not enough bytes")

func (r *reader) more() bool { return r.err == nil && len(r.b) > 0 }

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = errShort
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) int16() int16 {
	v := r.take(2)
	if v == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(v))
}

func (r *reader) int32() int32 {
	v := r.take(4)
	if v == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(v))
}

func (r *reader) int64() int64 {
	v := r.take(8)
	if v == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func (r *reader) string() string {
	n := r.int16()
	if r.err == nil && n < 0 {
		r.err = fmt.Errorf("string length %d", n)
		return ""
	}
	return string(r.take(int(n)))
}

func (r *reader) nullableBytes() ([]byte, bool) {
	n := r.int32()
	if r.err != nil || n == -1 {
		return nil, false
	}
	v := r.take(int(n))
	return v, r.err == nil
}

func (r *reader) entries() Work {
	n := r.int32()
	if r.err != nil || n == -1 {
		return Work{}
	}
	if n < 0 || int(n) > len(r.b)/6 { // an entry is at least 6 bytes
		r.err = fmt.Errorf("array length %d", n)
		return Work{}
	}
	s := newWorkSet()
	for range n {
		c := r.string()
		k := r.int32()
		if r.err != nil {
			return Work{}
		}
		if k == -1 {
			continue
		}
		if k < 0 || int(k) > len(r.b)/4 {
			r.err = fmt.Errorf("task array length %d", k)
			return Work{}
		}
		for range k {
			t := r.int32()
			if t == ConnectorTask {
				s.conns[c] = struct{}{}
			} else {
				s.tasks[TaskID{Connector: c, Task: t}] = struct{}{}
			}
		}
	}
	return s.work()
}

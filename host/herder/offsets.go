package herder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-io/sluice/host/storage"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	"github.com/twmb/franz-go/pkg/kerr"
)

// SinkGroup is the consumer group of a sink connector: connect-<name>, or
// consumer.override.group.id when the connector sets it.
func SinkGroup(name string, cfg map[string]string) string {
	if g := strings.TrimSpace(cfg[ConsumerOverridePrefix+"group.id"]); g != "" {
		return g
	}
	return "connect-" + name
}

// sinkGroup is SinkGroup of the resolved config: the group the sink's tasks
// consume with (they start with resolved configs), so that a
// consumer.override.group.id held in a variable addresses the same group
// here as in the tasks. A resolution error names key, provider and path.
func (h *Standalone) sinkGroup(ctx context.Context, name string, cfg map[string]string) (string, error) {
	key := ConsumerOverridePrefix + "group.id"
	v, ok := cfg[key]
	if !ok {
		return SinkGroup(name, cfg), nil
	}
	res, err := h.opts.Resolver.Resolve(ctx, map[string]string{key: v})
	if err != nil {
		return "", Errorf(ErrBadRequest, "consumer group of connector %s: %s", name, err.Error())
	}
	return SinkGroup(name, res), nil
}

// ConnectorOffsets implements Herder (KIP-875): in any state; a sink's come
// from its consumer group, a source's from the offset store.
func (h *Standalone) ConnectorOffsets(ctx context.Context, name string) (*ConnectorOffsets, error) {
	c := h.lookup(name)
	if c == nil {
		return nil, Errorf(ErrNotFound, "Connector %s not found", name)
	}
	c.mu.Lock()
	class, cfg := c.class, maps.Clone(c.config)
	c.mu.Unlock()
	return h.offsetsOf(ctx, name, class, cfg)
}

// offsetsOf reads the offsets of connector name of class with config cfg;
// the distributed herder shares it.
func (h *Standalone) offsetsOf(ctx context.Context, name string, class Class, cfg map[string]string) (*ConnectorOffsets, error) {
	if class.Type == TypeSink {
		return h.sinkOffsets(ctx, name, cfg)
	}
	entries, err := h.opts.Offsets.All(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read offsets of connector %s: %w", name, err)
	}
	out := &ConnectorOffsets{Offsets: []ConnectorOffset{}}
	for _, e := range entries {
		if e.Offset == nil {
			continue
		}
		p, err := decodeObject(e.Partition)
		if err != nil {
			return nil, fmt.Errorf("read offsets of connector %s: partition %s: %w", name, e.Partition, err)
		}
		o, err := decodeObject(e.Offset)
		if err != nil {
			return nil, fmt.Errorf("read offsets of connector %s: offset %s: %w", name, e.Offset, err)
		}
		out.Offsets = append(out.Offsets, ConnectorOffset{Partition: p, Offset: o})
	}
	sortedOffsets(out.Offsets)
	return out, nil
}

func (h *Standalone) sinkOffsets(ctx context.Context, name string, cfg map[string]string) (*ConnectorOffsets, error) {
	if h.opts.Groups == nil {
		return nil, fmt.Errorf("sink connector offsets of %s: no Kafka admin client", name)
	}
	group, err := h.sinkGroup(ctx, name, cfg)
	if err != nil {
		return nil, err
	}
	offs, err := h.opts.Groups.Offsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("read offsets of consumer group %s of connector %s: %w", group, name, err)
	}
	out := &ConnectorOffsets{Offsets: []ConnectorOffset{}}
	for _, topic := range slices.Sorted(maps.Keys(offs)) {
		parts := slices.Sorted(maps.Keys(offs[topic]))
		for _, p := range parts {
			out.Offsets = append(out.Offsets, ConnectorOffset{
				Partition: map[string]any{SinkTopicKey: topic, SinkPartitionKey: p},
				Offset:    map[string]any{SinkOffsetKey: offs[topic][p]},
			})
		}
	}
	return out, nil
}

// AlterConnectorOffsets implements Herder (KIP-875): only for a STOPPED
// connector; the connector's AlterOffsets hook is asked first.
func (h *Standalone) AlterConnectorOffsets(ctx context.Context, name string, offsets *ConnectorOffsets) (string, error) {
	c := h.lookup(name)
	if c == nil {
		return "", Errorf(ErrNotFound, "Connector %s not found", name)
	}
	if offsets == nil || len(offsets.Offsets) == 0 {
		return "", Errorf(ErrBadRequest, "Partitions / offsets need to be provided for an alter offsets request")
	}
	var msg string
	err := h.run(ctx, c, "altering the offsets of the connector "+name, func(ctx context.Context) error {
		class, cfg, err := h.stoppedForOffsets(c)
		if err != nil {
			return err
		}
		msg, err = h.alterOffsets(ctx, name, class, cfg, offsets)
		return err
	})
	return msg, err
}

// alterOffsets changes the offsets of a stopped connector; the distributed
// herder shares it.
func (h *Standalone) alterOffsets(ctx context.Context, name string, class Class, cfg map[string]string, offsets *ConnectorOffsets) (string, error) {
	if class.Type == TypeSink {
		return h.alterSinkOffsets(ctx, name, class, cfg, offsets)
	}
	return h.alterSourceOffsets(ctx, name, class, cfg, offsets)
}

// ResetConnectorOffsets implements Herder (KIP-875).
func (h *Standalone) ResetConnectorOffsets(ctx context.Context, name string) (string, error) {
	c := h.lookup(name)
	if c == nil {
		return "", Errorf(ErrNotFound, "Connector %s not found", name)
	}
	var msg string
	err := h.run(ctx, c, "resetting the offsets of the connector "+name, func(ctx context.Context) error {
		class, cfg, err := h.stoppedForOffsets(c)
		if err != nil {
			return err
		}
		msg, err = h.resetOffsets(ctx, name, class, cfg)
		return err
	})
	return msg, err
}

// resetOffsets deletes every offset of a stopped connector; the distributed
// herder shares it.
func (h *Standalone) resetOffsets(ctx context.Context, name string, class Class, cfg map[string]string) (string, error) {
	current, err := h.offsetsOf(ctx, name, class, cfg)
	if err != nil {
		return "", err
	}
	reset := &ConnectorOffsets{Offsets: make([]ConnectorOffset, len(current.Offsets))}
	for i, o := range current.Offsets {
		reset.Offsets[i] = ConnectorOffset{Partition: o.Partition}
	}
	handled, err := h.askConnector(ctx, name, class, cfg, reset)
	if err != nil {
		return "", err
	}
	if class.Type == TypeSink {
		group, err := h.sinkGroup(ctx, name, cfg)
		if err != nil {
			return "", err
		}
		if err := h.checkNoMembers(ctx, name, group, "reset"); err != nil {
			return "", err
		}
		if err := h.opts.Groups.Delete(ctx, group); err != nil {
			if errors.Is(err, kerr.NonEmptyGroup) {
				return "", membersError(name, "reset")
			}
			return "", fmt.Errorf("reset offsets of connector %s: delete consumer group %s: %w", name, group, err)
		}
	} else {
		var entries []storage.OffsetEntry
		for _, o := range reset.Offsets {
			p, err := canonicalObject(o.Partition)
			if err != nil {
				return "", err
			}
			entries = append(entries, storage.OffsetEntry{Partition: p})
		}
		if len(entries) > 0 {
			if err := h.opts.Offsets.Set(ctx, name, entries); err != nil {
				return "", fmt.Errorf("reset offsets of connector %s: %w", name, err)
			}
		}
	}
	return offsetsMessage(handled, "reset"), nil
}

// stoppedForOffsets checks KIP-875's precondition; c's slot held.
func (h *Standalone) stoppedForOffsets(c *conn) (Class, map[string]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.target != TargetStopped || len(c.tasks) > 0 || c.inst != nil {
		return Class{}, nil, Errorf(ErrBadRequest, "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", c.name)
	}
	return c.class, maps.Clone(c.config), nil
}

func (h *Standalone) alterSinkOffsets(ctx context.Context, name string, class Class, cfg map[string]string, offsets *ConnectorOffsets) (string, error) {
	parsed, err := ParseSinkOffsets(offsets)
	if err != nil {
		return "", err
	}
	if h.opts.Groups == nil {
		return "", fmt.Errorf("alter offsets of sink connector %s: no Kafka admin client", name)
	}
	group, err := h.sinkGroup(ctx, name, cfg)
	if err != nil {
		return "", err
	}
	if err := h.checkNoMembers(ctx, name, group, "alter"); err != nil {
		return "", err
	}
	handled, err := h.askConnector(ctx, name, class, cfg, offsets)
	if err != nil {
		return "", err
	}
	set := map[string]map[int32]int64{}
	reset := map[string][]int32{}
	for _, o := range parsed {
		if o.Offset == nil {
			reset[o.Topic] = append(reset[o.Topic], o.Partition)
			continue
		}
		if set[o.Topic] == nil {
			set[o.Topic] = map[int32]int64{}
		}
		set[o.Topic][o.Partition] = *o.Offset
	}
	if err := h.opts.Groups.Alter(ctx, group, set, reset); err != nil {
		if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.GroupSubscribedToTopic) {
			return "", membersError(name, "alter")
		}
		return "", fmt.Errorf("alter offsets of consumer group %s of connector %s: %w", group, name, err)
	}
	return offsetsMessage(handled, "altered"), nil
}

func (h *Standalone) alterSourceOffsets(ctx context.Context, name string, class Class, cfg map[string]string, offsets *ConnectorOffsets) (string, error) {
	entries := make([]storage.OffsetEntry, 0, len(offsets.Offsets))
	for _, o := range offsets.Offsets {
		if o.Partition == nil {
			return "", Errorf(ErrBadRequest, "The partition for a source connector offset cannot be null or missing")
		}
		p, err := canonicalObject(o.Partition)
		if err != nil {
			return "", Errorf(ErrBadRequest, "Invalid source partition: %v", err)
		}
		if err := primitiveValues(o.Partition); err != nil {
			return "", err
		}
		if err := primitiveValues(o.Offset); err != nil {
			return "", err
		}
		e := storage.OffsetEntry{Partition: p}
		if o.Offset != nil {
			if e.Offset, err = canonicalObject(o.Offset); err != nil {
				return "", Errorf(ErrBadRequest, "Invalid source offset: %v", err)
			}
		}
		entries = append(entries, e)
	}
	handled, err := h.askConnector(ctx, name, class, cfg, offsets)
	if err != nil {
		return "", err
	}
	if err := h.opts.Offsets.Set(ctx, name, entries); err != nil {
		return "", fmt.Errorf("alter offsets of connector %s: %w", name, err)
	}
	return offsetsMessage(handled, "altered"), nil
}

// primitiveValues checks that a source partition or offset holds no nested
// map or list: Kafka Connect refuses those (a 500, before the connector is
// asked), naming the field and the Connect schema type of its value.
func primitiveValues(m map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		var kind string
		switch m[k].(type) {
		case map[string]any:
			kind = "MAP"
		case []any:
			kind = "ARRAY"
		default:
			continue
		}
		return &Error{Message: fmt.Sprintf("Offsets may only contain primitive types as values, but field %s contains %s", k, kind)}
	}
	return nil
}

// askConnector runs the connector's AlterOffsets hook.
func (h *Standalone) askConnector(ctx context.Context, name string, class Class, cfg map[string]string, offsets *ConnectorOffsets) (bool, error) {
	end := h.stages.begin("asking the connector " + name + " to modify its offsets")
	defer end()
	cfg, err := h.opts.Resolver.Resolve(ctx, cfg)
	if err != nil {
		return false, Errorf(ErrBadRequest, "%s", err.Error())
	}
	handled, err := h.in.AlterOffsets(ctx, class, cfg, offsets.Offsets)
	if err == nil {
		return handled, nil
	}
	h.log.Error("the connector refused or failed an offsets change", "connector", name, "error", err)
	return false, hookError(name, class.Type, err)
}

// hookError is the answer to an offsets change the connector's hook
// refused or failed: a 500 with no kind, as Kafka Connect answers whatever
// alterOffsets throws (its exception mapper makes a 500 of any exception
// but its REST ones). A ConnectException keeps its message there, and a
// plugin's own refusal, vetoes of invalid offsets included, is one; an
// UnsupportedOperationException and a missed deadline have Kafka's texts;
// anything else (the process died, or never started) is wrapped, as Kafka
// wraps a foreign exception, in "Failed to modify offsets for <type>
// connector <c>". The cause is in the log.
func hookError(name, typ string, err error) error {
	var we *wire.Error
	switch kind := wire.KindOf(err); {
	case kind == wire.KindUnsupported:
		return &Error{Message: fmt.Sprintf("Failed to modify offsets for connector %s because it doesn't support external modification of offsets", name)}
	case kind == wire.KindTimeout:
		return &Error{Message: fmt.Sprintf("Timed out while calling the 'alterOffsets' method for %s connector %s", typ, name)}
	case kind != wire.KindCrashed && errors.As(err, &we) && we.Message != "":
		return &Error{Message: we.Message}
	}
	return &Error{Message: fmt.Sprintf("Failed to modify offsets for %s connector %s", typ, name)}
}

// checkNoMembers refuses to alter or reset (op) a sink's offsets while its
// consumer group has members: the broker would refuse too, and Kafka Connect
// answers that refusal with this text.
func (h *Standalone) checkNoMembers(ctx context.Context, name, group, op string) error {
	busy, err := h.opts.Groups.HasMembers(ctx, group)
	if err != nil {
		return fmt.Errorf("describe consumer group %s of connector %s: %w", group, name, err)
	}
	if busy {
		return membersError(name, op)
	}
	return nil
}

// membersError is the answer when the group has members, found by the
// check or, if a task rejoined after it, by the broker's refusal
// (UNKNOWN_MEMBER_ID or GROUP_SUBSCRIBED_TO_TOPIC on alter, NON_EMPTY_GROUP
// on delete).
func membersError(name, op string) error {
	return &Error{Message: fmt.Sprintf("Failed to %[1]s consumer group offsets for connector %[2]s either because its tasks haven't stopped completely yet or the connector was resumed before the request to %[1]s its offsets could be successfully completed. If the connector is in a stopped state, this operation can be safely retried. If it doesn't eventually succeed, the Connect cluster may need to be restarted to get rid of the zombie sink tasks.", op, name)}
}

func offsetsMessage(handled bool, what string) string {
	if handled {
		return "The offsets for this connector have been " + what + " successfully"
	}
	return "The Connect framework-managed offsets for this connector have been " + what + " successfully. However, if this connector manages offsets externally, they will need to be manually " + what + " in the system that the connector uses."
}

// decodeObject reads a stored JSON object, numbers kept exact.
func decodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// canonicalObject encodes a partition or offset for the offset store.
func canonicalObject(m map[string]any) ([]byte, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return storage.CanonicalJSON(raw)
}

// sortedOffsets orders offsets by partition JSON, for stable answers.
func sortedOffsets(o []ConnectorOffset) {
	key := func(p map[string]any) string { b, _ := json.Marshal(p); return string(b) }
	sort.SliceStable(o, func(i, j int) bool { return key(o[i].Partition) < key(o[j].Partition) })
}

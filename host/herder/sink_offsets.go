package herder

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Keys of a sink connector's offsets in the offsets API (KIP-875).
const (
	SinkTopicKey     = "kafka_topic"
	SinkPartitionKey = "kafka_partition"
	SinkOffsetKey    = "kafka_offset"
)

// SinkOffset is one entry of an alter-offsets request for a sink connector.
type SinkOffset struct {
	Topic     string
	Partition int32
	// Offset is nil when the request resets the partition.
	Offset *int64
}

// ParseSinkOffsets checks an alter-offsets request against the fixed shape
// of sink connector offsets and reads it, answering Kafka Connect's 400
// messages. As in Kafka, a partition or offset may be a JSON number or a
// string holding one ("10" and 10 both work). The REST layer decodes numbers
// as json.Number, so offsets beyond 2^53 arrive intact. A herder calls this
// after its STOPPED check, which is Kafka's order.
func ParseSinkOffsets(offsets *ConnectorOffsets) ([]SinkOffset, error) {
	if offsets == nil {
		return nil, Errorf(ErrBadRequest, "Partitions / offsets need to be provided for an alter offsets request")
	}
	out := make([]SinkOffset, 0, len(offsets.Offsets))
	for _, o := range offsets.Offsets {
		p := o.Partition
		if p == nil {
			return nil, Errorf(ErrBadRequest, "The partition for a sink connector offset cannot be null or missing")
		}
		topic, hasTopic := p[SinkTopicKey]
		part, hasPart := p[SinkPartitionKey]
		if !hasTopic || !hasPart {
			return nil, Errorf(ErrBadRequest, "The partition for a sink connector offset must contain the keys '%s' and '%s'", SinkTopicKey, SinkPartitionKey)
		}
		if topic == nil {
			return nil, Errorf(ErrBadRequest, "Kafka topic names must be valid strings and may not be null")
		}
		if part == nil {
			return nil, Errorf(ErrBadRequest, "Kafka partitions must be valid numbers and may not be null")
		}
		n, err := strconv.ParseInt(javaString(part), 10, 32)
		if err != nil {
			return nil, Errorf(ErrBadRequest, "Failed to parse the following Kafka partition value in the provided offsets: '%s'. Partition values for sink connectors need to be integers.", javaString(part))
		}
		so := SinkOffset{Topic: javaString(topic), Partition: int32(n)}
		if o.Offset != nil {
			v, ok := o.Offset[SinkOffsetKey]
			if !ok {
				return nil, Errorf(ErrBadRequest, "The offset for a sink connector should either be null or contain the key '%s'", SinkOffsetKey)
			}
			off, err := strconv.ParseInt(javaString(v), 10, 64)
			if err != nil {
				return nil, Errorf(ErrBadRequest, "Failed to parse the following Kafka offset value in the provided offsets: '%s'. Offset values for sink connectors need to be integers.", javaString(v))
			}
			so.Offset = &off
		}
		out = append(out, so)
	}
	return out, nil
}

// javaString renders a decoded JSON value as Java's String.valueOf would
// the value Jackson decoded, for the scalars that matter here.
func javaString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

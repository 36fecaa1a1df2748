package herder

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func TestParseSinkOffsets(t *testing.T) {
	ok := `{"offsets":[
		{"partition":{"kafka_topic":"t","kafka_partition":2},"offset":{"kafka_offset":9007199254740993}},
		{"partition":{"kafka_topic":"u","kafka_partition":"3"},"offset":null}]}`
	got, err := ParseSinkOffsets(decodeOffsets(t, ok))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Topic != "t" || got[0].Partition != 2 || got[0].Offset == nil || *got[0].Offset != 9007199254740993 {
		t.Fatalf("first = %+v", got[0])
	}
	if got[1].Topic != "u" || got[1].Partition != 3 || got[1].Offset != nil {
		t.Fatalf("second = %+v", got[1])
	}

	for body, want := range map[string]string{
		`{"offsets":[{"offset":{"kafka_offset":1}}]}`:                                                       "The partition for a sink connector offset cannot be null or missing",
		`{"offsets":[{"partition":{"kafka_topic":"t"},"offset":null}]}`:                                     "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'",
		`{"offsets":[{"partition":{"kafka_topic":null,"kafka_partition":1},"offset":null}]}`:                "Kafka topic names must be valid strings and may not be null",
		`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":null},"offset":null}]}`:              "Kafka partitions must be valid numbers and may not be null",
		`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":1},"offset":{"offset":1}}]}`:         "The offset for a sink connector should either be null or contain the key 'kafka_offset'",
		`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":1.5},"offset":null}]}`:               "Failed to parse the following Kafka partition value in the provided offsets: '1.5'. Partition values for sink connectors need to be integers.",
		`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":1},"offset":{"kafka_offset":"x"}}]}`: "Failed to parse the following Kafka offset value in the provided offsets: 'x'. Offset values for sink connectors need to be integers.",
	} {
		_, err := ParseSinkOffsets(decodeOffsets(t, body))
		var he *Error
		if !errors.As(err, &he) || !errors.Is(err, ErrBadRequest) || he.Message != want {
			t.Errorf("%s:\n got %v\nwant %q", body, err, want)
		}
	}
}

func decodeOffsets(t *testing.T, s string) *ConnectorOffsets {
	t.Helper()
	var raw struct {
		Offsets []struct {
			Partition json.RawMessage `json:"partition"`
			Offset    json.RawMessage `json:"offset"`
		} `json:"offsets"`
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		t.Fatal(err)
	}
	out := &ConnectorOffsets{}
	for _, o := range raw.Offsets {
		var e ConnectorOffset
		for _, pair := range []struct {
			raw json.RawMessage
			dst *map[string]any
		}{{o.Partition, &e.Partition}, {o.Offset, &e.Offset}} {
			if len(pair.raw) == 0 {
				continue
			}
			dec := json.NewDecoder(bytesReader(pair.raw))
			dec.UseNumber()
			if err := dec.Decode(pair.dst); err != nil {
				t.Fatal(err)
			}
		}
		out.Offsets = append(out.Offsets, e)
	}
	return out
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

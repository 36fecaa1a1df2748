package wire

import (
	"bytes"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// A Poll answer that comes inline (the plugin declined shared memory, or
// the answer did not fit the region) is read the same way as one in the
// region: the codec of the call reads the received bytes straight into a
// PollBatch, instead of into the generated PollResponse first.

// ReceivePoll is the call option that reads a Poll answer into *into:
//
//	var b *wire.PollBatch
//	resp, err := client.Poll(ctx, req, wire.ReceivePoll(&b))
//
// After a successful call, *into holds the answer's records (read by
// DecodePollBatch from the bytes received) and resp only its first_seq,
// or, for what the fused decoder leaves to protobuf, resp is the whole
// answer and *into is NewPollBatch(resp): an answer in shared memory
// (resp.Shared) is one of those. *into stays nil if the call's codec was
// not this one; the caller reads resp then. Any other message of the call
// is Codec's business.
func ReceivePoll(into **PollBatch) grpc.CallOption {
	return grpc.ForceCodecV2(&pollCodec{into: into})
}

// ReceivePollAtMost is ReceivePoll for an answer of at most maxRecords
// records (no bound when maxRecords is 0 or less). An answer with more is
// not decoded (see SharedRegion.TakePollPooledAtMost): *into has its
// first_seq and record count, and Records reports the excess.
func ReceivePollAtMost(into **PollBatch, maxRecords int) grpc.CallOption {
	return grpc.ForceCodecV2(&pollCodec{into: into, maxRecords: maxRecords})
}

// pollCodec is Codec with one reply read into a PollBatch.
type pollCodec struct {
	into       **PollBatch
	maxRecords int
}

func (c *pollCodec) Name() string { return theCodec.Name() }

func (c *pollCodec) Marshal(v any) (mem.BufferSlice, error) { return theCodec.Marshal(v) }

func (c *pollCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*pluginv1.PollResponse)
	if !ok {
		return theCodec.Unmarshal(data, v)
	}
	m.Reset()
	// A copy the records alias and keep, as Codec's: never a pooled buffer.
	b := materialize(data)
	pb, ok := fusedPollBatchInto(b, nil, c.maxRecords)
	if !ok {
		// The fused decoder declined before counting: count here.
		pb = tooManyRecords(b, c.maxRecords)
	}
	if pb != nil {
		m.FirstSeq = pb.firstSeq
		*c.into = pb
		return nil
	}
	if !decodePollResponse(b, m) {
		if err := proto.Unmarshal(b, m); err != nil {
			return err
		}
	}
	*c.into = NewPollBatch(m)
	return nil
}

// materialize is data.Materialize without clearing the copy before it is
// filled (bytes.Join does not): for a batch of a megabyte, the clearing
// cost about as much as the copy.
func materialize(data mem.BufferSlice) []byte {
	parts := make([][]byte, len(data))
	for i, b := range data {
		parts[i] = b.ReadOnlyData()
	}
	return bytes.Join(parts, nil)
}

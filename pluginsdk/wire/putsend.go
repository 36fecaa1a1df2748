package wire

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// A Put sent inline (the plugin declined shared memory, or the batch does
// not fit the region) is written the same way: the codec of the call
// writes the batch's bytes straight into its send buffer, instead of
// converting the records into a generated PutRequest (EncodeSinkRecords)
// and encoding that. The bytes are the same; the request message handed to
// the client is an empty placeholder.

// SendPut is the call option that makes a Put carry b. Pass it with an
// empty request:
//
//	client.Put(ctx, &pluginv1.PutRequest{}, wire.SendPut(b))
//
// The call's codec (Codec otherwise) writes b where the empty request
// would go, into one of its kept buffers; what the fused writer refuses
// (invalid UTF-8) goes through b.Proto and protobuf, which reports it as
// before. Any other message of the call is Codec's business.
func SendPut(b *SinkBatch) grpc.CallOption {
	return grpc.ForceCodecV2(&putCodec{b: b})
}

// putCodec is Codec with one request replaced by a SinkBatch.
type putCodec struct {
	b *SinkBatch
}

func (c *putCodec) Name() string { return theCodec.Name() }

func (c *putCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*pluginv1.PutRequest)
	if !ok || len(m.GetSchemas()) != 0 || len(m.GetRecords()) != 0 || m.GetShared() != nil || hasUnknown(m) {
		return theCodec.Marshal(v)
	}
	size := c.b.Size()
	if c.b.Len() == 0 {
		return mem.BufferSlice{mem.SliceBuffer([]byte{})}, nil
	}
	if mem.IsBelowBufferPoolingThreshold(size) {
		out := make([]byte, size)
		if c.b.writeTo(out) {
			return mem.BufferSlice{mem.SliceBuffer(out)}, nil
		}
	} else {
		buf := theCodec.pool.Get(size)
		if c.b.writeTo((*buf)[:size]) {
			return mem.BufferSlice{mem.NewBuffer(buf, theCodec.pool)}, nil
		}
		theCodec.pool.Put(buf)
	}
	req, err := c.b.Proto()
	if err != nil {
		return nil, err
	}
	return theCodec.Marshal(req)
}

func (c *putCodec) Unmarshal(data mem.BufferSlice, v any) error { return theCodec.Unmarshal(data, v) }

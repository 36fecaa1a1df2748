package wire

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// Codec is gRPC's protobuf codec, the same bytes on the wire, with one
// change for the data path's large messages (a Poll answer or a Put of a
// thousand 1 KiB records is over 1 MiB): the buffers they are marshalled
// into and read from are kept for the next message. gRPC's own pool stops
// at 1 MiB; above that it allocates a fresh zeroed buffer, which at a
// message every few milliseconds costs clearing, page faults and garbage
// collections. Smaller messages go through gRPC's pool as before.
//
// The SDK's server uses it (grpc.ForceServerCodecV2) and the clients
// GRPCPlugin hands the worker use it on every call (grpc.ForceCodecV2).
func Codec() encoding.CodecV2 { return theCodec }

var theCodec = &codec{pool: &largePool{}}

type codec struct {
	pool *largePool
}

func (c *codec) Name() string { return "proto" }

func (c *codec) Marshal(v any) (mem.BufferSlice, error) {
	m := messageOf(v)
	if m == nil {
		return nil, fmt.Errorf("proto: cannot marshal %T: not a protobuf message", v)
	}
	// Poll answers and Put requests are written by hand (fastencode.go)
	// when they hold nothing the hand encoder leaves to protobuf.
	if size, ok := fastSize(v); ok {
		var buf *[]byte
		var b []byte
		if mem.IsBelowBufferPoolingThreshold(size) {
			b = make([]byte, size)
		} else {
			buf = c.pool.Get(size)
			b = (*buf)[:size]
		}
		if fastEncode(b, v) {
			if buf == nil {
				return mem.BufferSlice{mem.SliceBuffer(b)}, nil
			}
			return mem.BufferSlice{mem.NewBuffer(buf, c.pool)}, nil
		}
		if buf != nil {
			c.pool.Put(buf)
		}
	}
	// UseCachedSize below relies on this Size call, as in gRPC's codec.
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true}
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := c.pool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		c.pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, c.pool)}, nil
}

func (c *codec) Unmarshal(data mem.BufferSlice, v any) error {
	m := messageOf(v)
	if m == nil {
		return fmt.Errorf("proto: cannot unmarshal into %T: not a protobuf message", v)
	}
	// Poll answers and Put requests are decoded by hand into a copy of the
	// message that they keep (fastdecode.go): their records alias it, so
	// it never goes back to a pool.
	switch m := v.(type) {
	case *pluginv1.PollResponse:
		m.Reset()
		b := materialize(data)
		if decodePollResponse(b, m) {
			return nil
		}
		return proto.Unmarshal(b, m)
	case *pluginv1.PutRequest:
		m.Reset()
		b := materialize(data)
		if decodePutRequest(b, m) {
			return nil
		}
		return proto.Unmarshal(b, m)
	}
	// proto.Unmarshal copies what it keeps, so the buffer is free again
	// once it returns.
	buf := data.MaterializeToBuffer(c.pool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

func messageOf(v any) proto.Message {
	switch v := v.(type) {
	case protoadapt.MessageV2:
		return v
	case protoadapt.MessageV1:
		return protoadapt.MessageV2Of(v)
	}
	return nil
}

// Large buffers: those above gRPC's largest pooled size, kept up to
// largeKeep of them. They are not cleared on reuse: a marshal overwrites
// what it returns and a read fills it.
const (
	largeMin  = 1 << 20
	largeKeep = 4
	largeStep = 64 << 10
)

// largePool is a mem.BufferPool that keeps a few large buffers for good
// (unlike a sync.Pool, which a garbage collection empties) and hands
// smaller sizes to gRPC's default pool.
type largePool struct {
	mu   sync.Mutex
	free []*[]byte
}

func (p *largePool) Get(size int) *[]byte {
	if size <= largeMin {
		return mem.DefaultBufferPool().Get(size)
	}
	p.mu.Lock()
	for i, b := range p.free {
		if cap(*b) >= size {
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.mu.Unlock()
			*b = (*b)[:size]
			return b
		}
	}
	p.mu.Unlock()
	b := make([]byte, size, (size+largeStep-1)/largeStep*largeStep)
	return &b
}

func (p *largePool) Put(b *[]byte) {
	if cap(*b) <= largeMin {
		mem.DefaultBufferPool().Put(b)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < largeKeep {
		p.free = append(p.free, b)
		return
	}
	// Full: keep the larger buffers, which serve more requests.
	small := 0
	for i, f := range p.free {
		if cap(*f) < cap(*p.free[small]) {
			small = i
		}
	}
	if cap(*p.free[small]) < cap(*b) {
		p.free[small] = b
	}
}

// forceCodec is the call option that makes a client call use Codec.
var forceCodec = grpc.ForceCodecV2(theCodec)

// codecConn makes every call on a connection use Codec, unless the call
// names a codec of its own (SendPut): call options apply in order, so
// Codec goes first and the call's own option, later, wins.
type codecConn struct {
	*grpc.ClientConn
}

func (c codecConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return c.ClientConn.Invoke(ctx, method, args, reply, withCodec(opts)...)
}

func (c codecConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.ClientConn.NewStream(ctx, desc, method, withCodec(opts)...)
}

func withCodec(opts []grpc.CallOption) []grpc.CallOption {
	out := make([]grpc.CallOption, 0, 1+len(opts))
	return append(append(out, forceCodec), opts...)
}

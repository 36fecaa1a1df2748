package wire

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// SharedRegion is one process's mapping of the memory a worker shares with
// a task's plugin process (pluginv1.SharedMemory): batches are written into
// it instead of being framed, copied and sent through the gRPC stream.
//
// Which side may touch the region when is the contract's business (the
// comments on PollResponse.shared and PutRequest.shared); SharedRegion only
// keeps its own calls apart and refuses them once the region is unmapped,
// since touching an unmapped region would crash the process.
type SharedRegion struct {
	mu     sync.Mutex
	mem    []byte
	unmap  func([]byte) error
	closed bool
}

// ErrSharedClosed is returned by Place and Take after Close.
var ErrSharedClosed = errors.New("shared memory region is closed")

// NewSharedRegion wraps mem, mapped by the caller; unmap (may be nil)
// releases it on Close. Tests use it with plain memory.
func NewSharedRegion(mem []byte, unmap func([]byte) error) *SharedRegion {
	return &SharedRegion{mem: mem, unmap: unmap}
}

// Size is the region's length in bytes.
func (r *SharedRegion) Size() int { return len(r.mem) }

// Close unmaps the region; later calls fail with ErrSharedClosed.
func (r *SharedRegion) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if r.unmap == nil {
		return nil
	}
	return r.unmap(r.mem)
}

// Place writes v, a *PollResponse or a *PutRequest without its shared
// field, at the start of the region and returns where it is. ok is false
// when it does not fit (or the region is closed): send it inline then.
func (r *SharedRegion) Place(v proto.Message) (ref *pluginv1.SharedBatch, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, false
	}
	if size, fast := fastSize(v); fast {
		if size > len(r.mem) {
			return nil, false
		}
		if fastEncode(r.mem[:size], v) {
			return &pluginv1.SharedBatch{Offset: 0, Length: uint64(size)}, true
		}
	}
	// What the hand encoder leaves to protobuf (unknown fields, invalid
	// UTF-8, ...): protobuf writes it into the region if it fits.
	size := proto.Size(v)
	if size > len(r.mem) {
		return nil, false
	}
	out, err := proto.MarshalOptions{Deterministic: true, UseCachedSize: true}.MarshalAppend(r.mem[:0:size], v)
	if err != nil || len(out) != size || (size > 0 && &out[0] != &r.mem[0]) {
		return nil, false
	}
	return &pluginv1.SharedBatch{Offset: 0, Length: uint64(size)}, true
}

// Take copies the batch ref names out of the region and decodes it into m,
// a *PollResponse or a *PutRequest, which it resets first. The decoded
// records alias the copy, not the region, so they stay valid after the
// region is reused. A reference outside the region is an error naming it.
func (r *SharedRegion) Take(ref *pluginv1.SharedBatch, m proto.Message) error {
	b, err := r.copyOut(ref)
	if err != nil {
		return err
	}
	n := len(b)
	switch m := m.(type) {
	case *pluginv1.PollResponse:
		m.Reset()
		if decodePollResponse(b, m) {
			return nil
		}
	case *pluginv1.PutRequest:
		m.Reset()
		if decodePutRequest(b, m) {
			return nil
		}
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return fmt.Errorf("decode shared batch (%d bytes): %w", n, err)
	}
	return nil
}

// copyOut copies the batch ref names out of the region.
func (r *SharedRegion) copyOut(ref *pluginv1.SharedBatch) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := r.batch(ref)
	if err != nil {
		return nil, err
	}
	return cachedClone(b), nil
}

// copyOutWith copies the batch ref names out of the region with copyOut,
// which returns the copy of what it is given. A reference outside the
// region is an error before copyOut is called.
func (r *SharedRegion) copyOutWith(ref *pluginv1.SharedBatch, copyOut func(b []byte) []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := r.batch(ref)
	if err != nil {
		return nil, err
	}
	return copyOut(b), nil
}

// batch is the part of the region ref names; r.mu is held.
func (r *SharedRegion) batch(ref *pluginv1.SharedBatch) ([]byte, error) {
	if r.closed {
		return nil, ErrSharedClosed
	}
	off, n, size := ref.GetOffset(), ref.GetLength(), uint64(len(r.mem))
	if off > size || n > size-off {
		return nil, fmt.Errorf("shared batch at offset %d, %d bytes long, lies outside the %d-byte shared region", off, n, size)
	}
	return capped(r.mem[off : off+n]), nil
}

// cacheChunk is below the size from which the runtime's memmove on amd64
// switches to non-temporal stores (1 MiB): a batch copied in one piece
// bypasses the cache, and decoding it, right after, reads every byte back
// from memory (measured: 10 MB batches, a third of a noop sink plugin's CPU).
const cacheChunk = 512 << 10

// cachedClone copies b in pieces that stay in the cache for the decode that
// follows. It never returns nil.
func cachedClone(b []byte) []byte {
	// bytes.Join copies piece by piece into memory it does not zero first.
	pieces := make([][]byte, 0, len(b)/cacheChunk+1)
	for rest := b; len(rest) > 0; {
		n := min(len(rest), cacheChunk)
		pieces = append(pieces, rest[:n])
		rest = rest[n:]
	}
	if len(pieces) == 0 {
		return []byte{}
	}
	return bytes.Join(pieces, nil)
}

// spareZeros is where cachedCloneSpare's spare room is copied from.
var spareZeros [64 << 10]byte

// cachedCloneSpare is cachedClone with up to an eighth more capacity
// (at most len(spareZeros)), zeroed, so that the copy's memory holds a
// slightly larger batch when it is reused.
func cachedCloneSpare(b []byte) []byte {
	pieces := make([][]byte, 0, len(b)/cacheChunk+2)
	for rest := b; len(rest) > 0; {
		n := min(len(rest), cacheChunk)
		pieces = append(pieces, rest[:n])
		rest = rest[n:]
	}
	pieces = append(pieces, spareZeros[:min(len(b)/8, len(spareZeros))])
	return bytes.Join(pieces, nil)[:len(b)]
}

// cachedCopy is cachedClone into dst, which is as long as src.
func cachedCopy(dst, src []byte) {
	for len(src) > 0 {
		n := copy(dst, src[:min(len(src), cacheChunk)])
		dst, src = dst[n:], src[n:]
	}
}

// BorrowSinkRecords decodes the Put batch ref names straight from the
// region, without copying it out first, for a sink task that is done with
// its records when its Put returns: their bytes values, keys and header
// values and their raw data alias the region and change when the next
// batch is written there; their strings (topics, header keys, string
// values) are copies, as strings must never change. Batches the fused
// decoder does not read are copied out and decoded the two-step way, as
// TakeSinkRecords would; the errors are TakeSinkRecords'. The region must
// not be closed while the records are in use. Each call decodes into
// memory of its own; BorrowSinkRecordsInto reuses a batch's.
func (r *SharedRegion) BorrowSinkRecords(ref *pluginv1.SharedBatch) ([]*data.SinkRecord, error) {
	return r.BorrowSinkRecordsInto(ref, nil)
}

// TakeSinkRecords copies the Put batch ref names out of the region and
// decodes it straight into sink records (DecodePutBatch): the records
// alias the copy, not the region, so they stay valid after the region is
// reused. The errors are those of Take followed by DecodeSinkRecords: a
// reference outside the region, "decode shared batch" for bytes that are
// not a PutRequest, "decode records" for records that do not convert.
func (r *SharedRegion) TakeSinkRecords(ref *pluginv1.SharedBatch) ([]*data.SinkRecord, error) {
	return r.takeSinkRecords(ref, decodePutBatch)
}

// takeSinkRecords is TakeSinkRecords decoding the copy with decode.
func (r *SharedRegion) takeSinkRecords(ref *pluginv1.SharedBatch, decode func([]byte) ([]*data.SinkRecord, error, error)) ([]*data.SinkRecord, error) {
	b, err := r.copyOut(ref)
	if err != nil {
		return nil, err
	}
	recs, parseErr, err := decode(b)
	if parseErr != nil {
		return nil, fmt.Errorf("decode shared batch (%d bytes): %w", len(b), parseErr)
	}
	if err != nil {
		return nil, fmt.Errorf("decode records: %w", err)
	}
	return recs, nil
}

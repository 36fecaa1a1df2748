//go:build integration && linux

package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The sink handoff floor: what any sink that runs in a process of its own
// must at least do beyond the group baseline, measured with nothing else in
// the way. floor/sink-handoff-pN is baseline/consume-group-pN (the same
// client, the same 50 ms asynchronous commits, the same finish line), except
// that every poll's keys and values are copied into a shared memory mapping,
// another process is told over a pipe where they are, walks them (the
// lengths, and the first byte of each value: what a sink that keeps
// nothing touches) and answers. The mapping is split in two halves, used
// in turn, and a half is written again only once the reader has answered
// for it, so that reading one poll overlaps the copy of the next, as the
// worker's Put overlaps its next poll.
//
// Sluice does all of this and more (converters, its batch encoding, gRPC,
// the SDK's records), so its noop sink cannot get closer to the group
// baseline than this floor does: on a machine where the broker shares the
// cores, the floor's ratio bounds what the architecture can reach there.
func init() {
	// The reading process is this binary started again (startHandoff):
	// it does its one job and exits before the harness would start.
	if os.Getenv(envHandoffReader) != "" {
		if err := handoffReaderMain(); err != nil {
			fmt.Fprintln(os.Stderr, "handoff reader:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	for _, parts := range []int32{1, 6} {
		Register(Benchmark{
			Name:     fmt.Sprintf("floor/sink-handoff-p%d", parts),
			Baseline: fmt.Sprintf("baseline/consume-group-p%d", parts),
			Prepare:  groupsReady(parts),
			Run: func(ctx context.Context, env *BenchEnv) (Result, error) {
				return handoffFloor(ctx, env, parts)
			},
		})
	}
}

// handoffHalf is the size of each half of the shared mapping: more than
// one poll brings (at most 1 MiB per partition by default).
const handoffHalf = 32 << 20

// envHandoffReader makes the bench binary the reading process (see
// handoffReaderMain) instead of the benchmark harness.
const envHandoffReader = "SLUICE_BENCH_HANDOFF_READER"

// handoffMsg is what the writer sends per poll: the half, the record
// count and the bytes written; the reader answers with 8 bytes (the sum of
// what it read, so that the walk cannot be optimised away).
const handoffMsgLen = 16

func handoffFloor(ctx context.Context, env *BenchEnv, parts int32) (Result, error) {
	h, err := startHandoff()
	if err != nil {
		return Result{}, err
	}
	defer h.close()
	res, err := groupBaseline(ctx, env, parts, "floor/sink-handoff", h.hand)
	if err != nil {
		return Result{}, err
	}
	if err := h.finish(); err != nil {
		return Result{}, err
	}
	if h.read != res.Records {
		return Result{}, fmt.Errorf("the reader walked %d records, the consumer polled %d", h.read, res.Records)
	}
	return res, nil
}

// handoff is the writing side.
type handoff struct {
	mem    []byte
	cmd    *exec.Cmd
	toR    *os.File // messages to the reader
	fromR  *os.File // its answers
	queue  []int    // the halves the reader has not answered for, oldest first
	next   int      // the half the next poll goes into
	read   int      // records the reader answered for
	sum    uint64   // the sums it answered with
	msg    [handoffMsgLen]byte
	answer [8]byte
}

func startHandoff() (*handoff, error) {
	f, err := os.CreateTemp("/dev/shm", "sluice-bench-handoff-")
	if err != nil {
		return nil, fmt.Errorf("handoff mapping: %w", err)
	}
	defer f.Close()
	os.Remove(f.Name()) // the descriptors keep it
	if err := f.Truncate(2 * handoffHalf); err != nil {
		return nil, fmt.Errorf("handoff mapping: %w", err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 2*handoffHalf, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map handoff region: %w", err)
	}
	h := &handoff{mem: mem}
	rIn, wIn, err := os.Pipe()
	if err != nil {
		h.close()
		return nil, err
	}
	rOut, wOut, err := os.Pipe()
	if err != nil {
		rIn.Close()
		wIn.Close()
		h.close()
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		h.close()
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envHandoffReader+"=1")
	cmd.ExtraFiles = []*os.File{f, rIn, wOut} // fds 3, 4, 5
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		h.close()
		return nil, fmt.Errorf("start handoff reader: %w", err)
	}
	rIn.Close()
	wOut.Close()
	h.cmd, h.toR, h.fromR = cmd, wIn, rOut
	return h, nil
}

// hand copies one poll's records into the next half and tells the reader,
// after waiting for the reader to be done with that half.
func (h *handoff) hand(fs kgo.Fetches) error {
	if fs.NumRecords() == 0 {
		return nil
	}
	half := h.next
	h.next = 1 - h.next
	for slices.Contains(h.queue, half) {
		if err := h.await(); err != nil {
			return err
		}
	}
	base := half * handoffHalf
	p, n := base, 0
	var over error
	fs.EachRecord(func(r *kgo.Record) {
		need := 8 + len(r.Key) + len(r.Value)
		if over != nil || p+need > base+handoffHalf {
			over = fmt.Errorf("a poll of more than %d bytes", handoffHalf)
			return
		}
		binary.LittleEndian.PutUint32(h.mem[p:], uint32(len(r.Key)))
		binary.LittleEndian.PutUint32(h.mem[p+4:], uint32(len(r.Value)))
		p += 8
		p += copy(h.mem[p:], r.Key)
		p += copy(h.mem[p:], r.Value)
		n++
	})
	if over != nil {
		return over
	}
	binary.LittleEndian.PutUint32(h.msg[0:], uint32(half))
	binary.LittleEndian.PutUint32(h.msg[4:], uint32(n))
	binary.LittleEndian.PutUint64(h.msg[8:], uint64(p-base))
	if _, err := h.toR.Write(h.msg[:]); err != nil {
		return fmt.Errorf("tell the handoff reader: %w", err)
	}
	h.queue = append(h.queue, half)
	return nil
}

// await reads the reader's answer for the oldest half in use: halves are
// answered in the order they were handed.
func (h *handoff) await() error {
	if _, err := io.ReadFull(h.fromR, h.answer[:]); err != nil {
		return fmt.Errorf("answer of the handoff reader: %w", err)
	}
	h.read += int(binary.LittleEndian.Uint32(h.answer[:4]))
	h.sum += uint64(binary.LittleEndian.Uint32(h.answer[4:]))
	h.queue = h.queue[1:]
	return nil
}

// finish waits for the answers still due, then for the reader to exit.
func (h *handoff) finish() error {
	for len(h.queue) > 0 {
		if err := h.await(); err != nil {
			return err
		}
	}
	h.toR.Close()
	h.toR = nil
	if err := h.cmd.Wait(); err != nil {
		return fmt.Errorf("handoff reader: %w", err)
	}
	h.cmd = nil
	return nil
}

func (h *handoff) close() {
	if h.toR != nil {
		h.toR.Close()
	}
	if h.cmd != nil {
		h.cmd.Process.Kill()
		h.cmd.Wait()
	}
	if h.fromR != nil {
		h.fromR.Close()
	}
	if h.mem != nil {
		syscall.Munmap(h.mem)
	}
}

// handoffReaderMain is the reading process: it walks each poll it is told
// of and answers with the record count (low 4 bytes) and a sum of what it
// read (high 4 bytes), until its input closes.
func handoffReaderMain() error {
	region, in, out := os.NewFile(3, "region"), os.NewFile(4, "in"), os.NewFile(5, "out")
	mem, err := syscall.Mmap(int(region.Fd()), 0, 2*handoffHalf, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map handoff region: %w", err)
	}
	var msg [handoffMsgLen]byte
	var answer [8]byte
	for {
		if _, err := io.ReadFull(in, msg[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		half := int(binary.LittleEndian.Uint32(msg[0:]))
		n := int(binary.LittleEndian.Uint32(msg[4:]))
		size := int(binary.LittleEndian.Uint64(msg[8:]))
		b := mem[half*handoffHalf : half*handoffHalf+size]
		var sum uint32
		for p, i := 0, 0; i < n; i++ {
			k := int(binary.LittleEndian.Uint32(b[p:]))
			v := int(binary.LittleEndian.Uint32(b[p+4:]))
			p += 8 + k
			if v > 0 {
				sum += uint32(b[p])
			}
			p += v
		}
		binary.LittleEndian.PutUint32(answer[:4], uint32(n))
		binary.LittleEndian.PutUint32(answer[4:], sum)
		if _, err := out.Write(answer[:]); err != nil {
			return err
		}
	}
}

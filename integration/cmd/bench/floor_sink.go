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
	"strconv"
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
// worker's Put overlaps its next poll. The reader is started, and the
// mapping allocated and mapped in both processes, before the clock starts
// (startFloorProc); the reader's CPU and peak RSS are reported as
// "handoff", its start-up left out.
//
// Sluice does all of this and more (converters, its batch encoding, gRPC,
// the SDK's records), so its noop sink cannot get closer to the group
// baseline than this floor does: on a machine where the broker shares the
// cores, the floor's ratio bounds what the architecture can reach there.
func init() {
	runAsFloorChild(envHandoffReader, "handoff reader", handoffReaderMain)
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
// one poll brings (at most 1 MiB per partition by default, so 6 MiB at six
// partitions). Both halves are mapped in full before the clock starts (see
// startFloorProc) and count in both processes' resident sets, so they are
// not made larger than that needs.
const handoffHalf = 16 << 20

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
	defer h.close(true)
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
	res.CPUSeconds, res.PeakRSSBytes = h.usage()
	return res, nil
}

// floorProc is the other process of a floor: this binary started again,
// sharing a mapping (its fd 3) and a pipe each way (fds 4 and 5) with this
// one.
type floorProc struct {
	what string
	mem  []byte
	cmd  *exec.Cmd
	to   *os.File // requests to it
	from *os.File // its answers
	// readyTicks is the CPU it had used when it said it was ready: its
	// start-up, which usage leaves out.
	readyTicks int64
}

// startFloorProc starts the other process of a floor with env=value in its
// environment and a shared mapping of size bytes, and returns once it has
// written its ready byte: none of its start-up falls in the timed window.
func startFloorProc(what, env, value string, size int) (_ *floorProc, err error) {
	f, err := os.CreateTemp("/dev/shm", "sluice-bench-"+what+"-")
	if err != nil {
		return nil, fmt.Errorf("%s mapping: %w", what, err)
	}
	defer f.Close()
	os.Remove(f.Name()) // the descriptors keep it
	// Allocated (and zeroed) now rather than page by page at the first
	// touch, in the timed window; a full /dev/shm is an error here rather
	// than a SIGBUS there.
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(size)); err != nil {
		return nil, fmt.Errorf("reserve %d bytes of /dev/shm for the %s mapping: %w", size, what, err)
	}
	mem, err := mapFloor(int(f.Fd()), size, syscall.PROT_READ|syscall.PROT_WRITE)
	if err != nil {
		return nil, fmt.Errorf("map %s region: %w", what, err)
	}
	p := &floorProc{what: what, mem: mem}
	// theirs are the child's ends of the pipes: closed here as soon as it
	// has them (or could not start), so that its exit, even before it is
	// ready, shows here as the end of its answers.
	var theirs []*os.File
	closeTheirs := func() {
		for _, f := range theirs {
			f.Close()
		}
		theirs = nil
	}
	defer func() {
		closeTheirs()
		if err != nil {
			p.close(true)
		}
	}()
	rIn, wIn, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%s pipe: %w", what, err)
	}
	theirs, p.to = append(theirs, rIn), wIn
	rOut, wOut, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%s pipe: %w", what, err)
	}
	theirs, p.from = append(theirs, wOut), rOut
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start %s process: %w", what, err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), env+"="+value)
	cmd.ExtraFiles = []*os.File{f, rIn, wOut} // fds 3, 4, 5
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s process: %w", what, err)
	}
	p.cmd = cmd
	closeTheirs()
	var ready [1]byte
	if _, err := io.ReadFull(p.from, ready[:]); err != nil {
		return nil, fmt.Errorf("%s process did not start: %w", what, err)
	}
	if t, ok := readProcTimes(strconv.Itoa(cmd.Process.Pid)); ok {
		p.readyTicks = t.own
	}
	return p, nil
}

// runAsFloorChild makes this process the other process of a floor when env
// is set: that is this binary started again (startFloorProc), which does
// its one job, main, and exits before the harness would start.
func runAsFloorChild(env, what string, main func() error) {
	if os.Getenv(env) == "" {
		return
	}
	if err := main(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// mapFloor maps size bytes of the shared file fd with every page mapped
// up front (MAP_POPULATE), so that neither process takes a page fault per
// page while timed.
func mapFloor(fd, size, prot int) ([]byte, error) {
	return syscall.Mmap(fd, 0, size, prot, syscall.MAP_SHARED|syscall.MAP_POPULATE)
}

// floorChild is the other process's side of startFloorProc: its mapping
// and pipes. It says it is ready itself (ready), once it has made what it
// needs.
func floorChild(size, prot int) (mem []byte, in, out *os.File, err error) {
	region, in, out := os.NewFile(3, "region"), os.NewFile(4, "in"), os.NewFile(5, "out")
	mem, err = mapFloor(int(region.Fd()), size, prot)
	region.Close()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("map the shared region: %w", err)
	}
	return mem, in, out, nil
}

// ready tells startFloorProc that the clock may start.
func ready(out *os.File) error {
	if _, err := out.Write([]byte{1}); err != nil {
		return fmt.Errorf("say ready: %w", err)
	}
	return nil
}

// finish closes the requests and waits for the process to exit.
func (p *floorProc) finish() error {
	p.to.Close()
	p.to = nil
	if err := p.cmd.Wait(); err != nil {
		return fmt.Errorf("%s process: %w", p.what, err)
	}
	return nil
}

// usage is, once finish has waited for the process, the CPU it used after
// it was ready and its peak resident set, as Result's CPUSeconds and
// PeakRSSBytes: its start-up (for the source, making the payload) is no
// part of the floor, as the baselines' payload is made before any window.
// The CPU is exact to a clock tick (10 ms).
func (p *floorProc) usage() (map[string]float64, map[string]int64) {
	st := p.cmd.ProcessState
	if st == nil {
		return nil, nil
	}
	cpu := max(0, (st.UserTime()+st.SystemTime()).Seconds()-ticksToSeconds(p.readyTicks))
	rss := map[string]int64{}
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		rss["handoff"] = ru.Maxrss << 10 // KiB on Linux
	}
	return map[string]float64{"handoff": cpu}, rss
}

// close ends the process if it still runs and closes the pipes; it unmaps
// the region only if unmap (nothing of this process still points into
// it).
func (p *floorProc) close(unmap bool) {
	if p.to != nil {
		p.to.Close()
		p.to = nil
	}
	if p.cmd != nil && p.cmd.ProcessState == nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
	if p.from != nil {
		p.from.Close()
		p.from = nil
	}
	if p.mem != nil && unmap {
		syscall.Munmap(p.mem)
		p.mem = nil
	}
}

// handoff is the writing side.
type handoff struct {
	*floorProc
	queue  []int  // the halves the reader has not answered for, oldest first
	next   int    // the half the next poll goes into
	read   int    // records the reader answered for
	sum    uint64 // the sums it answered with
	msg    [handoffMsgLen]byte
	answer [8]byte
}

func startHandoff() (*handoff, error) {
	p, err := startFloorProc("handoff", envHandoffReader, "1", 2*handoffHalf)
	if err != nil {
		return nil, err
	}
	return &handoff{floorProc: p}, nil
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
	if _, err := h.to.Write(h.msg[:]); err != nil {
		return fmt.Errorf("tell the handoff reader: %w", err)
	}
	h.queue = append(h.queue, half)
	return nil
}

// await reads the reader's answer for the oldest half in use: halves are
// answered in the order they were handed.
func (h *handoff) await() error {
	if _, err := io.ReadFull(h.from, h.answer[:]); err != nil {
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
	return h.floorProc.finish()
}

// handoffReaderMain is the reading process: it walks each poll it is told
// of and answers with the record count (low 4 bytes) and a sum of what it
// read (high 4 bytes), until its input closes.
func handoffReaderMain() error {
	mem, in, out, err := floorChild(2*handoffHalf, syscall.PROT_READ)
	if err != nil {
		return err
	}
	if err := ready(out); err != nil {
		return err
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

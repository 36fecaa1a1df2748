//go:build integration && linux

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/integration/itest"
)

// The source handoff floor: what any source whose records come from a
// process of its own must at least do beyond baseline/produce-pN.
// floor/source-handoff-pN is that baseline's producer (the same client and
// payload), except that the records come from another process: asked for a
// batch, it writes the next sourceBatch payload records into a free slot of
// a shared memory mapping and answers with their count, and the producer
// produces them straight from the mapping (no copy on its side: less than
// the worker does, which copies each answer out). A slot is asked to be
// filled again only once every record in it is acknowledged, and one batch
// is always being filled while the last ones are produced, as the worker
// polls while it produces. The other process is started, has made its
// payload and mapped the slots before the clock starts (startFloorProc);
// its CPU and peak RSS are reported as "handoff", its start-up left out
// as the baseline's payload is made before any window.
//
// Sluice's datagen pipeline does all of this and more (generating the
// records, the SDK's and the worker's batch encodings, gRPC, converters,
// offsets), so it cannot get closer to the producer baseline than this
// floor does on the same machine.
func init() {
	runAsFloorChild(envSourceReader, "source handoff", sourceHandoffMain)
	for _, parts := range []int32{1, 6} {
		Register(Benchmark{
			Name:     fmt.Sprintf("floor/source-handoff-p%d", parts),
			Baseline: fmt.Sprintf("baseline/produce-p%d", parts),
			Run: func(ctx context.Context, env *BenchEnv) (Result, error) {
				return sourceHandoffFloor(ctx, env, parts)
			},
		})
	}
}

const (
	// envSourceReader makes the bench binary the process that fills the
	// slots (sourceHandoffMain); its value is the number of records.
	envSourceReader = "SLUICE_BENCH_SOURCE_HANDOFF"
	// sourceBatch is the records per batch: the worker's default Poll
	// answer (and datagen's batch.size).
	sourceBatch = 1000
	// sourceSlot is a slot's size: a batch of payload records with their
	// lengths, and room to spare.
	sourceSlot = 2 << 20
	// sourceSlots is enough slots for the producer's buffer (10,000
	// records by default) and two batches more.
	sourceSlots = 16
)

func sourceHandoffFloor(ctx context.Context, env *BenchEnv, parts int32) (Result, error) {
	if env.Records > env.Payload.Len() {
		return Result{}, fmt.Errorf("payload has %d records, %d wanted", env.Payload.Len(), env.Records)
	}
	topic, err := env.NewTopic(ctx, fmt.Sprintf("source-handoff-p%d", parts), parts)
	if err != nil {
		return Result{}, err
	}
	defer env.Discard(ctx, topic)
	s, err := startSourceHandoff(env.Records)
	if err != nil {
		return Result{}, err
	}
	// After cl.Close (deferred below, so run before): the client's
	// records point into the mapping until their promises are called.
	defer s.close()
	cl, err := env.NewClient(kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	res, err := s.produce(ctx, cl, topic, env.Records)
	if err != nil {
		return Result{}, err
	}
	if err := s.finish(); err != nil {
		return Result{}, err
	}
	// The topic must hold exactly what the baseline's producer writes:
	// that many records, the payload's.
	if err := holdsExactly(ctx, kadm.NewClient(cl), topic, env.Records); err != nil {
		return Result{}, err
	}
	one, err := checkSample(ctx, cl, topic, env.Payload.ValueSize)
	if err != nil {
		return Result{}, err
	}
	if err := checkPayloadSample(ctx, cl, topic, env.Payload); err != nil {
		return Result{}, err
	}
	res.Bytes = one * int64(env.Records)
	res.CPUSeconds, res.PeakRSSBytes = s.usage()
	return res, nil
}

// checkPayloadSample reads the first records of topic and checks that each
// is the payload record its key names.
func checkPayloadSample(ctx context.Context, cl *kgo.Client, topic string, p *Payload) error {
	recs, err := itest.ReadTopic(ctx, cl, topic, 2000, time.Minute)
	if err != nil {
		return err
	}
	for _, r := range recs {
		i, err := strconv.Atoi(strings.TrimPrefix(string(r.Key), "key-"))
		if err != nil || i < 0 || i >= p.Len() || !bytes.Equal(r.Key, p.Key(i)) || !bytes.Equal(r.Value, p.Value(i)) {
			return fmt.Errorf("%s: record %q at %d/%d is not the payload's", topic, r.Key, r.Partition, r.Offset)
		}
	}
	return nil
}

// sourceHandoff is the producing side.
type sourceHandoff struct {
	*floorProc
	// unsettled counts the records given to the client whose promise has
	// not been called: until it is 0 the client may still read the
	// mapping (a produce request is written from the records' slices),
	// so close leaves it mapped.
	unsettled atomic.Int64
}

func startSourceHandoff(records int) (*sourceHandoff, error) {
	// The other process makes its payload before it says it is ready, so
	// the clock starts with the records.
	p, err := startFloorProc("source", envSourceReader, strconv.Itoa(records), sourceSlots*sourceSlot)
	if err != nil {
		return nil, err
	}
	return &sourceHandoff{floorProc: p}, nil
}

// close ends the other process and unmaps the region, unless the client
// still holds records in it (an error ended produce before every ack): a
// mapping left behind costs memory, one taken from under the client's
// writes a SIGSEGV of the harness.
func (s *sourceHandoff) close() {
	s.floorProc.close(s.unsettled.Load() == 0)
}

// produce asks for batches and produces them from the mapping until the
// other process has given every record, then waits for every ack; the time
// covers the first request to the last ack.
func (s *sourceHandoff) produce(ctx context.Context, cl *kgo.Client, topic string, want int) (Result, error) {
	free := make(chan int, sourceSlots)
	for i := range sourceSlots {
		free <- i
	}
	var pending [sourceSlots]atomic.Int64
	var (
		failed   atomic.Int64
		errOnce  sync.Once
		firstErr error
	)
	type filled struct{ slot, n int }
	batches := make(chan filled, sourceSlots)
	fillErr := make(chan error, 1)
	start := time.Now()
	// The requester keeps one fill under way while the batches before it
	// are produced.
	go func() {
		defer close(batches)
		var req [4]byte
		var ans [8]byte
		for {
			var slot int
			select {
			case slot = <-free:
			case <-ctx.Done():
				fillErr <- ctx.Err()
				return
			}
			binary.LittleEndian.PutUint32(req[:], uint32(slot))
			if _, err := s.to.Write(req[:]); err != nil {
				fillErr <- fmt.Errorf("ask for a batch: %w", err)
				return
			}
			if _, err := io.ReadFull(s.from, ans[:]); err != nil {
				fillErr <- fmt.Errorf("read a batch's answer: %w", err)
				return
			}
			if got := int(binary.LittleEndian.Uint32(ans[:4])); got != slot {
				fillErr <- fmt.Errorf("asked to fill slot %d, answered for %d", slot, got)
				return
			}
			n := int(binary.LittleEndian.Uint32(ans[4:]))
			if n == 0 {
				fillErr <- nil
				return
			}
			batches <- filled{slot, n}
		}
	}()
	produced := 0
	for b := range batches {
		base := b.slot * sourceSlot
		pending[b.slot].Store(int64(b.n))
		slot := b.slot
		onAck := func(_ *kgo.Record, err error) {
			s.unsettled.Add(-1)
			if err != nil {
				failed.Add(1)
				errOnce.Do(func() { firstErr = err })
			}
			if pending[slot].Add(-1) == 0 {
				free <- slot
			}
		}
		p := base
		for range b.n {
			k := int(binary.LittleEndian.Uint32(s.mem[p:]))
			v := int(binary.LittleEndian.Uint32(s.mem[p+4:]))
			p += 8
			key := s.mem[p : p+k : p+k]
			p += k
			value := s.mem[p : p+v : p+v]
			p += v
			s.unsettled.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Key: key, Value: value}, onAck)
		}
		produced += b.n
	}
	if err := <-fillErr; err != nil {
		return Result{}, err
	}
	if err := cl.Flush(ctx); err != nil {
		return Result{}, fmt.Errorf("flush %s: %w", topic, err)
	}
	secs := time.Since(start).Seconds()
	if f := failed.Load(); f > 0 {
		return Result{}, fmt.Errorf("produce to %s: %d of %d records failed, first: %w", topic, f, want, firstErr)
	}
	if produced != want {
		return Result{}, fmt.Errorf("the source handoff gave %d records, want %d", produced, want)
	}
	return Result{Records: produced, Seconds: secs}, nil
}

// sourceHandoffMain is the process that fills the slots: the harness's
// payload (the same seed, so the same records the baseline produces),
// sourceBatch records a request, in order, until all were given; then it
// answers 0 records, and exits when its input closes.
func sourceHandoffMain() error {
	records, err := strconv.Atoi(os.Getenv(envSourceReader))
	if err != nil || records <= 0 {
		return fmt.Errorf("%s=%q: want a positive record count", envSourceReader, os.Getenv(envSourceReader))
	}
	mem, in, out, err := floorChild(sourceSlots*sourceSlot, syscall.PROT_READ|syscall.PROT_WRITE)
	if err != nil {
		return err
	}
	payload := NewPayload(records, 1)
	if err := ready(out); err != nil {
		return err
	}
	var req [4]byte
	var ans [8]byte
	next := 0
	for {
		if _, err := io.ReadFull(in, req[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		slot := int(binary.LittleEndian.Uint32(req[:]))
		if slot < 0 || slot >= sourceSlots {
			return fmt.Errorf("asked to fill slot %d of %d", slot, sourceSlots)
		}
		p, n := slot*sourceSlot, 0
		for ; n < sourceBatch && next < records; n, next = n+1, next+1 {
			k, v := payload.Key(next), payload.Value(next)
			if p+8+len(k)+len(v) > (slot+1)*sourceSlot {
				return fmt.Errorf("%d records of the payload overflow a slot of %d bytes", sourceBatch, sourceSlot)
			}
			binary.LittleEndian.PutUint32(mem[p:], uint32(len(k)))
			binary.LittleEndian.PutUint32(mem[p+4:], uint32(len(v)))
			p += 8
			p += copy(mem[p:], k)
			p += copy(mem[p:], v)
		}
		binary.LittleEndian.PutUint32(ans[:4], uint32(slot))
		binary.LittleEndian.PutUint32(ans[4:], uint32(n))
		if _, err := out.Write(ans[:]); err != nil {
			return err
		}
	}
}

//go:build integration && linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchesOf is one poll's fetches holding recs, on one partition.
func fetchesOf(recs []*kgo.Record) kgo.Fetches {
	return kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "t", Partitions: []kgo.FetchPartition{{Records: recs}}}}}}
}

// The reading process walks every record handed to it, at the places the
// writer put them, however many times the two halves are reused; a half
// is never handed again before the reader has answered for it.
func TestSinkHandoffReaderWalksEveryRecord(t *testing.T) {
	h, err := startHandoff()
	if err != nil {
		t.Fatal(err)
	}
	defer h.close(true)
	var want, wantSum uint64
	for poll := range 7 {
		var recs []*kgo.Record
		for i := range 300 + poll*50 {
			// Keys of varying length and some empty values move the
			// records off any fixed stride.
			v := bytes.Repeat([]byte{byte(poll*7 + i)}, (i*37)%1500)
			recs = append(recs, &kgo.Record{Key: bytes.Repeat([]byte{'k'}, i%9), Value: v})
			if len(v) > 0 {
				wantSum += uint64(v[0])
			}
			want++
		}
		if err := h.hand(fetchesOf(recs)); err != nil {
			t.Fatal(err)
		}
		if len(h.queue) > 2 || len(h.queue) == 2 && h.queue[0] == h.queue[1] {
			t.Fatalf("after poll %d the halves awaiting an answer are %v", poll, h.queue)
		}
	}
	if err := h.hand(fetchesOf(nil)); err != nil {
		t.Fatal(err)
	}
	if err := h.finish(); err != nil {
		t.Fatal(err)
	}
	if uint64(h.read) != want || h.sum != wantSum {
		t.Fatalf("the reader walked %d records summing %d, want %d summing %d", h.read, h.sum, want, wantSum)
	}
	cpu, rss := h.usage()
	if _, ok := cpu["handoff"]; !ok || rss["handoff"] <= 0 {
		t.Fatalf("the reader's usage: cpu %v, peak rss %v", cpu, rss)
	}
}

// mappingRSS is the resident size of the mapping of pid ("self" for this
// process) whose smaps header matches, and whether there is one.
func mappingRSS(t *testing.T, pid string, match func(header string) bool) (int64, bool) {
	t.Helper()
	f, err := os.Open("/proc/" + pid + "/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if k, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(k, " ") {
			// A field of the current mapping ("Rss:", "VmFlags:").
			if rest, ok := strings.CutPrefix(line, "Rss:"); in && ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err != nil {
					t.Fatalf("smaps of %s: %q: %v", pid, line, err)
				}
				return kb << 10, true
			}
			continue
		}
		in = match(line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return 0, false
}

// at matches the smaps header of the mapping that starts at mem.
func at(mem []byte) func(string) bool {
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
	return func(h string) bool { return strings.HasPrefix(h, start) }
}

// named matches the smaps headers of mappings of /dev/shm files whose name
// starts with prefix.
func named(prefix string) func(string) bool {
	return func(h string) bool { return strings.Contains(h, " /dev/shm/"+prefix) }
}

// Both floors' other processes have started, mapped the region and every
// page of it, on both sides, by the time their start returns: none of that
// is left to the timed window (a page fault per page, a process start on
// the cores the broker shares).
func TestFloorProcsAreReadyAndMappedBeforeTheClock(t *testing.T) {
	check := func(t *testing.T, p *floorProc, prefix string, size int) {
		if got, ok := mappingRSS(t, "self", at(p.mem)); !ok || got != int64(size) {
			t.Errorf("this process has %d of the %d bytes of its mapping resident (mapped: %v)", got, size, ok)
		}
		pid := strconv.Itoa(p.cmd.Process.Pid)
		if got, ok := mappingRSS(t, pid, named(prefix)); !ok || got != int64(size) {
			t.Errorf("the other process has %d of the %d bytes of its mapping resident (mapped: %v)", got, size, ok)
		}
	}
	t.Run("sink", func(t *testing.T) {
		h, err := startHandoff()
		if err != nil {
			t.Fatal(err)
		}
		defer h.close(true)
		check(t, h.floorProc, "sluice-bench-handoff-", 2*handoffHalf)
	})
	t.Run("source", func(t *testing.T) {
		s, err := startSourceHandoff(2500)
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		check(t, s.floorProc, "sluice-bench-source-", sourceSlots*sourceSlot)
	})
}

// A process that fails before it is ready makes its start fail: it does not
// wait for a ready byte that cannot come.
func TestFloorProcThatFailsToStartIsAnError(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		// The filling process refuses a count of 0 before it is ready.
		s, err := startSourceHandoff(0)
		if err == nil {
			s.close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("started a source handoff of 0 records")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the start still waits for a process that has exited")
	}
}

// The filling process gives the harness's payload, in order, a batch a
// request, and then no more.
func TestSourceHandoffGivesThePayloadInOrder(t *testing.T) {
	const n = 2500
	s, err := startSourceHandoff(n)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	payload := NewPayload(n, 1)
	next := 0
	var req [4]byte
	var ans [8]byte
	for i := 0; ; i++ {
		slot := i % sourceSlots
		binary.LittleEndian.PutUint32(req[:], uint32(slot))
		if _, err := s.to.Write(req[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(s.from, ans[:]); err != nil {
			t.Fatal(err)
		}
		if got := int(binary.LittleEndian.Uint32(ans[:4])); got != slot {
			t.Fatalf("answer for slot %d, asked %d", got, slot)
		}
		count := int(binary.LittleEndian.Uint32(ans[4:]))
		if count == 0 {
			break
		}
		if want := min(sourceBatch, n-next); count != want {
			t.Fatalf("batch %d holds %d records, want %d", i, count, want)
		}
		p := slot * sourceSlot
		for range count {
			k := int(binary.LittleEndian.Uint32(s.mem[p:]))
			v := int(binary.LittleEndian.Uint32(s.mem[p+4:]))
			p += 8
			if !bytes.Equal(s.mem[p:p+k], payload.Key(next)) || !bytes.Equal(s.mem[p+k:p+k+v], payload.Value(next)) {
				t.Fatalf("record %d differs from the payload's", next)
			}
			p += k + v
			next++
		}
	}
	if next != n {
		t.Fatalf("given %d records, want %d", next, n)
	}
	if err := s.finish(); err != nil {
		t.Fatal(err)
	}
}

// produceClient is a client of c as the floor's (uncompressed).
func produceClient(t *testing.T, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerBatchCompression(kgo.NoCompression())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// The producer gives the client exactly the payload, each record once and
// in order, though every slot is filled again (more batches than slots)
// while the batches before are produced; at the end every record is
// settled and the region unmapped.
func TestSourceHandoffProducesThePayload(t *testing.T) {
	const n = (sourceSlots+2)*sourceBatch - 300
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := produceClient(t, c)
	defer cl.Close()
	s, err := startSourceHandoff(n)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.produce(ctx, cl, "t", n)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.finish(); err != nil {
		t.Fatal(err)
	}
	if res.Records != n || res.Seconds <= 0 {
		t.Fatalf("result %+v, want %d records", res, n)
	}
	payload := NewPayload(n, 1)
	rd, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	seen := make([]bool, n)
	last := map[int32]int{} // the last index read on each partition
	for got := 0; got < n; {
		fs := rd.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			i, err := strconv.Atoi(strings.TrimPrefix(string(r.Key), "key-"))
			if err != nil || i < 0 || i >= n || !bytes.Equal(r.Key, payload.Key(i)) || !bytes.Equal(r.Value, payload.Value(i)) {
				t.Fatalf("record %q on partition %d is not the payload's", r.Key, r.Partition)
			}
			if seen[i] {
				t.Fatalf("record %d twice", i)
			}
			if l, ok := last[r.Partition]; ok && i < l {
				t.Fatalf("record %d after record %d on partition %d", i, l, r.Partition)
			}
			seen[i], last[r.Partition] = true, i
		})
	}
	if u := s.unsettled.Load(); u != 0 {
		t.Fatalf("%d records unsettled after the flush", u)
	}
	s.close()
	if _, ok := mappingRSS(t, "self", named("sluice-bench-source-")); ok {
		t.Fatal("the region is still mapped after close")
	}
}

// When produce fails with records the client still holds (here: the broker
// does not answer, the context ends), close leaves the region mapped until
// the client is done with them; then it unmaps it.
func TestSourceHandoffKeepsTheRegionForUnsettledRecords(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release()
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { <-hold })
		return nil, nil, false
	})
	cl := produceClient(t, c)
	defer cl.Close()
	const n = 4 * sourceBatch
	s, err := startSourceHandoff(n)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	mem := s.mem
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := s.produce(ctx, cl, "t", n); err == nil {
		t.Fatal("produce succeeded with the broker not answering")
	}
	if s.unsettled.Load() == 0 {
		t.Fatal("no record is unsettled: the test holds none in the client")
	}
	s.close()
	if _, ok := mappingRSS(t, "self", at(mem)); !ok {
		t.Fatal("close unmapped the region while the client still held records in it")
	}
	cl.Close()
	release()
	for deadline := time.Now().Add(10 * time.Second); s.unsettled.Load() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d records still unsettled after the client closed", s.unsettled.Load())
		}
	}
	s.close()
	if _, ok := mappingRSS(t, "self", at(mem)); ok {
		t.Fatal("the region is still mapped once every record settled")
	}
}

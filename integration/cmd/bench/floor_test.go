//go:build integration && linux

package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchesOf is one poll's fetches holding recs, on one partition.
func fetchesOf(recs []*kgo.Record) kgo.Fetches {
	return kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "t", Partitions: []kgo.FetchPartition{{Records: recs}}}}}}
}

// The reading process walks every record handed to it, at the places the
// writer put them, however many times the two halves are reused.
func TestSinkHandoffReaderWalksEveryRecord(t *testing.T) {
	h, err := startHandoff()
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
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
		if _, err := s.toF.Write(req[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(s.fromF, ans[:]); err != nil {
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

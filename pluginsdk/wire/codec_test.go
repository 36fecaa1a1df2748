package wire

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

func pollAnswer(records, size int, fill byte) *pluginv1.PollResponse {
	resp := &pluginv1.PollResponse{FirstSeq: 7}
	for i := range records {
		v := bytes.Repeat([]byte{fill + byte(i)}, size)
		resp.Records = append(resp.Records, &pluginv1.SourceRecord{Topic: "t", Value: &pluginv1.Data{Kind: &pluginv1.Data_Raw{Raw: v}}})
	}
	return resp
}

// The codec writes exactly protobuf's bytes and reads them back, for small
// messages and for large ones whose buffers it reuses, and a reused buffer
// holds nothing of the previous message.
func TestCodecRoundTripsWithReusedBuffers(t *testing.T) {
	c := Codec()
	for round, tc := range []struct{ records, size int }{{3, 10}, {1500, 1024}, {1200, 1024}, {2000, 1024}, {1100, 1000}} {
		in := pollAnswer(tc.records, tc.size, byte(round))
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := c.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := bs.Materialize(); !bytes.Equal(got, want) {
			t.Fatalf("round %d: codec wrote %d bytes unlike protobuf's %d", round, len(got), len(want))
		}
		var out pluginv1.PollResponse
		err = c.Unmarshal(bs, &out)
		bs.Free()
		if err != nil {
			t.Fatal(err)
		}
		// What was read must not alias the buffer now returned to the pool:
		// marshal something else over it and compare again.
		junk, _ := c.Marshal(pollAnswer(tc.records, tc.size, 0xEE))
		junk.Free()
		if !proto.Equal(&out, in) {
			t.Fatalf("round %d: read back a different message", round)
		}
	}
	if n := len(theCodec.pool.free); n == 0 || n > largeKeep {
		t.Fatalf("%d large buffers kept, want 1..%d", n, largeKeep)
	}
}

func TestLargePoolKeepsTheLargestBuffers(t *testing.T) {
	p := &largePool{}
	var bufs []*[]byte
	for i := range largeKeep + 2 {
		bufs = append(bufs, p.Get(largeMin+1+i*largeStep))
	}
	for _, b := range bufs {
		p.Put(b)
	}
	if len(p.free) != largeKeep {
		t.Fatalf("%d kept, want %d", len(p.free), largeKeep)
	}
	for _, b := range p.free {
		if cap(*b) < largeMin+1+2*largeStep {
			t.Fatalf("kept a buffer of %d bytes over larger ones", cap(*b))
		}
	}
	// A request fits in a kept buffer: no allocation.
	b := p.Get(largeMin + 10)
	if len(*b) != largeMin+10 || len(p.free) != largeKeep-1 {
		t.Fatalf("get: len %d, %d left", len(*b), len(p.free))
	}
	// Small sizes belong to gRPC's pool.
	s := p.Get(100)
	p.Put(s)
	if len(p.free) != largeKeep-1 {
		t.Fatal("a small buffer entered the large pool")
	}
}

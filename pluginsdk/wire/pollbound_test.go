package wire

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// An answer with more records than the worker asked for is not decoded,
// inline (ReceivePollAtMost) or in shared memory (TakePollPooledAtMost,
// with a pool or without): its batch has first_seq and the count, and
// Records names the excess. An answer within the bound reads as it would
// without one.
func TestPollAtMost(t *testing.T) {
	recs := datagenBatch()[:10]
	r := NewSharedRegion(make([]byte, 1<<20), nil)
	ref, b := placeAnswer(t, r, recs, 7)
	takes := map[string]func(max int) (*PollBatch, error){
		"inline": func(max int) (*PollBatch, error) {
			var pb *PollBatch
			var resp pluginv1.PollResponse
			c := ReceivePollAtMost(&pb, max).(grpc.ForceCodecV2CallOption).CodecV2
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bytes.Clone(b))}, &resp); err != nil {
				return nil, err
			}
			if resp.GetFirstSeq() != 7 {
				return nil, fmt.Errorf("reply first_seq %d", resp.GetFirstSeq())
			}
			return pb, nil
		},
		"pooled":  func(max int) (*PollBatch, error) { return r.TakePollPooledAtMost(ref, NewPollPool(1), max) },
		"no pool": func(max int) (*PollBatch, error) { return r.TakePollPooledAtMost(ref, nil, max) },
	}
	for name, take := range takes {
		for _, max := range []int{0, 10, 9, 1} {
			pb, err := take(max)
			if err != nil {
				t.Fatalf("%s, at most %d: %v", name, max, err)
			}
			if pb.FirstSeq() != 7 || pb.Len() != 10 {
				t.Fatalf("%s, at most %d: first_seq %d, %d records", name, max, pb.FirstSeq(), pb.Len())
			}
			got, coords, err := pb.Records()
			if max == 0 || max >= 10 {
				if err != nil || len(got) != 10 || len(coords) != 10 || got[3].Topic != recs[3].Topic {
					t.Fatalf("%s, at most %d: %d records, %v", name, max, len(got), err)
				}
				continue
			}
			want := fmt.Sprintf("the answer has 10 records, more than the %d asked for; not decoded", max)
			if err == nil || err.Error() != want || got != nil || coords != nil {
				t.Fatalf("%s, at most %d: %d records, error %v; want %q", name, max, len(got), err, want)
			}
			pb.Release()
		}
	}
	// Bytes that do not parse are decoding's to report, as without a bound.
	bad := append(bytes.Clone(b[:len(b)/2]), 0xff)
	var pb *PollBatch
	c := ReceivePollAtMost(&pb, 1).(grpc.ForceCodecV2CallOption).CodecV2
	err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bad)}, &pluginv1.PollResponse{})
	if err == nil || !strings.Contains(err.Error(), "proto") {
		t.Fatalf("garbage: %v, batch %v", err, pb)
	}
}

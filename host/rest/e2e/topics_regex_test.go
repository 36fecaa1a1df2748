package e2e

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

// A sink subscribed by topics.regex picks up a matching topic created
// after its task started, within about the consumer's metadata.max.age.ms
// (plus a rebalance), and delivers and commits each record of both topics
// exactly once; a topic that does not match is left alone.
func TestTopicsRegexPicksUpNewTopic(t *testing.T) {
	t.Parallel()
	const maxAge = time.Second
	e := startWorker(t, workerOpts{props: map[string]string{
		"consumer.metadata.max.age.ms": strconv.Itoa(int(maxAge / time.Millisecond)),
	}})
	out := e.dir + "/out.txt"
	const na, nb = 40, 30
	e.createTopic("rx-a")
	e.createTopic("other")
	wantA := e.produceValues("rx-a", "a", 0, na)
	e.produceValues("other", "o", 0, 10)

	e.create("rx-snk", map[string]string{"connector.class": "FileStreamSink", "file": out, "topics.regex": "^rx-.*"})
	e.waitStatus("rx-snk", "RUNNING:RUNNING")
	waitFile(t, out, wantA)
	e.waitSinkOffsets("rx-snk", map[string]int64{"rx-a-0": na})

	// rx-b appears while the task runs.
	e.createTopic("rx-b")
	created := time.Now()
	wantB := e.produceValues("rx-b", "b", 0, nb)
	want := slices.Sorted(slices.Values(append(slices.Clone(wantA), wantB...)))
	bound := 2*maxAge + 4*time.Second
	var got []string
	for {
		got = fileLines(t, out)
		slices.Sort(got)
		if slices.Equal(got, want) || len(got) > len(want) || time.Since(created) > bound {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%v after rx-b was created, the file holds %d lines %s, want %d %s", time.Since(created).Round(time.Millisecond), len(got), abbrev(got), len(want), abbrev(want))
	}
	t.Logf("rx-b's records arrived %v after it was created", time.Since(created).Round(time.Millisecond))
	// rx-a's lines came first, in order; rx-b's lines in order after them.
	if lines := fileLines(t, out); !slices.Equal(lines[:na], wantA) || !slices.Equal(lines[na:], wantB) {
		t.Fatalf("file order %s", abbrev(lines))
	}
	e.waitSinkOffsets("rx-snk", map[string]int64{"rx-a-0": na, "rx-b-0": nb})
	if ea, eb := e.endOffset("rx-a"), e.endOffset("rx-b"); ea != na || eb != nb {
		t.Fatalf("end offsets rx-a %d rx-b %d, want %d %d", ea, eb, na, nb)
	}

	// More records to both topics arrive once each.
	want = append(want, e.produceValues("rx-a", "a", na, na+10)...)
	want = append(want, e.produceValues("rx-b", "b", nb, nb+10)...)
	slices.Sort(want)
	waitUntil(t, "the later records of both topics", 10*time.Second, func() bool {
		got = fileLines(t, out)
		slices.Sort(got)
		return len(got) >= len(want)
	})
	e.waitSinkOffsets("rx-snk", map[string]int64{"rx-a-0": na + 10, "rx-b-0": nb + 10})
	time.Sleep(300 * time.Millisecond) // a duplicate would show by now
	got = fileLines(t, out)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("file holds %d lines %s, want %d %s", len(got), abbrev(got), len(want), abbrev(want))
	}
	e.waitStatus("rx-snk", "RUNNING:RUNNING")
}

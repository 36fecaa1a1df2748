package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// endlessLine is an input that always has more of one line ready, as a
// huge file without a line end or a writer streaming a long line has.
type endlessLine struct {
	chunk []byte
	reads int
}

func (e *endlessLine) read() ([]byte, error) {
	e.reads++
	// Each read takes a moment, as a disk or pipe read does; the line
	// ends after 3 s so a Poll that ignores its deadline still returns.
	time.Sleep(time.Millisecond)
	if e.reads > 3000 {
		return nil, nil
	}
	return e.chunk, nil
}

func (e *endlessLine) close() error { return nil }

// Poll keeps to its deadline while a line is still being read: the SDK
// cancels Poll before Stop, and a task reading a long line to its end first
// could not be stopped.
func TestSourcePollKeepsItsDeadlineInALongLine(t *testing.T) {
	task := &SourceTask{stdin: strings.NewReader("")}
	if err := task.Start(context.Background(), &fakeSourceContext{}, map[string]string{"topic": "t"}); err != nil {
		t.Fatal(err)
	}
	_ = task.in.close()
	task.in = &endlessLine{chunk: []byte(strings.Repeat("x", 1024))}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	recs, err := task.Poll(ctx)
	if err != nil || len(recs) != 0 {
		t.Fatalf("Poll = %d records, %v", len(recs), err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Poll with a 50ms deadline returned after %v", d)
	}
	// The bytes read so far are kept: the line goes on in the next Poll.
	if n := task.split.pending(); n == 0 {
		t.Fatal("the part of the line read so far was dropped")
	}
}

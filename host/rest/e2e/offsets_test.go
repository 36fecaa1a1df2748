package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

type offsets struct {
	Offsets []struct {
		Partition map[string]any `json:"partition"`
		Offset    map[string]any `json:"offset"`
	} `json:"offsets"`
}

type message struct {
	Message string `json:"message"`
}

func (e *env) offsets(name string) offsets {
	e.t.Helper()
	var o offsets
	strict(e.t, e.must("GET", "/connectors/"+name+"/offsets", nil, 200), &o)
	return o
}

// position is the byte offset of line n of lines (where line n starts).
func position(lines []string, n int) int {
	p := 0
	for _, l := range lines[:n] {
		p += len(l) + 1
	}
	return p
}

func stoppedMsg(name string) string {
	return "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/" + name + "/stop' endpoint"
}

// GET, PATCH and DELETE /connectors/{c}/offsets (KIP-875) on a file source
// and a file sink: changes only when STOPPED, Kafka's messages, and the
// connectors carry on from the changed offsets once resumed.
func TestOffsets(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	in, out := e.dir+"/in.txt", e.dir+"/out.txt"
	lines := writeLines(t, in, "o", 0, 100)
	e.create("src", map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "offs"})
	e.create("snk", map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "offs"})
	waitFile(t, out, lines)

	// The running source's offset is the end of the file.
	end := float64(position(lines, len(lines)))
	waitUntil(t, "the source offset to reach the end of the file", 10*time.Second, func() bool {
		o := e.offsets("src")
		return len(o.Offsets) == 1 && o.Offsets[0].Offset["position"] == end
	})
	if o := e.offsets("src"); fmt.Sprint(o.Offsets[0].Partition) != fmt.Sprint(map[string]any{"filename": in}) {
		t.Fatalf("source partition %v", o.Offsets[0].Partition)
	}
	alter := func(pos int) map[string]any {
		return map[string]any{"offsets": []any{map[string]any{"partition": map[string]any{"filename": in}, "offset": map[string]any{"position": pos}}}}
	}
	e.mustFail("PATCH", "/connectors/src/offsets", alter(0), 400, stoppedMsg("src"))
	e.mustFail("DELETE", "/connectors/src/offsets", nil, 400, stoppedMsg("src"))
	e.must("PUT", "/connectors/src/pause", nil, 202)
	e.waitStatus("src", "PAUSED:PAUSED")
	e.mustFail("PATCH", "/connectors/src/offsets", alter(0), 400, stoppedMsg("src"))

	// Stopped: alter to the start of line 50; after resume, lines 50..99
	// are read again.
	e.must("PUT", "/connectors/src/stop", nil, 204)
	e.waitStatus("src", "STOPPED:")
	for _, body := range []any{map[string]any{}, map[string]any{"offsets": []any{}}} {
		e.mustFail("PATCH", "/connectors/src/offsets", body, 400, "Partitions / offsets need to be provided for an alter offsets request")
	}
	var m message
	strict(t, e.must("PATCH", "/connectors/src/offsets", alter(position(lines, 50)), 200), &m)
	if m.Message != "The offsets for this connector have been altered successfully" {
		t.Fatalf("alter message %q", m.Message)
	}
	if o := e.offsets("src"); len(o.Offsets) != 1 || o.Offsets[0].Offset["position"] != float64(position(lines, 50)) {
		t.Fatalf("offsets after alter %+v", o)
	}
	e.must("PUT", "/connectors/src/resume", nil, 202)
	e.waitStatus("src", "RUNNING:RUNNING")
	want := append(slices.Clone(lines), lines[50:]...)
	e.waitTopic("offs", want)

	// Reset: the whole file again.
	e.must("PUT", "/connectors/src/stop", nil, 204)
	e.waitStatus("src", "STOPPED:")
	strict(t, e.must("DELETE", "/connectors/src/offsets", nil, 200), &m)
	if m.Message != "The offsets for this connector have been reset successfully" {
		t.Fatalf("reset message %q", m.Message)
	}
	if o := e.offsets("src"); len(o.Offsets) != 0 {
		t.Fatalf("offsets after reset %+v", o)
	}
	e.must("PUT", "/connectors/src/resume", nil, 202)
	want = append(want, lines...)
	e.waitTopic("offs", want)
	waitFile(t, out, want)

	// The sink's offsets are its consumer group's.
	total := float64(len(want))
	waitUntil(t, "the sink offset to reach the end of the topic", 10*time.Second, func() bool {
		o := e.offsets("snk")
		return len(o.Offsets) == 1 && o.Offsets[0].Offset["kafka_offset"] == total
	})
	if o := e.offsets("snk"); fmt.Sprint(o.Offsets[0].Partition) != fmt.Sprint(map[string]any{"kafka_topic": "offs", "kafka_partition": float64(0)}) {
		t.Fatalf("sink partition %v", o.Offsets[0].Partition)
	}
	sinkAlter := func(off any) map[string]any {
		return map[string]any{"offsets": []any{map[string]any{"partition": map[string]any{"kafka_topic": "offs", "kafka_partition": 0}, "offset": off}}}
	}
	e.mustFail("PATCH", "/connectors/snk/offsets", sinkAlter(map[string]any{"kafka_offset": 5}), 400, stoppedMsg("snk"))
	e.must("PUT", "/connectors/snk/stop", nil, 204)
	e.waitStatus("snk", "STOPPED:")
	e.mustFail("PATCH", "/connectors/snk/offsets", map[string]any{"offsets": []any{map[string]any{"partition": map[string]any{"topic": "offs"}, "offset": map[string]any{"kafka_offset": 5}}}}, 400,
		"The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'")
	e.mustFail("PATCH", "/connectors/snk/offsets", sinkAlter(map[string]any{"offset": 5}), 400,
		"The offset for a sink connector should either be null or contain the key 'kafka_offset'")
	// The group may take a moment to see its last member go.
	var r resp
	waitUntil(t, "the sink's offsets to be alterable", 20*time.Second, func() bool {
		r = e.request("PATCH", "/connectors/snk/offsets", sinkAlter(map[string]any{"kafka_offset": len(want) - 10}))
		return r.code == 200
	})
	strict(t, r.body, &m)
	if m.Message != "The offsets for this connector have been altered successfully" {
		t.Fatalf("sink alter message %q", m.Message)
	}
	e.must("PUT", "/connectors/snk/resume", nil, 202)
	wantFile := append(slices.Clone(want), want[len(want)-10:]...)
	waitFile(t, out, wantFile)

	// Reset the sink: it reads the topic from the start again.
	e.must("PUT", "/connectors/snk/stop", nil, 204)
	e.waitStatus("snk", "STOPPED:")
	waitUntil(t, "the sink's offsets to be resettable", 20*time.Second, func() bool {
		r = e.request("DELETE", "/connectors/snk/offsets", nil)
		return r.code == 200
	})
	strict(t, r.body, &m)
	if m.Message != "The offsets for this connector have been reset successfully" {
		t.Fatalf("sink reset message %q", m.Message)
	}
	if o := e.offsets("snk"); len(o.Offsets) != 0 {
		t.Fatalf("sink offsets after reset %+v", o)
	}
	e.must("PUT", "/connectors/snk/resume", nil, 202)
	waitFile(t, out, append(wantFile, want...))

	for _, m := range []string{"GET", "DELETE"} {
		e.mustFail(m, "/connectors/nope/offsets", nil, 404, "nope")
	}
	e.mustFail("PATCH", "/connectors/nope/offsets", alter(0), 404, "nope")
}

// A connector created STOPPED (KIP-980) can have its offsets altered
// before it ever ran; it then starts from them.
func TestOffsetsBeforeFirstRun(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	in := e.dir + "/in.txt"
	lines := writeLines(t, in, "s", 0, 30)
	e.must("POST", "/connectors", map[string]any{"name": "late", "initial_state": "STOPPED",
		"config": map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "late"}}, 201)
	e.waitStatus("late", "STOPPED:")
	if o := e.offsets("late"); len(o.Offsets) != 0 {
		t.Fatalf("offsets before the first run %+v", o)
	}
	var m message
	strict(t, e.must("PATCH", "/connectors/late/offsets", map[string]any{"offsets": []any{map[string]any{
		"partition": map[string]any{"filename": in}, "offset": map[string]any{"position": position(lines, 25)}}}}, 200), &m)
	if m.Message != "The offsets for this connector have been altered successfully" {
		t.Fatalf("alter message %q", m.Message)
	}
	e.must("PUT", "/connectors/late/resume", nil, 202)
	e.waitStatus("late", "RUNNING:RUNNING")
	e.waitTopic("late", lines[25:])
}

// GET /connectors/{c}/topics and PUT /connectors/{c}/topics/reset
// (KIP-558), and their 403s when tracking or its reset is disabled.
func TestActiveTopics(t *testing.T) {
	t.Parallel()
	e := startWorker(t, workerOpts{})
	in, out := e.dir+"/in.txt", e.dir+"/out.txt"
	lines := writeLines(t, in, "t", 0, 10)
	e.create("src", map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "active"})
	e.create("snk", map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "active"})
	waitFile(t, out, lines)

	type active map[string]struct {
		Topics []string `json:"topics"`
	}
	for _, n := range []string{"src", "snk"} {
		var a active
		strict(t, e.must("GET", "/connectors/"+n+"/topics", nil, 200), &a)
		if len(a) != 1 || !slices.Equal(a[n].Topics, []string{"active"}) {
			t.Fatalf("active topics of %s: %+v", n, a)
		}
		if r := e.request("PUT", "/connectors/"+n+"/topics/reset", nil); r.code != 202 || len(r.body) != 0 {
			t.Fatalf("reset topics of %s: %s", n, r)
		}
		strict(t, e.must("GET", "/connectors/"+n+"/topics", nil, 200), &a)
		if a[n].Topics == nil || len(a[n].Topics) != 0 {
			t.Fatalf("active topics of %s after reset: %+v", n, a)
		}
	}
	// Tracking starts again with the next task.
	e.must("POST", "/connectors/snk/tasks/0/restart", nil, 204)
	waitUntil(t, "the sink's topic to be active again", 10*time.Second, func() bool {
		var a active
		strict(t, e.must("GET", "/connectors/snk/topics", nil, 200), &a)
		return slices.Equal(a["snk"].Topics, []string{"active"})
	})
	// As in Kafka, an unknown connector has no active topics, and resetting
	// them is accepted.
	var none active
	strict(t, e.must("GET", "/connectors/nope/topics", nil, 200), &none)
	if len(none) != 1 || none["nope"].Topics == nil || len(none["nope"].Topics) != 0 {
		t.Fatalf("GET /connectors/nope/topics: %+v", none)
	}
	if r := e.request("PUT", "/connectors/nope/topics/reset", nil); r.code != 202 || len(r.body) != 0 {
		t.Fatalf("PUT /connectors/nope/topics/reset: %s", r)
	}

	off := startWorker(t, workerOpts{props: map[string]string{"topic.tracking.enable": "false"}})
	off.create("snk", map[string]string{"connector.class": "FileStreamSink", "file": off.dir + "/out.txt", "topics": "x"})
	off.mustFail("GET", "/connectors/snk/topics", nil, 403, "Topic tracking is disabled.")
	off.mustFail("PUT", "/connectors/snk/topics/reset", nil, 403, "Topic tracking is disabled.")
	noReset := startWorker(t, workerOpts{props: map[string]string{"topic.tracking.allow.reset": "false"}})
	noReset.create("snk", map[string]string{"connector.class": "FileStreamSink", "file": noReset.dir + "/out.txt", "topics": "x"})
	noReset.must("GET", "/connectors/snk/topics", nil, 200)
	noReset.mustFail("PUT", "/connectors/snk/topics/reset", nil, 403, "Topic tracking reset is disabled.")
}

//go:build integration

package e2e

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice-io/sluice/integration/itest"
)

// TestSinkConsumerGroupProtocol: a FileStreamSink whose consumer uses
// Kafka 4's consumer group protocol (KIP-848, consumer.override.group.protocol
// =consumer) on a real broker: two tasks over a 4-partition topic write every
// line once, and the broker lists the group as a "consumer" group.
func TestSinkConsumerGroupProtocol(t *testing.T) {
	e := newEnv(t)
	topic := e.name("kip848")
	itest.CreateTopic(t, e.cl, topic, 4, nil)
	in, out := e.path("in.txt"), e.path("out.txt")
	lines := makeLines("g", 0, 20_000)
	appendLines(t, in, lines)

	sink := sinkConfig(e.name("sink"), out, topic)
	sink["tasks.max"] = "2"
	sink["consumer.override.group.protocol"] = "consumer"
	w := e.startWorker(e.workerProps(nil),
		e.connector(sourceConfig(e.name("src"), in, topic)),
		e.connector(sink))
	waitLines(t, out, len(lines))
	w.waitState(e.name("sink"), "RUNNING", 2)

	groups, err := kadm.NewClient(e.cl).ListGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g, ok := groups["connect-"+e.name("sink")]
	if !ok || g.GroupType != "consumer" {
		t.Fatalf("sink group listed as %+v (present %v), want type consumer", g, ok)
	}
	// Four partitions: every line once, in no particular order.
	if d := itest.Compare(lines, readLines(t, out)); !d.Equal() {
		t.Fatalf("sink file: %s", d)
	}
}

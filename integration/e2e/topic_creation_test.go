//go:build integration

package e2e

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Kafka's SourceConnectorsIntegrationTest (KIP-158), on a broker that
// auto-creates topics: a source connector's topic.creation.* settings make
// the topic it writes to, with the default group's partitions and a
// topic config of the group, before its first record, rather than the broker's
// auto-creation with its defaults (one partition here).
func TestSourceConnectorCreatesItsTopic(t *testing.T) {
	e := newEnv(t)
	topic := e.name("created") // not created beforehand
	in := e.path("in.txt")
	lines := makeLines("c", 0, 300)
	appendLines(t, in, lines)
	src := sourceConfig(e.name("src"), in, topic)
	for k, v := range map[string]string{
		"topic.creation.default.replication.factor": "1",
		"topic.creation.default.partitions":         "3",
		"topic.creation.default.retention.ms":       "86400000",
	} {
		src[k] = v
	}
	w := e.startWorker(e.workerProps(nil), e.connector(src))
	recs := e.readTopic(topic, len(lines))
	if len(recs) != len(lines) {
		t.Fatalf("%d records on %s, want %d", len(recs), topic, len(lines))
	}
	adm := kadm.NewClient(e.cl)
	details, err := adm.ListTopics(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if d := details[topic]; d.Err != nil || len(d.Partitions) != 3 {
		t.Fatalf("topic %s: %d partitions (err %v), want the connector's 3", topic, len(d.Partitions), d.Err)
	}
	rcs, err := adm.DescribeTopicConfigs(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	retention := ""
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			retention = c.MaybeValue()
		}
	}
	if retention != "86400000" {
		t.Fatalf("topic %s: retention.ms %q, want the connector's 86400000", topic, retention)
	}
	w.waitState(e.name("src"), "RUNNING", 1)
	w.stop()
}

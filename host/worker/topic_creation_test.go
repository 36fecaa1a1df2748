package worker_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicPartitions is how many partitions the broker holds for topic.
func topicPartitions(t *testing.T, seeds []string, topic string) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	details, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return len(details[topic].Partitions)
}

// With the worker's topic.creation.enable (its default), a source
// connector's topic.creation.* settings create its topic before its first
// record; with it off, the settings are ignored and the broker's
// auto-creation makes the topic with its own defaults.
func TestSourceTopicCreation(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run(fmt.Sprintf("enable=%v", enabled), func(t *testing.T) {
			e := startWorker(t, map[string]string{"topic.creation.enable": strconv.FormatBool(enabled)})
			e.mustDo("PUT", "/connectors/src/config", map[string]string{
				"connector.class": "CounterSource", "topic": "made", "max.records": "10",
				"topic.creation.default.replication.factor": "1",
				"topic.creation.default.partitions":         "7",
			}, 201)
			waitUntil(t, "10 records", 30*time.Second, func() bool { return endOffsets(t, e.cluster.ListenAddrs(), "made") == 10 })
			got := topicPartitions(t, e.cluster.ListenAddrs(), "made")
			if enabled && got != 7 {
				t.Fatalf("topic made with %d partitions, want the connector's 7", got)
			}
			if !enabled && got == 7 {
				t.Fatalf("topic made with the connector's 7 partitions although topic.creation.enable=false")
			}
		})
	}
}

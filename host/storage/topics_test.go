package storage

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// describe returns a topic's partition count and cleanup.policy as the
// broker reports them.
func (k *testKafka) describe(topic string) (int, string, map[string]string) {
	k.t.Helper()
	ctx := testCtx(k.t)
	details, err := k.adm.ListTopics(kadm.WithAuthorizedOps(ctx), topic) // uncached
	if err != nil {
		k.t.Fatal(err)
	}
	rcs, err := k.adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		k.t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		k.t.Fatal(err)
	}
	all := map[string]string{}
	for _, c := range rc.Configs {
		all[c.Key] = c.MaybeValue()
	}
	return len(details[topic].Partitions), all["cleanup.policy"], all
}

func TestEnsureTopicsCreatesMissingTopics(t *testing.T) {
	k := newTestKafka(t)
	topics := DefaultInternalTopics("connect-configs", "connect-offsets", "connect-status")
	for _, s := range []*TopicSpec{&topics.Config, &topics.Offset, &topics.Status} {
		s.ReplicationFactor = 1 // one broker
	}
	topics.Config.Partitions = 7 // ignored: the config topic has one partition
	topics.Offset.Configs = map[string]string{"cleanup.policy": "delete", "max.message.bytes": "2000000"}
	if err := EnsureTopics(testCtx(t), k.adm, topics, nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		topic      string
		partitions int
	}{{"connect-configs", 1}, {"connect-offsets", 25}, {"connect-status", 5}} {
		n, policy, _ := k.describe(w.topic)
		if n != w.partitions || policy != "compact" {
			t.Errorf("%s: %d partitions, cleanup.policy=%q; want %d, compact", w.topic, n, policy, w.partitions)
		}
	}
	if _, _, all := k.describe("connect-offsets"); all["max.message.bytes"] != "2000000" {
		t.Errorf("extra topic config not applied: %v", all)
	}
	// Running again (a second worker, a restart) finds them fit.
	if err := EnsureTopics(testCtx(t), k.adm, topics, nil); err != nil {
		t.Fatalf("second run: %v", err)
	}
}

func TestEnsureTopicBrokerDefaults(t *testing.T) {
	k := newTestKafka(t)
	spec := OffsetTopic("offs", -1, -1)
	if err := EnsureTopic(testCtx(t), k.adm, spec, nil); err != nil {
		t.Fatal(err)
	}
	if n, policy, _ := k.describe("offs"); n < 1 || policy != "compact" {
		t.Fatalf("broker-default topic: %d partitions, %q", n, policy)
	}
}

func TestEnsureTopicRefusesUnfitTopics(t *testing.T) {
	k := newTestKafka(t)
	k.createTopic("deleting", 5, "delete")
	k.createTopic("both", 5, "compact,delete")
	k.createTopic("wide-configs", 3, "compact")
	k.createTopic("fine", 25, "compact")
	// Created by someone else with the broker's defaults: cleanup.policy
	// is reported as the default, delete.
	if _, err := k.adm.CreateTopic(testCtx(t), 2, 1, nil, "defaulted"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec TopicSpec
		want string
	}{
		{StatusTopic("deleting", 5, 1), "Topic 'deleting' supplied via the 'status.storage.topic' property is required to have 'cleanup.policy=compact' to guarantee consistency and durability of connector and task statuses, but found the topic currently has 'cleanup.policy=delete'."},
		{OffsetTopic("both", 25, 1), "Topic 'both' supplied via the 'offset.storage.topic' property is required to have 'cleanup.policy=compact' to guarantee consistency and durability of source connector offsets, but found the topic currently has 'cleanup.policy=compact,delete'."},
		{OffsetTopic("defaulted", 25, 1), "but found the topic currently has 'cleanup.policy=delete'."},
		{ConfigTopic("wide-configs", 1), "Topic 'wide-configs' supplied via the 'config.storage.topic' property is required to have a single partition in order to guarantee consistency of connector configurations, but found 3 partitions."},
	} {
		err := EnsureTopic(testCtx(t), k.adm, c.spec, nil)
		if !errors.Is(err, ErrTopicUnfit) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant it to contain %q", c.spec.Name, err, c.want)
		}
		// Nothing was changed on the refused topic.
		if _, policy, _ := k.describe(c.spec.Name); c.spec.Name == "deleting" && policy != "delete" {
			t.Errorf("refused topic's policy changed to %q", policy)
		}
	}
	// An existing compacted topic with other partition counts is used as is.
	if err := EnsureTopic(testCtx(t), k.adm, OffsetTopic("fine", 10, 1), nil); err != nil {
		t.Fatalf("fit topic refused: %v", err)
	}
}

func TestCheckPolicyValues(t *testing.T) {
	// kfake stores any value it is given; this covers the parsing of values
	// a real broker reports.
	str := func(s string) *string { return &s }
	spec := OffsetTopic("t", 1, 1)
	for _, c := range []struct {
		value *string
		ok    bool
	}{
		{str("compact"), true},
		{str(" Compact "), true},
		{str("compact,compact"), true},
		{str("delete"), false},
		{str("delete,compact"), false},
		{nil, true}, // not reported (sensitive or unknown): not verified
		{str(""), true},
	} {
		err := checkPolicy(spec, []kadm.Config{{Key: "cleanup.policy", Value: c.value}}, nil)
		if (err == nil) != c.ok {
			t.Errorf("cleanup.policy=%v: err %v, want ok=%v", c.value, err, c.ok)
		}
	}
	if err := checkPolicy(spec, nil, nil); err != nil {
		t.Errorf("no cleanup.policy reported: %v", err)
	}
}

func TestStoresOnEnsuredTopics(t *testing.T) {
	// A worker's start: topics, then the three stores, each with its whole
	// state before it serves; a second worker starting later sees the first
	// worker's writes without any Refresh of its own.
	k := newTestKafka(t)
	ctx := testCtx(t)
	topics := DefaultInternalTopics("cfg", "offs", "stat")
	for _, s := range []*TopicSpec{&topics.Config, &topics.Offset, &topics.Status} {
		s.ReplicationFactor = -1
	}
	if err := EnsureTopics(ctx, k.adm, topics, nil); err != nil {
		t.Fatal(err)
	}
	cfg := k.startConfigs("cfg", nil)
	offs := k.startOffsets("offs")
	stat := k.startStatuses("stat")
	if err := cfg.PutConnectorConfig(ctx, "c", map[string]string{"x": "y"}, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := offs.Set(ctx, "c", []OffsetEntry{{Partition: []byte(fmt.Sprintf(`{"file":"f%d"}`, i)), Offset: []byte(fmt.Sprintf(`{"pos":%d}`, i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := stat.PutConnector(ctx, "c", Status{State: StateRunning, WorkerID: "w1:8083", Generation: 1}); err != nil {
		t.Fatal(err)
	}

	cfg2 := k.startConfigs("cfg", nil)
	offs2 := NewKafkaOffsetStore(LogConfig{Topic: "offs", ClientOpts: k.opts})
	if err := offs2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer offs2.Close()
	stat2 := k.startStatuses("stat")
	if !cfg2.Snapshot().Contains("c") {
		t.Fatal("second worker's config store lacks the connector")
	}
	if got := offs2.Connectors(); len(got) != 1 { // no read to end: from Start alone
		t.Fatalf("second worker's offsets: %v", got)
	}
	all, err := offs2.All(ctx, "c")
	if err != nil || len(all) != 50 {
		t.Fatalf("second worker's offsets of c: %d, %v", len(all), err)
	}
	if st, ok := stat2.Connector("c"); !ok || st.WorkerID != "w1:8083" {
		t.Fatalf("second worker's status of c: %+v %v", st, ok)
	}
}

package runtime

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

func TestParseTopicCreation(t *testing.T) {
	if c, err := ParseTopicCreation(map[string]string{"name": "src", "topic": "t"}); c != nil || err != nil {
		t.Fatalf("no topic.creation.* setting: %v, %v; want nil, nil", c, err)
	}
	c, err := ParseTopicCreation(map[string]string{
		"topic.creation.groups":                     " logs , default, metrics",
		"topic.creation.default.replication.factor": "3",
		"topic.creation.default.partitions":         "-1",
		"topic.creation.default.compression.type":   "lz4",
		"topic.creation.default.include":            "nothing", // ignored: the default group takes every topic
		"topic.creation.default.exclude":            ".*",
		"topic.creation.logs.include":               "logs-.*, audit",
		"topic.creation.logs.exclude":               "logs-tmp.*",
		"topic.creation.logs.partitions":            "2",
		"topic.creation.logs.cleanup.policy":        "compact",
		"topic.creation.metrics.replication.factor": "1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Groups) != 2 || c.Groups[0].Name != "logs" || c.Groups[1].Name != "metrics" {
		t.Fatalf("groups = %+v", c.Groups)
	}
	for topic, want := range map[string]string{
		"logs-a": "logs", "audit": "logs", "audit2": "default", "xlogs-a": "default",
		"logs-tmp1": "default", "metrics": "default", "t": "default",
	} {
		if g := c.GroupFor(topic); g.Name != want {
			t.Errorf("topic %s falls into group %s, want %s", topic, g.Name, want)
		}
	}
	logs, metrics, dflt := c.Groups[0], c.Groups[1], c.Default
	if logs.Partitions != 2 || logs.ReplicationFactor != 3 || !maps.Equal(logs.Configs, map[string]string{"cleanup.policy": "compact"}) {
		t.Errorf("logs group = %+v", logs)
	}
	// A group with no include takes no topic; unset numbers are the
	// default group's; the default group's topic configs are its own.
	if metrics.Partitions != -1 || metrics.ReplicationFactor != 1 || len(metrics.Configs) != 0 || metrics.takes("metrics") {
		t.Errorf("metrics group = %+v", metrics)
	}
	if dflt.Partitions != -1 || dflt.ReplicationFactor != 3 || !maps.Equal(dflt.Configs, map[string]string{"compression.type": "lz4"}) {
		t.Errorf("default group = %+v", dflt)
	}

	for _, tc := range []struct {
		props map[string]string
		want  []string
	}{
		{map[string]string{"topic.creation.groups": "a"}, []string{
			`missing required configuration "topic.creation.default.replication.factor"`,
			`missing required configuration "topic.creation.default.partitions"`}},
		{map[string]string{"topic.creation.default.replication.factor": "0", "topic.creation.default.partitions": "x"}, []string{
			"invalid value 0 for configuration topic.creation.default.replication.factor: value must be -1 or from 1 to 32767",
			"invalid value x for configuration topic.creation.default.partitions"}},
		{map[string]string{"topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "1",
			"topic.creation.groups": "a,a", "topic.creation.a.include": "(", "topic.creation.a.partitions": "-2"}, []string{
			"topic creation group a is listed twice",
			"invalid value for configuration topic.creation.a.include",
			"invalid value -2 for configuration topic.creation.a.partitions"}},
	} {
		_, err := ParseTopicCreation(tc.props)
		for _, want := range tc.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ParseTopicCreation(%v) = %v; want it to say %q", tc.props, err, want)
			}
		}
	}
}

// topicCreationTask runs the fake source's records to the topics of
// topicOf with the given topic creation settings, against a cluster that
// creates a missing topic when asked to, and a producer that asks it to, as
// the worker's does (Kafka's producer default): the task's own lookup must
// not let the broker create the topic with its defaults first.
func topicCreationTask(t *testing.T, props map[string]string, topicOf func(seq uint64) string, setup ...func(*kfake.Cluster)) (*sourceTask, *fakeSource, *recListener, func() error, *kadm.Client) {
	t.Helper()
	c := newCluster(t, 1, map[string]int32{"t": 3}, kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
	for _, s := range setup {
		s(c)
	}
	ev := &events{}
	f := newFakeSource(ev)
	f.limit = 30
	f.recordAcks = true
	f.gen = func(seq uint64) *data.SourceRecord {
		r := defaultSourceRecord(seq)
		r.Topic, r.Partition = topicOf(seq), data.NoPartition
		return r
	}
	tc, err := ParseTopicCreation(props)
	if err != nil {
		t.Fatal(err)
	}
	l := newRecListener()
	cfg := sourceConfig(c, f, newMemOffsets(ev), l)
	cfg.ProducerOpts = append(cfg.ProducerOpts, kgo.AllowAutoTopicCreation())
	tc.AdminOpts = []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cfg.TopicCreation = tc
	task, err := NewSourceTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return task.(*sourceTask), f, l, runTask(t, task), kadm.NewClient(cl)
}

// With topic creation settings, a topic the task writes to is created
// before its first record, with the partitions, replication factor and
// topic configs of the first group that takes it (else the default
// group's); a topic that exists is left as it is.
func TestSourceCreatesTopicsWithTheirGroupSettings(t *testing.T) {
	topics := []string{"t", "logs-a", "other"}
	task, f, _, wait, adm := topicCreationTask(t, map[string]string{
		"topic.creation.groups":                     "logs",
		"topic.creation.default.replication.factor": "1",
		"topic.creation.default.partitions":         "5",
		"topic.creation.logs.include":               "logs-.*",
		"topic.creation.logs.partitions":            "2",
		"topic.creation.logs.cleanup.policy":        "compact",
	}, func(seq uint64) string { return topics[seq%3] })
	eventually(t, "all records acknowledged", func() bool { return task.tracker.acked() == 30 })
	task.Stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	for _, ra := range f.recordAckList() {
		if !ra.Written {
			t.Errorf("record %d not written", ra.Seq)
		}
	}
	ctx := context.Background()
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]int{"t": 3, "logs-a": 2, "other": 5} {
		if d := details[topic]; d.Err != nil || len(d.Partitions) != want {
			t.Errorf("topic %s: %d partitions (err %v), want %d", topic, len(d.Partitions), d.Err, want)
		}
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "logs-a")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("logs-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	policy := ""
	for _, cfg := range rc.Configs {
		if cfg.Key == "cleanup.policy" {
			policy = cfg.MaybeValue()
		}
	}
	if policy != "compact" {
		t.Errorf("logs-a cleanup.policy = %q, want compact", policy)
	}
}

// A topic creation Kafka refuses for good fails the task, naming the
// topic and what to do; one that may work later is tried again until it
// works, and Stop ends a task that keeps retrying promptly.
func TestSourceTopicCreationFailures(t *testing.T) {
	props := map[string]string{"topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "1"}
	t.Run("refused", func(t *testing.T) {
		var n atomic.Int32
		_, _, l, wait, _ := topicCreationTask(t, props, func(uint64) string { return "new" }, func(c *kfake.Cluster) {
			refuseCreates(c, kerr.TopicAuthorizationFailed.Code, &n, -1)
		})
		err := wait()
		for _, want := range []string{"create topic new (topic creation group default: 1 partitions, replication factor 1)",
			"TOPIC_AUTHORIZATION_FAILED", "make sure that the task may create topics or that the topic exists"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Run = %v; want it to say %q", err, want)
			}
		}
		l.await(t, "failed")
		if n.Load() != 1 {
			t.Errorf("%d CreateTopics requests, want 1", n.Load())
		}
	})
	t.Run("retried", func(t *testing.T) {
		var n atomic.Int32
		task, _, _, wait, adm := topicCreationTask(t, props, func(uint64) string { return "new" }, func(c *kfake.Cluster) {
			refuseCreates(c, kerr.RequestTimedOut.Code, &n, 3)
		})
		eventually(t, "all records acknowledged", func() bool { return task.tracker.acked() == 30 })
		task.Stop()
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if got := n.Load(); got != 4 {
			t.Errorf("%d CreateTopics requests, want 3 refused and 1 answered", got)
		}
		if d, err := adm.ListTopics(context.Background(), "new"); err != nil || d["new"].Err != nil {
			t.Errorf("topic new: %v %v", err, d)
		}
	})
	t.Run("stopped while retrying", func(t *testing.T) {
		var n atomic.Int32
		task, _, l, wait, _ := topicCreationTask(t, props, func(uint64) string { return "new" }, func(c *kfake.Cluster) {
			refuseCreates(c, kerr.RequestTimedOut.Code, &n, -1)
		})
		eventually(t, "creation retried", func() bool { return n.Load() >= 2 })
		start := time.Now()
		task.Stop()
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("Stop took %s", took)
		}
		l.await(t, "stopped")
		if task.tracker.acked() != 0 {
			t.Errorf("%d records acknowledged", task.tracker.acked())
		}
	})
}

// refuseCreates makes the cluster answer the first times CreateTopics
// requests (-1: all) with code, counting every request.
func refuseCreates(c *kfake.Cluster, code int16, n *atomic.Int32, times int32) {
	c.ControlKey(int16(kmsg.CreateTopics), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if k := n.Add(1); times >= 0 && k > times {
			return nil, nil, false
		}
		r := req.(*kmsg.CreateTopicsRequest)
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode = rt.Topic, code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
}

// clientRecorder, as the hooks of a client, records the clients made with
// them (by client id), how many were closed and the keys of the requests
// they wrote.
type clientRecorder struct {
	mu     sync.Mutex
	ids    []string
	closed int
	keys   map[int16]int
}

func (r *clientRecorder) OnNewClient(cl *kgo.Client) {
	id, _ := cl.OptValue(kgo.ClientID).(string)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, id)
}

func (r *clientRecorder) OnClientClosed(*kgo.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed++
}

func (r *clientRecorder) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[int16]int{}
	}
	r.keys[key]++
}

func (r *clientRecorder) snapshot() (ids []string, closed int, keys map[int16]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids), r.closed, maps.Clone(r.keys)
}

// A source task looks its topics up and creates them with an admin client
// of its own, made from TopicCreation.AdminOpts (after the default client
// id connector-adminclient-<task>) once the first record is on its way,
// and closed with the task: the producer, with its own client id and
// options, sends neither the lookup nor the CreateTopics.
func TestSourceTopicCreationUsesItsAdminClient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []kgo.Opt
		wantID string
	}{
		{"default client id", nil, "connector-adminclient-src-0"},
		{"admin settings", []kgo.Opt{kgo.ClientID("my-admin")}, "my-admin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 1, nil, kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
			// The admin client speaks older versions than the producer, so
			// that the broker can tell whose the lookups of "new" (those
			// asking it not to create the topic) are; the task's must come
			// before its CreateTopics.
			old := kversion.V2_4_0()
			oldMetadata, _ := old.LookupMaxKeyVersion(int16(kmsg.Metadata))
			var lookups, otherLookups, creates atomic.Int32
			c.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				r := req.(*kmsg.MetadataRequest)
				if !r.AllowAutoTopicCreation && len(r.Topics) == 1 && r.Topics[0].Topic != nil && *r.Topics[0].Topic == "new" {
					if r.GetVersion() <= oldMetadata && creates.Load() == 0 {
						lookups.Add(1)
					} else {
						otherLookups.Add(1)
					}
				}
				return nil, nil, false
			})
			refuseCreates(c, 0, &creates, 0)
			ev := &events{}
			f := newFakeSource(ev)
			f.limit = 10
			release := make(chan struct{})
			var polls atomic.Int32
			f.pollHook = func(*pluginv1.PollRequest) {
				if polls.Add(1) == 1 {
					<-release
				}
			}
			f.gen = func(seq uint64) *data.SourceRecord {
				r := defaultSourceRecord(seq)
				r.Topic, r.Partition = "new", data.NoPartition
				return r
			}
			admin, producer := &clientRecorder{}, &clientRecorder{}
			cfg := sourceConfig(c, f, newMemOffsets(ev), newRecListener())
			cfg.ProducerOpts = append(cfg.ProducerOpts, kgo.ClientID("my-producer"), kgo.AllowAutoTopicCreation(), kgo.WithHooks(producer))
			creation, err := ParseTopicCreation(map[string]string{"topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "4"})
			if err != nil {
				t.Fatal(err)
			}
			creation.AdminOpts = append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.WithHooks(admin), kgo.MaxVersions(old)}, tc.opts...)
			cfg.TopicCreation = creation
			task, err := NewSourceTask(cfg)
			if err != nil {
				t.Fatal(err)
			}
			wait := runTask(t, task)
			eventually(t, "first Poll", func() bool { return polls.Load() == 1 })
			if ids, _, _ := admin.snapshot(); len(ids) != 0 {
				t.Fatalf("admin clients %v made before any record", ids)
			}
			close(release)
			st := task.(*sourceTask)
			eventually(t, "all records acknowledged", func() bool { return st.tracker.acked() == 10 })
			task.Stop()
			if err := wait(); err != nil {
				t.Fatal(err)
			}

			ids, closed, keys := admin.snapshot()
			if len(ids) != 1 || ids[0] != tc.wantID || closed != 1 {
				t.Errorf("admin clients %v, %d closed; want one, %s, closed", ids, closed, tc.wantID)
			}
			if keys[int16(kmsg.CreateTopics)] != 1 || keys[int16(kmsg.Metadata)] == 0 {
				t.Errorf("admin client wrote %v; want 1 CreateTopics and Metadata", keys)
			}
			if n, other := lookups.Load(), otherLookups.Load(); n != 1 || other != 0 {
				t.Errorf("%d lookups of new by the admin client before its creation and %d others, want 1 and none", n, other)
			}
			pids, pclosed, pkeys := producer.snapshot()
			if len(pids) != 1 || pids[0] != "my-producer" || pclosed != 1 {
				t.Errorf("producer clients %v, %d closed", pids, pclosed)
			}
			if pkeys[int16(kmsg.CreateTopics)] != 0 || pkeys[int16(kmsg.Produce)] == 0 {
				t.Errorf("producer wrote %v; want Produce and no CreateTopics", pkeys)
			}
			// The producer's own metadata requests ask for auto-creation
			// (kgo.AllowAutoTopicCreation): were the task's lookup its, the
			// broker would have made "new" with its default 1 partition.
			cl := newTestClient(t, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)})
			details, err := kadm.NewClient(cl).ListTopics(context.Background(), "new")
			if err != nil || len(details["new"].Partitions) != 4 {
				t.Errorf("topic new: %v, %v; want 4 partitions", details["new"], err)
			}
		})
	}
}

package herder_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/host/configprovider"
	"github.com/sluice-io/sluice/host/herder"
)

// On a distributed cluster, expiring config-provider values restart the
// connector and all its tasks, wherever they run, with the new values; the
// restart is scheduled once (by the connector's owner), and a connector
// with config.action.reload=none is left alone.
func TestDistributedReloadRestartsWithNewValues(t *testing.T) {
	const ttl = 500 * time.Millisecond
	e := newDEnv(t)
	p := &leaseProvider{value: "pw-1", ttl: ttl}
	e.resolver = (*configprovider.Resolver)(nil).With("vault", p)
	in1, in2 := newFakeInstances(), newFakeInstances()
	h1 := e.start("w1", in1, true)
	e.start("w2", in2, true)

	starts := func(id string, conn bool) int {
		if conn {
			return in1.count(in1.starts, id) + in2.count(in2.starts, id)
		}
		return in1.count(in1.taskStarts, id) + in2.count(in2.taskStarts, id)
	}
	// secretOf is what the latest start of a connector or task got.
	secretOf := func(id string, conn bool) string {
		for _, in := range []*fakeInstances{in1, in2} {
			if conn {
				if c := in.conn(id); c != nil && in.count(in.starts, id) > 0 {
					return c.cfg["secret"]
				}
			} else if tk := in.task(id); tk != nil {
				return tk.spec.ConnectorConfig["secret"]
			}
		}
		return ""
	}

	if _, _, err := h1.PutConnectorConfig(ctxT(t), "src", srcConfig("secret", leaseVar), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h1.PutConnectorConfig(ctxT(t), "fixed", srcConfig("secret", leaseVar, "config.action.reload", "none", "tasks.max", "1"), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	p.set("pw-2", 0) // rotated; the new value does not expire
	dStates(t, h1, "src", "RUNNING:RUNNING,RUNNING")
	dStates(t, h1, "fixed", "RUNNING:RUNNING")
	dWait(t, "the reload restart of src and its tasks", func() bool {
		return starts("src", true) == 2 && starts("src-0", false) == 2 && starts("src-1", false) == 2
	})
	dStates(t, h1, "src", "RUNNING:RUNNING,RUNNING")
	for _, id := range []string{"src-0", "src-1"} {
		if got := secretOf(id, false); got != "pw-2" {
			t.Errorf("%s restarted with %q, want pw-2", id, got)
		}
	}
	// Nothing more: the new value has no TTL, and "fixed" never reloads.
	time.Sleep(3 * ttl)
	if n := starts("src", true); n != 2 {
		t.Errorf("src started %d times, want 2", n)
	}
	if n, m := starts("fixed", true), starts("fixed-0", false); n != 1 || m != 1 {
		t.Errorf("fixed (config.action.reload=none) started %d times, its task %d; want 1 and 1", n, m)
	}
}

// A reload restart request the config topic refuses is written again
// later by the connector's owner, not dropped: the connector and its tasks
// still restart with the new values.
func TestDistributedReloadRetriesFailedRequest(t *testing.T) {
	const ttl = 500 * time.Millisecond
	herder.SetReloadRetryDelay(t, 200*time.Millisecond)
	e := newDEnv(t)
	p := &leaseProvider{value: "pw-1", ttl: ttl}
	e.resolver = (*configprovider.Resolver)(nil).With("vault", p)
	in := newFakeInstances()
	h := e.start("w1", in, true)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", srcConfig("secret", leaseVar), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")
	p.set("pw-2", 0)
	// The next write to the config topic, the restart request, fails for
	// good (not a retriable error). Requests name the topic by its id.
	configID := e.topicID(dConfigTopic)
	var refused atomic.Int32
	e.c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.ProduceRequest)
		if len(req.Topics) != 1 || (req.Topics[0].Topic != dConfigTopic && req.Topics[0].TopicID != configID) {
			return nil, nil, false
		}
		refused.Add(1)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	dWait(t, "the restart request refused", func() bool { return refused.Load() == 1 })
	dWait(t, "the reload restart of src and its tasks", func() bool {
		return in.count(in.starts, "src") == 2 && in.count(in.taskStarts, "src-0") == 2 && in.count(in.taskStarts, "src-1") == 2
	})
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")
	if c := in.conn("src"); c == nil || c.cfg["secret"] != "pw-2" {
		t.Fatalf("connector restarted with %v", c)
	}
	time.Sleep(3 * ttl)
	if n := in.count(in.starts, "src"); n != 2 {
		t.Errorf("src started %d times, want 2", n)
	}
}

// topicID is the id of the named topic.
func (e *dEnv) topicID(topic string) [16]byte {
	e.t.Helper()
	cl, err := kgo.NewClient(e.opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ts, err := kadm.NewClient(cl).ListTopics(ctxT(e.t), topic)
	if err != nil {
		e.t.Fatal(err)
	}
	d, ok := ts[topic]
	if !ok || d.Err != nil {
		e.t.Fatalf("topic %s: %v", topic, d.Err)
	}
	return d.ID
}

// gatedProvider is a leaseProvider whose answers after the first (the
// validation of the connector's config) wait until the gate opens: a slow
// secret store.
type gatedProvider struct {
	leaseProvider
	gate    chan struct{}
	waiting chan struct{} // receives once per call that waits
	n       atomic.Int32
}

func (p *gatedProvider) GetWithTTL(ctx context.Context, path string, keys []string) (configprovider.Data, error) {
	if p.n.Add(1) > 1 {
		select {
		case <-p.gate:
		default:
			p.waiting <- struct{}{}
			<-p.gate
		}
	}
	return p.leaseProvider.GetWithTTL(ctx, path, keys)
}

func (p *gatedProvider) Get(ctx context.Context, path string, keys []string) (map[string]string, error) {
	d, err := p.GetWithTTL(ctx, path, keys)
	return d.Values, err
}

// A connector start abandoned while its values were being read (the
// connector stopped meanwhile) schedules no reload: the TTL it read
// belongs to no instance, and must not restart the one started on resume.
func TestDistributedReloadNotScheduledByAbandonedStart(t *testing.T) {
	const ttl = time.Second
	e := newDEnv(t)
	p := &gatedProvider{leaseProvider: leaseProvider{value: "pw-1", ttl: ttl}, gate: make(chan struct{}), waiting: make(chan struct{}, 4)}
	e.resolver = (*configprovider.Resolver)(nil).With("vault", p)
	in := newFakeInstances()
	h := e.start("w1", in, true)
	ctx := ctxT(t)
	if _, _, err := h.PutConnectorConfig(ctx, "src", srcConfig("secret", leaseVar), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	// The start now waits on the provider; the connector is stopped.
	select {
	case <-p.waiting:
	case <-time.After(dPatience):
		t.Fatal("the connector's start did not read its values")
	}
	if err := h.StopConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	dWait(t, "src STOPPED", func() bool {
		st, err := h.ConnectorStatus(context.Background(), "src")
		return err == nil && st.Connector.State == herder.StateStopped
	})
	// The abandoned start gets its values (TTL 1 s); the next ones last.
	close(p.gate)
	time.Sleep(200 * time.Millisecond)
	p.set("pw-2", time.Minute)
	if err := h.ResumeConnector(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")
	n := in.count(in.starts, "src")
	time.Sleep(ttl + time.Second)
	if m := in.count(in.starts, "src"); m != n {
		t.Fatalf("connector started %d times more after its resume: a reload scheduled by the abandoned start restarted it", m-n)
	}
	if c := in.conn("src"); c == nil || c.cfg["secret"] != "pw-2" {
		t.Fatalf("connector runs with %v", c)
	}
}

package herder_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/host/cluster"
	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/storage"
)

// connGate stalls the Kafka connections dialled through it while shut:
// nothing is sent, and nothing received is handed over, until it opens
// again. It makes one worker unable to read a topic the others read.
type connGate struct {
	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
}

func newConnGate() *connGate {
	g := &connGate{open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *connGate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default:
	}
}

func (g *connGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

func (g *connGate) pass(abort <-chan struct{}) error {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
		return nil
	case <-abort:
		return net.ErrClosed
	}
}

func (g *connGate) dial(ctx context.Context, network, host string) (net.Conn, error) {
	if err := g.pass(ctx.Done()); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, g: g, closing: make(chan struct{})}, nil
}

type gatedConn struct {
	net.Conn
	g       *connGate
	once    sync.Once
	closing chan struct{}
}

// Read passes the gate before and after reading: a read already waiting
// when the gate shuts (a long-polling fetch) holds what it got.
func (c *gatedConn) Read(p []byte) (int, error) {
	if err := c.g.pass(c.closing); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if gerr := c.g.pass(c.closing); gerr != nil {
		return 0, gerr
	}
	return n, err
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if err := c.g.pass(c.closing); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c *gatedConn) Close() error {
	c.once.Do(func() { close(c.closing) })
	return c.Conn.Close()
}

// groupMembers is how many members the coordinator has in the group.
func (e *dEnv) groupMembers() int { return len(e.describeGroup().Members) }

// workersOf is the worker ids in the connector's status: connector first,
// then its tasks.
func workersOf(t *testing.T, h herder.Herder, name string) []string {
	t.Helper()
	st, err := h.ConnectorStatus(context.Background(), name)
	if err != nil {
		t.Fatalf("status of %s: %v", name, err)
	}
	out := []string{st.Connector.WorkerID}
	for _, ts := range st.Tasks {
		out = append(out, ts.WorkerID)
	}
	return out
}

// Two workers on connect.protocol=eager; w2 can no longer read the config
// topic, and a new connector moves the config offset past it. w2, which
// stopped all its work before the round, cannot read up to the round's
// offset within worker.sync.timeout.ms: it leaves the group, so w1 runs
// every connector and task within a few seconds (before, w2 stayed in the
// group holding back its whole assignment, which then ran nowhere). While
// it is out, w2's REST API answers, with 409 for what needs a current
// config, and the statuses name w1 for everything. Once w2 can read again
// it comes back when its backoff ends (one second, then, having failed to
// read, 1.5 s), as a new member, and the work is spread over both again.
// Nothing ever runs on both at once.
func TestDistributedEagerBehindLeavesTheGroup(t *testing.T) {
	const backoff = 1500 * time.Millisecond // waits of 1 s, then 1.5 s
	e, gate, live, h1, h2 := eagerPair(t, "w2", backoff, nil)
	defer gate.release() // before the cleanups close the herders
	w2ID := herder.MemberID(h2)
	outs := watchMembership(t, h2)

	gate.shut()
	shut := time.Now()
	createRetrying(t, h1, "b")
	// Everything on w1, nothing on w2, w2 out of the group.
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := live.running()
		if len(got) == 6 && !slices.ContainsFunc(got, onWorker("w2")) && herder.MemberID(h2) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("w1 does not run everything %v after w2 fell behind: running %v, w2 is member %q",
				time.Since(shut), got, herder.MemberID(h2))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("w1 runs all six items %v after w2's config reads stalled", time.Since(shut))
	if n := e.groupMembers(); n != 1 {
		// w2 may just be back for a round (its first wait is short);
		// it leaves again, being still behind.
		dWait(t, "w2 out of the group again", func() bool { return e.groupMembers() == 1 })
	}
	// The statuses say w1 runs everything.
	dWait(t, "statuses naming w1 alone", func() bool {
		for _, c := range []string{"a", "b"} {
			if ws := workersOf(t, h1, c); len(ws) != 3 || slices.ContainsFunc(ws, func(w string) bool { return w != "w1" }) {
				return false
			}
		}
		return true
	})
	// w2 still answers: statuses from the status topic, 409 for what
	// needs a current config.
	if ws := workersOf(t, h2, "a"); len(ws) != 3 {
		t.Fatalf("w2's status of a: %v", ws)
	}
	resp, err := http.Get(e.urls["w2"] + "/connectors/a")
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("GET /connectors/a on w2 while behind: %d %v", resp.StatusCode, body)
	}

	// Still unable to read when its first wait ends, w2 stays out and
	// waits again, for longer.
	time.Sleep(time.Until(shut.Add(2500 * time.Millisecond)))
	if p, id := outs(), herder.MemberID(h2); len(p) != 0 || id != "" {
		t.Fatalf("w2, still unable to read, came back: out %v, member %q", p, id)
	}
	gate.release()
	released := time.Now()
	dWait(t, "the work spread over both workers again", func() bool {
		got := live.running()
		return len(got) == 6 && slices.ContainsFunc(got, onWorker("w1")) && slices.ContainsFunc(got, onWorker("w2")) &&
			h2.Health(context.Background()) == nil && herder.MemberID(h2) != ""
	})
	t.Logf("work spread again %v after w2 could read", time.Since(released))
	if id := herder.MemberID(h2); id == w2ID {
		t.Fatalf("w2 came back as member %s, the one it left as", id)
	}
	dStates(t, h2, "b", "RUNNING:RUNNING,RUNNING")
	dWait(t, "w2 answers for a current config", func() bool {
		_, err := h2.ConnectorInfo(context.Background(), "b")
		return err == nil
	})
	if n := e.groupMembers(); n != 2 {
		t.Fatalf("%d members after w2 came back", n)
	}
	// Out of the group once, for its first wait of one second, a read
	// that failed and at least part of its second wait (less what
	// sampling the member id every 2 ms may miss on a busy machine).
	const slack = 100 * time.Millisecond
	periods := outs()
	if len(periods) != 1 || periods[0] < time.Second+300*time.Millisecond-slack {
		t.Fatalf("w2 was out of the group for %v; want once, for over 1.3s", periods)
	}
	t.Logf("w2 was out of the group %d times: %v", len(periods), periods)
	if o := live.overlaps(); len(o) != 0 {
		t.Fatalf("ran on two workers at once: %v", o)
	}
}

// watchMembership samples h's group member id until the test ends; the
// function returned gives how long each time out of the group (no member
// id) lasted, for those that ended.
func watchMembership(t *testing.T, h *herder.Distributed) func() []time.Duration {
	var mu sync.Mutex
	var periods []time.Duration
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var since time.Time
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			out := herder.MemberID(h) == ""
			switch {
			case out && since.IsZero():
				since = time.Now()
			case !out && !since.IsZero():
				mu.Lock()
				periods = append(periods, time.Since(since))
				mu.Unlock()
				since = time.Time{}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(periods)
	}
}

// The eager leader is the one that cannot read the config topic: a record
// it has not read (written here by another client, as by a Java worker or
// a leader that has since gone) makes w2 rejoin with a newer offset, and
// the round ends in CONFIG_MISMATCH for everyone. Nothing runs anywhere
// until a round succeeds, which takes every member's JoinGroup; w1 cannot
// read to the end within worker.sync.timeout.ms and leaves, as Kafka
// Connect's herder does, instead of holding the group up until the
// coordinator drops it after the rebalance timeout. w2 then runs
// everything; w1 comes back once it can read.
func TestDistributedEagerLeaderBehindLeavesTheGroup(t *testing.T) {
	const rebalanceTimeout = 10 * time.Second
	e, gate, live, h1, h2 := eagerPair(t, "w1", time.Second, func(c *cluster.Config) { c.RebalanceTimeout = rebalanceTimeout })
	defer gate.release()
	if !herder.IsLeader(h1) {
		t.Fatal("w1, the first member, does not lead")
	}

	gate.shut()
	writer := storage.NewConfigStore(storage.LogConfig{Topic: dConfigTopic, ClientOpts: e.opts}, nil)
	if err := writer.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	cfg := srcConfig()
	cfg["name"] = "b"
	if err := writer.PutConnectorConfig(ctxT(t), "b", cfg, nil); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	deadline := written.Add(rebalanceTimeout / 2)
	for {
		got := live.running()
		if len(got) == 6 && !slices.ContainsFunc(got, onWorker("w1")) && herder.IsLeader(h2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("w2 does not run everything %v after the leader fell behind: running %v", time.Since(written), got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("w2 leads and runs all six items %v after the record w1 cannot read", time.Since(written))

	gate.release()
	dWait(t, "the work spread over both workers again", func() bool {
		got := live.running()
		return len(got) == 6 && slices.ContainsFunc(got, onWorker("w1")) && slices.ContainsFunc(got, onWorker("w2"))
	})
	dWait(t, "w1 answers for a current config", func() bool {
		_, err := h1.ConnectorInfo(context.Background(), "b")
		return err == nil
	})
	if o := live.overlaps(); len(o) != 0 {
		t.Fatalf("ran on two workers at once: %v", o)
	}
}

// eagerPair starts w1 then w2 on connect.protocol=eager, with the config
// topic reads of the worker named stalled going through the gate returned
// (open), worker.sync.timeout.ms 300 ms and worker.unsync.backoff.ms
// backoff, and connector a running spread over both.
func eagerPair(t *testing.T, stalled string, backoff time.Duration, group func(*cluster.Config)) (*dEnv, *connGate, *liveWork, *herder.Distributed, *herder.Distributed) {
	t.Helper()
	return gatedPair(t, cluster.Eager, stalled, backoff, group)
}

// gatedPair is eagerPair on connect.protocol p.
func gatedPair(t *testing.T, p cluster.Protocol, stalled string, backoff time.Duration, group func(*cluster.Config)) (*dEnv, *connGate, *liveWork, *herder.Distributed, *herder.Distributed) {
	t.Helper()
	e := newDEnv(t)
	e.group = func(c *cluster.Config) {
		c.Protocol = p
		if group != nil {
			group(c)
		}
	}
	gate := newConnGate()
	// Registered before the herders' cleanups, so it runs after them; a
	// test opens the gate itself before they close the herders.
	t.Cleanup(gate.release)
	e.logOpts = func(worker, topic string) []kgo.Opt {
		if worker == stalled && topic == dConfigTopic {
			return []kgo.Opt{kgo.Dialer(gate.dial)}
		}
		return nil
	}
	e.options = func(o *herder.DistributedOptions) {
		o.SyncTimeout = 300 * time.Millisecond
		o.UnsyncBackoff = backoff
	}
	live := newLiveWork(t)
	live.wrap(e, "w1", "w2")
	h1 := e.start("w1", newFakeInstances(), true)
	h2 := e.start("w2", newFakeInstances(), true)
	createRetrying(t, h1, "a")
	dStates(t, h2, "a", "RUNNING:RUNNING,RUNNING")
	dWait(t, "a's three items spread over both workers", func() bool {
		got := live.running()
		return len(got) == 3 && slices.ContainsFunc(got, onWorker("w1")) && slices.ContainsFunc(got, onWorker("w2"))
	})
	return e, gate, live, h1, h2
}

// Closing a worker while it is out of the group (waiting out its backoff)
// returns at once, and it does not join again.
func TestDistributedEagerCloseWhileOutOfTheGroup(t *testing.T) {
	e, gate, live, h1, h2 := eagerPair(t, "w2", time.Minute, nil)
	defer gate.release()
	gate.shut()
	createRetrying(t, h1, "b")
	dWait(t, "w2 out of the group", func() bool { return herder.MemberID(h2) == "" && len(live.running()) == 6 })
	gate.release()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h2.Close(ctx); err != nil {
		t.Fatalf("close while out of the group: %v", err)
	}
	took := time.Since(start)
	// The first wait is one second; Close ends it.
	if took > 500*time.Millisecond {
		t.Fatalf("close while out of the group took %v", took)
	}
	t.Logf("closed in %v while out of the group", took)
	time.Sleep(1500 * time.Millisecond) // past the wait
	if n := e.groupMembers(); n != 1 {
		t.Fatalf("%d members after w2 closed", n)
	}
	if got := live.running(); len(got) != 6 || slices.ContainsFunc(got, onWorker("w2")) {
		t.Fatalf("running %v", got)
	}
}

// A CONFIG_MISMATCH round under eager in which this worker is a follower
// already up to date with the assignment's offset is not a reason to leave:
// as Kafka Connect's herder does, it just rejoins, without reading the
// config topic. Here the leader w1 cannot read a record w2 has read, so
// the round fails for both; w2's own config reads stall from then on too.
// w1 leaves (it cannot catch up within worker.sync.timeout.ms); w2 must
// stay in the group and take the lead, not leave as well, which would
// leave the group empty.
func TestDistributedEagerUpToDateFollowerStaysOnMismatch(t *testing.T) {
	e := newDEnv(t)
	e.group = func(c *cluster.Config) { c.Protocol = cluster.Eager }
	gates := map[string]*connGate{"w1": newConnGate(), "w2": newConnGate()}
	for _, g := range gates {
		t.Cleanup(g.release)
	}
	e.logOpts = func(worker, topic string) []kgo.Opt {
		if topic == dConfigTopic {
			return []kgo.Opt{kgo.Dialer(gates[worker].dial)}
		}
		return nil
	}
	e.options = func(o *herder.DistributedOptions) {
		o.SyncTimeout = 300 * time.Millisecond
		o.UnsyncBackoff = time.Second
	}
	live := newLiveWork(t)
	live.wrap(e, "w1", "w2")
	h1 := e.start("w1", newFakeInstances(), true)
	h2 := e.start("w2", newFakeInstances(), true)
	defer func() {
		for _, g := range gates {
			g.release()
		}
	}()
	createRetrying(t, h1, "a")
	dStates(t, h2, "a", "RUNNING:RUNNING,RUNNING")
	if !herder.IsLeader(h1) {
		t.Fatal("w1, the first member, does not lead")
	}
	w2ID := herder.MemberID(h2)
	outs := watchMembership(t, h2)

	// LeaveGroups by member id; w2's config reads stall once it joins
	// with the record written below.
	var mu sync.Mutex
	leaves := map[string]int{}
	var armAt atomic.Int64
	armAt.Store(-1)
	w2URL := e.urls["w2"] + "/"
	e.c.ControlKey(int16(kmsg.LeaveGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		lg := req.(*kmsg.LeaveGroupRequest)
		mu.Lock()
		defer mu.Unlock()
		leaves[lg.MemberID]++
		for _, m := range lg.Members {
			if m.MemberID != lg.MemberID {
				leaves[m.MemberID]++
			}
		}
		return nil, nil, false
	})
	e.c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		jg := req.(*kmsg.JoinGroupRequest)
		if at := armAt.Load(); at >= 0 && len(jg.Protocols) > 0 {
			if md, err := cluster.DecodeMetadata(jg.Protocols[0].Metadata); err == nil && md.URL == w2URL && md.ConfigOffset >= at {
				gates["w2"].shut()
			}
		}
		return nil, nil, false
	})

	gates["w1"].shut()
	writer := storage.NewConfigStore(storage.LogConfig{Topic: dConfigTopic, ClientOpts: e.opts}, nil)
	if err := writer.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	cfg := srcConfig()
	cfg["name"] = "b"
	if err := writer.PutConnectorConfig(ctxT(t), "b", cfg, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(e.opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctxT(t), dConfigTopic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(dConfigTopic, 0)
	armAt.Store(end.Offset)
	written := time.Now()

	dWait(t, "w2 alone in the group, leading", func() bool {
		return herder.IsLeader(h2) && e.groupMembers() == 1
	})
	t.Logf("w2 leads alone %v after the record w1 cannot read", time.Since(written))
	mu.Lock()
	w2Leaves := leaves[w2ID]
	mu.Unlock()
	if w2Leaves != 0 || len(outs()) != 0 || herder.MemberID(h2) != w2ID {
		t.Fatalf("w2, up to date, left the group: %d LeaveGroups, out %v, member %q (was %q)",
			w2Leaves, outs(), herder.MemberID(h2), w2ID)
	}

	for _, g := range gates {
		g.release()
	}
	dWait(t, "the work spread over both workers again", func() bool {
		got := live.running()
		return len(got) == 6 && slices.ContainsFunc(got, onWorker("w1")) && slices.ContainsFunc(got, onWorker("w2"))
	})
	if o := live.overlaps(); len(o) != 0 {
		t.Fatalf("ran on two workers at once: %v", o)
	}
}

// An eager worker out of the group because it cannot read the config topic
// does not join again before it can: as Kafka Connect's herder does, once
// its wait ends it reads the topic (within worker.sync.timeout.ms) and
// joins only if that succeeds, else waits again. Joining only to leave
// again would cost the whole group two stop-the-world rebalances per
// wait: here w1's generation stays the same, and its work runs on, all the
// while w2 cannot read. Once w2 can, it is back after its next wait.
func TestDistributedEagerBehindStaysOutUntilItCanRead(t *testing.T) {
	const backoff = 1500 * time.Millisecond // waits of 1 s, then 1.5 s
	e, gate, live, h1, h2 := eagerPair(t, "w2", backoff, nil)
	defer gate.release()
	outs := watchMembership(t, h2)

	gate.shut()
	createRetrying(t, h1, "b")
	dWait(t, "w2 out of the group, w1 running everything", func() bool {
		got := live.running()
		return herder.MemberID(h2) == "" && len(got) == 6 && !slices.ContainsFunc(got, onWorker("w2"))
	})
	gen := herder.Generation(h1)
	out := time.Now()
	// Two waits and more: w2 has tried to read twice by the end.
	for time.Since(out) < 2*time.Second+backoff {
		if g, id := herder.Generation(h1), herder.MemberID(h2); g != gen || id != "" {
			t.Fatalf("%v after w2 left, still unable to read: w1 in generation %d (was %d), w2 member %q",
				time.Since(out).Round(time.Millisecond), g, gen, id)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := e.groupMembers(); n != 1 {
		t.Fatalf("%d members while w2 cannot read", n)
	}
	if got := live.running(); len(got) != 6 || slices.ContainsFunc(got, onWorker("w2")) {
		t.Fatalf("running %v while w2 cannot read", got)
	}

	gate.release()
	released := time.Now()
	dWait(t, "the work spread over both workers again", func() bool {
		got := live.running()
		return len(got) == 6 && slices.ContainsFunc(got, onWorker("w1")) && slices.ContainsFunc(got, onWorker("w2")) &&
			herder.MemberID(h2) != ""
	})
	back := time.Since(released)
	t.Logf("work spread again %v after w2 could read; w2 was out %v", back, outs())
	// Back after its next wait at the latest (plus a rebalance).
	if back > backoff+3*time.Second {
		t.Fatalf("w2 back %v after it could read", back)
	}
	if p := outs(); len(p) != 1 {
		t.Fatalf("w2 was out of the group %d times: %v", len(p), p)
	}
	dStates(t, h2, "b", "RUNNING:RUNNING,RUNNING")
	if o := live.overlaps(); len(o) != 0 {
		t.Fatalf("ran on two workers at once: %v", o)
	}
}

// Under the cooperative protocols the new path is not taken: a worker
// that cannot read the config topic up to a round's offset stays in the
// group (same member id, no LeaveGroup), keeps running what it ran, and
// only holds back what the round added, answering 409 meanwhile; once it
// can read, it takes that on.
func TestDistributedSessionedBehindStaysInTheGroup(t *testing.T) {
	e, gate, live, h1, h2 := gatedPair(t, cluster.Sessioned, "w2", time.Second, nil)
	defer gate.release()
	var leaves atomic.Int32
	e.c.ControlKey(int16(kmsg.LeaveGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		leaves.Add(1)
		return nil, nil, false
	})
	id := herder.MemberID(h2)
	before := slices.DeleteFunc(live.running(), func(s string) bool { return !onWorker("w2")(s) })
	gate.shut()
	createRetrying(t, h1, "b")
	dWait(t, "w2 answering 409 while behind", func() bool {
		_, err := h2.ConnectorInfo(context.Background(), "a")
		return errors.Is(err, herder.ErrConflict)
	})
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if got := herder.MemberID(h2); got != id {
			t.Fatalf("w2, sessioned and behind, is member %q, was %q", got, id)
		}
		got := live.running()
		for _, w := range before {
			if !slices.Contains(got, w) {
				t.Fatalf("w2 stopped %s while behind: running %v", w, got)
			}
		}
	}
	if n := leaves.Load(); n != 0 {
		t.Fatalf("%d LeaveGroups while w2 was behind", n)
	}
	gate.release()
	dWait(t, "w2 caught up", func() bool {
		_, err := h2.ConnectorInfo(context.Background(), "b")
		return err == nil
	})
	dStates(t, h1, "b", "RUNNING:RUNNING,RUNNING")
	if o := live.overlaps(); len(o) != 0 {
		t.Fatalf("ran on two workers at once: %v", o)
	}
}

package worker_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicPartitions is how many partitions the broker holds for topic.
func topicPartitions(t *testing.T, seeds []string, topic string) int {
	t.Helper()
	adm, ctx, done := admin(t, seeds)
	defer done()
	details, err := adm.ListTopics(ctx, topic)
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

// A source task looks its topics up and creates them with an admin client
// built as Kafka Connect builds the task's TopicAdmin: client id
// connector-adminclient-<task> unless the worker's admin.* or the
// connector's admin.override.* settings say otherwise (the override
// winning), and nothing of the producer's settings. A proxy in front of
// the broker sees the client id of each client's first requests, which go
// to the bootstrap address: the task's lookup (a metadata request asking
// the broker not to create the topic) among them.
func TestSourceTopicCreationAdminClient(t *testing.T) {
	for _, tc := range []struct {
		name     string
		worker   map[string]string
		override string
		want     string
	}{
		{"defaults", nil, "", "connector-adminclient-src-0"},
		{"worker admin settings", map[string]string{"admin.client.id": "worker-admin"}, "", "worker-admin"},
		{"connector admin overrides", map[string]string{"admin.client.id": "worker-admin"}, "conn-admin", "conn-admin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cluster.Close)
			seeds := cluster.ListenAddrs()
			px := startRequestProxy(t, seeds[0])
			extra := map[string]string{"bootstrap.servers": px.addr(), "producer.client.id": "worker-producer"}
			for k, v := range tc.worker {
				extra[k] = v
			}
			e := startWorker(t, extra)
			cfg := map[string]string{
				"connector.class": "CounterSource", "topic": "made", "max.records": "10",
				"topic.creation.default.replication.factor": "1",
				"topic.creation.default.partitions":         "7",
				"producer.override.client.id":               "conn-producer",
			}
			if tc.override != "" {
				cfg["admin.override.client.id"] = tc.override
			}
			e.mustDo("PUT", "/connectors/src/config", cfg, 201)
			waitUntil(t, "10 records", 30*time.Second, func() bool { return endOffsets(t, seeds, "made") == 10 })
			if got := topicPartitions(t, seeds, "made"); got != 7 {
				t.Errorf("topic made with %d partitions, want the connector's 7", got)
			}
			if got := px.lookupsOf("made"); !slices.Equal(got, []string{tc.want}) {
				t.Errorf("lookups of made without auto-creation by clients %q, want one by %q", got, tc.want)
			}
			if ids := px.clientIDs(); !slices.Contains(ids, "conn-producer") {
				t.Errorf("clients seen %q: the producer (conn-producer) is not among them, so the proxy saw too little to tell", ids)
			}
		})
	}
}

// requestProxy forwards TCP connections to a broker and notes the client
// id of every request, and which ones are metadata requests for a topic
// that ask the broker not to create it.
type requestProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	conns   []net.Conn
	ids     []string
	lookups map[string][]string // topic -> client ids
}

func startRequestProxy(t *testing.T, target string) *requestProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &requestProxy{ln: ln, target: target, lookups: map[string][]string{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *requestProxy) addr() string { return p.ln.Addr().String() }

func (p *requestProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, b)
		closed := p.closed
		p.mu.Unlock()
		if closed {
			c.Close()
			b.Close()
			return
		}
		p.wg.Go(func() {
			_, _ = io.Copy(c, b)
			c.Close()
		})
		p.wg.Go(func() {
			p.forward(c, b)
			b.Close()
		})
	}
}

// forward copies requests from c to b one frame at a time, noting each.
func (p *requestProxy) forward(c, b net.Conn) {
	var size [4]byte
	for {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		p.note(body)
		if _, err := b.Write(append(size[:], body...)); err != nil {
			return
		}
	}
}

// note reads a request's header (key, version, correlation id, client id)
// and, for a metadata request, its topics.
func (p *requestProxy) note(body []byte) {
	r := kbin.Reader{Src: body}
	key, version := r.Int16(), r.Int16()
	r.Int32()
	id := r.NullableString()
	if r.Complete() != nil || id == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.ids, *id) {
		p.ids = append(p.ids, *id)
	}
	if key != int16(kmsg.Metadata) {
		return
	}
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(version)
	if req.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if req.ReadFrom(r.Src) != nil || req.AllowAutoTopicCreation {
		return
	}
	for _, rt := range req.Topics {
		if rt.Topic != nil {
			p.lookups[*rt.Topic] = append(p.lookups[*rt.Topic], *id)
		}
	}
}

func (p *requestProxy) lookupsOf(topic string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lookups[topic])
}

func (p *requestProxy) clientIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ids)
}

func (p *requestProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

package runtime

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ClientSettings is what a set of Kafka client properties maps to.
type ClientSettings struct {
	Opts []kgo.Opt
	// MaxPollRecords is max.poll.records (consumers); 0 when unset.
	MaxPollRecords int
	// GroupID is group.id (consumers); "" when unset.
	GroupID string
	// Balancers are partition.assignment.strategy's assignors (consumers),
	// in order of preference; nil when unset (the runner's default).
	Balancers []kgo.GroupBalancer
	// Ignored names the properties that were not mapped: unknown ones,
	// ones with no franz-go counterpart (batch.size: franz-go batches by
	// linger and max.request.size) and ones the runner owns (serializers,
	// enable.auto.commit). Callers log them,
	// as Kafka's clients warn about configs "supplied but not known".
	Ignored []string
}

// ClientProperties collects a connector's client properties of one kind
// ("producer", "consumer", "admin"): the worker's "<kind>." settings,
// overlaid with the connector's "<kind>.override." settings (KIP-458), with
// the prefixes removed. Override policy checks are the caller's.
func ClientProperties(worker, connector map[string]string, kind string) map[string]string {
	out := map[string]string{}
	prefix := kind + "."
	for k, v := range worker {
		if name, ok := strings.CutPrefix(k, prefix); ok && name != "" {
			out[name] = v
		}
	}
	prefix = kind + ".override."
	for k, v := range connector {
		if name, ok := strings.CutPrefix(k, prefix); ok && name != "" {
			out[name] = v
		}
	}
	return out
}

// propParser reads typed values and collects the first error per property.
type propParser struct {
	props map[string]string
	errs  []string
}

func (p *propParser) bad(name, v, want string) {
	p.errs = append(p.errs, fmt.Sprintf("%s=%q: want %s", name, v, want))
}

func (p *propParser) int(name string, lo, hi int64) (int64, bool) {
	v := strings.TrimSpace(p.props[name])
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		p.bad(name, v, fmt.Sprintf("an integer in [%d, %d]", lo, hi))
		return 0, false
	}
	return n, true
}

func (p *propParser) ms(name string, lo int64) (time.Duration, bool) {
	n, ok := p.int(name, lo, int64(time.Duration(1<<63-1)/time.Millisecond))
	return time.Duration(n) * time.Millisecond, ok
}

func (p *propParser) bool(name string) (bool, bool) {
	switch v := strings.ToLower(strings.TrimSpace(p.props[name])); v {
	case "true":
		return true, true
	case "false":
		return false, true
	default:
		p.bad(name, v, "true or false")
		return false, false
	}
}

func (p *propParser) err(kind string) error {
	if len(p.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s properties: %s", kind, strings.Join(p.errs, "; "))
}

// ProducerOptions maps Kafka producer properties (names without prefix) to
// franz-go options. acks other than all turns idempotence off unless
// enable.idempotence=true asks for it, which is then an error, as in Kafka.
// max.in.flight.requests.per.connection applies without idempotence; with
// it, franz-go keeps order with up to 5 requests in flight, and more is an
// error, as in Kafka.
func ProducerOptions(props map[string]string) (ClientSettings, error) {
	var s ClientSettings
	p := &propParser{props: props}
	idem, idemSet := true, false
	acks := "all"
	inflight := int64(0)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		v := strings.TrimSpace(props[name])
		switch name {
		case "acks":
			acks = strings.ToLower(v)
			switch acks {
			case "all", "-1":
				s.Opts = append(s.Opts, kgo.RequiredAcks(kgo.AllISRAcks()))
			case "1":
				s.Opts = append(s.Opts, kgo.RequiredAcks(kgo.LeaderAck()))
			case "0":
				s.Opts = append(s.Opts, kgo.RequiredAcks(kgo.NoAck()))
			default:
				p.bad(name, v, "all, -1, 0 or 1")
			}
		case "enable.idempotence":
			if b, ok := p.bool(name); ok {
				idem, idemSet = b, true
			}
		case "linger.ms":
			if d, ok := p.ms(name, 0); ok {
				s.Opts = append(s.Opts, kgo.ProducerLinger(d))
			}
		case "compression.type":
			var c kgo.CompressionCodec
			switch strings.ToLower(v) {
			case "none":
				c = kgo.NoCompression()
			case "gzip":
				c = kgo.GzipCompression()
			case "snappy":
				c = kgo.SnappyCompression()
			case "lz4":
				c = kgo.Lz4Compression()
			case "zstd":
				c = kgo.ZstdCompression()
			default:
				p.bad(name, v, "none, gzip, snappy, lz4 or zstd")
				continue
			}
			s.Opts = append(s.Opts, kgo.ProducerBatchCompression(c))
		case "max.in.flight.requests.per.connection":
			if n, ok := p.int(name, 1, 1<<20); ok {
				inflight = n
			}
		case "client.id":
			s.Opts = append(s.Opts, kgo.ClientID(v))
		case "max.request.size":
			// The largest record batch, hence the largest record: what
			// Kafka's producer checks max.request.size against.
			if n, ok := p.int(name, 1, 1<<30); ok {
				s.Opts = append(s.Opts, kgo.ProducerBatchMaxBytes(int32(n)))
			}
		case "request.timeout.ms":
			if d, ok := p.ms(name, 1); ok {
				s.Opts = append(s.Opts, kgo.ProduceRequestTimeout(d))
			}
		case "delivery.timeout.ms":
			if d, ok := p.ms(name, 0); ok {
				s.Opts = append(s.Opts, kgo.RecordDeliveryTimeout(d))
			}
		case "retries":
			if n, ok := p.int(name, 0, 1<<31-1); ok {
				s.Opts = append(s.Opts, kgo.RecordRetries(int(n)))
			}
		case "buffer.memory":
			if n, ok := p.int(name, 1, 1<<40); ok {
				s.Opts = append(s.Opts, kgo.MaxBufferedBytes(int(n)))
			}
		default:
			if !commonClientProp(&s, p, name, v) {
				s.Ignored = append(s.Ignored, name)
			}
		}
	}
	if acks != "all" && acks != "-1" {
		if idemSet && idem {
			p.errs = append(p.errs, fmt.Sprintf("enable.idempotence=true needs acks=all, not acks=%s", acks))
		}
		idem = false
	}
	switch {
	case !idem:
		s.Opts = append(s.Opts, kgo.DisableIdempotentWrite())
		if inflight > 0 {
			s.Opts = append(s.Opts, kgo.MaxProduceRequestsInflightPerBroker(int(inflight)))
		}
	case inflight > 5:
		p.errs = append(p.errs, fmt.Sprintf("idempotence needs max.in.flight.requests.per.connection <= 5, not %d", inflight))
	}
	// With idempotence franz-go keeps up to 5 requests in flight and the
	// order of records, so the setting needs no option then.
	return s, p.err("producer")
}

// ConsumerOptions maps Kafka consumer properties (names without prefix) to
// franz-go options; max.poll.records and group.id come back as fields.
func ConsumerOptions(props map[string]string) (ClientSettings, error) {
	var s ClientSettings
	p := &propParser{props: props}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		v := strings.TrimSpace(props[name])
		switch name {
		case "max.poll.records":
			if n, ok := p.int(name, 1, 1<<31-1); ok {
				s.MaxPollRecords = int(n)
			}
		case "group.id":
			s.GroupID = v
		case "partition.assignment.strategy":
			s.Balancers = assignors(p, name, v)
		case "group.protocol", "group.remote.assignor":
			// Read together after the loop.
		case "fetch.min.bytes":
			if n, ok := p.int(name, 1, 1<<31-1); ok {
				s.Opts = append(s.Opts, kgo.FetchMinBytes(int32(n)))
			}
		case "fetch.max.wait.ms":
			if d, ok := p.ms(name, 0); ok {
				s.Opts = append(s.Opts, kgo.FetchMaxWait(d))
			}
		case "fetch.max.bytes":
			if n, ok := p.int(name, 1, 1<<31-1); ok {
				s.Opts = append(s.Opts, kgo.FetchMaxBytes(int32(n)))
			}
		case "max.partition.fetch.bytes":
			if n, ok := p.int(name, 1, 1<<31-1); ok {
				s.Opts = append(s.Opts, kgo.FetchMaxPartitionBytes(int32(n)))
			}
		case "auto.offset.reset":
			switch strings.ToLower(v) {
			case "earliest":
				s.Opts = append(s.Opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			case "latest":
				s.Opts = append(s.Opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
			case "none":
				// Kafka's consumer throws NoOffsetForPartitionException
				// for a partition with no committed offset, and
				// OffsetOutOfRangeException past the log: AtCommitted
				// makes the first an error of the partition (franz-go's
				// NoResetOffset alone starts at the log start), and
				// NoResetOffset the second; the sink task fails on both
				// (consumeFailure).
				s.Opts = append(s.Opts, kgo.ConsumeStartOffset(kgo.NewOffset().AtCommitted()),
					kgo.ConsumeResetOffset(kgo.NoResetOffset()))
			default:
				p.bad(name, v, "earliest, latest or none")
			}
		case "isolation.level":
			switch strings.ToLower(v) {
			case "read_committed":
				s.Opts = append(s.Opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			case "read_uncommitted":
				s.Opts = append(s.Opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
			default:
				p.bad(name, v, "read_committed or read_uncommitted")
			}
		case "session.timeout.ms":
			if d, ok := p.ms(name, 1); ok {
				s.Opts = append(s.Opts, kgo.SessionTimeout(d))
			}
		case "heartbeat.interval.ms":
			if d, ok := p.ms(name, 1); ok {
				s.Opts = append(s.Opts, kgo.HeartbeatInterval(d))
			}
		case "max.poll.interval.ms":
			// Kafka's consumer uses it as the group's rebalance timeout.
			if d, ok := p.ms(name, 1); ok {
				s.Opts = append(s.Opts, kgo.RebalanceTimeout(d))
			}
		case "client.id":
			s.Opts = append(s.Opts, kgo.ClientID(v))
		case "check.crcs":
			// Kafka's consumer checks every fetched batch's CRC unless
			// told not to; so does franz-go.
			if check, ok := p.bool(name); ok && !check {
				s.Opts = append(s.Opts, kgo.DisableFetchCRCValidation())
			}
		case "group.instance.id":
			if v != "" {
				s.Opts = append(s.Opts, kgo.InstanceID(v))
			}
		default:
			if !commonClientProp(&s, p, name, v) {
				s.Ignored = append(s.Ignored, name)
			}
		}
	}
	groupProtocol(&s, p, props)
	return s, p.err("consumer")
}

// groupProtocol reads group.protocol and group.remote.assignor. With
// group.protocol=consumer (KIP-848, Kafka 4.0) the broker assigns the
// partitions, with the group.remote.assignor it names ("uniform", the
// broker's default, or "range"; franz-go's server-side mode takes them
// from the sticky and range balancers); the client-side assignors of
// partition.assignment.strategy and the client's session and heartbeat
// settings are the classic protocol's and cannot be set with it, and
// group.remote.assignor cannot be set with classic, as Kafka's consumer
// refuses.
func groupProtocol(s *ClientSettings, p *propParser, props map[string]string) {
	proto := strings.ToLower(strings.TrimSpace(props["group.protocol"]))
	remote, hasRemote := props["group.remote.assignor"]
	remote = strings.ToLower(strings.TrimSpace(remote))
	switch proto {
	case "", "classic":
		if hasRemote && remote != "" {
			p.bad("group.remote.assignor", props["group.remote.assignor"], "nothing: it cannot be set when group.protocol=CLASSIC")
		}
		return
	case "consumer":
	default:
		p.bad("group.protocol", props["group.protocol"], "classic or consumer")
		return
	}
	for _, classic := range []string{"partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms"} {
		if _, ok := props[classic]; ok {
			p.bad(classic, props[classic], "nothing: it cannot be set when group.protocol=CONSUMER")
		}
	}
	switch remote {
	case "", "uniform":
		s.Balancers = []kgo.GroupBalancer{kgo.StickyBalancer()}
	case "range":
		s.Balancers = []kgo.GroupBalancer{kgo.RangeBalancer()}
	default:
		p.bad("group.remote.assignor", props["group.remote.assignor"], "uniform or range")
		return
	}
	s.Opts = append(s.Opts, kgo.ServerSideBalancer())
}

// javaAssignors are the partition assignors of Kafka's consumer, by class
// name, as franz-go's balancers, which speak the same group protocols
// (assignor names "range", "roundrobin", "sticky", "cooperative-sticky"), so
// a task's consumer can share a group with Java consumers.
var javaAssignors = map[string]func() kgo.GroupBalancer{
	"org.apache.kafka.clients.consumer.RangeAssignor":             kgo.RangeBalancer,
	"org.apache.kafka.clients.consumer.RoundRobinAssignor":        kgo.RoundRobinBalancer,
	"org.apache.kafka.clients.consumer.StickyAssignor":            kgo.StickyBalancer,
	"org.apache.kafka.clients.consumer.CooperativeStickyAssignor": kgo.CooperativeStickyBalancer,
}

// assignors reads partition.assignment.strategy: a comma-separated list of
// Kafka's assignor classes (the simple names are accepted too). As in
// Kafka's consumer, the group rebalances eagerly unless every assignor
// listed is cooperative (franz-go decides it the same way).
func assignors(p *propParser, name, v string) []kgo.GroupBalancer {
	var out []kgo.GroupBalancer
	for _, c := range strings.Split(v, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		mk := javaAssignors[c]
		if mk == nil {
			mk = javaAssignors["org.apache.kafka.clients.consumer."+c]
		}
		if mk == nil {
			p.bad(name, v, "Kafka's assignor classes: "+strings.Join(slices.Sorted(maps.Keys(javaAssignors)), ", ")+" (unknown: "+c+")")
			return nil
		}
		out = append(out, mk())
	}
	if len(out) == 0 {
		p.bad(name, v, "at least one assignor class")
	}
	return out
}

// AdminOptions maps Kafka admin client properties (names without prefix) to
// franz-go options: those of the admin client a source task creates its
// topics with (topic.creation.*), built as Kafka Connect builds that
// task's TopicAdmin from the worker's admin.* and the connector's
// admin.override.* settings (ClientProperties with kind "admin").
// request.timeout.ms bounds each request's wait for its answer, beyond the
// request's own timeout field where it has one (CreateTopics).
func AdminOptions(props map[string]string) (ClientSettings, error) {
	var s ClientSettings
	p := &propParser{props: props}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		v := strings.TrimSpace(props[name])
		switch name {
		case "client.id":
			s.Opts = append(s.Opts, kgo.ClientID(v))
		case "request.timeout.ms":
			if d, ok := p.ms(name, 1); ok {
				s.Opts = append(s.Opts, kgo.RequestTimeoutOverhead(d))
			}
		default:
			if !commonClientProp(&s, p, name, v) {
				s.Ignored = append(s.Ignored, name)
			}
		}
	}
	return s, p.err("admin")
}

// commonClientProp maps the properties all clients share.
func commonClientProp(s *ClientSettings, p *propParser, name, v string) bool {
	switch name {
	case "metadata.max.age.ms":
		if d, ok := p.ms(name, 0); ok {
			// franz-go refuses a max age above an hour or below its min
			// age (5s by default, 10ms at least); Kafka takes any.
			d = min(max(d, 10*time.Millisecond), time.Hour)
			s.Opts = append(s.Opts, kgo.MetadataMaxAge(d))
			if d < 5*time.Second {
				s.Opts = append(s.Opts, kgo.MetadataMinAge(d))
			}
		}
	case "retry.backoff.ms":
		if d, ok := p.ms(name, 0); ok {
			s.Opts = append(s.Opts, kgo.RetryBackoffFn(func(int) time.Duration { return d }))
		}
	case "connections.max.idle.ms":
		if d, ok := p.ms(name, 1); ok {
			s.Opts = append(s.Opts, kgo.ConnIdleTimeout(d))
		}
	default:
		return false
	}
	return true
}

// recordPartitioner sends a record with its own partition (Partition >= 0)
// there and lets Kafka's default partitioning (murmur2 of the key; sticky
// batches for null keys, as franz-go's default) choose for the others
// (Partition -1). franz-go leaves Record.Partition untouched until the
// partitioner has run, which is what makes the marker work.
func recordPartitioner() kgo.Partitioner {
	return explicitPartitioner{kgo.UniformBytesPartitioner(64<<10, true, true, nil)}
}

type explicitPartitioner struct{ inner kgo.Partitioner }

func (p explicitPartitioner) ForTopic(t string) kgo.TopicPartitioner {
	return &explicitTopicPartitioner{inner: p.inner.ForTopic(t)}
}

type explicitTopicPartitioner struct{ inner kgo.TopicPartitioner }

func (p *explicitTopicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return r.Partition >= 0 || p.inner.RequiresConsistency(r)
}

func (p *explicitTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Partition >= 0 {
		return int(r.Partition)
	}
	return p.inner.Partition(r, n)
}

func (p *explicitTopicPartitioner) PartitionByBackup(r *kgo.Record, n int, it kgo.TopicBackupIter) int {
	if r.Partition >= 0 {
		return int(r.Partition)
	}
	if b, ok := p.inner.(kgo.TopicBackupPartitioner); ok {
		return b.PartitionByBackup(r, n, it)
	}
	return p.inner.Partition(r, n)
}

func (p *explicitTopicPartitioner) OnNewBatch() {
	if b, ok := p.inner.(kgo.TopicPartitionerOnNewBatch); ok {
		b.OnNewBatch()
	}
}

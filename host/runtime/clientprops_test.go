package runtime

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func newTestClient(t *testing.T, opts []kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

type optWant struct {
	name string
	opt  any
	want any
}

func checkOpts(t *testing.T, cl *kgo.Client, ws []optWant) {
	t.Helper()
	for _, w := range ws {
		if got := cl.OptValue(w.opt); fmt.Sprint(got) != fmt.Sprint(w.want) {
			t.Errorf("%s = %v, want %v", w.name, got, w.want)
		}
	}
}

func TestClientProperties(t *testing.T) {
	worker := map[string]string{"producer.linger.ms": "5", "producer.acks": "1", "consumer.max.poll.records": "10", "bootstrap.servers": "x", "producer.": "empty"}
	conn := map[string]string{"producer.override.acks": "all", "consumer.override.max.poll.records": "20", "name": "c"}
	got := ClientProperties(worker, conn, "producer")
	if fmt.Sprint(got) != "map[acks:all linger.ms:5]" {
		t.Errorf("producer properties = %v", got)
	}
	if got := ClientProperties(worker, conn, "consumer"); fmt.Sprint(got) != "map[max.poll.records:20]" {
		t.Errorf("consumer properties = %v", got)
	}
}

// A source task's producer starts from Kafka's producer defaults where
// franz-go's differ, and worker or connector settings still override them.
func TestProducerDefaults(t *testing.T) {
	cl := newTestClient(t, producerDefaults())
	checkOpts(t, cl, []optWant{
		{"linger", kgo.ProducerLinger, 5 * time.Millisecond},
		{"acks", kgo.RequiredAcks, kgo.AllISRAcks()},
	})
	if got := fmt.Sprint(cl.OptValue(kgo.ProducerBatchCompression)); got != fmt.Sprint([]kgo.CompressionCodec{kgo.NoCompression()}) {
		t.Errorf("compression = %v, want none", got)
	}
	s, err := ProducerOptions(map[string]string{"linger.ms": "0"})
	if err != nil {
		t.Fatal(err)
	}
	cl = newTestClient(t, append(producerDefaults(), s.Opts...))
	checkOpts(t, cl, []optWant{{"linger", kgo.ProducerLinger, time.Duration(0)}})
}

func TestProducerOptions(t *testing.T) {
	s, err := ProducerOptions(map[string]string{
		"acks": "all", "linger.ms": "25", "compression.type": "zstd", "max.in.flight.requests.per.connection": "3",
		"client.id": "connector-producer-c-0", "max.request.size": "2097152", "batch.size": "16384",
		"delivery.timeout.ms": "120000", "retries": "7", "key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Ignored, []string{"batch.size", "key.serializer"}) {
		t.Errorf("ignored = %v", s.Ignored)
	}
	cl := newTestClient(t, s.Opts)
	checkOpts(t, cl, []optWant{
		{"linger", kgo.ProducerLinger, 25 * time.Millisecond},
		{"batch max bytes", kgo.ProducerBatchMaxBytes, int32(2097152)},
		{"delivery timeout", kgo.RecordDeliveryTimeout, 120 * time.Second},
		{"retries", kgo.RecordRetries, int64(7)},
		{"idempotence off", kgo.DisableIdempotentWrite, false},
	})
	if got := cl.OptValue(kgo.ClientID); got != "connector-producer-c-0" {
		t.Errorf("client id = %v", got)
	}
	if got := fmt.Sprint(cl.OptValue(kgo.ProducerBatchCompression)); !strings.Contains(got, "4") {
		t.Errorf("compression = %v", got)
	}

	// acks=1 turns idempotence off; asking for it explicitly is an error.
	s, err = ProducerOptions(map[string]string{"acks": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ProducerOptions(map[string]string{"max.in.flight.requests.per.connection": "6"}); err == nil {
		t.Error("6 requests in flight with idempotence accepted")
	}
	s, err = ProducerOptions(map[string]string{"acks": "1", "max.in.flight.requests.per.connection": "3"})
	if err != nil {
		t.Fatal(err)
	}
	cl = newTestClient(t, s.Opts)
	checkOpts(t, cl, []optWant{
		{"idempotence off", kgo.DisableIdempotentWrite, true},
		{"in flight", kgo.MaxProduceRequestsInflightPerBroker, 3},
	})
	if _, err := ProducerOptions(map[string]string{"acks": "0", "enable.idempotence": "true"}); err == nil {
		t.Error("acks=0 with enable.idempotence=true accepted")
	}
	_, err = ProducerOptions(map[string]string{"linger.ms": "soon", "compression.type": "brotli", "acks": "2"})
	for _, want := range []string{`linger.ms="soon"`, `compression.type="brotli"`, `acks="2"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func TestConsumerOptions(t *testing.T) {
	s, err := ConsumerOptions(map[string]string{
		"max.poll.records": "42", "group.id": "custom", "fetch.min.bytes": "100", "fetch.max.wait.ms": "250",
		"auto.offset.reset": "latest", "isolation.level": "read_committed", "session.timeout.ms": "30000",
		"heartbeat.interval.ms": "1000", "max.poll.interval.ms": "120000", "enable.auto.commit": "true",
		"group.instance.id": "i-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxPollRecords != 42 || s.GroupID != "custom" || !slices.Equal(s.Ignored, []string{"enable.auto.commit"}) {
		t.Errorf("settings = %+v", s)
	}
	cl := newTestClient(t, s.Opts)
	checkOpts(t, cl, []optWant{
		{"fetch min bytes", kgo.FetchMinBytes, int32(100)},
		{"fetch max wait", kgo.FetchMaxWait, 250 * time.Millisecond},
		{"session timeout", kgo.SessionTimeout, 30 * time.Second},
		{"heartbeat", kgo.HeartbeatInterval, time.Second},
		{"rebalance timeout", kgo.RebalanceTimeout, 120 * time.Second},
		{"instance id", kgo.InstanceID, "i-1"},
	})
	if got := cl.OptValue(kgo.ConsumeResetOffset).(kgo.Offset); got.String() != kgo.NewOffset().AtEnd().String() {
		t.Errorf("reset offset = %v", got)
	}
	if got := cl.OptValue(kgo.FetchIsolationLevel); got != int8(1) {
		t.Errorf("isolation = %v, want 1 (read_committed)", got)
	}
	if _, err := ConsumerOptions(map[string]string{"auto.offset.reset": "smallest"}); err == nil {
		t.Error("auto.offset.reset=smallest accepted")
	}
}

// check.crcs=false turns franz-go's CRC validation of fetched batches off;
// true (Kafka's default) and unset leave it on; anything else is an error
// naming the property.
func TestConsumerCheckCRCs(t *testing.T) {
	for _, tc := range []struct {
		value    string
		disabled bool
	}{{"", false}, {"true", false}, {"TRUE", false}, {"false", true}, {" False ", true}} {
		props := map[string]string{}
		if tc.value != "" {
			props["check.crcs"] = tc.value
		}
		s, err := ConsumerOptions(props)
		if err != nil {
			t.Fatalf("check.crcs=%q: %v", tc.value, err)
		}
		if slices.Contains(s.Ignored, "check.crcs") {
			t.Errorf("check.crcs=%q ignored", tc.value)
		}
		cl := newTestClient(t, s.Opts)
		if got := cl.OptValue(kgo.DisableFetchCRCValidation); got != tc.disabled {
			t.Errorf("check.crcs=%q: CRC validation disabled = %v, want %v", tc.value, got, tc.disabled)
		}
	}
	_, err := ConsumerOptions(map[string]string{"check.crcs": "maybe"})
	if err == nil || !strings.Contains(err.Error(), `check.crcs="maybe"`) {
		t.Errorf("check.crcs=maybe: error %v does not name the property", err)
	}
}

// The admin client of a source task's topic creation takes the worker's
// admin.* settings overlaid with the connector's admin.override.* ones,
// and nothing of the producer's.
func TestAdminOptions(t *testing.T) {
	worker := map[string]string{"admin.client.id": "worker-admin", "admin.request.timeout.ms": "7000",
		"admin.metadata.max.age.ms": "9000", "producer.client.id": "p", "producer.request.timeout.ms": "1"}
	conn := map[string]string{"admin.override.client.id": "conn-admin", "admin.override.sasl.kerberos.service.name": "k",
		"producer.override.client.id": "po"}
	s, err := AdminOptions(ClientProperties(worker, conn, "admin"))
	if err != nil {
		t.Fatal(err)
	}
	checkOpts(t, newTestClient(t, s.Opts), []optWant{
		{"client id", kgo.ClientID, "conn-admin"},
		{"request timeout", kgo.RequestTimeoutOverhead, 7 * time.Second},
		{"metadata max age", kgo.MetadataMaxAge, 9 * time.Second},
	})
	if !slices.Equal(s.Ignored, []string{"sasl.kerberos.service.name"}) {
		t.Errorf("ignored = %v, want [sasl.kerberos.service.name]", s.Ignored)
	}
	_, err = AdminOptions(map[string]string{"request.timeout.ms": "0", "retry.backoff.ms": "x"})
	for _, want := range []string{"admin properties", `request.timeout.ms="0"`, `retry.backoff.ms="x"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("AdminOptions(bad) = %v; want it to say %q", err, want)
		}
	}
}

func TestConsumerAssignors(t *testing.T) {
	s, err := ConsumerOptions(map[string]string{"partition.assignment.strategy": " org.apache.kafka.clients.consumer.RangeAssignor, CooperativeStickyAssignor "})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range s.Balancers {
		names = append(names, b.ProtocolName())
	}
	if !slices.Equal(names, []string{"range", "cooperative-sticky"}) || len(s.Ignored) != 0 {
		t.Fatalf("balancers %v, ignored %v", names, s.Ignored)
	}
	if s, _ := ConsumerOptions(map[string]string{"max.poll.records": "5"}); s.Balancers != nil {
		t.Errorf("balancers without the setting: %v", s.Balancers)
	}
	for _, bad := range []string{"com.example.MyAssignor", " , "} {
		_, err := ConsumerOptions(map[string]string{"partition.assignment.strategy": bad})
		if err == nil || !strings.Contains(err.Error(), "partition.assignment.strategy") {
			t.Errorf("partition.assignment.strategy=%q: %v, want an error naming it", bad, err)
		}
	}
}

func TestConsumerGroupProtocol(t *testing.T) {
	s, err := ConsumerOptions(map[string]string{"group.protocol": "CONSUMER", "group.remote.assignor": "range"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Balancers) != 1 || s.Balancers[0].ProtocolName() != "range" {
		t.Fatalf("balancers %v, want range", s.Balancers)
	}
	cl := newTestClient(t, s.Opts)
	if got, _ := cl.OptValue(kgo.ServerSideBalancer).(bool); !got {
		t.Error("group.protocol=consumer without franz-go's server-side balancing")
	}
	s, err = ConsumerOptions(map[string]string{"group.protocol": "consumer"})
	if err != nil || len(s.Balancers) != 1 || s.Balancers[0].ProtocolName() != "sticky" {
		t.Fatalf("default remote assignor: %v, %v; want the sticky balancer (uniform)", s.Balancers, err)
	}
	s, err = ConsumerOptions(map[string]string{"group.protocol": "classic"})
	if err != nil || s.Balancers != nil {
		t.Fatalf("classic: %v, %v", s.Balancers, err)
	}
	for _, bad := range []struct {
		props map[string]string
		key   string
	}{
		{map[string]string{"group.protocol": "share"}, "group.protocol"},
		{map[string]string{"group.remote.assignor": "uniform"}, "group.remote.assignor"},
		{map[string]string{"group.protocol": "consumer", "group.remote.assignor": "roundrobin"}, "group.remote.assignor"},
		{map[string]string{"group.protocol": "consumer", "partition.assignment.strategy": "RangeAssignor"}, "partition.assignment.strategy"},
		{map[string]string{"group.protocol": "consumer", "session.timeout.ms": "10000"}, "session.timeout.ms"},
	} {
		_, err := ConsumerOptions(bad.props)
		if err == nil || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("%v: %v, want an error naming %s", bad.props, err, bad.key)
		}
	}
}

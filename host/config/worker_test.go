package config

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadWorkerStandalone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "worker.properties")
	body := `bootstrap.servers=a:9092, b:9092
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=false
offset.storage.file.filename=/tmp/offsets
offset.flush.interval.ms=10000
producer.linger.ms=5
consumer.max.poll.records=100
plugin.path=/opt/a,/opt/b
listeners=http://127.0.0.1:0
some.unknown=kept
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := LoadWorker(path, []string{"CONNECT_OFFSET_FLUSH_INTERVAL_MS=250", "CONNECT_REST_ADVERTISED_HOST_NAME=w1", "HOME=/x"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.List(BootstrapServers); len(got) != 2 || got[1] != "b:9092" {
		t.Fatalf("bootstrap.servers %v", got)
	}
	if w.Millis(OffsetFlushIntervalMs) != 250*time.Millisecond {
		t.Fatalf("env override not applied: %v", w.Millis(OffsetFlushIntervalMs))
	}
	if w.Millis(TaskShutdownGracefulTimeout) != 5*time.Second || w.Millis(OffsetFlushTimeoutMs) != 5*time.Second {
		t.Fatal("defaults")
	}
	if w.Class(HeaderConverter) != "org.apache.kafka.connect.storage.SimpleHeaderConverter" {
		t.Fatalf("header.converter default %q", w.Class(HeaderConverter))
	}
	if p := w.Prefixed(ProducerPrefix); len(p) != 1 || p["linger.ms"] != "5" {
		t.Fatalf("producer props %v", p)
	}
	if p := w.Prefixed("key.converter."); p["schemas.enable"] != "false" {
		t.Fatalf("key converter props %v", p)
	}
	if w.Props["some.unknown"] != "kept" {
		t.Fatal("unknown property dropped")
	}
	if id := w.WorkerID("127.0.0.1:41234"); id != "w1:41234" {
		t.Fatalf("worker id %q", id)
	}
}

func TestParseWorkerReportsEveryProblem(t *testing.T) {
	_, err := ParseWorker(map[string]string{
		"offset.flush.interval.ms": "soon",
		"listeners":                "ftp://x:1,http://:8083",
		"log.level":                "LOUD",
	}, true)
	if err == nil {
		t.Fatal("want errors")
	}
	for _, part := range []string{
		`Missing required configuration "key.converter" which has no default value.`,
		`Missing required configuration "value.converter" which has no default value.`,
		`Missing required configuration "offset.storage.file.filename" which has no default value.`,
		"Invalid value soon for configuration offset.flush.interval.ms: Not a number of type LONG",
		"Invalid value LOUD for configuration log.level",
	} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error lacks %q:\n%v", part, err)
		}
	}
	// An unknown default converter stops the worker, as a CLASS setting
	// that does not resolve stops Kafka's.
	_, err = ParseWorker(map[string]string{"key.converter": "com.nope.Conv", "value.converter": "JsonConverter",
		"header.converter": "com.nope.H", "offset.storage.file.filename": "f"}, true)
	for _, part := range []string{
		"Invalid value com.nope.Conv for configuration key.converter: Class com.nope.Conv could not be found.",
		"Invalid value com.nope.H for configuration header.converter: Class com.nope.H could not be found.",
	} {
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("error lacks %q:\n%v", part, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "value.converter") {
		t.Errorf("JsonConverter refused: %v", err)
	}
	// A header converter is not a converter.
	_, err = ParseWorker(map[string]string{"key.converter": "SimpleHeaderConverter", "value.converter": "StringConverter", "offset.storage.file.filename": "f"}, true)
	if err == nil || !strings.Contains(err.Error(), "Class SimpleHeaderConverter could not be found.") {
		t.Errorf("a header converter as key.converter: %v", err)
	}
	_, err = ParseWorker(map[string]string{"key.converter": "StringConverter", "value.converter": "StringConverter", "offset.storage.file.filename": "f", "listeners": "ftp://x:1"}, true)
	if err == nil || !strings.Contains(err.Error(), "Invalid value ftp://x:1 for configuration listeners: protocol must be http or https") {
		t.Fatalf("listener error: %v", err)
	}
}

func TestDistributedNeedsGroupAndTopics(t *testing.T) {
	_, err := ParseWorker(map[string]string{"key.converter": "StringConverter", "value.converter": "StringConverter"}, false)
	for _, k := range []string{"group.id", "config.storage.topic", "offset.storage.topic", "status.storage.topic"} {
		if err == nil || !strings.Contains(err.Error(), `"`+k+`"`) {
			t.Errorf("missing %s not reported: %v", k, err)
		}
	}
	w, err := ParseWorker(map[string]string{"key.converter": "StringConverter", "value.converter": "StringConverter", "group.id": "g",
		"config.storage.topic": "c", "offset.storage.topic": "o", "status.storage.topic": "s"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if w.Int(OffsetStoragePartitions) != 25 || w.Short(StatusStorageReplication) != 3 {
		t.Fatal("distributed defaults")
	}
}

func TestWorkerIDFallsBackToListenerAndHost(t *testing.T) {
	w, err := ParseWorker(map[string]string{"key.converter": "StringConverter", "value.converter": "StringConverter", "offset.storage.file.filename": "f",
		"listeners": "http://localhost:8083"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if id := w.WorkerID(""); id != "localhost:8083" {
		t.Fatalf("worker id %q", id)
	}
	w, _ = ParseWorker(map[string]string{"key.converter": "StringConverter", "value.converter": "StringConverter", "offset.storage.file.filename": "f"}, true)
	host, _ := os.Hostname()
	if id := w.WorkerID("[::]:8083"); id != host+":8083" {
		t.Fatalf("worker id %q, want %s:8083", id, host)
	}
}

func distributedProps(kv ...string) map[string]string {
	p := map[string]string{"key.converter": "StringConverter", "value.converter": "StringConverter", "group.id": "g",
		"config.storage.topic": "c", "offset.storage.topic": "o", "status.storage.topic": "s"}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return p
}

// The inter.worker.* settings default to Kafka's and come out typed.
func TestInterWorkerDefaults(t *testing.T) {
	w, err := ParseWorker(distributedProps(), false)
	if err != nil {
		t.Fatal(err)
	}
	iw := w.InterWorker()
	if iw.KeyAlgorithm != "HmacSHA256" || iw.KeyBits != 0 || iw.KeySize() != 256 || iw.KeyTTL != time.Hour ||
		iw.SignatureAlgorithm != "HmacSHA256" || len(iw.VerificationAlgorithms) != 1 || iw.VerificationAlgorithms[0] != "HmacSHA256" {
		t.Fatalf("defaults %+v", iw)
	}
	if err := iw.Check(); err != nil {
		t.Fatal(err)
	}
	w, err = ParseWorker(distributedProps(InterWorkerKeyGenerationAlgorithm, "HmacSHA512", InterWorkerKeySize, "128",
		InterWorkerKeyTTLMs, "1500", InterWorkerSignatureAlgorithm, "HmacSHA1", InterWorkerVerificationAlgorithms, "HmacSHA256,HmacSHA1"), false)
	if err != nil {
		t.Fatal(err)
	}
	iw = w.InterWorker()
	if iw.KeyAlgorithm != "HmacSHA512" || iw.KeySize() != 128 || iw.KeyTTL != 1500*time.Millisecond || iw.SignatureAlgorithm != "HmacSHA1" || len(iw.VerificationAlgorithms) != 2 {
		t.Fatalf("settings %+v", iw)
	}
	if b := (InterWorker{KeyAlgorithm: "HmacSHA1"}).KeySize(); b != 512 {
		t.Fatalf("HmacSHA1 default key size %d, want the JVM's 512", b)
	}
}

// Unknown algorithms, bad key sizes and a signature algorithm the
// verifiers refuse are refused, each naming its property.
func TestInterWorkerRefusals(t *testing.T) {
	for _, c := range []struct {
		kv   []string
		want string
	}{
		{[]string{InterWorkerKeyGenerationAlgorithm, "HmacMD4"}, "Invalid value HmacMD4 for configuration inter.worker.key.generation.algorithm: Algorithm HmacMD4 not available"},
		{[]string{InterWorkerSignatureAlgorithm, "Foo"}, "Invalid value Foo for configuration inter.worker.signature.algorithm: Algorithm Foo not available"},
		{[]string{InterWorkerVerificationAlgorithms, "HmacSHA256,Bar"}, "Invalid value Bar for configuration inter.worker.verification.algorithms: Algorithm Bar not available"},
		{[]string{InterWorkerVerificationAlgorithms, ""}, "Invalid value [] for configuration inter.worker.verification.algorithms: At least one signature verification algorithm must be provided"},
		{[]string{InterWorkerKeySize, "100"}, "Invalid value 100 for configuration inter.worker.key.size: Key size must be a positive multiple of 8 bits"},
		{[]string{InterWorkerKeySize, "0"}, "Invalid value 0 for configuration inter.worker.key.size"},
		{[]string{InterWorkerKeyTTLMs, "-1"}, "Invalid value -1 for configuration inter.worker.key.ttl.ms"},
		{[]string{InterWorkerSignatureAlgorithm, "HmacSHA512"}, "Invalid value HmacSHA512 for configuration inter.worker.signature.algorithm: Signature algorithm must be present in inter.worker.verification.algorithms list"},
	} {
		_, err := ParseWorker(distributedProps(c.kv...), false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.kv, err, c.want)
		}
		if err != nil && strings.Count(err.Error(), "inter.worker") > 2 {
			t.Errorf("%v: a problem reported more than once: %v", c.kv, err)
		}
	}
	// Standalone workers do not know the keys at all.
	if _, err := ParseWorker(map[string]string{"key.converter": "StringConverter", "value.converter": "StringConverter", "offset.storage.file.filename": "f",
		InterWorkerSignatureAlgorithm: "Foo"}, true); err != nil {
		t.Fatalf("standalone: %v", err)
	}
	// Settings built by hand get the same checks.
	bad := DefaultInterWorker()
	bad.VerificationAlgorithms = []string{"HmacSHA1"}
	bad.KeyBits = 12
	err := bad.Check()
	for _, want := range []string{"Signature algorithm must be present", "configuration inter.worker.key.size"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v, want %q", err, want)
		}
	}
	if h, ok := MAC("hmacsha256"); !ok || h().Size() != 32 {
		t.Fatal("JCA names are case-insensitive")
	}
}

// Kafka names the override policy by class name or alias; each form is the
// same policy, and the worker reads it by its alias.
func TestOverridePolicyByClassName(t *testing.T) {
	base := map[string]string{
		KeyConverter:              "org.apache.kafka.connect.json.JsonConverter",
		ValueConverter:            "org.apache.kafka.connect.json.JsonConverter",
		OffsetStorageFileFilename: "/tmp/offsets",
	}
	for in, want := range map[string]string{
		"":     "All",
		"None": "None",
		"org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy":      "None",
		"org.apache.kafka.connect.connector.policy.PrincipalConnectorClientConfigOverridePolicy": "Principal",
		"AllConnectorClientConfigOverridePolicy":                                                 "All",
		" Principal ":                                                                            "Principal",
	} {
		props := maps.Clone(base)
		if in != "" {
			props[ClientConfigOverridePolicy] = in
		}
		w, err := ParseWorker(props, true)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := w.String(ClientConfigOverridePolicy); got != want {
			t.Errorf("%q: policy %q, want %q", in, got, want)
		}
	}
	props := maps.Clone(base)
	props[ClientConfigOverridePolicy] = "com.example.NoneConnectorClientConfigOverridePolicy"
	if _, err := ParseWorker(props, true); err == nil || !strings.Contains(err.Error(), ClientConfigOverridePolicy) {
		t.Fatalf("a class Sluice does not have: %v", err)
	}
}

func TestRestRequestTimeout(t *testing.T) {
	base := map[string]string{"key.converter": "StringConverter", "value.converter": "StringConverter", "offset.storage.file.filename": "f"}
	with := func(v string) map[string]string {
		p := maps.Clone(base)
		if v != "" {
			p[RestRequestTimeoutMs] = v
		}
		return p
	}
	for v, want := range map[string]time.Duration{"": 90 * time.Second, "1500": 1500 * time.Millisecond, " 2000 ": 2 * time.Second} {
		cfg, err := ParseWorker(with(v), true)
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if got := cfg.Millis(RestRequestTimeoutMs); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
	for _, bad := range []string{"0", "-5", "1s"} {
		if _, err := ParseWorker(with(bad), true); err == nil || !strings.Contains(err.Error(), "Invalid value "+bad+" for configuration "+RestRequestTimeoutMs) {
			t.Errorf("%q: error %v, want one naming %s", bad, err, RestRequestTimeoutMs)
		}
	}
}

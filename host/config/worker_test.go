package config

import (
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
	_, err = ParseWorker(map[string]string{"key.converter": "K", "value.converter": "V", "offset.storage.file.filename": "f", "listeners": "ftp://x:1"}, true)
	if err == nil || !strings.Contains(err.Error(), "Invalid value ftp://x:1 for configuration listeners: protocol must be http or https") {
		t.Fatalf("listener error: %v", err)
	}
}

func TestDistributedNeedsGroupAndTopics(t *testing.T) {
	_, err := ParseWorker(map[string]string{"key.converter": "K", "value.converter": "V"}, false)
	for _, k := range []string{"group.id", "config.storage.topic", "offset.storage.topic", "status.storage.topic"} {
		if err == nil || !strings.Contains(err.Error(), `"`+k+`"`) {
			t.Errorf("missing %s not reported: %v", k, err)
		}
	}
	w, err := ParseWorker(map[string]string{"key.converter": "K", "value.converter": "V", "group.id": "g",
		"config.storage.topic": "c", "offset.storage.topic": "o", "status.storage.topic": "s"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if w.Int(OffsetStoragePartitions) != 25 || w.Short(StatusStorageReplication) != 3 {
		t.Fatal("distributed defaults")
	}
}

func TestWorkerIDFallsBackToListenerAndHost(t *testing.T) {
	w, err := ParseWorker(map[string]string{"key.converter": "K", "value.converter": "V", "offset.storage.file.filename": "f",
		"listeners": "http://localhost:8083"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if id := w.WorkerID(""); id != "localhost:8083" {
		t.Fatalf("worker id %q", id)
	}
	w, _ = ParseWorker(map[string]string{"key.converter": "K", "value.converter": "V", "offset.storage.file.filename": "f"}, true)
	host, _ := os.Hostname()
	if id := w.WorkerID("[::]:8083"); id != host+":8083" {
		t.Fatalf("worker id %q, want %s:8083", id, host)
	}
}

package kafkatest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests need neither Java nor Maven.

func TestCacheRoot(t *testing.T) {
	t.Setenv("SLUICE_CACHE", "/x/y")
	if d, err := CacheRoot(); err != nil || d != "/x/y" {
		t.Fatalf("CacheRoot = %q, %v", d, err)
	}
	t.Setenv("SLUICE_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/c")
	if d, err := CacheRoot(); err != nil || d != "/c/sluice" {
		t.Fatalf("CacheRoot = %q, %v", d, err)
	}
}

func TestEnsureKafkaUsesCompleteCache(t *testing.T) {
	root := t.TempDir()
	t.Setenv("SLUICE_CACHE", root)
	libs := filepath.Join(root, "kafka-"+KafkaVersion, "libs")
	if err := os.MkdirAll(libs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(libs, completeMarker), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// PATH without mvn: a complete cache must not need Maven.
	t.Setenv("PATH", t.TempDir())
	got, err := EnsureKafka(context.Background())
	if err != nil || got != libs {
		t.Fatalf("EnsureKafka = %q, %v; want %q", got, err, libs)
	}
}

func TestEnsureKafkaWithoutMaven(t *testing.T) {
	t.Setenv("SLUICE_CACHE", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	_, err := EnsureKafka(context.Background())
	if err == nil || !strings.Contains(err.Error(), "maven") {
		t.Fatalf("EnsureKafka without mvn = %v, want an error naming maven", err)
	}
}

func TestLockFileExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.lock")
	unlock, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file description, so a second open in
	// the same process contends like another process would.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held = %v, want deadline exceeded", err)
	}
	unlock()
	unlock2, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}

func TestDefaultBrokerConfig(t *testing.T) {
	for _, tc := range []struct {
		n          int
		rf, minISR string
	}{{1, "1", "1"}, {3, "3", "2"}} {
		cfg := DefaultBrokerConfig(tc.n)
		if cfg["offsets.topic.replication.factor"] != tc.rf || cfg["transaction.state.log.replication.factor"] != tc.rf ||
			cfg["transaction.state.log.min.isr"] != tc.minISR || cfg["group.initial.rebalance.delay.ms"] != "0" {
			t.Fatalf("DefaultBrokerConfig(%d) = %v", tc.n, cfg)
		}
	}
}

func TestWritePropertiesSorted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := writeProperties(path, map[string]string{"b": "2", "a": "1"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), "a=1\nb=2\n") {
		t.Fatalf("properties file:\n%s", b)
	}
}

func TestNewClusterID(t *testing.T) {
	a, err := newClusterID()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newClusterID()
	raw, err := base64.RawURLEncoding.DecodeString(a)
	if len(a) != 22 || err != nil || len(raw) != 16 || a == b {
		t.Fatalf("cluster ids %q %q (decoded %d bytes, %v)", a, b, len(raw), err)
	}
}

// An id starting with '-' would read as an option to kafka-storage: the
// first 16 bytes here encode to "-..." (0xf8: the first six bits are 62),
// so the id comes from the next 16.
func TestClusterIDNeverStartsWithDash(t *testing.T) {
	first := append([]byte{0xf8}, bytes.Repeat([]byte{1}, 15)...)
	second := bytes.Repeat([]byte{2}, 16)
	if dashed := base64.RawURLEncoding.EncodeToString(first); dashed[0] != '-' {
		t.Fatalf("the first draw encodes to %q, not a dash", dashed)
	}
	id, err := clusterIDFrom(bytes.NewReader(append(first, second...)))
	if err != nil {
		t.Fatal(err)
	}
	if want := base64.RawURLEncoding.EncodeToString(second); id != want {
		t.Fatalf("id %q, want %q (the second draw)", id, want)
	}
}

func TestExternalCluster(t *testing.T) {
	c := &Cluster{external: []string{"h1:9092", "h2:9092"}}
	if c.BootstrapString() != "h1:9092,h2:9092" || !c.External() {
		t.Fatalf("bootstrap %q", c.BootstrapString())
	}
	if err := c.Start(context.Background()); !errors.Is(err, ErrExternal) {
		t.Fatalf("Start on external = %v", err)
	}
	if err := c.Stop(context.Background()); !errors.Is(err, ErrExternal) {
		t.Fatalf("Stop on external = %v", err)
	}
	c.Close() // must not panic
}

// FreePorts must hand out distinct ports outside the ephemeral range that a
// server can bind right away.
func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 8 {
		t.Fatalf("FreePorts(8) = %v", ports)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < 20000 || p >= 32000 || seen[p] {
			t.Fatalf("FreePorts(8) = %v: %d repeated or outside [20000, 32000)", ports, p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("bind %d: %v", p, err)
		}
		l.Close()
	}
}

// The poms the jar sets are fetched with are well formed and ask for what
// their callers run: the broker, or Connect's worker, at KafkaVersion, each
// with the log4j binding.
func TestJarSetPoms(t *testing.T) {
	type dep struct {
		GroupID    string `xml:"groupId"`
		ArtifactID string `xml:"artifactId"`
		Version    string `xml:"version"`
	}
	log4j := dep{"org.apache.logging.log4j", "log4j-slf4j-impl", Log4jSLF4JVersion}
	for _, c := range []struct {
		set  jarSet
		want []dep
	}{
		{kafkaJars, []dep{{"org.apache.kafka", "kafka_2.13", KafkaVersion}, log4j}},
		{connectJars, []dep{{"org.apache.kafka", "connect-runtime", KafkaVersion}, {"org.apache.kafka", "connect-json", KafkaVersion}, log4j}},
	} {
		var pom struct {
			Packaging string `xml:"packaging"`
			Deps      []dep  `xml:"dependencies>dependency"`
		}
		if err := xml.Unmarshal([]byte(c.set.pom), &pom); err != nil {
			t.Fatalf("%s: pom does not parse: %v\n%s", c.set.what, err, c.set.pom)
		}
		if pom.Packaging != "pom" || !slices.Equal(pom.Deps, c.want) {
			t.Fatalf("%s: packaging %q, dependencies %+v; want pom, %+v", c.set.what, pom.Packaging, pom.Deps, c.want)
		}
	}
	if kafkaJars.dir == connectJars.dir {
		t.Fatalf("both jar sets are cached in %s", kafkaJars.dir)
	}
}

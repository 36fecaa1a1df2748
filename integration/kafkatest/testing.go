package kafkatest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/integration/internal/childproc"
)

// EnvBootstrap names an already running Kafka cluster ("host:port,...") that
// Main uses instead of starting one.
const EnvBootstrap = "SLUICE_KAFKA_BOOTSTRAP"

// StartTimeout bounds provisioning plus start-up in ForTest and Main. A cold
// cache downloads ~45 MB of jars first, hence the margin.
const StartTimeout = 5 * time.Minute

// ForTest starts a cluster for one test and kills it when the test ends.
// Unless opts.Dir is set, the cluster lives in t.TempDir(); when the test
// fails, the tail of every node's log is logged. Use it for tests that stop,
// kill or reconfigure brokers; other tests should share one cluster (Main).
func ForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(t.Context(), StartTimeout)
	defer cancel()
	start := time.Now()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	t.Logf("kafka %s: %d node(s) at %s ready in %s", KafkaVersion, c.Nodes(), c.BootstrapString(), time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			for i := range c.Nodes() {
				t.Logf("kafka node %d log tail (%s):\n%s", c.NodeID(i), c.NodeLog(i), childproc.LogTail(c.NodeLog(i), 30))
			}
		}
		c.Close()
	})
	return c
}

// shared is the package's cluster, started by the first Shared call.
var shared *Cluster

// Main runs a test binary's tests with one Kafka cluster shared by the whole
// package, and returns the exit code for os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m, kafkatest.Options{})) }
//
// Tests get it with Shared(t). If SLUICE_KAFKA_BOOTSTRAP is set, no broker
// is started and Shared returns that external cluster instead. Main also
// starts the cluster lazily, on the first call to Shared, so a run that
// selects no Kafka test (go test -run X) starts nothing.
func Main(m *testing.M, opts Options) int {
	sharedMu.Lock()
	sharedOpts = &opts
	sharedMu.Unlock()
	code := m.Run()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil || shared.External() {
		return code
	}
	if code != 0 {
		// A failing package keeps the broker's directory and shows the
		// end of its log: the failure may be the broker's.
		shared.Kill()
		for i := range shared.Nodes() {
			fmt.Fprintf(os.Stderr, "shared kafka node %d log tail (%s):\n%s\n", shared.NodeID(i), shared.NodeLog(i), childproc.LogTail(shared.NodeLog(i), 30))
		}
		return code
	}
	shared.Close()
	return code
}

var (
	sharedMu   sync.Mutex // guards the three below; parallel tests call Shared
	sharedOpts *Options
	sharedErr  error // a failed start is not retried by every later test
)

// Shared returns the package's shared cluster, starting it on first use (see
// Main). Tests must not stop or kill it; they should use topic names unique
// to the test, since other tests use the same brokers.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		return shared
	}
	if sharedErr != nil {
		t.Fatalf("shared kafka failed to start earlier: %v", sharedErr)
	}
	if b := os.Getenv(EnvBootstrap); b != "" {
		var addrs []string
		for _, a := range strings.Split(b, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
		shared = &Cluster{external: addrs}
		return shared
	}
	if sharedOpts == nil {
		t.Fatal("kafkatest.Shared needs a TestMain that calls kafkatest.Main")
	}
	// Not t.Context(): the cluster outlives this test.
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	start := time.Now()
	c, err := Start(ctx, *sharedOpts)
	if err != nil {
		sharedErr = err
		t.Fatalf("start shared kafka: %v", err)
	}
	t.Logf("shared kafka %s at %s ready in %s", KafkaVersion, c.BootstrapString(), time.Since(start).Round(time.Millisecond))
	shared = c
	return c
}

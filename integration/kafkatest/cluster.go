package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/integration/internal/childproc"
)

// Options configure a cluster. The zero value is a single node in a fresh
// temporary directory.
type Options struct {
	// Nodes is the number of combined broker+controller nodes; 0 means 1.
	// Use 3 for replication and broker-failure tests (a 3-voter quorum
	// survives the loss of one node).
	Nodes int
	// Dir holds the node directories (config, data, kafka.log). "" creates a
	// temporary directory that Close removes; a given Dir (t.TempDir()) is
	// left in place so its logs can be read after a failure.
	Dir string
	// BrokerConfig overrides or adds server.properties entries for every
	// node, on top of the test defaults in DefaultBrokerConfig.
	BrokerConfig map[string]string
	// JVMOpts replaces DefaultJVMOpts (heap, GC, JIT flags) when not nil.
	// Benchmarks want a bigger heap and the full JIT.
	JVMOpts []string
}

// DefaultJVMOpts keep the broker small and quick to start. Stopping the JIT
// at C1 (TieredStopAtLevel=1) starts a node faster on the 2-core CI machine
// (format+start 3.7-4.1 s against 3.7-6.3 s with C2, interleaved runs at
// load ~6); the serial GC keeps GC threads from competing for two cores.
// Benchmarks override these through Options.JVMOpts.
var DefaultJVMOpts = []string{
	"-Xms256m", "-Xmx512m",
	"-XX:+UseSerialGC",
	"-XX:TieredStopAtLevel=1",
	"-XX:-UsePerfData", // no hsperfdata files in /tmp
	"-XX:+ExitOnOutOfMemoryError",
	"-Djava.awt.headless=true",
}

// DefaultBrokerConfig returns the server.properties entries used for an
// n-node test cluster (before Options.BrokerConfig is applied). Listener,
// node id, quorum and log.dirs entries are set by the cluster itself.
func DefaultBrokerConfig(n int) map[string]string {
	rf := strconv.Itoa(n)
	minISR := strconv.Itoa(min(n, 2))
	return map[string]string{
		"offsets.topic.replication.factor":                 rf,
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    minISR,
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            minISR,
		// Fewer internal partitions make the first group join and the first
		// transaction noticeably faster; semantics do not change.
		"offsets.topic.num.partitions":         "5",
		"transaction.state.log.num.partitions": "5",
		"group.initial.rebalance.delay.ms":     "0",
		"auto.create.topics.enable":            "true",
		"num.partitions":                       "1",
		"num.network.threads":                  "2",
		"num.io.threads":                       "4",
		"num.recovery.threads.per.data.dir":    "1",
		// A killed node is fenced (and its partitions move) after the
		// session timeout, and a restarted node is only registered again
		// once its old session has expired; the default 9 s would
		// dominate failure tests. Not lower: a loaded 2-core machine can
		// stall a JVM for a second or more.
		"broker.heartbeat.interval.ms": "500",
		"broker.session.timeout.ms":    "3000",
	}
}

// Cluster is a running (or stopped) local Kafka cluster, or an external one
// named by SLUICE_KAFKA_BOOTSTRAP (see Shared).
type Cluster struct {
	dir      string
	ownsDir  bool
	java     string
	libs     string
	jvmOpts  []string
	nodes    []*node
	external []string // bootstrap of an external cluster; nodes is empty then

	mu sync.Mutex // guards node processes
}

type node struct {
	id             int // Kafka node.id, index+1
	dir            string
	brokerPort     int
	controllerPort int
	proc           *childproc.Process // nil while stopped
}

func (n *node) addr() string    { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.brokerPort)) }
func (n *node) logPath() string { return filepath.Join(n.dir, "kafka.log") }

// ErrExternal is returned by lifecycle methods of a cluster that this
// process did not start (SLUICE_KAFKA_BOOTSTRAP).
var ErrExternal = errors.New("kafkatest: cluster is external; it cannot be stopped or restarted")

// Start provisions Kafka (see EnsureKafka), formats KRaft storage for every
// node and starts them, returning once every node answers Kafka requests and
// is registered (unfenced) with the controller.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	n := opts.Nodes
	if n <= 0 {
		n = 1
	}
	libs, err := EnsureKafka(ctx)
	if err != nil {
		return nil, err
	}
	java, err := javaPath()
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: opts.Dir, java: java, libs: libs, jvmOpts: opts.JVMOpts}
	if c.jvmOpts == nil {
		c.jvmOpts = DefaultJVMOpts
	}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "kafkatest-"); err != nil {
			return nil, fmt.Errorf("create cluster dir: %w", err)
		}
		c.ownsDir = true
	} else if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cluster dir: %w", err)
	}
	cfg := DefaultBrokerConfig(n)
	maps.Copy(cfg, opts.BrokerConfig)

	// Free ports are picked by binding :0 and releasing them, so another
	// process can grab one before the JVM binds it. That race is rare; a
	// retry with fresh ports and fresh storage covers it.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		err = c.setup(ctx, n, cfg, attempt)
		if err == nil {
			err = c.Start(ctx)
		}
		if err == nil {
			return c, nil
		}
		c.Kill()
		if attempt == attempts || ctx.Err() != nil || !strings.Contains(err.Error(), "Address already in use") {
			c.Close()
			return nil, err
		}
	}
}

func javaPath() (string, error) {
	p, err := JDKTool("java")
	if err != nil {
		return "", fmt.Errorf("java 17+ is needed to run Kafka (apt-get install openjdk-17-jre-headless): %w", err)
	}
	return p, nil
}

// JDKTool finds a Java command (java, javac, jar): under $JAVA_HOME if it
// has it, else on PATH.
func JDKTool(name string) (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		p := filepath.Join(h, "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

// setup picks ports, writes each node's server.properties and formats its
// storage.
func (c *Cluster) setup(ctx context.Context, n int, cfg map[string]string, attempt int) error {
	ports, err := FreePorts(2 * n)
	if err != nil {
		return err
	}
	c.nodes = make([]*node, n)
	var voters []string
	for i := range n {
		nd := &node{
			id:             i + 1,
			dir:            filepath.Join(c.dir, fmt.Sprintf("node-%d", i+1)),
			brokerPort:     ports[2*i],
			controllerPort: ports[2*i+1],
		}
		if attempt > 1 {
			nd.dir += fmt.Sprintf("-try%d", attempt)
		}
		c.nodes[i] = nd
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", nd.id, nd.controllerPort))
	}
	if err := os.WriteFile(filepath.Join(c.dir, "log4j2.properties"), []byte(Log4jConfig), 0o644); err != nil {
		return fmt.Errorf("write log4j config: %w", err)
	}
	clusterID, err := newClusterID()
	if err != nil {
		return err
	}
	for _, nd := range c.nodes {
		if err := os.MkdirAll(filepath.Join(nd.dir, "data"), 0o755); err != nil {
			return fmt.Errorf("create node %d dir: %w", nd.id, err)
		}
		props := maps.Clone(cfg)
		maps.Copy(props, map[string]string{
			"process.roles": "broker,controller",
			"node.id":       strconv.Itoa(nd.id),
			// A static quorum: every node knows every voter up front, so
			// formatting needs no --standalone/--initial-controllers and a
			// restarted node rejoins on the same ports without ceremony.
			"controller.quorum.voters":       strings.Join(voters, ","),
			"listeners":                      fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", nd.brokerPort, nd.controllerPort),
			"advertised.listeners":           "PLAINTEXT://" + nd.addr(),
			"controller.listener.names":      "CONTROLLER",
			"inter.broker.listener.name":     "PLAINTEXT",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"log.dirs":                       filepath.Join(nd.dir, "data"),
		})
		if err := writeProperties(filepath.Join(nd.dir, "server.properties"), props); err != nil {
			return fmt.Errorf("node %d: %w", nd.id, err)
		}
	}
	// Format all nodes at once: each format is a JVM start (~1.5 s).
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, nd := range c.nodes {
		wg.Go(func() {
			errs[i] = c.format(ctx, nd, clusterID)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// format runs Kafka's storage tool (kafka.tools.StorageTool is still the
// entry point in 4.x; bin/kafka-storage.sh calls it).
func (c *Cluster) format(ctx context.Context, nd *node, clusterID string) error {
	args := c.javaArgs("kafka.tools.StorageTool", "format",
		"--config", filepath.Join(nd.dir, "server.properties"),
		"--cluster-id", clusterID)
	p, err := childproc.Start(childproc.Spec{Path: c.java, Args: args, Dir: nd.dir, LogPath: nd.logPath()})
	if err != nil {
		return fmt.Errorf("format kafka node %d: %w", nd.id, err)
	}
	if err := p.Wait(ctx); err != nil {
		_ = p.Kill()
		return fmt.Errorf("format kafka node %d: %w\n%s", nd.id, err, p.LogTail(30))
	}
	return nil
}

func (c *Cluster) javaArgs(mainClass string, args ...string) []string {
	a := slices.Clone(c.jvmOpts)
	a = append(a,
		"-Dlog4j2.configurationFile="+filepath.Join(c.dir, "log4j2.properties"),
		"-cp", filepath.Join(c.libs, "*"),
		mainClass)
	return append(a, args...)
}

// Log4jConfig sends a Kafka JVM's log to stdout (a broker node's
// kafka.log, the benchmarks' Kafka Connect worker's log), at INFO for
// Kafka's own state changes but without the chattiest loggers: the
// configuration dumps of every client, the request log.
const Log4jConfig = `status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = warn
logger.request.name = kafka.request.logger
logger.request.level = warn
logger.appinfo.name = org.apache.kafka.common.utils.AppInfoParser
logger.appinfo.level = warn
`

func writeProperties(path string, props map[string]string) error {
	keys := slices.Sorted(maps.Keys(props))
	var b strings.Builder
	b.WriteString("# written by sluice integration/kafkatest\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// newClusterID makes a Kafka Uuid: 16 random bytes, URL-safe base64 without
// padding (what `kafka-storage random-uuid` prints), saving a JVM start.
func newClusterID() (string, error) { return clusterIDFrom(rand.Reader) }

// clusterIDFrom is newClusterID reading its bytes from r. Like Kafka's own
// Uuid.randomUuid it draws again when the id starts with '-' (one time in
// 64): kafka-storage would take `--cluster-id -xyz` for a missing value and
// another option, and the format would fail.
func clusterIDFrom(r io.Reader) (string, error) {
	for {
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", fmt.Errorf("cluster id: %w", err)
		}
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id, nil
		}
	}
}

// FreePorts returns n distinct loopback ports nobody listens on, for
// servers a test or benchmark starts (Kafka nodes, workers' REST
// listeners). They come from below Linux's default ephemeral range (32768
// and up): a port picked by listening on :0 is drawn from that range, where
// the outgoing connections of the brokers, workers and clients running
// beside the test land too, and one of them can take it before the server
// binds it. All n stay bound until the last is found, so none repeats.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 200*n {
			return nil, fmt.Errorf("pick %d free ports below 32000 on 127.0.0.1: only %d found in %d tries", n, len(ports), tries)
		}
		port := 20000 + mrand.IntN(12000)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken
		}
		ls = append(ls, l)
		ports = append(ports, port)
	}
	return ports, nil
}

// Bootstrap returns the brokers' host:port addresses (all nodes, running or
// not, so clients can reconnect after a restart).
func (c *Cluster) Bootstrap() []string {
	if c.external != nil {
		return slices.Clone(c.external)
	}
	var addrs []string
	for _, nd := range c.nodes {
		addrs = append(addrs, nd.addr())
	}
	return addrs
}

// BootstrapString is Bootstrap joined with commas, as bootstrap.servers
// wants it.
func (c *Cluster) BootstrapString() string { return strings.Join(c.Bootstrap(), ",") }

// External reports whether this cluster was not started by this process.
func (c *Cluster) External() bool { return c.external != nil }

// Nodes is the number of nodes.
func (c *Cluster) Nodes() int { return len(c.nodes) }

// Dir is the cluster's directory (node configs, data and logs).
func (c *Cluster) Dir() string { return c.dir }

// NodeID is the Kafka node.id (broker id) of node i (0-based): i+1.
func (c *Cluster) NodeID(i int) int { return c.nodes[i].id }

// NodeLog is the path of node i's log file (stdout and stderr of its JVM).
func (c *Cluster) NodeLog(i int) string { return c.nodes[i].logPath() }

// Pid is the process id of node i's JVM, or 0 if it is not running.
func (c *Cluster) Pid(i int) int {
	if c.external != nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.nodes[i].proc; p != nil && !p.Exited() {
		return p.Pid()
	}
	return 0
}

// Start starts every node that is not running, on its existing data and
// ports, and waits until all of them are ready.
func (c *Cluster) Start(ctx context.Context) error {
	if c.external != nil {
		return ErrExternal
	}
	var started []int
	for i := range c.nodes {
		ok, err := c.launch(i)
		if err != nil {
			return err
		}
		if ok {
			started = append(started, i)
		}
	}
	// Nodes must all be up before any is ready: a broker needs a controller
	// quorum, which needs a majority of the voters.
	return c.waitReady(ctx, started)
}

// StartNode starts node i (0-based) on its existing data and ports and waits
// until it is registered with the controller again.
func (c *Cluster) StartNode(ctx context.Context, i int) error {
	if c.external != nil {
		return ErrExternal
	}
	ok, err := c.launch(i)
	if err != nil || !ok {
		return err
	}
	return c.waitReady(ctx, []int{i})
}

// launch starts node i's JVM unless it is already running.
func (c *Cluster) launch(i int) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nd := c.nodes[i]
	if nd.proc != nil && !nd.proc.Exited() {
		return false, nil
	}
	args := c.javaArgs("kafka.Kafka", filepath.Join(nd.dir, "server.properties"))
	p, err := childproc.Start(childproc.Spec{Path: c.java, Args: args, Dir: nd.dir, LogPath: nd.logPath()})
	if err != nil {
		return false, fmt.Errorf("start kafka node %d: %w", nd.id, err)
	}
	nd.proc = p
	return true, nil
}

func (c *Cluster) proc(i int) *childproc.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].proc
}

// waitReady polls each node in idx until it answers a Metadata request
// listing itself among the brokers, which happens once it is registered and
// unfenced, i.e. ready to lead partitions. A node that exits meanwhile fails
// the wait at once, with its log's tail.
func (c *Cluster) waitReady(ctx context.Context, idx []int) error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Go(func() { errs[i] = c.waitNode(ctx, i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Cluster) waitNode(ctx context.Context, i int) error {
	nd := c.nodes[i]
	p := c.proc(i)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(nd.addr()),
		kgo.DialTimeout(time.Second),
		kgo.RequestRetries(0),
		kgo.RetryTimeout(time.Second),
	)
	if err != nil {
		return fmt.Errorf("kafka node %d: client: %w", nd.id, err)
	}
	defer cl.Close()
	seed := cl.SeedBrokers()[0]
	var lastErr error
	for {
		if p.Exited() {
			return fmt.Errorf("kafka node %d exited during start-up (%v); log %s:\n%s",
				nd.id, p.ExitErr(), nd.logPath(), p.LogTail(40))
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{} // no topics, brokers only
		resp, err := req.RequestWith(rctx, seed)
		cancel()
		if err == nil {
			for _, b := range resp.Brokers {
				if int(b.NodeID) == nd.id {
					return nil
				}
			}
			err = fmt.Errorf("node %d not yet registered (brokers %v)", nd.id, brokerIDs(resp))
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka node %d not ready: %w (last: %v); log %s:\n%s",
				nd.id, ctx.Err(), lastErr, nd.logPath(), p.LogTail(40))
		case <-p.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func brokerIDs(resp *kmsg.MetadataResponse) []int32 {
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	return ids
}

// Stop shuts every node down gracefully (SIGTERM, controlled shutdown) and
// waits; nodes still running when ctx ends are SIGKILLed.
func (c *Cluster) Stop(ctx context.Context) error {
	if c.external != nil {
		return ErrExternal
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i := range c.nodes {
		wg.Go(func() { errs[i] = c.StopNode(ctx, i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// StopNode shuts node i down gracefully, SIGKILLing it if ctx ends first.
func (c *Cluster) StopNode(ctx context.Context, i int) error {
	if c.external != nil {
		return ErrExternal
	}
	p := c.proc(i)
	if p == nil {
		return nil
	}
	if err := p.Stop(ctx); err != nil {
		return fmt.Errorf("stop kafka node %d: %w", c.nodes[i].id, err)
	}
	return nil
}

// Kill SIGKILLs every node (no flush, no controlled shutdown: a crash).
func (c *Cluster) Kill() {
	for i := range c.nodes {
		c.KillNode(i)
	}
}

// KillNode SIGKILLs node i and waits until it is gone.
func (c *Cluster) KillNode(i int) {
	if c.external != nil {
		return
	}
	if p := c.proc(i); p != nil {
		_ = p.Kill()
	}
}

// Close kills every node and, if the cluster created its own directory,
// removes it. Tests do not need a graceful shutdown at the end, and a kill
// is instant.
func (c *Cluster) Close() {
	if c.external != nil {
		return
	}
	c.Kill()
	if c.ownsDir {
		_ = os.RemoveAll(c.dir)
	}
}

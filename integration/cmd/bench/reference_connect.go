//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-io/sluice/integration/internal/childproc"
	"github.com/sluice-io/sluice/integration/itest"
	"github.com/sluice-io/sluice/integration/kafkatest"
)

// The Kafka Connect reference: the pipelines of pipeline.go run in Apache
// Kafka Connect's own standalone worker (connect-standalone's main class,
// the jars of Kafka kafkatest.KafkaVersion from Maven Central), with the
// two Java connectors of connectref/ that do what Sluice's datagen (raw
// format, one task) and NoopSink do:
//
//   - kafka-connect/datagen-pN: BenchSourceConnector writes Records records
//     (a 6-7 byte key, a Payload.ValueSize value, each value distinct) to
//     an N-partition topic, 1,000 a poll; timed as sluice/datagen-pN.
//   - kafka-connect/noop-sink-pN: BenchSinkConnector counts what it is put
//     from the filled topic; timed as sluice/noop-sink-pN.
//
// Same broker, same worker settings (ByteArrayConverter both ways, a 50 ms
// offset flush; every other setting each runtime's default, unless
// BENCH_CONNECT_PROPS adds some as BENCH_SLUICE_PROPS does), same finish
// lines, same checks, the same baselines run right before and after. The
// ratios to raw franz-go then say how far Kafka Connect itself gets on the
// machine, beside how far Sluice does.
//
// The worker's JVM gets what Kafka's start scripts give it
// (connectJVMOpts). The Maven download and the javac build run in the
// benchmarks' Prepare, unmeasured; the JVM's start-up is not timed, as
// Sluice's is not, but its CPU is counted, as Sluice's is.
func init() { registerPipelines(connectRuntime) }

var connectRuntime = pipelineRuntime{
	prefix:  "kafka-connect",
	prepare: func(ctx context.Context, env *BenchEnv) error { _, err := connectReference(ctx, env); return err },
	start:   startConnect,
	sourceConfig: func(env *BenchEnv, topic string) map[string]string {
		return map[string]string{
			"connector.class": "io.sluice.bench.BenchSourceConnector",
			"tasks.max":       "1",
			"topic":           topic,
			"max.records":     strconv.Itoa(env.Records),
			"value.size":      strconv.Itoa(env.Payload.ValueSize),
		}
	},
	sinkConfig: func(topic string) map[string]string {
		return map[string]string{
			"connector.class": "io.sluice.bench.BenchSinkConnector",
			"tasks.max":       "1",
			"topics":          topic,
		}
	},
	sinkStopped: regexp.MustCompile(`bench sink stopped: records=([0-9]+) puts=[0-9]+`),
}

// connectJVMOpts are what connect-standalone.sh (KAFKA_HEAP_OPTS) and
// kafka-run-class.sh (KAFKA_JVM_PERFORMANCE_OPTS) give the worker's JVM.
var connectJVMOpts = []string{
	"-Xms256M", "-Xmx2G",
	"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
	"-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true",
}

// connectMain is connect-standalone's main class.
const connectMain = "org.apache.kafka.connect.cli.ConnectStandalone"

// connectBuild is what connectReference made: the worker's class path
// (libs) and the plugin.path holding the reference connectors (plugins).
type connectBuild struct {
	java, libs, plugins string
}

var (
	connectMu   sync.Mutex
	connectDone *connectBuild
)

// connectReference fetches Kafka Connect's runtime (cached beside the
// broker's jars) and compiles the reference connectors into env.Dir, once
// a run.
func connectReference(ctx context.Context, env *BenchEnv) (*connectBuild, error) {
	connectMu.Lock()
	defer connectMu.Unlock()
	if connectDone != nil {
		return connectDone, nil
	}
	root, err := itest.RepoRoot()
	if err != nil {
		return nil, err
	}
	src := filepath.Join(root, "integration", "cmd", "bench", "connectref")
	libs, err := connectLibs(ctx, src)
	if err != nil {
		return nil, err
	}
	java, err := jdkTool("java")
	if err != nil {
		return nil, err
	}
	javac, err := jdkTool("javac")
	if err != nil {
		return nil, err
	}
	jar, err := jdkTool("jar")
	if err != nil {
		return nil, err
	}
	out := filepath.Join(env.Dir, "connect-reference")
	classes := filepath.Join(out, "classes")
	plugins := filepath.Join(out, "plugins")
	pluginDir := filepath.Join(plugins, "sluice-bench")
	for _, d := range []string{classes, pluginDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("connect reference: %w", err)
		}
	}
	sources, err := filepath.Glob(filepath.Join(src, "src", "io", "sluice", "bench", "*.java"))
	if err != nil || len(sources) == 0 {
		return nil, fmt.Errorf("connect reference: no Java sources under %s", src)
	}
	if err := runTool(ctx, javac, append([]string{"-Xlint:all", "-d", classes, "-cp", filepath.Join(libs, "*")}, sources...)...); err != nil {
		return nil, fmt.Errorf("compile the reference connectors: %w", err)
	}
	// The services files make the connectors visible to Connect's
	// ServiceLoader discovery as well as to its class scan.
	if err := runTool(ctx, jar, "cf", filepath.Join(pluginDir, "sluice-bench-connectors.jar"),
		"-C", classes, ".", "-C", filepath.Join(src, "resources"), "."); err != nil {
		return nil, fmt.Errorf("package the reference connectors: %w", err)
	}
	connectDone = &connectBuild{java: java, libs: libs, plugins: plugins}
	return connectDone, nil
}

// connectLibs returns the directory of Kafka Connect's runtime jars,
// resolving connectref/pom.xml's dependencies with Maven into the cache
// the first time.
func connectLibs(ctx context.Context, src string) (string, error) {
	root, err := kafkatest.CacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "connect-"+kafkatest.KafkaVersion)
	libs := filepath.Join(dir, "libs")
	marker := filepath.Join(libs, ".complete")
	if _, err := os.Stat(marker); err == nil {
		return libs, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("maven is needed to fetch Kafka Connect (apt-get install maven): %w", err)
	}
	tmp := libs + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", fmt.Errorf("clean %s: %w", tmp, err)
	}
	start := time.Now()
	if err := runTool(ctx, mvn, "-q", "-B", "-f", filepath.Join(src, "pom.xml"),
		"-Dkafka.version="+kafkatest.KafkaVersion, "-Dlog4j.version="+kafkatest.Log4jSLF4JVersion,
		"org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+tmp); err != nil {
		return "", fmt.Errorf("fetch Kafka Connect %s: %w", kafkatest.KafkaVersion, err)
	}
	if jars, _ := filepath.Glob(filepath.Join(tmp, "connect-runtime-*.jar")); len(jars) == 0 {
		return "", fmt.Errorf("maven finished but %s has no connect-runtime jar", tmp)
	}
	if err := os.RemoveAll(libs); err != nil {
		return "", fmt.Errorf("clean %s: %w", libs, err)
	}
	if err := os.Rename(tmp, libs); err != nil {
		return "", fmt.Errorf("move Kafka Connect's jars into place: %w", err)
	}
	note := fmt.Sprintf("kafka connect %s fetched in %s\n", kafkatest.KafkaVersion, time.Since(start).Round(time.Millisecond))
	if err := os.WriteFile(marker, []byte(note), 0o644); err != nil {
		return "", fmt.Errorf("mark the Kafka Connect download complete: %w", err)
	}
	return libs, nil
}

// jdkTool finds a JDK command: under $JAVA_HOME if set, else on PATH.
func jdkTool(name string) (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		p := filepath.Join(h, "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s from a JDK 17+ is needed for the Kafka Connect reference: %w", name, err)
	}
	return p, nil
}

// runTool runs a build command and returns its output's last lines on
// failure.
func runTool(ctx context.Context, path string, args ...string) error {
	cmd := exec.CommandContext(ctx, path, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(path), strings.Join(args, " "), err, strings.Join(lines, "\n"))
	}
	return nil
}

// connectLog4j sends the worker's log to stdout (its log file) at INFO,
// without the configuration dumps of every client it creates.
const connectLog4j = `status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = warn
logger.appinfo.name = org.apache.kafka.common.utils.AppInfoParser
logger.appinfo.level = warn
`

// startConnect runs Kafka Connect's standalone worker with the pipelines'
// worker properties and no connectors, in a new directory under env.Dir
// named after name, and waits until its REST API lists connectors.
func startConnect(ctx context.Context, env *BenchEnv, name string) (*sluiceWorker, error) {
	build, err := connectReference(ctx, env)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(env.Dir, "connect-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("worker dir: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	props, err := pipelineWorkerProps("BENCH_CONNECT_PROPS")
	if err != nil {
		return nil, err
	}
	props["bootstrap.servers"] = env.Cluster.BootstrapString()
	props["listeners"] = "http://127.0.0.1:" + strconv.Itoa(port)
	props["offset.storage.file.filename"] = filepath.Join(dir, "connect.offsets")
	props["plugin.path"] = build.plugins
	propsPath, err := writeWorkerProps(dir, props)
	if err != nil {
		return nil, err
	}
	logConf := filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(logConf, []byte(connectLog4j), 0o644); err != nil {
		return nil, fmt.Errorf("write log4j config: %w", err)
	}
	args := append(append([]string{}, connectJVMOpts...),
		"-Dlog4j2.configurationFile="+logConf,
		"-cp", filepath.Join(build.libs, "*"),
		connectMain, propsPath)
	w, err := launchWorker(childproc.Spec{Path: build.java, Args: args, Dir: dir, LogPath: filepath.Join(dir, "connect.log")}, "connect")
	if err != nil {
		return nil, err
	}
	w.url = "http://127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithTimeout(ctx, workerStartTimeout)
	defer cancel()
	return w.awaitReady(ctx, "/connectors")
}

// freePort is a loopback TCP port nothing listened on a moment ago: the
// worker's REST port is chosen up front rather than read from its log.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

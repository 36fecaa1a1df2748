//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

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
// benchmarks' Prepare, unmeasured. The JVM's start-up and the warm-up both
// runtimes get (warmUpPipeline) are not timed, as Sluice's are not, but
// their CPU is counted, as Sluice's is, and noted apart
// (Result.PreClockCPUSeconds).
func init() { registerPipelines(connectRuntime) }

var connectRuntime = pipelineRuntime{
	prefix:  "kafka-connect",
	prepare: func(ctx context.Context, env *BenchEnv) error { _, err := connectReference(ctx, env); return err },
	start:   startConnect,
	sourceConfig: func(env *BenchEnv, topic string, records int) map[string]string {
		return map[string]string{
			"connector.class": "io.sluice.bench.BenchSourceConnector",
			"tasks.max":       "1",
			"topic":           topic,
			"max.records":     strconv.Itoa(records),
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

// connectReference fetches Kafka Connect's runtime (kafkatest.EnsureConnect,
// cached beside the broker's jars) and compiles the reference connectors
// into env.Dir, once a run.
func connectReference(ctx context.Context, env *BenchEnv) (*connectBuild, error) {
	connectMu.Lock()
	defer connectMu.Unlock()
	if connectDone != nil {
		return connectDone, nil
	}
	// The JDK first: without javac, fetching the jars would be wasted.
	var tools [3]string
	for i, name := range []string{"java", "javac", "jar"} {
		p, err := kafkatest.JDKTool(name)
		if err != nil {
			return nil, fmt.Errorf("the Kafka Connect reference needs %s from a JDK 17+ (apt-get install openjdk-17-jdk-headless): %w", name, err)
		}
		tools[i] = p
	}
	java, javac, jar := tools[0], tools[1], tools[2]
	root, err := itest.RepoRoot()
	if err != nil {
		return nil, err
	}
	src := filepath.Join(root, "integration", "cmd", "bench", "connectref")
	libs, err := kafkatest.EnsureConnect(ctx)
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
	// Every lint warning fails the build: the connectors are small enough
	// to keep clean, and a warning unseen (the output of a build that
	// passes is dropped) would be one nobody reads. --release pins the
	// language and API level to the broker's Java, whatever JDK builds.
	if err := runTool(ctx, javac, append([]string{"--release", "17", "-Xlint:all", "-Werror", "-d", classes, "-cp", filepath.Join(libs, "*")}, sources...)...); err != nil {
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
	// A port picked below the ephemeral range, as the brokers' are: an
	// outgoing connection could take an ephemeral one before the JVM binds
	// it.
	ports, err := kafkatest.FreePorts(1)
	if err != nil {
		return nil, err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	props := map[string]string{
		"bootstrap.servers":            env.Cluster.BootstrapString(),
		"listeners":                    url,
		"offset.storage.file.filename": filepath.Join(dir, "connect.offsets"),
		"plugin.path":                  build.plugins,
	}
	// As for Sluice (startSluice), the benchmarks' settings and then
	// BENCH_CONNECT_PROPS override these.
	extra, err := pipelineWorkerProps("BENCH_CONNECT_PROPS")
	if err != nil {
		return nil, err
	}
	maps.Copy(props, extra)
	propsPath, err := writeWorkerProps(dir, props)
	if err != nil {
		return nil, err
	}
	logConf := filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(logConf, []byte(kafkatest.Log4jConfig), 0o644); err != nil {
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
	w.url = url
	ctx, cancel := context.WithTimeout(ctx, workerStartTimeout)
	defer cancel()
	return w.awaitReady(ctx, "/connectors")
}

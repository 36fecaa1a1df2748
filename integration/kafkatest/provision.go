package kafkatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// KafkaVersion is the Apache Kafka release the tests run. 4.4.0 is the newest
// 4.x that Maven Central served when this was written; its broker runs on
// Java 17.
const KafkaVersion = "4.4.0"

// Log4jSLF4JVersion matches the log4j-core that kafka_2.13 KafkaVersion pulls
// in. The kafka_2.13 pom declares slf4j-api but no binding (the binary
// distribution adds one), so without this the broker logs nothing at all.
const Log4jSLF4JVersion = "2.25.5"

// completeMarker is written into libs/ after Maven succeeded, so a download
// that was interrupted half-way is never mistaken for a usable one.
const completeMarker = ".complete"

// CacheRoot is where downloaded Kafka jars live: $SLUICE_CACHE if set,
// otherwise ~/.cache/sluice (or $XDG_CACHE_HOME/sluice). It is outside the
// repository on purpose: nothing downloaded may be committed.
func CacheRoot() (string, error) {
	if d := os.Getenv("SLUICE_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		// No $HOME (a bare CI environment): still use a shared, stable
		// place rather than failing.
		return filepath.Join(os.TempDir(), "sluice-cache"), nil
	}
	return filepath.Join(d, "sluice"), nil
}

// EnsureKafka returns the directory holding the Kafka broker's jars,
// downloading them with Maven first if the cache does not have them yet.
// Concurrent callers, in this process or in other test binaries, are
// serialised with a file lock so that only one runs Maven.
func EnsureKafka(ctx context.Context) (string, error) { return ensureJars(ctx, kafkaJars) }

var kafkaJars = jarSet{
	what: "kafka " + KafkaVersion,
	dir:  "kafka-" + KafkaVersion,
	pom:  fmt.Sprintf(pomTemplate, "kafka-libs", kafkaDependency("kafka_2.13")+log4jDependency),
	want: "kafka_2.13-*.jar",
}

// EnsureConnect is EnsureKafka for Apache Kafka Connect's worker at
// KafkaVersion: connect-runtime, connect-json and the same log4j binding,
// with their runtime dependencies, for running
// org.apache.kafka.connect.cli.ConnectStandalone (the benchmarks'
// reference, integration/cmd/bench).
func EnsureConnect(ctx context.Context) (string, error) { return ensureJars(ctx, connectJars) }

var connectJars = jarSet{
	what: "kafka connect " + KafkaVersion,
	dir:  "connect-" + KafkaVersion,
	pom:  fmt.Sprintf(pomTemplate, "connect-libs", kafkaDependency("connect-runtime")+kafkaDependency("connect-json")+log4jDependency),
	want: "connect-runtime-*.jar",
}

// jarSet is what ensureJars fetches: the jars Maven resolves for pom, kept
// in CacheRoot()/dir/libs; a complete set holds a jar matching want.
type jarSet struct {
	what, dir, pom, want string
}

// ensureJars returns set's libs directory, fetching it first unless a
// complete copy is cached.
func ensureJars(ctx context.Context, set jarSet) (string, error) {
	root, err := CacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, set.dir)
	libs := filepath.Join(dir, "libs")
	if _, err := os.Stat(filepath.Join(libs, completeMarker)); err == nil {
		return libs, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s cache dir: %w", set.what, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "download.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another process may have finished the download while we waited.
	if _, err := os.Stat(filepath.Join(libs, completeMarker)); err == nil {
		return libs, nil
	}
	if err := download(ctx, dir, set); err != nil {
		return "", fmt.Errorf("download %s into %s: %w", set.what, dir, err)
	}
	return libs, nil
}

// lockFile takes an exclusive flock on path, polling so that ctx can cancel
// the wait (flock itself cannot be interrupted).
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// pomTemplate is a throwaway project whose only purpose is to make Maven
// resolve a set of jars and their runtime dependencies: %[1]s names it,
// %[2]s is its dependencies.
const pomTemplate = `<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by sluice integration/kafkatest; only used to fetch jars. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.sluice.kafkatest</groupId>
  <artifactId>%[1]s</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
%[2]s  </dependencies>
</project>
`

// kafkaDependency is the pom dependency on Apache Kafka's artifact at
// KafkaVersion.
func kafkaDependency(artifact string) string {
	return fmt.Sprintf(`    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>%s</artifactId>
      <version>%s</version>
    </dependency>
`, artifact, KafkaVersion)
}

// log4jDependency is the SLF4J binding the jar sets add (see
// Log4jSLF4JVersion).
var log4jDependency = fmt.Sprintf(`    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>%s</version>
    </dependency>
`, Log4jSLF4JVersion)

func download(ctx context.Context, dir string, set jarSet) error {
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return fmt.Errorf("maven is needed to fetch %s (apt-get install maven): %w", set.what, err)
	}
	pom := filepath.Join(dir, "pom.xml")
	if err := os.WriteFile(pom, []byte(set.pom), 0o644); err != nil {
		return fmt.Errorf("write pom: %w", err)
	}
	// Copy into a scratch dir and rename, so libs/ only ever holds one
	// complete set of jars.
	tmp := filepath.Join(dir, "libs.tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("clean %s: %w", tmp, err)
	}
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-f", pom,
		"org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+tmp)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, tail(out.String(), 40))
	}
	jars, _ := filepath.Glob(filepath.Join(tmp, set.want))
	if len(jars) == 0 {
		return fmt.Errorf("maven finished but %s has no %s", tmp, set.want)
	}
	libs := filepath.Join(dir, "libs")
	if err := os.RemoveAll(libs); err != nil {
		return fmt.Errorf("clean %s: %w", libs, err)
	}
	if err := os.Rename(tmp, libs); err != nil {
		return fmt.Errorf("move jars into place: %w", err)
	}
	note := fmt.Sprintf("%s fetched in %s\n", set.what, time.Since(start).Round(time.Millisecond))
	if err := os.WriteFile(filepath.Join(libs, completeMarker), []byte(note), 0o644); err != nil {
		return fmt.Errorf("mark download complete: %w", err)
	}
	return nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

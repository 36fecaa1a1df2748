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
func EnsureKafka(ctx context.Context) (string, error) {
	root, err := CacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "kafka-"+KafkaVersion)
	libs := filepath.Join(dir, "libs")
	if _, err := os.Stat(filepath.Join(libs, completeMarker)); err == nil {
		return libs, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create kafka cache dir: %w", err)
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
	if err := download(ctx, dir); err != nil {
		return "", fmt.Errorf("download kafka %s into %s: %w", KafkaVersion, dir, err)
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
// resolve the broker and its runtime dependencies.
const pomTemplate = `<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by sluice integration/kafkatest; only used to fetch jars. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.sluice.kafkatest</groupId>
  <artifactId>kafka-libs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>%s</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>%s</version>
    </dependency>
  </dependencies>
</project>
`

func download(ctx context.Context, dir string) error {
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return fmt.Errorf("maven is needed to fetch Kafka (apt-get install maven): %w", err)
	}
	pom := filepath.Join(dir, "pom.xml")
	if err := os.WriteFile(pom, fmt.Appendf(nil, pomTemplate, KafkaVersion, Log4jSLF4JVersion), 0o644); err != nil {
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
	jars, _ := filepath.Glob(filepath.Join(tmp, "kafka_2.13-*.jar"))
	if len(jars) == 0 {
		return fmt.Errorf("maven finished but %s has no kafka_2.13 jar", tmp)
	}
	libs := filepath.Join(dir, "libs")
	if err := os.RemoveAll(libs); err != nil {
		return fmt.Errorf("clean %s: %w", libs, err)
	}
	if err := os.Rename(tmp, libs); err != nil {
		return fmt.Errorf("move jars into place: %w", err)
	}
	note := fmt.Sprintf("kafka %s fetched in %s\n", KafkaVersion, time.Since(start).Round(time.Millisecond))
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

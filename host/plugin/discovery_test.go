package plugin

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

func copyFile(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func classNames(cs []Class) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// problemsByPath maps each problem's path (relative to dir) to its message.
func problemsByPath(dir string, ps []Problem) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		rel, err := filepath.Rel(dir, p.Path)
		if err != nil {
			rel = p.Path
		}
		out[rel] = p.Err.Error()
	}
	return out
}

func TestScan(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(t.TempDir(), "missing")
	copyFile(t, goodBin, filepath.Join(dir, "good"), 0o755)
	copyFile(t, goodBin, filepath.Join(dir, ".hidden-good"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "README.txt"), []byte("not a plugin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "corrupt"), []byte("\x7fELF\x02\x01\x01garbage"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, dir, "sleeper.sh", "#!/bin/sh\nexec sleep 60\n")
	copyFile(t, "/bin/true", filepath.Join(dir, "true"), 0o755)
	// One level down: a binary and its support file.
	copyFile(t, badBin, filepath.Join(dir, "bundle", "bin-bad"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "bundle", "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	m, _ := newManager(t, Options{PluginPaths: []string{dir, missing}, DescribeTimeout: time.Second})
	ctx := ctxT(t, 30*time.Second)
	start := time.Now()
	problems, err := m.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first scan took %s", time.Since(start))
	for _, p := range problems {
		t.Logf("problem: %v", p)
	}
	wantClasses := []string{
		"io.sluice.test.BadSinkConnector", "io.sluice.test.BadSourceConnector",
		"io.sluice.test.GoodSinkConnector", "io.sluice.test.GoodSourceConnector",
	}
	if got := classNames(m.Classes()); !reflect.DeepEqual(got, wantClasses) {
		t.Fatalf("classes %v, want %v", got, wantClasses)
	}
	got := problemsByPath(dir, problems)
	want := map[string]string{
		"README.txt": "not executable",
		"corrupt":    "exec format error",
		"sleeper.sh": "no go-plugin handshake on stdout within 1s",
		"true":       "the process exited before the go-plugin handshake (exit status 0",
	}
	relMissing, _ := filepath.Rel(dir, missing)
	want[relMissing] = "no such file or directory"
	for p, msg := range want {
		if !strings.Contains(got[p], msg) {
			t.Errorf("problem for %s: %q, want it to mention %q", p, got[p], msg)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems %v, want exactly %v", got, want)
	}
	if !errors.Is(problems[indexOfProblem(problems, filepath.Join(dir, "README.txt"))].Err, ErrNotExecutable) {
		t.Error("README.txt problem is not ErrNotExecutable")
	}
	// good, corrupt, sleeper.sh, true, bundle/bin-bad
	if n := m.describes.Load(); n != 5 {
		t.Errorf("%d describe launches, want 5", n)
	}
	for _, c := range m.Classes() {
		if c.Path != filepath.Join(dir, "good") && c.Path != filepath.Join(dir, "bundle", "bin-bad") {
			t.Errorf("class %s from %s", c.Name, c.Path)
		}
	}
	// A declared task class travels from Describe; an undeclared one stays
	// empty for the herder to fall back on the connector class.
	taskClasses := map[string]string{}
	for _, c := range m.Classes() {
		taskClasses[c.Name] = c.TaskClass
	}
	if tc := taskClasses["io.sluice.test.GoodSourceConnector"]; tc != "io.sluice.test.GoodSourceTask" {
		t.Errorf("GoodSourceConnector task class %q, want io.sluice.test.GoodSourceTask", tc)
	}
	if tc := taskClasses["io.sluice.test.GoodSinkConnector"]; tc != "" {
		t.Errorf("GoodSinkConnector task class %q, want none", tc)
	}

	// Unchanged files are not launched again, working or not.
	problems, err = m.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.describes.Load(); n != 5 {
		t.Errorf("rescan launched: %d describe launches, want still 5", n)
	}
	if got := problemsByPath(dir, problems); len(got) != len(want) {
		t.Errorf("rescan problems %v", got)
	}

	// A new binary is picked up; one serving the same classes is reported.
	copyFile(t, goodBin, filepath.Join(dir, "zz-good-copy"), 0o755)
	problems, err = m.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.describes.Load(); n != 6 {
		t.Errorf("%d describe launches after adding a binary, want 6", n)
	}
	if p := problemsByPath(dir, problems)["zz-good-copy"]; !strings.Contains(p, "already served by "+filepath.Join(dir, "good")) {
		t.Errorf("duplicate classes: problem %q", p)
	}
	if got := classNames(m.Classes()); !reflect.DeepEqual(got, wantClasses) {
		t.Errorf("classes after duplicate %v", got)
	}

	// A changed binary is described again; a fixed one stops being a problem.
	copyFile(t, badBin, filepath.Join(dir, "true"), 0o755) // replaced in place: new size
	if err := os.Remove(filepath.Join(dir, "bundle", "bin-bad")); err != nil {
		t.Fatal(err)
	}
	problems, err = m.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.describes.Load(); n != 7 {
		t.Errorf("%d describe launches after replacing a binary, want 7", n)
	}
	if _, ok := problemsByPath(dir, problems)["true"]; ok {
		t.Error("replaced binary still reported")
	}
	c, err := m.Lookup("BadSource")
	if err != nil || c.Path != filepath.Join(dir, "true") {
		t.Errorf("BadSource after moving: %+v, %v", c, err)
	}

	// Describe processes are gone.
	m.mu.Lock()
	live := len(m.instances)
	m.mu.Unlock()
	if live != 0 {
		t.Errorf("%d instances left after scans", live)
	}
}

func indexOfProblem(ps []Problem, path string) int {
	for i, p := range ps {
		if p.Path == path {
			return i
		}
	}
	return -1
}

func TestLookup(t *testing.T) {
	m, _ := newManager(t, Options{})
	mk := func(name string, aliases ...string) Class {
		return Class{Name: name, Def: &pluginv1.ConnectorClass{ClassName: name, Aliases: aliases}}
	}
	classes := []Class{
		mk("org.apache.kafka.connect.file.FileStreamSourceConnector", "FileSource"),
		mk("org.apache.kafka.connect.file.FileStreamSinkConnector"),
		mk("com.acme.jdbc.JdbcSinkConnector", "jdbc"),
		mk("io.other.jdbc.JdbcSinkConnector", "jdbc"),
		mk("io.sluice.Datagen"),
	}
	byName, byAlias := index(classes)
	m.catMu.Lock()
	m.classes, m.byName, m.byAlias = classes, byName, byAlias
	m.catMu.Unlock()

	for name, want := range map[string]string{
		"org.apache.kafka.connect.file.FileStreamSourceConnector": "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"FileStreamSourceConnector":                               "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"FileStreamSource":                                        "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"FileSource":                                              "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"FileStreamSink":                                          "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"com.acme.jdbc.JdbcSinkConnector":                         "com.acme.jdbc.JdbcSinkConnector",
		"Datagen":                                                 "io.sluice.Datagen",
	} {
		c, err := m.Lookup(name)
		if err != nil || c.Name != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", name, c.Name, err, want)
		}
	}
	for _, name := range []string{"JdbcSinkConnector", "JdbcSink", "jdbc"} {
		_, err := m.Lookup(name)
		if !errors.Is(err, ErrAmbiguousClass) || !strings.Contains(err.Error(), "com.acme.jdbc.JdbcSinkConnector") || !strings.Contains(err.Error(), "io.other.jdbc.JdbcSinkConnector") {
			t.Errorf("Lookup(%q): %v; want ambiguous naming both", name, err)
		}
	}
	_, err := m.Lookup("FileStreamSorce")
	if !errors.Is(err, ErrUnknownClass) || !strings.Contains(err.Error(), "FileStreamSource") {
		t.Errorf("typo: %v", err)
	}
	_, err = m.Lookup("com.example.Nothing")
	if !errors.Is(err, ErrUnknownClass) || !strings.Contains(err.Error(), "5 classes known") {
		t.Errorf("unknown: %v", err)
	}
	// Class.Aliases lists the unambiguous short names only.
	got := map[string][]string{}
	for _, c := range m.Classes() {
		got[c.Name] = c.Aliases
	}
	if a := got["org.apache.kafka.connect.file.FileStreamSourceConnector"]; !reflect.DeepEqual(a, []string{"FileStreamSourceConnector", "FileStreamSource", "FileSource"}) {
		t.Errorf("aliases %v", a)
	}
	if a := got["com.acme.jdbc.JdbcSinkConnector"]; len(a) != 0 {
		t.Errorf("ambiguous aliases listed: %v", a)
	}
	names := classNames(m.Classes())
	if !sort.StringsAreSorted(names) {
		t.Errorf("Classes not sorted: %v", names)
	}
}

func TestSocketDir(t *testing.T) {
	t.Run("configured", func(t *testing.T) {
		dir := t.TempDir()
		// Litter of a worker that died: a socket dir with a live-looking
		// socket, a callback socket, and a file that is not ours.
		stale := filepath.Join(dir, "plugin-dir123")
		if err := os.Mkdir(stale, 0o700); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", filepath.Join(stale, "plugin456"))
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
		if err := os.WriteFile(filepath.Join(dir, "worker-9.sock"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("mine"), 0o600); err != nil {
			t.Fatal(err)
		}
		m, _ := newManager(t, Options{SocketDir: dir})
		if got := entries(t, dir); !reflect.DeepEqual(got, []string{"keep.txt"}) {
			t.Fatalf("after New: %v, want only keep.txt", got)
		}
		in := launch(t, m, Spec{Path: goodBin, Connector: "s", Task: 0, Worker: &fakeWorker{}})
		got := entries(t, dir)
		if len(got) != 3 || !strings.HasPrefix(got[1], pluginDirPrefix) || !strings.HasPrefix(got[2], workerSockPrefix) {
			t.Fatalf("while running: %v", got)
		}
		if err := in.Kill(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := entries(t, dir); !reflect.DeepEqual(got, []string{"keep.txt"}) {
			t.Errorf("after Kill: %v", got)
		}
		launch(t, m, Spec{Path: goodBin, Connector: "s", Task: 1, Worker: &fakeWorker{}})
		if err := m.Close(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := entries(t, dir); !reflect.DeepEqual(got, []string{"keep.txt"}) {
			t.Errorf("after Close: %v", got)
		}
		if _, err := m.Launch(ctxT(t, time.Second), Spec{Path: goodBin, Task: 0}); !errors.Is(err, ErrClosed) {
			t.Errorf("Launch after Close: %v", err)
		}
	})
	t.Run("default", func(t *testing.T) {
		m, _ := newManager(t, Options{WorkerID: "host:8083"})
		dir := m.SocketDir()
		if filepath.Dir(dir) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(dir), "sluice-host_8083-") {
			t.Errorf("default socket dir %s", dir)
		}
		in := launch(t, m, Spec{Path: goodBin, Task: 0})
		// A crash leaves the plugin's socket behind; the instance removes it.
		_ = in.p.Kill(ctxT(t, time.Second))
		<-in.Done()
		if got := entries(t, dir); !reflect.DeepEqual(got, []string{pidFileName}) {
			t.Errorf("after a crash: %v", got)
		}
		launch(t, m, Spec{Path: goodBin, Task: 1})
		if err := m.Close(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("default socket dir still there after Close: %v", err)
		}
	})
}

func entries(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestWatch(t *testing.T) {
	dir := t.TempDir()
	m, logs := newManager(t, Options{PluginPaths: []string{dir}})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- m.Watch(ctx, 50*time.Millisecond) }()
	copyFile(t, goodBin, filepath.Join(dir, "good"), 0o755)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := m.Lookup("good-source"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Watch did not pick up a new binary")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if n := m.describes.Load(); n != 1 {
		t.Errorf("%d describe launches, want 1 however many rescans ran", n)
	}
	if !strings.Contains(logs.String(), "connector class added: class=io.sluice.test.GoodSourceConnector") {
		t.Errorf("no log of the added class:\n%s", logs.String())
	}
}

package configprovider

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestFileProvider(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "secrets.properties")
	writeFile(t, f, "# comment\nuser=alice\npassword: s3cr\\u0065t\nother=x\n")
	p, err := NewProvider("FileConfigProvider", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Get(context.Background(), f, []string{"user", "password", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["user"] != "alice" || got["password"] != "s3cret" {
		t.Fatalf("got %v", got)
	}
	if _, err := p.Get(context.Background(), filepath.Join(dir, "nope"), []string{"user"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("missing file: %v", err)
	}
	// A malformed file must not have its content quoted.
	bad := filepath.Join(dir, "bad.properties")
	writeFile(t, bad, "k=topsecretvalue\\u12zz\n")
	_, err = p.Get(context.Background(), bad, []string{"k"})
	if err == nil || strings.Contains(err.Error(), "topsecretvalue") || !strings.Contains(err.Error(), bad) {
		t.Fatalf("malformed file: %v", err)
	}
}

func TestAllowedPaths(t *testing.T) {
	root := t.TempDir()
	allowed := filepath.Join(root, "allowed")
	other := filepath.Join(root, "allowedx") // shares a prefix, not a component
	for _, d := range []string{allowed, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(d, "a.properties"), "k=v\n")
		writeFile(t, filepath.Join(d, "k"), "file-value")
	}
	for _, class := range []string{FileClass, DirectoryClass} {
		p, err := NewProvider(class, map[string]string{ParamAllowedPaths: " " + allowed + " , /nonexistent-but-checked"})
		if err == nil || !strings.Contains(err.Error(), "/nonexistent-but-checked does not exist") {
			t.Fatalf("%s: nonexistent allowed path: %v", class, err)
		}
		if _, err = NewProvider(class, map[string]string{ParamAllowedPaths: "relative/dir"}); err == nil || !strings.Contains(err.Error(), "not absolute") {
			t.Fatalf("%s: relative allowed path: %v", class, err)
		}
		p, err = NewProvider(class, map[string]string{ParamAllowedPaths: allowed})
		if err != nil {
			t.Fatal(err)
		}
		ok, refused := filepath.Join(allowed, "a.properties"), filepath.Join(other, "a.properties")
		escape := allowed + "/../allowedx/a.properties"
		if class == DirectoryClass {
			ok, refused, escape = allowed, other, allowed+"/../allowedx"
		}
		got, err := p.Get(context.Background(), ok, []string{"k"})
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: allowed path: %v %v", class, got, err)
		}
		for _, path := range []string{refused, escape, "relative/a.properties"} {
			_, err := p.Get(context.Background(), path, []string{"k"})
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), ParamAllowedPaths) {
				t.Fatalf("%s: %s should be refused: %v", class, path, err)
			}
		}
	}
}

func TestDirectoryProvider(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "password"), "p@ss\n")
	writeFile(t, filepath.Join(dir, "user"), "bob")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub", "inner"), "no")
	writeFile(t, filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-sibling"), "no")
	p, err := NewProvider(DirectoryClass, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Get(context.Background(), dir, []string{"password", "user", "sub", "sub/inner", "../" + filepath.Base(dir) + "-sibling", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["password"] != "p@ss\n" || got["user"] != "bob" {
		t.Fatalf("got %q", got)
	}
	if _, err := p.Get(context.Background(), filepath.Join(dir, "absent"), []string{"x"}); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("missing dir: %v", err)
	}
}

func TestEnvVarProvider(t *testing.T) {
	t.Setenv("SLUICE_CP_TEST_A", "a-value")
	t.Setenv("SLUICE_CP_OTHER", "hidden")
	p, err := NewProvider(EnvVarClass, map[string]string{ParamAllowlistPattern: "SLUICE_CP_TEST_.*"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Get(context.Background(), "", []string{"SLUICE_CP_TEST_A", "SLUICE_CP_OTHER", "SLUICE_CP_TEST_UNSET"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["SLUICE_CP_TEST_A"] != "a-value" {
		t.Fatalf("got %v", got)
	}
	// The pattern must match the whole name.
	p, _ = NewProvider(EnvVarClass, map[string]string{ParamAllowlistPattern: "SLUICE_CP"})
	if got, _ := p.Get(context.Background(), "", []string{"SLUICE_CP_TEST_A"}); len(got) != 0 {
		t.Fatalf("partial match allowed: %v", got)
	}
	p, _ = NewProvider("EnvVarConfigProvider", nil)
	if got, _ := p.Get(context.Background(), "", []string{"SLUICE_CP_OTHER"}); got["SLUICE_CP_OTHER"] != "hidden" {
		t.Fatalf("no allowlist: %v", got)
	}
	if _, err := p.Get(context.Background(), "/some/path", []string{"X"}); err == nil {
		t.Fatal("a path must be refused")
	}
	if _, err := NewProvider(EnvVarClass, map[string]string{ParamAllowlistPattern: "("}); err == nil {
		t.Fatal("bad pattern accepted")
	}
}

// fake records what it was asked and answers from data.
type fake struct {
	data  map[string]map[string]string
	calls []string
	err   error
}

func (f *fake) Get(_ context.Context, path string, keys []string) (map[string]string, error) {
	f.calls = append(f.calls, path+"|"+strings.Join(keys, ","))
	if f.err != nil {
		return nil, f.err
	}
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := f.data[path][k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

func TestResolve(t *testing.T) {
	f := &fake{data: map[string]map[string]string{
		"/p":  {"user": "alice", "pass": "pw"},
		"":    {"solo": "S"},
		"/q:": {"k": "never"},
	}}
	r := (*Resolver)(nil).With("v", f)
	in := map[string]string{
		"both":     "${v:/p:user}",
		"nopath":   "${v:solo}",
		"unknown":  "${other:/p:user}",
		"missing":  "${v:/p:nokey}",
		"several":  "u=${v:/p:user};p=${v:/p:pass};",
		"around":   "jdbc://${v:/p:user}@host",
		"plain":    "just text",
		"dollar":   "$ {v:/p:user} ${v}",
		"nothing":  "",
		"repeated": "${v:/p:user}${v:/p:user}",
	}
	got, err := r.Resolve(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"both":     "alice",
		"nopath":   "S",
		"unknown":  "${other:/p:user}",
		"missing":  "${v:/p:nokey}",
		"several":  "u=alice;p=pw;",
		"around":   "jdbc://alice@host",
		"plain":    "just text",
		"dollar":   "$ {v:/p:user} ${v}",
		"nothing":  "",
		"repeated": "alicealice",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q want %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d keys", len(got))
	}
	if in["both"] != "${v:/p:user}" {
		t.Error("input changed")
	}
	// One call per path, all keys at once.
	if len(f.calls) != 2 {
		t.Errorf("calls %v", f.calls)
	}
	for _, c := range f.calls {
		if strings.HasPrefix(c, "/p|") && len(strings.Split(strings.TrimPrefix(c, "/p|"), ",")) != 3 {
			t.Errorf("keys of /p asked in one call: %v", f.calls)
		}
	}
}

func TestPatternSplitsAtFirstColons(t *testing.T) {
	f := &fake{data: map[string]map[string]string{"C": {`\x:key`: "win"}}}
	r := (*Resolver)(nil).With("p", f)
	got, err := r.Resolve(context.Background(), map[string]string{"a": `${p:C:\x:key}`})
	if err != nil || got["a"] != "win" {
		t.Fatalf("got %v %v (calls %v)", got, err, f.calls)
	}
}

func TestResolveErrorNamesKeyProviderPathNotValue(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.properties")
	writeFile(t, good, "secret=hunter2\n")
	r, err := New(map[string]string{
		"config.providers":                          "file",
		"config.providers.file.class":               FileClass,
		"config.providers.file.param.allowed.paths": good,
	})
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside.properties")
	_, err = r.Resolve(context.Background(), map[string]string{
		"connection.password": "${file:" + good + ":secret}",
		"other":               "${file:" + outside + ":secret}",
	})
	var re *ResolveError
	if !errors.As(err, &re) {
		t.Fatalf("want ResolveError, got %v", err)
	}
	msg := err.Error()
	for _, s := range []string{"other", "file", outside} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q does not name %q", msg, s)
		}
	}
	if strings.Contains(msg, "hunter2") {
		t.Errorf("error leaks the secret: %q", msg)
	}
	// Unreadable file.
	r2, _ := New(map[string]string{"config.providers": "file", "config.providers.file.class": "FileConfigProvider"})
	_, err = r2.Resolve(context.Background(), map[string]string{"db.pass": "${file:" + filepath.Join(dir, "absent") + ":secret}", "ok": "${file:" + good + ":secret}"})
	if err == nil || !strings.Contains(err.Error(), "db.pass") || !strings.Contains(err.Error(), "absent") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("unreadable file: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	_, err := New(map[string]string{"config.providers": "vault", "config.providers.vault.class": "com.example.VaultConfigProvider"})
	if err == nil || !strings.Contains(err.Error(), "com.example.VaultConfigProvider") || !strings.Contains(err.Error(), "config.providers.vault.class") {
		t.Fatalf("unknown class: %v", err)
	}
	_, err = New(map[string]string{"config.providers": "file"})
	if err == nil || !strings.Contains(err.Error(), "config.providers.file.class") {
		t.Fatalf("missing class: %v", err)
	}
	r, err := New(map[string]string{"config.providers": " file , env ", "config.providers.file.class": FileClass, "config.providers.env.class": "EnvVarConfigProvider"})
	if err != nil || strings.Join(r.Aliases(), ",") != "env,file" {
		t.Fatalf("aliases %v %v", r.Aliases(), err)
	}
	r, err = New(map[string]string{})
	if err != nil || len(r.Aliases()) != 0 {
		t.Fatalf("none: %v", err)
	}
}

func TestResolveWorker(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "w.properties")
	writeFile(t, f, "servers=broker:9092\n")
	t.Setenv("SLUICE_CP_GROUP", "grp")
	props := map[string]string{
		"config.providers":            "file,env",
		"config.providers.file.class": FileClass,
		"config.providers.env.class":  EnvVarClass,
		"bootstrap.servers":           "${file:" + f + ":servers}",
		"group.id":                    "${env:SLUICE_CP_GROUP}",
		"client.id":                   "${vault:x:y}",
	}
	out, r, err := ResolveWorker(context.Background(), props)
	if err != nil {
		t.Fatal(err)
	}
	if out["bootstrap.servers"] != "broker:9092" || out["group.id"] != "grp" || out["client.id"] != "${vault:x:y}" || r == nil {
		t.Fatalf("got %v", out)
	}
	props["config.providers.file.class"] = "Nope"
	if _, _, err := ResolveWorker(context.Background(), props); err == nil || !strings.Contains(err.Error(), "config.providers.file.class") {
		t.Fatalf("bad class: %v", err)
	}
}

func TestUnresolve(t *testing.T) {
	raw := map[string]string{"file": "${file:/x:path}", "topic": "t", "pw": "${env:PW}"}
	task := map[string]string{"file": "/data/in.txt", "topic": "t", "extra": "e"}
	got := Unresolve(raw, task)
	if got["file"] != "${file:/x:path}" || got["topic"] != "t" || got["extra"] != "e" || len(got) != 3 {
		t.Fatalf("got %v", got)
	}
	if task["file"] != "/data/in.txt" {
		t.Fatal("input changed")
	}
}

func TestLoadWorker(t *testing.T) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets.properties")
	writeFile(t, secrets, "servers=b1:9092,b2:9092\nflush=1234\n")
	wp := filepath.Join(dir, "worker.properties")
	writeFile(t, wp, strings.Join([]string{
		"config.providers=file",
		"config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider",
		"config.providers.file.param.allowed.paths=" + dir,
		"bootstrap.servers=${file:" + secrets + ":servers}",
		// A LONG: it validates only once resolved.
		"offset.flush.interval.ms=${file:" + secrets + ":flush}",
		"key.converter=org.apache.kafka.connect.storage.StringConverter",
		"value.converter=org.apache.kafka.connect.storage.StringConverter",
		"offset.storage.file.filename=" + filepath.Join(dir, "offsets"),
		"producer.sasl.jaas.config=${vault:a:b}",
	}, "\n"))
	w, err := LoadWorker(context.Background(), wp, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(w.List("bootstrap.servers"), ";"); got != "b1:9092;b2:9092" {
		t.Fatalf("bootstrap.servers %q", got)
	}
	if w.Millis("offset.flush.interval.ms").Milliseconds() != 1234 {
		t.Fatalf("offset.flush.interval.ms %v", w.Millis("offset.flush.interval.ms"))
	}
	if w.Props["producer.sasl.jaas.config"] != "${vault:a:b}" {
		t.Fatalf("unknown provider resolved: %q", w.Props["producer.sasl.jaas.config"])
	}
	// A path outside allowed.paths stops the worker, naming key and path.
	outside := filepath.Join(t.TempDir(), "s.properties")
	writeFile(t, outside, "servers=x:1\n")
	writeFile(t, wp, strings.Join([]string{
		"config.providers=file",
		"config.providers.file.class=FileConfigProvider",
		"config.providers.file.param.allowed.paths=" + dir,
		"bootstrap.servers=${file:" + outside + ":servers}",
		"key.converter=org.apache.kafka.connect.storage.StringConverter",
		"value.converter=org.apache.kafka.connect.storage.StringConverter",
		"offset.storage.file.filename=x",
	}, "\n"))
	_, err = LoadWorker(context.Background(), wp, nil, true)
	if err == nil || !strings.Contains(err.Error(), "bootstrap.servers") || !strings.Contains(err.Error(), outside) || strings.Contains(err.Error(), "x:1") {
		t.Fatalf("outside allowed.paths: %v", err)
	}
	// An unknown class too, naming the class key; CONNECT_* overrides
	// apply before resolution.
	_, err = LoadWorker(context.Background(), wp, []string{"CONNECT_CONFIG_PROVIDERS_FILE_CLASS=com.example.Nope"}, true)
	if err == nil || !strings.Contains(err.Error(), "config.providers.file.class") || !strings.Contains(err.Error(), "com.example.Nope") {
		t.Fatalf("unknown class: %v", err)
	}
}

// getWithin runs p.Get and fails the test if it does not answer within a
// few seconds (a FIFO opened for reading blocks until a writer comes).
func getWithin(t *testing.T, p Provider, path string, keys []string) (map[string]string, error) {
	t.Helper()
	type answer struct {
		m   map[string]string
		err error
	}
	ch := make(chan answer, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		m, err := p.Get(ctx, path, keys)
		ch <- answer{m, err}
	}()
	select {
	case a := <-ch:
		return a.m, a.err
	case <-time.After(3 * time.Second):
		// Unblock the reader so the goroutine ends.
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatalf("Get %s did not answer", path)
		return nil, nil
	}
}

func TestFileProviderRefusesNonRegularAndLargeFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.properties")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	writeFile(t, big, "k="+strings.Repeat("x", MaxFileBytes)+"\n")
	p := &FileProvider{}
	_, err := getWithin(t, p, fifo, []string{"k"})
	if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("FIFO: %v", err)
	}
	_, err = getWithin(t, p, big, []string{"k"})
	if err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "1048576 bytes") || strings.Contains(err.Error(), "xxxx") {
		t.Fatalf("large file: %v", err)
	}
	// The Directory provider skips a FIFO (not a regular file, as Kafka
	// does) and refuses a large file.
	writeFile(t, filepath.Join(dir, "ok"), "v")
	d := &DirectoryProvider{}
	got, err := getWithin(t, d, dir, []string{"fifo.properties", "ok"})
	if err != nil || len(got) != 1 || got["ok"] != "v" {
		t.Fatalf("directory with a FIFO: %v %v", got, err)
	}
	_, err = getWithin(t, d, dir, []string{"big"})
	if err == nil || !strings.Contains(err.Error(), "big in "+dir) || !strings.Contains(err.Error(), "1048576 bytes") {
		t.Fatalf("directory large file: %v", err)
	}
}

func TestAllowedPathsFollowSymlinks(t *testing.T) {
	root := t.TempDir()
	allowed, outside := filepath.Join(root, "allowed"), filepath.Join(root, "outside")
	for _, d := range []string{allowed, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(d, "a.properties"), "k=v-"+filepath.Base(d)+"\n")
		writeFile(t, filepath.Join(d, "k"), "v-"+filepath.Base(d))
	}
	link := func(target, name string) string {
		l := filepath.Join(allowed, name)
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	outFile, inFile := link(filepath.Join(outside, "a.properties"), "out.properties"), link(filepath.Join(allowed, "a.properties"), "in.properties")
	outDir := link(outside, "outdir")
	link(filepath.Join(outside, "k"), "klink")
	for _, class := range []string{FileClass, DirectoryClass} {
		p, err := NewProvider(class, map[string]string{ParamAllowedPaths: allowed})
		if err != nil {
			t.Fatal(err)
		}
		okPath, badPath, key := inFile, outFile, "k"
		if class == DirectoryClass {
			okPath, badPath = allowed, outDir
		}
		got, err := p.Get(context.Background(), okPath, []string{key})
		if err != nil || got[key] != "v-allowed" {
			t.Fatalf("%s: link inside: %v %v", class, got, err)
		}
		got, err = p.Get(context.Background(), badPath, []string{key})
		if err == nil || !strings.Contains(err.Error(), badPath) || !strings.Contains(err.Error(), ParamAllowedPaths) {
			t.Fatalf("%s: link outside %s: %v %v", class, badPath, got, err)
		}
		if class == DirectoryClass {
			// A file in an allowed directory that links out.
			got, err = p.Get(context.Background(), allowed, []string{"klink"})
			if err == nil || !strings.Contains(err.Error(), ParamAllowedPaths) {
				t.Fatalf("directory entry linking out: %v %v", got, err)
			}
		}
	}
}

func TestLoadWorkerErrorShowsVariables(t *testing.T) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "s.properties")
	writeFile(t, secrets, "l=bogus-secret-listener\n")
	props := filepath.Join(dir, "worker.properties")
	v := "${file:" + secrets + ":l}"
	writeFile(t, props, "bootstrap.servers=localhost:9092\nkey.converter=org.apache.kafka.connect.storage.StringConverter\nvalue.converter=org.apache.kafka.connect.storage.StringConverter\noffset.storage.file.filename="+filepath.Join(dir, "offsets")+
		"\nconfig.providers=file\nconfig.providers.file.class=FileConfigProvider\nlisteners="+v+"\n")
	_, err := LoadWorker(context.Background(), props, nil, true)
	if err == nil || strings.Contains(err.Error(), "bogus-secret-listener") || !strings.Contains(err.Error(), "Invalid value "+v) {
		t.Fatalf("LoadWorker: %v", err)
	}
}

func TestMasker(t *testing.T) {
	m := NewMasker(
		map[string]string{"a": "${x:a}", "b": "${x:b}", "short": "${x:s}", "same": "plain"},
		map[string]string{"a": "  secret-long  \n", "b": "secret", "short": "on", "same": "plain"})
	for in, want := range map[string]string{
		"value secret-long here":   "value ${x:a} here", // trimmed form, longest first
		"  secret-long  \n":        "${x:a}",            // whole value
		"bad secret and secretive": "bad ${x:b} and ${x:b}ive",
		"connection on":            "connection on", // short: only as a whole
		"on":                       "${x:s}",
		"plain":                    "plain",
	} {
		if got := m.Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

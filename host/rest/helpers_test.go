package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/logging"
	"github.com/sluice-io/sluice/host/rest/resttest"
)

// env is a started server on a free port with a fake herder behind it.
type env struct {
	t       *testing.T
	h       *resttest.Herder
	loggers *logging.Registry
	srv     *Server
	url     string
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	return newEnvWith(t, resttest.New(), opts)
}

func newEnvWith(t *testing.T, h *resttest.Herder, opts Options) *env {
	t.Helper()
	reg, err := logging.New(logging.Options{Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, h, reg, opts)
	return &env{t: t, h: h, loggers: reg, srv: srv, url: srv.Addrs()[0]}
}

// startServer starts a REST server for h on a port the kernel picks
// (unless opts names listeners) and shuts it down when the test ends.
func startServer(t *testing.T, h herder.Herder, reg *logging.Registry, opts Options) *Server {
	t.Helper()
	if opts.Listeners == nil {
		opts.Listeners = []string{"http://127.0.0.1:0"}
	}
	srv, err := New(h, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return srv
}

// reply is one HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (e *env) do(method, path, body string) reply {
	e.t.Helper()
	return doURL(e.t, http.DefaultClient, method, e.url+path, body, nil)
}

func doURL(t *testing.T, client *http.Client, method, url, body string, header http.Header) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

// expect checks the status and, when want is not "", that the body is the
// same JSON as want.
func (r reply) expect(t *testing.T, status int, want string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if want == "" {
		return
	}
	if !jsonEqual(r.body, []byte(want)) {
		t.Fatalf("body\n got %s\nwant %s", r.body, want)
	}
}

// expectError checks a Kafka error answer: status, error_code and message.
func (r reply) expectError(t *testing.T, status int, message string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error answer content type %q", ct)
	}
	var eb map[string]any
	if err := json.Unmarshal(r.body, &eb); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	if len(eb) != 2 || eb["error_code"] != float64(status) {
		t.Fatalf("error body %s: want exactly error_code %d and message", r.body, status)
	}
	if message != "" && eb["message"] != message {
		t.Fatalf("message\n got %q\nwant %q", eb["message"], message)
	}
}

// message is the message of an error answer.
func (r reply) message(t *testing.T) string {
	t.Helper()
	var eb errorBody
	if err := json.Unmarshal(r.body, &eb); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	return eb.Message
}

func (r reply) decode(t *testing.T, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

const (
	sourceConfig = `{"connector.class":"FileStreamSource","tasks.max":"1","file":"/tmp/in.txt","topic":"lines"}`
	sinkConfig   = `{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","tasks.max":"2","file":"/tmp/out.txt","topics":"lines"}`
)

// create makes a connector through the API.
func (e *env) create(name, config string) {
	e.t.Helper()
	e.do("POST", "/connectors", `{"name":"`+name+`","config":`+config+`}`).expect(e.t, http.StatusCreated, "")
}

func mustRegistry(t *testing.T) *logging.Registry {
	t.Helper()
	reg, err := logging.New(logging.Options{Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

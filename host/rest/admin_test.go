package rest

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-io/sluice/host/logging"
	"github.com/sluice-io/sluice/host/rest/resttest"
)

func TestLoggers(t *testing.T) {
	e := newEnv(t, Options{})
	e.loggers.Logger("sluice.task.src-0")
	e.loggers.Logger("sluice.connector.src")
	e.do("GET", "/admin/loggers", "").expect(t, 200, `{
		"root":{"level":"INFO","last_modified":null},
		"sluice.connector.src":{"level":"INFO","last_modified":null},
		"sluice.task.src-0":{"level":"INFO","last_modified":null}}`)
	e.do("GET", "/admin/loggers/sluice.task.src-0", "").expect(t, 200, `{"level":"INFO","last_modified":null}`)
	e.do("GET", "/admin/loggers/nope", "").expectError(t, 404, "Logger nope not found.")

	e.do("PUT", "/admin/loggers/sluice.task", `{"level":"debug"}`).expect(t, 200, `["sluice.task","sluice.task.src-0"]`)
	var lvl logging.LoggerLevel
	r := e.do("GET", "/admin/loggers/sluice.task.src-0", "")
	r.expect(t, 200, "")
	r.decode(t, &lvl)
	if lvl.Level != "DEBUG" || lvl.LastModified == nil || *lvl.LastModified <= 0 {
		t.Fatalf("after PUT: %s", r.body)
	}
	e.do("GET", "/admin/loggers/sluice.connector.src", "").expect(t, 200, `{"level":"INFO","last_modified":null}`)

	// An unknown scope falls back to worker, as in Kafka.
	e.do("PUT", "/admin/loggers/sluice.connector?scope=galaxy", `{"level":"WARN","extra":"ignored"}`).expect(t, 200, `["sluice.connector","sluice.connector.src"]`)

	e.do("PUT", "/admin/loggers/sluice", `{"level":"LOUD"}`).expectError(t, 404, "invalid log level 'LOUD'.")
	e.do("PUT", "/admin/loggers/sluice", `{"levels":"INFO"}`).expectError(t, 400, "Desired 'level' parameter was not specified in request.")
	e.do("PUT", "/admin/loggers/sluice", `{"level":null}`).expectError(t, 400, "Desired 'level' parameter was not specified in request.")
	e.do("PUT", "/admin/loggers/sluice", `{"level":[3]}`).expectError(t, 400, `Value of "level" in the logger level request must be a string or null, not an array`)
	e.do("PUT", "/admin/loggers/sluice", `{"level":3}`).expectError(t, 404, `invalid log level '3'.`)
	e.do("PUT", "/admin/loggers/sluice", `[]`).expectError(t, 400, "The logger level request must be a JSON object, not array")

	// Cluster scope with only this worker's registry: applied here, 204.
	r = e.do("PUT", "/admin/loggers/sluice.herder?scope=cluster", `{"level":"ERROR"}`)
	r.expect(t, http.StatusNoContent, "")
	e.do("GET", "/admin/loggers/sluice.herder", "").expect(t, 200, "")
	if l, _ := e.loggers.Level("sluice.herder"); l.Level != logging.LevelError {
		t.Fatalf("cluster scope not applied locally: %+v", l)
	}
}

// clusterHerder is a herder that sets levels cluster-wide.
type clusterHerder struct {
	*resttest.Herder
	mu  sync.Mutex
	got []string
}

func (c *clusterHerder) SetClusterLoggerLevel(_ context.Context, ns, level string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, ns+"="+level)
	return nil
}

func TestClusterScopeGoesToTheHerder(t *testing.T) {
	ch := &clusterHerder{Herder: resttest.New()}
	reg, _ := logging.New(logging.Options{Output: discard{}})
	srv, err := New(ch, reg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := serve(srv.Handler(), "PUT", "/admin/loggers/sluice?scope=CLUSTER", `{"level":"TRACE"}`)
	if rec.Code != http.StatusNoContent || len(ch.got) != 1 || ch.got[0] != "sluice=TRACE" {
		t.Fatalf("cluster scope: %d, herder got %v", rec.Code, ch.got)
	}
	if _, err := reg.Level("sluice"); err == nil {
		t.Fatalf("cluster scope also set the level locally; the herder applies it")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestAdminListeners(t *testing.T) {
	t.Run("own listeners", func(t *testing.T) {
		e := newEnv(t, Options{AdminListeners: []string{"http://127.0.0.1:0"}})
		admin := e.srv.AdminAddrs()
		if len(admin) != 1 || admin[0] == e.url {
			t.Fatalf("admin addrs %v (main %s)", admin, e.url)
		}
		e.do("GET", "/admin/loggers", "").expectError(t, 404, "HTTP 404 Not Found")
		doURL(t, http.DefaultClient, "GET", admin[0]+"/admin/loggers", "", nil).expect(t, 200, `{"root":{"level":"INFO","last_modified":null}}`)
		doURL(t, http.DefaultClient, "GET", admin[0]+"/connectors", "", nil).expectError(t, 404, "HTTP 404 Not Found")
	})
	t.Run("disabled", func(t *testing.T) {
		e := newEnv(t, Options{AdminListeners: []string{}})
		e.do("GET", "/admin/loggers", "").expectError(t, 404, "HTTP 404 Not Found")
		e.do("GET", "/connectors", "").expect(t, 200, `[]`)
		if _, err := New(resttest.New(), nil, Options{AdminListeners: []string{}}); err != nil {
			t.Fatalf("no registry needed when admin is off: %v", err)
		}
	})
	if _, err := New(resttest.New(), nil, Options{}); err == nil {
		t.Fatal("admin on without a registry was accepted")
	}
}

func TestCORS(t *testing.T) {
	e := newEnv(t, Options{AllowOrigin: "http://ui.example, http://*.corp.example", AllowMethods: "GET,PUT,DELETE"})
	pre := func(origin, method string) reply {
		return doURL(t, http.DefaultClient, "OPTIONS", e.url+"/connectors/x/config", "", http.Header{
			"Origin": {origin}, "Access-Control-Request-Method": {method},
		})
	}
	r := pre("http://ui.example", "PUT")
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "http://ui.example" ||
		r.header.Get("Access-Control-Allow-Methods") != "GET,PUT,DELETE" || r.header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("preflight: %d %v", r.status, r.header)
	}
	if r := pre("http://a.corp.example", "POST"); r.header.Get("Access-Control-Allow-Origin") != "http://a.corp.example" || r.header.Get("Access-Control-Allow-Methods") != "" {
		t.Fatalf("preflight for a method not allowed: %v", r.header)
	}
	if r := pre("http://evil.example", "GET"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("foreign origin allowed: %v", r.header)
	}
	r = doURL(t, http.DefaultClient, "GET", e.url+"/connectors", "", http.Header{"Origin": {"http://ui.example"}})
	r.expect(t, 200, `[]`)
	if r.header.Get("Access-Control-Allow-Origin") != "http://ui.example" {
		t.Fatalf("simple request: %v", r.header)
	}

	plain := newEnv(t, Options{})
	r = doURL(t, http.DefaultClient, "GET", plain.url+"/connectors", "", http.Header{"Origin": {"http://ui.example"}})
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("CORS answered although access.control.allow.origin is empty")
	}
}

func TestCORSDefaultMethods(t *testing.T) {
	e := newEnv(t, Options{AllowOrigin: "*"})
	r := doURL(t, http.DefaultClient, "OPTIONS", e.url+"/connectors", "", http.Header{
		"Origin": {"http://x"}, "Access-Control-Request-Method": {"POST"},
	})
	if got := r.header.Get("Access-Control-Allow-Methods"); got != "GET,POST,HEAD" {
		t.Fatalf("default methods %q", got)
	}
	if !strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Content-Type") {
		t.Fatalf("allowed headers %q", r.header.Get("Access-Control-Allow-Headers"))
	}
}

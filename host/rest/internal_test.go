package rest

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	hostconfig "github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/rest/resttest"
	"github.com/sluice-io/sluice/host/storage"
)

// taskWriter is the fake herder with the internal endpoint, checking
// signatures as the distributed herder does: first the signature (when
// signing is on), then whether the connector exists.
type taskWriter struct {
	*resttest.Herder
	signer  *herder.Signer
	signing bool

	mu   sync.Mutex
	key  *storage.SessionKey
	got  []herder.InternalRequest
	cfgs [][]map[string]string
}

func (w *taskWriter) PutTaskConfigs(ctx context.Context, name string, cfgs []map[string]string, req herder.InternalRequest) error {
	w.mu.Lock()
	key := w.key
	w.mu.Unlock()
	if w.signing {
		if err := w.signer.Verify(key, req); err != nil {
			return err
		}
	}
	if _, err := w.ConnectorConfig(ctx, name); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, req)
	w.cfgs = append(w.cfgs, cfgs)
	return nil
}

func newTaskWriterEnv(t *testing.T, signing bool) (*env, *taskWriter) {
	t.Helper()
	s, err := herder.NewSigner(hostconfig.DefaultInterWorker())
	if err != nil {
		t.Fatal(err)
	}
	w := &taskWriter{Herder: resttest.New(), signer: s, signing: signing}
	reg := mustRegistry(t)
	srv := startServer(t, w, reg, Options{})
	return &env{t: t, h: w.Herder, loggers: reg, srv: srv, url: srv.Addrs()[0]}, w
}

func (e *env) post(path, body string, h http.Header) reply {
	e.t.Helper()
	return doURL(e.t, http.DefaultClient, http.MethodPost, e.url+path, body, h)
}

func sigHeader(sig, alg string) http.Header {
	h := http.Header{}
	if sig != "" {
		h.Set("X-Connect-Authorization", sig)
	}
	if alg != "" {
		h.Set("X-Connect-Request-Signature-Algorithm", alg)
	}
	return h
}

// Under the sessioned protocol the internal endpoint checks the signature
// before the connector: 400 without one, 400 for an algorithm the worker
// does not accept, 403 for a wrong one, 503 before any key was read; a
// correct one reaches the herder with the exact body bytes and headers.
func TestInternalTaskConfigsSigned(t *testing.T) {
	e, w := newTaskWriterEnv(t, true)
	const missing = "Internal request missing required signature"
	const invalid = "Internal request contained invalid signature."

	// No key read yet: unsigned is still 400, signed is 503.
	e.post("/connectors/nope/tasks", `[]`, nil).expectError(t, 400, missing)
	r := e.post("/connectors/nope/tasks", `[]`, sigHeader("S2Fma2Flc3F1ZQ==", "HmacSHA256"))
	r.expectError(t, 503, "")
	if m := r.message(t); m == "" || !strings.Contains(m, "session key") {
		t.Fatalf("503 message %q", m)
	}

	key, err := w.signer.NewKey(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.key = &key
	w.mu.Unlock()
	e.create("src", sourceConfig)

	for _, c := range []string{"nope", "src"} {
		path := "/connectors/" + c + "/tasks"
		e.post(path, `[]`, nil).expectError(t, 400, missing)
		e.post(path, `[]`, sigHeader("S2Fma2Flc3F1ZQ==", "")).expectError(t, 400, missing)
		e.post(path, `[]`, sigHeader("S2Fma2Flc3F1ZQ==", "HmacSHA256")).expectError(t, 403, invalid)
		e.post(path, `[]`, sigHeader("S2Fma2Flc3F1ZQ==", "HmacSHA512")).expectError(t, 400,
			"This worker does not support the 'HmacSHA512' key signing algorithm used by other workers. "+
				"This worker is currently configured to use: [HmacSHA256]. "+
				"Check that all workers' configuration files permit the same set of signature algorithms, and correct any misconfigured worker and restart it.")
	}
	// Signed for one body, sent with another.
	signed, err := w.signer.Sign(&key, []byte(`[]`))
	if err != nil {
		t.Fatal(err)
	}
	e.post("/connectors/src/tasks", `[{"a":"b"}]`, sigHeader(signed.Signature, signed.Algorithm)).expectError(t, 403, invalid)

	// Correctly signed: 404 for an unknown connector, 204 for a known one,
	// with the body as sent, spaces included.
	body := `[ {"task.class":"T", "n":"0"} ]`
	signed, _ = w.signer.Sign(&key, []byte(body))
	e.post("/connectors/nope/tasks", body, sigHeader(signed.Signature, signed.Algorithm)).expectError(t, 404, "Connector nope not found")
	e.post("/connectors/src/tasks", body, sigHeader(signed.Signature, signed.Algorithm)).expect(t, 204, "")
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.got) != 1 || string(w.got[0].Body) != body || w.got[0].Signature != signed.Signature || w.got[0].Algorithm != "HmacSHA256" {
		t.Fatalf("herder got %+v", w.got)
	}
	if len(w.cfgs[0]) != 1 || w.cfgs[0][0]["n"] != "0" {
		t.Fatalf("configs %v", w.cfgs)
	}
}

// Under the compatible protocol nothing is checked.
func TestInternalTaskConfigsUnsigned(t *testing.T) {
	e, w := newTaskWriterEnv(t, false)
	e.post("/connectors/nope/tasks", `[]`, nil).expectError(t, 404, "Connector nope not found")
	e.create("src", sourceConfig)
	e.post("/connectors/src/tasks", `[{"n":"0"},{"n":"1"}]`, nil).expect(t, 204, "")
	e.post("/connectors/src/tasks", `[{`, nil).expectError(t, 400, "")
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.cfgs) != 1 || len(w.cfgs[0]) != 2 || w.got[0].Signature != "" {
		t.Fatalf("herder got %v %+v", w.cfgs, w.got)
	}
}

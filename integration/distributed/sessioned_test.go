//go:build integration

package distributed

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// postInternal sends the internal POST /connectors/{c}/tasks with the
// signature headers given ("" leaves one out) and returns the status and
// the error message.
func (w *worker) postInternal(connector, body, sig, alg string) (int, string) {
	w.t.Helper()
	req, err := http.NewRequestWithContext(w.t.Context(), http.MethodPost, w.url+"/connectors/"+connector+"/tasks", strings.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if sig != "" {
		req.Header.Set("X-Connect-Authorization", sig)
	}
	if alg != "" {
		req.Header.Set("X-Connect-Request-Signature-Algorithm", alg)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(b, &eb)
	return resp.StatusCode, eb.Message
}

// requireSecured checks, on every worker (so on the leader, whichever it
// is), that the internal endpoint answers 400 without a signature and 403
// with a wrong one, before it looks at the connector. A worker that has not
// read the session key yet answers 503 to a signed request; that is waited
// out.
func requireSecured(t *testing.T, ws []*worker, connector string) {
	t.Helper()
	const badSig = "S2Fma2Flc3F1ZQ==" // base64, not the HMAC of anything here
	for _, w := range ws {
		if code, msg := w.postInternal(connector, "[]", "", ""); code != http.StatusBadRequest || msg != "Internal request missing required signature" {
			t.Fatalf("%s: unsigned POST /connectors/%s/tasks = %d %q, want 400", w.url, connector, code, msg)
		}
		deadline := time.Now().Add(stateTimeout)
		for {
			code, msg := w.postInternal(connector, "[]", badSig, "HmacSHA256")
			if code == http.StatusServiceUnavailable && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			if code != http.StatusForbidden || msg != "Internal request contained invalid signature." {
				t.Fatalf("%s: badly signed POST /connectors/%s/tasks = %d %q, want 403", w.url, connector, code, msg)
			}
			break
		}
	}
}

// TestSessionedProtocolSecuresInternalEndpoint is Kafka Connect's
// SessionedProtocolIntegrationTest (KIP-507) with two workers on the
// default connect.protocol=sessioned: the internal task-configs endpoint
// refuses unsigned and badly signed requests, before the connector exists
// (400/403, not 404) and while it runs; the leader has put a session key on
// the config topic; and a connector whose instance runs on the follower
// still gets its tasks RUNNING, its task configs sent to the leader signed.
func TestSessionedProtocolSecuresInternalEndpoint(t *testing.T) {
	e := newEnv(t, nil)
	ws := []*worker{e.addWorker(), e.addWorker()}
	names := []string{e.name("signed-a"), e.name("signed-b")}

	requireSecured(t, ws, names[0])

	topic := e.topic("signed", 2)
	for i, n := range names {
		ws[i].create(sinkConfig(n, e.path(n+".txt"), topic, 2))
	}
	owners := map[string]bool{}
	for _, n := range names {
		s := ws[0].waitStatus(n, "RUNNING", stateTimeout, allIn("RUNNING", 2))
		owners[s.Connector.WorkerID] = true
	}
	if len(owners) != 2 {
		t.Fatalf("connector instances on %v; want one on each worker, so one generated its task configs on a follower", owners)
	}

	requireSecured(t, ws, names[0])
	for _, n := range names {
		ws[1].waitStatus(n, "still RUNNING", stateTimeout, allIn("RUNNING", 2))
	}

	var keys []string
	for _, r := range readAll(t.Context(), t, e, e.props["config.storage.topic"]) {
		if string(r.Key) != "session-key" {
			continue
		}
		var k struct {
			Key       string `json:"key"`
			Algorithm string `json:"algorithm"`
			Created   int64  `json:"creation-timestamp"`
		}
		mustJSON(t, r.Value, &k)
		b, err := base64.StdEncoding.DecodeString(k.Key)
		if err != nil || len(b) != 32 || k.Algorithm != "HmacSHA256" || k.Created <= 0 {
			t.Fatalf("session-key record %s", r.Value)
		}
		keys = append(keys, fmt.Sprintf("%d", k.Created))
	}
	if len(keys) != 1 {
		t.Fatalf("%d session-key records, want 1 (the ttl is an hour): %v", len(keys), keys)
	}
}

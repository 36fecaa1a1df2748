package herder_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/cluster"
	"github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/storage"
)

// KIP-507 on distributed herders: the session key on the config topic, and
// the signed internal POST /connectors/{c}/tasks.

// sessionKeyRecord is a session-key record as written.
type sessionKeyRecord struct {
	Key       string `json:"key"`
	Algorithm string `json:"algorithm"`
	Created   int64  `json:"creation-timestamp"`
	raw       []byte
}

// sessionKeys reads every session-key record of the config topic, in order.
func (e *dEnv) sessionKeys() []sessionKeyRecord {
	e.t.Helper()
	var out []sessionKeyRecord
	e.eachRecord(dConfigTopic, func(r *kgo.Record) {
		if string(r.Key) != "session-key" {
			return
		}
		var k sessionKeyRecord
		if err := json.Unmarshal(r.Value, &k); err != nil {
			e.t.Fatalf("session-key record %s: %v", r.Value, err)
		}
		k.raw = r.Value
		out = append(out, k)
	})
	return out
}

func (k sessionKeyRecord) key(t *testing.T) *storage.SessionKey {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(k.Key)
	if err != nil {
		t.Fatalf("key %q: %v", k.Key, err)
	}
	return &storage.SessionKey{Key: b, Algorithm: k.Algorithm, CreationTimestamp: k.Created}
}

// postTasks sends the internal request to a worker's REST API.
func postTasks(t *testing.T, base, connector, body string, h http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, base+"/connectors/"+connector+"/tasks", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(b, &eb)
	return resp.StatusCode, eb.Message
}

func signed(sig, alg string) http.Header {
	h := http.Header{}
	h.Set(herder.HeaderSignature, sig)
	h.Set(herder.HeaderSignatureAlgorithm, alg)
	return h
}

// Under the sessioned protocol (the default) the leader writes a session
// key of 256 random bits for HmacSHA256 and writes a new one each time the
// last is inter.worker.key.ttl.ms old.
func TestDistributedSessionKeyRotation(t *testing.T) {
	e := newDEnv(t)
	ttl := 1500 * time.Millisecond
	e.group = func(c *cluster.Config) {
		iw := config.DefaultInterWorker()
		iw.KeyTTL = ttl
		c.InterWorker = &iw
	}
	before := time.Now()
	e.start("w1", newFakeInstances(), false)
	var keys []sessionKeyRecord
	dWait(t, "three session keys", func() bool {
		keys = e.sessionKeys()
		return len(keys) >= 3
	})
	seen := map[string]bool{}
	for i, k := range keys {
		kb := k.key(t)
		if len(kb.Key) != 32 || k.Algorithm != "HmacSHA256" || seen[k.Key] {
			t.Fatalf("key %d: %s", i, k.raw)
		}
		seen[k.Key] = true
		if !strings.HasPrefix(string(k.raw), `{"key":"`) || !strings.Contains(string(k.raw), `","algorithm":"HmacSHA256","creation-timestamp":`) {
			t.Fatalf("record layout %s", k.raw)
		}
		if i == 0 {
			if c := time.UnixMilli(k.Created); c.Before(before.Add(-time.Second)) || c.After(time.Now()) {
				t.Fatalf("first key created at %s, test began %s", c, before)
			}
			continue
		}
		gap := time.Duration(k.Created-keys[i-1].Created) * time.Millisecond
		if gap < ttl-50*time.Millisecond || gap > ttl+2*time.Second {
			t.Fatalf("key %d written %s after the previous one, want about the ttl %s", i, gap, ttl)
		}
	}
}

// Two sessioned workers: connectors whose instance runs on the follower
// get their task configs to the leader (signed), so every task runs. The
// internal endpoint of either worker answers 400 without a signature and
// 403 with a wrong one, whether the connector exists or not; a correct
// signature is accepted, also by the follower, which forwards the request
// to the leader with its signature.
func TestDistributedSignedTaskConfigs(t *testing.T) {
	e := newDEnv(t)
	in1, in2 := newFakeInstances(), newFakeInstances()
	h1 := e.start("w1", in1, true)
	h2 := e.start("w2", in2, true)
	names := []string{"a", "b", "c", "d"}
	for _, n := range names {
		createRetrying(t, h1, n)
	}
	for _, n := range names {
		dStates(t, h2, n, "RUNNING:RUNNING,RUNNING")
	}
	owners := map[string]int{}
	for _, n := range names {
		st, err := h1.ConnectorStatus(ctxT(t), n)
		if err != nil {
			t.Fatal(err)
		}
		owners[st.Connector.WorkerID]++
	}
	if owners["w1"] == 0 || owners["w2"] == 0 {
		t.Fatalf("connector instances per worker %v; want some on each, so some task configs came from a follower", owners)
	}
	keys := e.sessionKeys()
	if len(keys) != 1 {
		t.Fatalf("%d session keys written, want 1 (the ttl is an hour)", len(keys))
	}
	key := keys[0].key(t)

	for _, name := range []string{"w1", "w2"} {
		base := e.urls[name]
		for _, c := range []string{"a", "missing"} {
			if code, msg := postTasks(t, base, c, "[]", nil); code != 400 || msg != "Internal request missing required signature" {
				t.Errorf("%s %s unsigned: %d %q", name, c, code, msg)
			}
			if code, msg := postTasks(t, base, c, "[]", signed("S2Fma2Flc3F1ZQ==", "HmacSHA256")); code != 403 || msg != "Internal request contained invalid signature." {
				t.Errorf("%s %s wrong signature: %d %q", name, c, code, msg)
			}
		}
	}

	s, err := herder.NewSigner(config.DefaultInterWorker())
	if err != nil {
		t.Fatal(err)
	}
	tcs, err := h1.TaskConfigs(ctxT(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	cfgs := make([]map[string]string, len(tcs))
	for i, tc := range tcs {
		cfgs[i] = tc.Config
		cfgs[i]["extra"] = "x"
	}
	body, _ := json.Marshal(cfgs)
	req, err := s.Sign(key, body)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"w1", "w2"} {
		if code, msg := postTasks(t, e.urls[name], "a", string(body), signed(req.Signature, req.Algorithm)); code != 204 {
			t.Fatalf("%s signed: %d %q", name, code, msg)
		}
	}
	if code, msg := postTasks(t, e.urls["w2"], "missing", "[]", signed(mustSign(t, s, key, "[]"), "HmacSHA256")); code != 404 || msg != "Connector missing not found" {
		t.Fatalf("signed for a missing connector: %d %q", code, msg)
	}
	dWait(t, "the posted task configs", func() bool {
		tcs, _ := h2.TaskConfigs(context.Background(), "a")
		return len(tcs) == 2 && tcs[0].Config["extra"] == "x"
	})
}

func mustSign(t *testing.T, s *herder.Signer, key *storage.SessionKey, body string) string {
	t.Helper()
	r, err := s.Sign(key, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return r.Signature
}

func createRetrying(t *testing.T, h *herder.Distributed, name string) {
	t.Helper()
	var err error
	for range 50 { // 409 while a join settles
		_, _, err = h.PutConnectorConfig(ctxT(t), name, srcConfig(), false, herder.TargetStarted)
		if err == nil || !strings.Contains(err.Error(), "momentarily") && !strings.Contains(err.Error(), "conflicting") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

// Under the compatible protocol nothing is signed: no key is written,
// followers send task configs unsigned, and the endpoint takes unsigned
// requests.
func TestDistributedCompatibleUnsigned(t *testing.T) {
	e := newDEnv(t)
	e.group = func(c *cluster.Config) { c.Protocol = cluster.Compatible }
	h1 := e.start("w1", newFakeInstances(), true)
	h2 := e.start("w2", newFakeInstances(), true)
	names := []string{"a", "b", "c", "d"}
	for _, n := range names {
		createRetrying(t, h2, n)
	}
	owners := map[string]int{}
	for _, n := range names {
		dStates(t, h1, n, "RUNNING:RUNNING,RUNNING")
		st, _ := h1.ConnectorStatus(ctxT(t), n)
		owners[st.Connector.WorkerID]++
	}
	if owners["w1"] == 0 || owners["w2"] == 0 {
		t.Fatalf("connector instances per worker %v", owners)
	}
	for _, name := range []string{"w1", "w2"} {
		if code, msg := postTasks(t, e.urls[name], "missing", "[]", nil); code != 404 || msg != "Connector missing not found" {
			t.Errorf("%s unsigned, missing connector: %d %q", name, code, msg)
		}
	}
	if code, msg := postTasks(t, e.urls["w2"], "a", `[{"n":"0"}]`, nil); code != 204 {
		t.Fatalf("unsigned: %d %q", code, msg)
	}
	dWait(t, "the posted task config", func() bool {
		tcs, _ := h1.TaskConfigs(context.Background(), "a")
		return len(tcs) == 1 && tcs[0].Config["n"] == "0"
	})
	if keys := e.sessionKeys(); len(keys) != 0 {
		t.Fatalf("session keys written under compatible: %v", keys)
	}
}

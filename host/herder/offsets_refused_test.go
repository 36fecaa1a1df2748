package herder_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/rest"
	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// refusingInstances are fake instances whose connector classes' AlterOffsets
// hook fails with err (none: the fake's answer).
type refusingInstances struct {
	*fakeInstances
	mu  sync.Mutex
	err error
	// asked counts the hook's calls.
	asked int
}

func (r *refusingInstances) AlterOffsets(ctx context.Context, class herder.Class, cfg map[string]string, offsets []herder.ConnectorOffset) (bool, error) {
	r.mu.Lock()
	err := r.err
	r.asked++
	r.mu.Unlock()
	if err != nil {
		return false, err
	}
	return r.fakeInstances.AlterOffsets(ctx, class, cfg, offsets)
}

func (r *refusingInstances) refuse(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

func (r *refusingInstances) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked
}

// refusal is one way the hook fails and what the REST API answers to it,
// for a connector named c of type typ.
type refusal struct {
	name string
	err  error
	want func(c, typ string) string
}

// refusals are the hook's failures. Kafka Connect answers every exception
// alterOffsets throws with 500 through its generic exception mapper: a
// ConnectException (what a plugin's own refusal is) with its own message,
// UnsupportedOperationException with its "doesn't support" text, anything
// else wrapped as "Failed to modify offsets for <type> connector <c>"; a
// call past its deadline is its timer's "Timed out while calling ..." text.
var refusals = []refusal{
	{"plugin veto of invalid offsets", fmt.Errorf("alter offsets: %w", &wire.Error{Kind: wire.KindInvalid, Message: "position must be a number"}),
		func(string, string) string { return "position must be a number" }},
	{"plugin refusal", &wire.Error{Kind: wire.KindFatal, Message: "position 7 is past the end of /tmp/in.txt"},
		func(string, string) string { return "position 7 is past the end of /tmp/in.txt" }},
	{"unsupported", &wire.Error{Kind: wire.KindUnsupported, Message: "not supported"},
		func(c, _ string) string {
			return "Failed to modify offsets for connector " + c + " because it doesn't support external modification of offsets"
		}},
	{"crash", &wire.Error{Kind: wire.KindCrashed, Message: "plugin exited: signal: killed"},
		func(c, typ string) string { return "Failed to modify offsets for " + typ + " connector " + c }},
	{"launch failure", errors.New("launch plugin: fork/exec /plugins/x: no such file or directory"),
		func(c, typ string) string { return "Failed to modify offsets for " + typ + " connector " + c }},
	{"timeout", &wire.Error{Kind: wire.KindTimeout, Message: "plugin did not answer"},
		func(c, typ string) string {
			return "Timed out while calling the 'alterOffsets' method for " + typ + " connector " + c
		}},
}

// restCall sends a request to a REST API, again while it answers 409 (a
// rebalance pending); it answers the status and the error message of an
// error body ("" for a success).
func restCall(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	deadline := time.Now().Add(dPatience)
	for {
		status, msg := restCallOnce(t, method, url, body)
		// 409: a rebalance the change asked for has not completed yet.
		if status != http.StatusConflict || time.Now().After(deadline) {
			return status, msg
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func restCallOnce(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode < 300 {
		return resp.StatusCode, ""
	}
	var eb struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(b, &eb); err != nil || eb.Code != resp.StatusCode {
		t.Fatalf("%s %s: error body %s (%v)", method, url, b, err)
	}
	return resp.StatusCode, eb.Message
}

const srcAlter = `{"offsets":[{"partition":{"filename":"/tmp/in.txt"},"offset":{"position":7}}]}`

// checkRefusals makes the hook fail each way and checks, through the REST
// API at base, that PATCH and DELETE of the offsets of connector c answer
// Kafka Connect's status and message, that the hook was asked, and that
// the offsets stay as they were.
func checkRefusals(t *testing.T, r *refusingInstances, bases []string, c, typ, alter, offsetsBefore string) {
	t.Helper()
	for _, rf := range refusals {
		r.refuse(rf.err)
		want := rf.want(c, typ)
		for _, base := range bases {
			for _, req := range []struct{ method, body string }{{"PATCH", alter}, {"DELETE", ""}} {
				before := r.calls()
				status, msg := restCall(t, req.method, base+"/connectors/"+c+"/offsets", req.body)
				if status != http.StatusInternalServerError || msg != want {
					t.Fatalf("%s: %s offsets of %s via %s: %d %q, want 500 %q", rf.name, req.method, c, base, status, msg, want)
				}
				if n := r.calls() - before; n != 1 {
					t.Fatalf("%s: %s offsets of %s: hook asked %d times, want 1", rf.name, req.method, c, n)
				}
			}
		}
	}
	r.refuse(nil)
	for _, base := range bases {
		resp, err := http.Get(base + "/connectors/" + c + "/offsets")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got, want any
		_ = json.Unmarshal(b, &got)
		if err := json.Unmarshal([]byte(offsetsBefore), &want); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("offsets of %s after the refusals: %d %s, want %s", c, resp.StatusCode, b, offsetsBefore)
		}
	}
	// Without a refusal the same requests succeed.
	if status, msg := restCall(t, "PATCH", bases[0]+"/connectors/"+c+"/offsets", alter); status != http.StatusOK {
		t.Fatalf("alter offsets of %s accepted by the hook: %d %q", c, status, msg)
	}
}

// A standalone worker answers an offsets change its connector's hook
// refuses or fails as Kafka Connect does: 500, not 400.
func TestStandaloneOffsetsRefusedByConnector(t *testing.T) {
	var r *refusingInstances
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) {
		r = &refusingInstances{fakeInstances: o.Instances.(*fakeInstances)}
		o.Instances = r
	})
	ctx := ctxT(t)
	if _, _, err := f.h.PutConnectorConfig(ctx, "src", srcConfig(), false, herder.TargetStopped); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.h.PutConnectorConfig(ctx, "snk", map[string]string{"connector.class": sinkClass, "topics": "t"}, false, herder.TargetStopped); err != nil {
		t.Fatal(err)
	}
	srv, err := rest.New(f.h, nil, rest.Options{AdminListeners: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)

	checkRefusals(t, r, []string{hs.URL}, "src", "source", srcAlter, `{"offsets":[]}`)
	f.groups.mu.Lock()
	f.groups.offsets["connect-snk"] = map[string]map[int32]int64{"t": {0: 3}}
	f.groups.mu.Unlock()
	checkRefusals(t, r, []string{hs.URL}, "snk", "sink",
		`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{"kafka_offset":5}}]}`,
		`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{"kafka_offset":3}}]}`)
}

// Distributed workers answer the same, on the leader and through a
// follower, which forwards the request and the leader's answer.
func TestDistributedOffsetsRefusedByConnector(t *testing.T) {
	e := newDEnv(t)
	var r *refusingInstances
	e.wrap = func(in *fakeInstances) herder.Instances {
		// One hook for both workers: the leader asks it, whichever it is.
		if r == nil {
			r = &refusingInstances{fakeInstances: in}
		}
		return r
	}
	h1 := e.start("w1", newFakeInstances(), true)
	e.start("w2", newFakeInstances(), true)
	dWait(t, "the connector created", func() bool {
		_, _, err := h1.PutConnectorConfig(context.Background(), "src", srcConfig(), false, herder.TargetStopped)
		if err != nil && !errors.Is(err, herder.ErrConflict) {
			t.Fatalf("create: %v", err)
		}
		return err == nil
	})
	checkRefusals(t, r, []string{e.urls["w1"], e.urls["w2"]}, "src", "source", srcAlter, `{"offsets":[]}`)
}

package herder_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/rest"
)

// lostRESTCall is one REST call's status, error message and duration.
func lostRESTCall(t *testing.T, method, url string, body any) (int, string, time.Duration) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &e)
	return resp.StatusCode, e.Message, took
}

// A worker that lost its membership (the group coordinator stopped
// answering) knows no leader. As Kafka Connect's herder, busy rejoining, a
// request for the leader waits for the group: at the REST request timeout
// it answers 500 naming the stage "ensuring membership in the cluster",
// not 409 at once; one still waiting when the worker is back in the group
// is served.
func TestDistributedLostMembershipWaitsForTheGroup(t *testing.T) {
	const timeout = time.Second
	e := newDEnv(t)
	in := newFakeInstances()
	h := e.start("w1", in, false)
	srv, err := rest.New(h, nil, rest.Options{AdminListeners: []string{}, RequestTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	if _, _, err := h.PutConnectorConfig(ctxT(t), "src", srcConfig(), false, herder.TargetStarted); err != nil {
		t.Fatal(err)
	}
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")

	// The coordinator stops answering the group (the config and status
	// topics still work): the member gives up after its session and the
	// herder stops the connector.
	var cut atomic.Bool
	cut.Store(true)
	for _, k := range []kmsg.Key{kmsg.Heartbeat, kmsg.JoinGroup, kmsg.SyncGroup} {
		e.c.ControlKey(int16(k), func(kmsg.Request) (kmsg.Response, error, bool) {
			e.c.KeepControl()
			if !cut.Load() {
				return nil, nil, false
			}
			return nil, errors.New("coordinator unreachable"), true
		})
	}
	dWait(t, "the connector stopped on the loss of the membership", func() bool { return in.count(in.stops, "src") > 0 })

	stage := regexp.MustCompile(`^Request timed out\. The worker is currently ensuring membership in the cluster, which began at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\.$`)
	for _, c := range []struct{ what, path string }{
		{"create a connector", "/connectors"},
		{"restart a task", "/connectors/src/tasks/0/restart"},
	} {
		var body any = map[string]any{"name": "other", "config": srcConfig()}
		if c.path != "/connectors" {
			body = nil
		}
		code, msg, took := lostRESTCall(t, http.MethodPost, hs.URL+c.path, body)
		if code != http.StatusInternalServerError || !stage.MatchString(msg) || took < timeout || took > timeout+time.Second {
			t.Fatalf("%s with the membership lost: %d %q after %v; want 500 %q at the %v request timeout",
				c.what, code, msg, took, stage, timeout)
		}
	}

	// A creation waiting when the group answers again is served.
	type result struct {
		created bool
		err     error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), dPatience)
	defer cancel()
	go func() {
		_, created, err := h.PutConnectorConfig(ctx, "other", srcConfig(), false, herder.TargetStarted)
		done <- result{created, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("creation with the membership lost returned at once: created %v, %v", r.created, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	cut.Store(false)
	r := <-done
	if r.err != nil || !r.created {
		t.Fatalf("creation once the worker is back in the group: created %v, %v", r.created, r.err)
	}
	dStates(t, h, "src", "RUNNING:RUNNING,RUNNING")
	dStates(t, h, "other", "RUNNING:RUNNING,RUNNING")
	if s := h.Stage(); regexp.MustCompile(`currently ensuring membership`).MatchString(s) {
		t.Fatalf("stage once back in the group: %q", s)
	}
}

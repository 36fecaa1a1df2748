package rest

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/rest/resttest"
)

var stageMessage = regexp.MustCompile(`^Request timed out\. The worker is currently performing multi-property validation for the connector, which began at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\.$`)

// A connector whose validation hangs answers 500 with the stage at the
// request timeout, while other requests, including creating another
// connector, are answered meanwhile. Two variants: a herder that gives up
// when its context ends, and one that ignores its context entirely.
func TestHungValidationDoesNotWedgeTheAPI(t *testing.T) {
	for _, honoursCtx := range []bool{true, false} {
		name := map[bool]string{true: "herder honours ctx", false: "herder ignores ctx"}[honoursCtx]
		t.Run(name, func(t *testing.T) {
			const timeout = 500 * time.Millisecond
			h := resttest.New()
			entered := make(chan struct{})
			release := make(chan struct{})
			var once sync.Once
			h.Before = func(ctx context.Context, method, connector string) error {
				if method != "ValidateConfig" || connector != "slow" {
					return nil
				}
				once.Do(func() { close(entered) })
				if honoursCtx {
					<-ctx.Done()
					return ctx.Err()
				}
				<-release
				return nil
			}
			e := newEnvWith(t, h, Options{RequestTimeout: timeout})
			// Registered after newEnvWith's cleanup, so it runs first:
			// Shutdown then waits for the released call.
			t.Cleanup(func() { close(release) })

			type answer struct {
				r       reply
				elapsed time.Duration
			}
			slow := make(chan answer, 1)
			start := time.Now()
			go func() {
				r := doURL(t, http.DefaultClient, "POST", e.url+"/connectors", `{"name":"slow","config":`+sourceConfig+`}`, nil)
				slow <- answer{r, time.Since(start)}
			}()
			<-entered

			// The API answers while "slow" hangs.
			e.create("fast", sinkConfig)
			e.do("GET", "/connectors/fast/status", "").expect(t, 200, "")
			e.do("GET", "/connectors", "").expect(t, 200, `["fast"]`)
			select {
			case a := <-slow:
				t.Fatalf("the hung create answered before its timeout: %d %s", a.r.status, a.r.body)
			default:
			}

			a := <-slow
			a.r.expectError(t, 500, "")
			if msg := a.r.message(t); !stageMessage.MatchString(msg) {
				t.Fatalf("timeout message %q", msg)
			}
			if a.elapsed < timeout || a.elapsed > timeout+3*time.Second {
				t.Fatalf("answered after %v, timeout %v", a.elapsed, timeout)
			}
			t.Logf("hung create answered after %v (timeout %v)", a.elapsed, timeout)
			e.do("GET", "/connectors", "").expect(t, 200, `["fast"]`)
		})
	}
}

// Without a StageReporter the message is Kafka's bare one.
func TestTimeoutWithoutStage(t *testing.T) {
	h := resttest.New()
	h.Before = func(ctx context.Context, method, _ string) error {
		if method == "Connectors" {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	srv, err := New(noStage{h}, nil, Options{RequestTimeout: 50 * time.Millisecond, AdminListeners: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	rec := serve(srv.Handler(), "GET", "/connectors", "")
	if rec.Code != 500 || !jsonEqual(rec.Body.Bytes(), []byte(`{"error_code":500,"message":"Request timed out"}`)) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// noStage hides the fake's Stage method.
type noStage struct{ *resttest.Herder }

func (noStage) Stage() {}

func TestHealthTimeout(t *testing.T) {
	h := resttest.New()
	h.Before = func(ctx context.Context, method, _ string) error {
		if method == "Health" {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	e := newEnvWith(t, h, Options{HealthTimeout: 50 * time.Millisecond})
	e.do("GET", "/health", "").expect(t, 500, `{"status":"unhealthy","message":"Worker was unable to handle this request and may be unable to handle other requests."}`)
}

// Shutdown cancels herder calls still in flight and waits for them.
func TestShutdownCancelsCalls(t *testing.T) {
	h := resttest.New()
	entered := make(chan struct{})
	finished := make(chan struct{})
	h.Before = func(ctx context.Context, method, _ string) error {
		if method != "Plugins" {
			return nil
		}
		close(entered)
		<-ctx.Done()
		close(finished)
		return ctx.Err()
	}
	reg := mustRegistry(t)
	srv, err := New(h, reg, Options{Listeners: []string{"http://127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	go func() {
		resp, err := http.Get(srv.Addrs()[0] + "/connector-plugins")
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = srv.Shutdown(ctx)
	select {
	case <-finished:
	default:
		t.Fatal("Shutdown returned while a herder call still ran")
	}
	t.Logf("shutdown with a call in flight: %v", err)
	if _, err := http.Get(srv.Addrs()[0] + "/"); err == nil {
		t.Fatal("listener still accepts after Shutdown")
	}
	rec := serve(srv.Handler(), "GET", "/connectors", "")
	if rec.Code != http.StatusServiceUnavailable || !jsonEqual(rec.Body.Bytes(), []byte(`{"error_code":503,"message":"The worker is shutting down."}`)) {
		t.Fatalf("a request after Shutdown: %d %s", rec.Code, rec.Body)
	}
}

// The herder's context carries the request deadline, and contexts derived
// from it end with DeadlineExceeded at the timeout.
func TestCallContext(t *testing.T) {
	h := resttest.New()
	type seen struct {
		deadline time.Duration
		err      error
	}
	got := make(chan seen, 1)
	h.Before = func(ctx context.Context, method, _ string) error {
		if method != "Plugins" {
			return nil
		}
		d, _ := ctx.Deadline()
		child, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		<-child.Done()
		got <- seen{time.Until(d), child.Err()}
		return child.Err()
	}
	srv, err := New(h, nil, Options{RequestTimeout: 100 * time.Millisecond, AdminListeners: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	rec := serve(srv.Handler(), "GET", "/connector-plugins", "")
	s := <-got
	if rec.Code != 500 || !errors.Is(s.err, context.DeadlineExceeded) || s.deadline > 0 || s.deadline < -time.Second {
		t.Fatalf("answer %d; herder saw deadline %v from now and %v", rec.Code, s.deadline, s.err)
	}
}

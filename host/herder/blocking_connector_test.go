package herder_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/rest"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// Ports of Kafka Connect's BlockingConnectorTest: a connector or task that
// blocks in validate, start or stop holds up only the requests about it;
// those answer 500 with the stage at the REST request timeout, and a
// second, well-behaved connector is created and runs meanwhile.

// Where a blocking connector blocks: the value of its "block" setting, as
// Kafka's test names the methods.
const (
	blockKey       = "block"
	blockValidate  = "Connector::validate"
	blockConnStart = "Connector::start"
	blockConnStop  = "Connector::stop"
	blockTaskStart = "Task::start"
	blockTaskStop  = "Task::stop"
)

// blockingInstances wraps the fakes: a connector whose config names a
// method in "block" blocks there until release is closed or its context
// ends (a real plugin is killed at its call deadline). blocked counts the
// calls that entered a block, by method.
type blockingInstances struct {
	*fakeInstances
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	blocked map[string]int
	entered chan string
}

func newBlockingInstances(in *fakeInstances) *blockingInstances {
	return &blockingInstances{fakeInstances: in, release: make(chan struct{}), blocked: map[string]int{}, entered: make(chan string, 64)}
}

// unblock releases every block, now and later.
func (b *blockingInstances) unblock() { b.once.Do(func() { close(b.release) }) }

// block blocks if cfg asks to block in method.
func (b *blockingInstances) block(ctx context.Context, cfg map[string]string, method string) error {
	if cfg[blockKey] != method {
		return nil
	}
	b.mu.Lock()
	b.blocked[method]++
	b.mu.Unlock()
	b.entered <- method
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *blockingInstances) count(method string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.blocked[method]
}

// waitBlocked waits until some call entered the block of method.
func (b *blockingInstances) waitBlocked(t *testing.T, method string) {
	t.Helper()
	deadline := time.After(dPatience)
	for {
		select {
		case m := <-b.entered:
			if m == method {
				return
			}
		case <-deadline:
			t.Fatalf("nothing blocked in %s", method)
		}
	}
}

func (b *blockingInstances) Validate(ctx context.Context, class herder.Class, cfg map[string]string) ([]*pluginv1.ConfigValue, error) {
	if err := b.block(ctx, cfg, blockValidate); err != nil {
		return nil, err
	}
	return b.fakeInstances.Validate(ctx, class, cfg)
}

func (b *blockingInstances) StartConnector(ctx context.Context, name string, class herder.Class, cfg map[string]string, cb herder.ConnectorCallbacks) (herder.ConnectorInstance, error) {
	if err := b.block(ctx, cfg, blockConnStart); err != nil {
		return nil, err
	}
	inst, err := b.fakeInstances.StartConnector(ctx, name, class, cfg, cb)
	if err != nil || cfg[blockKey] != blockConnStop {
		return inst, err
	}
	return &blockingConn{fakeConn: inst.(*fakeConn), b: b}, nil
}

func (b *blockingInstances) NewTask(ctx context.Context, spec herder.TaskSpec, l herder.TaskListener) (herder.TaskRunner, error) {
	r, err := b.fakeInstances.NewTask(ctx, spec, l)
	if err != nil {
		return nil, err
	}
	switch spec.ConnectorConfig[blockKey] {
	case blockTaskStart, blockTaskStop:
		return &blockingTask{fakeTask: r.(*fakeTask), b: b, cfg: spec.ConnectorConfig, stopped: make(chan struct{})}, nil
	}
	return r, nil
}

// blockingConn blocks in Stop.
type blockingConn struct {
	*fakeConn
	b *blockingInstances
}

func (c *blockingConn) Stop(ctx context.Context) error {
	if err := c.b.block(ctx, c.cfg, blockConnStop); err != nil {
		c.once.Do(func() { close(c.done) }) // the process is killed
		return err
	}
	return c.fakeConn.Stop(ctx)
}

// blockingTask blocks before it runs (Task::start) or after it was asked
// to stop (Task::stop); cancelling its context ends it, as killing the
// plugin does.
type blockingTask struct {
	*fakeTask
	b       *blockingInstances
	cfg     map[string]string
	stopped chan struct{}
	once    sync.Once
}

func (t *blockingTask) Stop() { t.once.Do(func() { close(t.stopped) }) }

func (t *blockingTask) Run(ctx context.Context) error {
	if err := t.b.block(ctx, t.cfg, blockTaskStart); err != nil {
		return err
	}
	t.l.OnRunning()
	select {
	case <-t.stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := t.b.block(ctx, t.cfg, blockTaskStop); err != nil {
		return err
	}
	t.l.OnStopped()
	return nil
}

// restClient talks to a herder through host/rest with a short request
// timeout, as Kafka's test shortens its own.
type restClient struct {
	t       *testing.T
	url     string
	timeout time.Duration
}

// blockRESTTimeout is the short request timeout of the requests that must
// time out; stopTimeout that of the requests that must outlast the stop
// timeouts (Kafka's test uses twice the graceful shutdown timeout).
const (
	blockRESTTimeout = 500 * time.Millisecond
	stopRESTTimeout  = 10 * time.Second
)

func newRESTClient(t *testing.T, h herder.Herder, timeout time.Duration) *restClient {
	t.Helper()
	srv, err := rest.New(h, nil, rest.Options{RequestTimeout: timeout, AdminListeners: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &restClient{t: t, url: hs.URL, timeout: timeout}
}

type restAnswer struct {
	status  int
	body    string
	elapsed time.Duration
}

func (c *restClient) do(method, path string, body any) restAnswer {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return restAnswer{status: resp.StatusCode, body: string(b), elapsed: time.Since(start)}
}

func (c *restClient) must(method, path string, body any, status int) restAnswer {
	c.t.Helper()
	a := c.do(method, path, body)
	if a.status != status {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, a.status, a.body, status)
	}
	return a
}

// timedOut checks a, the answer to a request that must time out: 500,
// after the request timeout, with Kafka's "Request timed out. The worker
// is currently <stage>, which began at <instant>." message.
func timedOut(t *testing.T, what string, a restAnswer, stage string) {
	t.Helper()
	timedOutAfter(t, what, a, stage, blockRESTTimeout)
}

// timedOutAfter is timedOut for a request timeout of timeout.
func timedOutAfter(t *testing.T, what string, a restAnswer, stage string, timeout time.Duration) {
	t.Helper()
	var body struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}
	if a.status != 500 || json.Unmarshal([]byte(a.body), &body) != nil || body.Code != 500 {
		t.Fatalf("%s: %d %s, want a 500 error", what, a.status, a.body)
	}
	re := regexp.MustCompile(`^Request timed out\. The worker is currently ` + regexp.QuoteMeta(stage) + `.*, which began at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\.$`)
	if !re.MatchString(body.Message) {
		t.Fatalf("%s: message %q, want the stage %q", what, body.Message, stage)
	}
	if a.elapsed < timeout || a.elapsed > timeout+3*time.Second {
		t.Fatalf("%s: answered after %v, the request timeout is %v", what, a.elapsed, timeout)
	}
}

func blockingConfig(block string) map[string]string {
	return map[string]string{"connector.class": "CounterSource", "topic": "t1", "tasks.max": "1", blockKey: block}
}

// normalConnector creates "normal-connector" through c and waits until it
// and its task run.
func normalConnector(t *testing.T, c *restClient, h herder.Herder, wait func(want string)) {
	t.Helper()
	c.must("POST", "/connectors", map[string]any{"name": "normal-connector", "config": srcConfig("tasks.max", "1")}, 201)
	wait("RUNNING:RUNNING")
}

// standaloneBlocking is a standalone herder on blocking instances with its
// REST API.
func standaloneBlocking(t *testing.T) (*fixture, *blockingInstances, *restClient) {
	t.Helper()
	var b *blockingInstances
	f := newFixtureWith(t, func(o *herder.StandaloneOptions) {
		b = newBlockingInstances(o.Instances.(*fakeInstances))
		o.Instances = b
		o.ConnectorStopTimeout = time.Second
	})
	// Runs before the fixture's Close: nothing stays blocked.
	t.Cleanup(b.unblock)
	return f, b, newRESTClient(t, f.h, blockRESTTimeout)
}

func TestBlockingConnectorStandalone(t *testing.T) {
	t.Run("BlockInConnectorValidate", func(t *testing.T) {
		f, b, c := standaloneBlocking(t)
		a := c.do("POST", "/connectors", map[string]any{"name": "blocking-connector", "config": blockingConfig(blockValidate)})
		timedOut(t, "create a connector blocked in validate", a, "performing multi-property validation for the connector")
		if b.count(blockValidate) != 1 {
			t.Fatalf("%d validations blocked, want 1", b.count(blockValidate))
		}
		normalConnector(t, c, f.h, func(want string) { waitStates(t, f.h, "normal-connector", want) })
		c.must("GET", "/connectors/blocking-connector", nil, 404)
	})

	t.Run("BlockInConnectorStart", func(t *testing.T) {
		f, b, c := standaloneBlocking(t)
		// The standalone create waits for the start, as Kafka's standalone
		// herder does: it times out with the start's stage.
		a := c.do("POST", "/connectors", map[string]any{"name": "blocking-connector", "config": blockingConfig(blockConnStart)})
		timedOut(t, "create a connector blocked in start", a, "starting the connector blocking-connector")
		b.waitBlocked(t, blockConnStart)
		normalConnector(t, c, f.h, func(want string) { waitStates(t, f.h, "normal-connector", want) })
		a = c.do("POST", "/connectors/blocking-connector/restart", nil)
		timedOut(t, "restart a connector blocked in start", a, "starting the connector blocking-connector")
		// The blocked connector's status still answers.
		c.must("GET", "/connectors/blocking-connector/status", nil, 200)
		if n := f.in.count(f.in.starts, "blocking-connector"); n != 0 {
			t.Fatalf("blocked connector completed %d starts", n)
		}
	})

	t.Run("BlockInConnectorStop", func(t *testing.T) {
		f, b, c := standaloneBlocking(t)
		c.must("POST", "/connectors", map[string]any{"name": "blocking-connector", "config": blockingConfig(blockConnStop)}, 201)
		waitStates(t, f.h, "blocking-connector", "RUNNING:RUNNING")
		// The stop is cut at the connector stop timeout (1 s here): the
		// delete answers then, well within the default request timeout.
		a := newRESTClient(t, f.h, stopRESTTimeout).must("DELETE", "/connectors/blocking-connector", nil, 204)
		if b.count(blockConnStop) != 1 {
			t.Fatalf("%d stops blocked, want 1", b.count(blockConnStop))
		}
		t.Logf("delete of a connector blocked in stop answered after %v", a.elapsed)
		normalConnector(t, c, f.h, func(want string) { waitStates(t, f.h, "normal-connector", want) })
		c.must("GET", "/connectors/blocking-connector", nil, 404)
	})

	for _, block := range []string{blockTaskStart, blockTaskStop} {
		t.Run("BlockInTask"+strings.TrimPrefix(block, "Task::"), func(t *testing.T) {
			f, b, c := standaloneBlocking(t)
			c.must("POST", "/connectors", map[string]any{"name": "blocking-connector", "config": blockingConfig(block)}, 201)
			if block == blockTaskStart {
				b.waitBlocked(t, blockTaskStart)
			} else {
				waitStates(t, f.h, "blocking-connector", "RUNNING:RUNNING")
			}
			normalConnector(t, c, f.h, func(want string) { waitStates(t, f.h, "normal-connector", want) })
			// The delete drains the blocked task for task.shutdown.graceful.timeout.ms
			// (1 s here), then cancels it.
			a := newRESTClient(t, f.h, stopRESTTimeout).must("DELETE", "/connectors/blocking-connector", nil, 204)
			if block == blockTaskStop && b.count(blockTaskStop) != 1 {
				t.Fatalf("%d task stops blocked, want 1", b.count(blockTaskStop))
			}
			if a.elapsed > 6*time.Second { // shutdown timeout 1 s, drain margin 3 s
				t.Fatalf("delete took %v", a.elapsed)
			}
			waitStates(t, f.h, "normal-connector", "RUNNING:RUNNING")
			c.must("GET", "/connectors/blocking-connector", nil, 404)
		})
	}
}

// distributedBlocking is a one-worker distributed cluster on blocking
// instances, with its REST API.
type distributedBlocking struct {
	e  *dEnv
	bs []*blockingInstances // one per worker started, in order
}

func newDistributedBlocking(t *testing.T) *distributedBlocking {
	d := &distributedBlocking{e: newDEnv(t)}
	d.e.wrap = func(in *fakeInstances) herder.Instances {
		b := newBlockingInstances(in)
		d.bs = append(d.bs, b)
		return b
	}
	return d
}

func (d *distributedBlocking) start(t *testing.T, name string) (*herder.Distributed, *blockingInstances, *restClient) {
	t.Helper()
	h := d.e.start(name, newFakeInstances(), false)
	b := d.bs[len(d.bs)-1]
	t.Cleanup(b.unblock) // LIFO: runs before the herder's Close
	return h, b, newRESTClient(t, h, blockRESTTimeout)
}

func TestBlockingConnectorDistributed(t *testing.T) {
	t.Run("BlockInConnectorValidate", func(t *testing.T) {
		h, b, c := newDistributedBlocking(t).start(t, "w1")
		a := c.do("POST", "/connectors", map[string]any{"name": "blocking-connector", "config": blockingConfig(blockValidate)})
		timedOut(t, "create a connector blocked in validate", a, "performing multi-property validation for the connector")
		if b.count(blockValidate) != 1 {
			t.Fatalf("%d validations blocked, want 1", b.count(blockValidate))
		}
		normalConnector(t, c, h, func(want string) { dStates(t, h, "normal-connector", want) })
		c.must("GET", "/connectors/blocking-connector", nil, 404)
	})

	t.Run("BlockInConnectorStart", func(t *testing.T) {
		h, b, c := newDistributedBlocking(t).start(t, "w1")
		// The create answers once the config is written, as Kafka's
		// distributed herder does; the start then blocks.
		c.must("POST", "/connectors", map[string]any{"name": "blocking-connector", "config": blockingConfig(blockConnStart)}, 201)
		b.waitBlocked(t, blockConnStart)
		normalConnector(t, c, h, func(want string) { dStates(t, h, "normal-connector", want) })
		// The restart, asked of the worker that runs the connector,
		// abandons the blocked start and waits for a fresh one, which
		// blocks again: the request times out in "starting the connector".
		a := c.do("POST", "/connectors/blocking-connector/restart", nil)
		timedOut(t, "restart a connector blocked in start", a, "starting the connector blocking-connector")
		b.waitBlocked(t, blockConnStart)
		if n := b.count(blockConnStart); n != 2 {
			t.Fatalf("%d starts blocked, want 2", n)
		}
		if s := h.Stage(); !strings.HasPrefix(s, "The worker is currently starting the connector blocking-connector, which began at ") {
			t.Fatalf("stage %q", s)
		}
		dStates(t, h, "blocking-connector", "RESTARTING:")
		dStates(t, h, "normal-connector", "RUNNING:RUNNING")
		if n := b.count(blockConnStart); n != 2 {
			t.Fatalf("%d starts blocked, want 2", n)
		}
	})

	t.Run("BlockInConnectorStop", func(t *testing.T) {
		h, b, c := newDistributedBlocking(t).start(t, "w1")
		c.must("POST", "/connectors", map[string]any{"name": "blocking-connector", "config": blockingConfig(blockConnStop)}, 201)
		dStates(t, h, "blocking-connector", "RUNNING:RUNNING")
		c.must("DELETE", "/connectors/blocking-connector", nil, 204)
		b.waitBlocked(t, blockConnStop)
		normalConnector(t, c, h, func(want string) { dStates(t, h, "normal-connector", want) })
		c.must("GET", "/connectors/blocking-connector", nil, 404)
	})

	for _, block := range []string{blockTaskStart, blockTaskStop} {
		t.Run("BlockInTask"+strings.TrimPrefix(block, "Task::"), func(t *testing.T) {
			h, b, c := newDistributedBlocking(t).start(t, "w1")
			c.must("POST", "/connectors", map[string]any{"name": "blocking-connector", "config": blockingConfig(block)}, 201)
			if block == blockTaskStart {
				b.waitBlocked(t, blockTaskStart)
			} else {
				dStates(t, h, "blocking-connector", "RUNNING:RUNNING")
				c.must("DELETE", "/connectors/blocking-connector", nil, 204)
				b.waitBlocked(t, blockTaskStop)
			}
			normalConnector(t, c, h, func(want string) { dStates(t, h, "normal-connector", want) })
		})
	}

	// The only worker leaves while the connector blocks in start, and
	// comes back: a fresh instance is started (and blocks again), and the
	// normal connector runs.
	t.Run("WorkerRestartWithBlockInConnectorStart", func(t *testing.T) {
		d := newDistributedBlocking(t)
		h, b, c := d.start(t, "w1")
		c.must("POST", "/connectors", map[string]any{"name": "blocking-connector", "config": blockingConfig(blockConnStart)}, 201)
		b.waitBlocked(t, blockConnStart)
		c.must("POST", "/connectors", map[string]any{"name": "normal-connector", "config": srcConfig("tasks.max", "1")}, 201)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		if err := h.Close(ctx); err != nil {
			t.Fatalf("close the worker while a connector blocks in start: %v", err)
		}
		t.Logf("worker closed after %v", time.Since(start))
		h2, b2, _ := d.start(t, "w1")
		b2.waitBlocked(t, blockConnStart)
		dStates(t, h2, "normal-connector", "RUNNING:RUNNING")
	})

	t.Run("WorkerRestartWithBlockInConnectorStop", func(t *testing.T) {
		d := newDistributedBlocking(t)
		h, b, c := d.start(t, "w1")
		c.must("POST", "/connectors", map[string]any{"name": "blocking-connector", "config": blockingConfig(blockConnStop)}, 201)
		normalConnector(t, c, h, func(want string) { dStates(t, h, "normal-connector", want) })
		dStates(t, h, "blocking-connector", "RUNNING:RUNNING")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Fatalf("close the worker while a connector blocks in stop: %v", err)
		}
		if b.count(blockConnStop) != 1 {
			t.Fatalf("%d stops blocked, want 1", b.count(blockConnStop))
		}
		h2, _, _ := d.start(t, "w1")
		dStates(t, h2, "blocking-connector", "RUNNING:RUNNING")
		dStates(t, h2, "normal-connector", "RUNNING:RUNNING")
	})
}

// The standalone worker stops while a connector blocks in start (Kafka's
// testWorkerRestartWithBlockInConnectorStart, for the part a standalone
// worker has): Close returns without waiting for the plugin.
func TestBlockingConnectorStandaloneCloseWhileBlocked(t *testing.T) {
	f, b, c := standaloneBlocking(t)
	a := c.do("POST", "/connectors", map[string]any{"name": "blocking-connector", "config": blockingConfig(blockConnStart)})
	timedOut(t, "create a connector blocked in start", a, "starting the connector blocking-connector")
	b.waitBlocked(t, blockConnStart)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := f.h.Close(ctx); err != nil {
		t.Fatalf("close while a connector blocks in start: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("close took %v", d)
	}
}

package herder_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/rest"
)

// PUT /admin/loggers/{name}?scope=cluster reaches the distributed herder.
var _ rest.ClusterLoggers = (*herder.Distributed)(nil)

// KIP-976: a cluster-wide level set through any worker is written to the
// config topic and applied by every worker running when it is read, the
// writer too; a worker that starts later does not replay it; a level a
// worker cannot apply is logged, not fatal.
func TestClusterLoggerLevels(t *testing.T) {
	e := newDEnv(t)
	var mu sync.Mutex
	applied := map[string][]string{}
	e.options = func(o *herder.DistributedOptions) {
		name := o.WorkerID
		o.SetLoggerLevel = func(namespace, level string) error {
			mu.Lock()
			defer mu.Unlock()
			applied[name] = append(applied[name], namespace+"="+level)
			if level == "LOUD" {
				return errors.New("invalid log level")
			}
			return nil
		}
	}
	seen := func(worker string, want ...string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Equal(applied[worker], want)
		}
	}
	ctx := ctxT(t)
	w1 := e.start("w1", newFakeInstances(), false)
	w2 := e.start("w2", newFakeInstances(), false)
	// From the worker that is not the leader as well as from the leader.
	for _, w := range []*herder.Distributed{w2, w1} {
		if err := w.SetClusterLoggerLevel(ctx, "org.foo", "DEBUG"); err != nil {
			t.Fatal(err)
		}
	}
	dWait(t, "both workers applied org.foo twice", func() bool {
		return seen("w1", "org.foo=DEBUG", "org.foo=DEBUG")() && seen("w2", "org.foo=DEBUG", "org.foo=DEBUG")()
	})
	w3 := e.start("w3", newFakeInstances(), false)
	if err := w3.SetClusterLoggerLevel(ctx, "org.bar", "LOUD"); err != nil {
		t.Fatal(err)
	}
	if err := w1.SetClusterLoggerLevel(ctx, "org.bar", "TRACE"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"w1", "w2"} {
		dWait(t, w+" applied org.bar", seen(w, "org.foo=DEBUG", "org.foo=DEBUG", "org.bar=LOUD", "org.bar=TRACE"))
	}
	dWait(t, "w3 applied only what was written after it started", seen("w3", "org.bar=LOUD", "org.bar=TRACE"))
	time.Sleep(200 * time.Millisecond)
	if !seen("w3", "org.bar=LOUD", "org.bar=TRACE")() {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("w3 applied %q", applied["w3"])
	}
}

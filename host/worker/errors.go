package worker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-io/sluice/host/convert"
	"github.com/sluice-io/sluice/host/errorhandler"
	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/runtime"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/transforms"
)

// dlqSetupTimeout bounds the creation of a task's dead letter queue
// producer and topic when the task starts.
const dlqSetupTimeout = 30 * time.Second

// transformCatalog is the herder's TransformCatalog: the transforms
// package's classes, and its validation of a chain as a whole
// (herder.TransformValidator).
type transformCatalog struct{ transforms.Catalog }

var (
	_ herder.TransformCatalog   = transformCatalog{}
	_ herder.TransformValidator = transformCatalog{}
)

func (transformCatalog) ValidateConfig(cfg map[string]string) []config.ConfigValue {
	return transforms.ValidateConfig(cfg)
}

// transformPlugins lists the transformations and predicates for
// GET /connector-plugins?connectorsOnly=false.
func transformPlugins() []herder.PluginInfo {
	var out []herder.PluginInfo
	for _, c := range transforms.Classes() {
		out = append(out, herder.PluginInfo{Class: c.Name, Type: c.Type, Version: c.Version})
	}
	return out
}

// transformConfig lists a transformation's or predicate's settings, found
// by class name or alias.
func transformConfig(name string) ([]herder.ConfigKeyInfo, bool) {
	c, ok := transforms.Lookup(name)
	if !ok {
		return nil, false
	}
	out := []herder.ConfigKeyInfo{}
	if c.Config != nil {
		for _, k := range c.Config.Proto().GetKeys() {
			out = append(out, herder.KeyInfo(k))
		}
	}
	return out, true
}

// converterClassName is the full class name of a converter setting's
// value (which may be an alias), as reports name it.
func converterClassName(name string) string {
	for _, c := range convert.Classes() {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c.Name
		}
	}
	return name
}

// errorRunner is a task whose error handling has a dead letter queue to
// prepare before the task runs and a producer to close after.
type errorRunner struct {
	runtime.Task
	op *errorhandler.Operator
	l  herder.TaskListener
}

// Run prepares the dead letter queue (a failure fails the task, as in
// Kafka Connect), runs the task, and closes the queue's producer.
func (r *errorRunner) Run(ctx context.Context) error {
	defer r.op.Close()
	sctx, cancel := context.WithTimeout(ctx, dlqSetupTimeout)
	err := r.op.Start(sctx)
	cancel()
	if err != nil {
		err = fmt.Errorf("task %s: %w", r.ID(), err)
		r.l.OnFailed(err, "")
		return err
	}
	return r.Task.Run(ctx)
}

package configprovider

import (
	"context"
	"fmt"

	"github.com/sluice-io/sluice/host/config"
)

// LoadWorker is config.LoadWorker with the variables of the worker
// properties resolved between reading and validating, as Kafka's
// AbstractConfig resolves them before parsing: a worker whose properties
// cannot be resolved does not start. The returned Worker's Props hold the
// resolved values, config.providers* included, so the worker builds the
// providers of connector configs from them.
func LoadWorker(ctx context.Context, path string, environ []string, standalone bool) (*config.Worker, error) {
	props, err := config.ReadWorkerProps(path, environ)
	if err != nil {
		return nil, err
	}
	resolved, _, err := ResolveWorker(ctx, props)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	w, err := config.ParseWorker(resolved, standalone)
	if err != nil {
		// Validation messages quote values: show the variables as
		// written, not what they resolved to.
		return nil, fmt.Errorf("worker config %s: %s", path, NewMasker(props, resolved).Text(err.Error()))
	}
	return w, nil
}

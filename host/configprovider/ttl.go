package configprovider

import (
	"context"
	"time"
)

// Data is a provider's answer for one path: the values of the keys it has
// and how long they stay valid (Kafka's ConfigData).
type Data struct {
	Values map[string]string
	// TTL is how long the values may be used before they must be read
	// again; 0 (or less) means they do not expire. Kafka honours a TTL of
	// 0 as "expired already"; here it would only restart a connector in a
	// loop, so it counts as none.
	TTL time.Duration
}

// TTLProvider is a Provider whose values may expire (a lease on a
// credential, a token). The resolver asks it through GetWithTTL, once per
// path; Get must answer the same values. None of the built-in providers
// is one: Kafka's File, Directory and EnvVar providers return no TTL.
type TTLProvider interface {
	Provider
	GetWithTTL(ctx context.Context, path string, keys []string) (Data, error)
}

// TTLReporter receives the outcome of a resolution whose values expire:
// the config as given to Resolve (variables intact) and the smallest TTL
// any of its paths returned. It must not block.
type TTLReporter func(cfg map[string]string, ttl time.Duration)

type ttlReporterKey struct{}

// WithTTLReporter returns a context under which Resolve reports expiring
// values to rep. A herder puts it in the context of its own work (the
// starts of connectors and tasks) so that only those resolutions schedule
// a reload; validating a config, or resolving worker properties, does
// not, as in Kafka, where only a transform for a named connector does.
func WithTTLReporter(ctx context.Context, rep TTLReporter) context.Context {
	return context.WithValue(ctx, ttlReporterKey{}, rep)
}

func ttlReporterOf(ctx context.Context) TTLReporter {
	rep, _ := ctx.Value(ttlReporterKey{}).(TTLReporter)
	return rep
}

// get asks p for keys at path, with the TTL when p has one.
func get(ctx context.Context, p Provider, path string, keys []string) (Data, error) {
	if tp, ok := p.(TTLProvider); ok {
		return tp.GetWithTTL(ctx, path, keys)
	}
	vals, err := p.Get(ctx, path, keys)
	return Data{Values: vals}, err
}

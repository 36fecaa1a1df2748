package configprovider

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Worker property names of config providers.
const (
	// KeyProviders is config.providers: the aliases, comma-separated.
	KeyProviders = "config.providers"
	// KeyPrefix starts config.providers.<alias>.class and
	// config.providers.<alias>.param.<name>.
	KeyPrefix = "config.providers."
)

// variable is Kafka's ConfigTransformer pattern: provider, optional path,
// key. RE2's lazy quantifiers pick the same matches as Java's.
var variable = regexp.MustCompile(`\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}`)

// HasVariable reports whether v holds something shaped like a variable,
// whether or not its provider is configured.
func HasVariable(v string) bool { return variable.MatchString(v) }

// Resolver holds the configured providers by alias. The zero value and nil
// resolve nothing.
type Resolver struct {
	providers map[string]Provider
}

// New builds the providers named in props' config.providers. The error
// names the property at fault.
func New(props map[string]string) (*Resolver, error) {
	r := &Resolver{providers: map[string]Provider{}}
	for alias := range strings.SplitSeq(props[KeyProviders], ",") {
		alias = strings.TrimSpace(alias)
		if alias == "" {
			continue
		}
		classKey := KeyPrefix + alias + ".class"
		class, ok := props[classKey]
		if !ok || strings.TrimSpace(class) == "" {
			return nil, fmt.Errorf("config provider %s: %s is not set", alias, classKey)
		}
		paramPrefix := KeyPrefix + alias + ".param."
		params := map[string]string{}
		for k, v := range props {
			if name, ok := strings.CutPrefix(k, paramPrefix); ok {
				params[name] = v
			}
		}
		p, err := NewProvider(class, params)
		if err != nil {
			return nil, fmt.Errorf("config provider %s (%s=%s): %w", alias, classKey, class, err)
		}
		r.providers[alias] = p
	}
	return r, nil
}

// With returns a resolver with p under alias added (for tests and
// embedders with providers of their own).
func (r *Resolver) With(alias string, p Provider) *Resolver {
	out := &Resolver{providers: map[string]Provider{}}
	if r != nil {
		maps.Copy(out.providers, r.providers)
	}
	out.providers[alias] = p
	return out
}

// Aliases lists the configured provider aliases, sorted.
func (r *Resolver) Aliases() []string {
	if r == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(r.providers))
}

// ResolveError is a provider failure during resolution. Its message names
// the config key, the provider alias and the path; never a value.
type ResolveError struct {
	Key, Provider, Path string
	Err                 error
}

func (e *ResolveError) Error() string {
	return fmt.Sprintf("resolve config variable in %s: provider %s, path %q: %v", e.Key, e.Provider, e.Path, e.Err)
}

func (e *ResolveError) Unwrap() error { return e.Err }

type pathRef struct{ provider, path string }

// Resolve returns a copy of cfg with its variables replaced. The input is
// not changed. Variables of unknown providers and keys a provider lacks
// stay as written. When some of the values expire and ctx carries a
// TTLReporter (WithTTLReporter), the reporter gets cfg and the smallest
// TTL before Resolve returns.
func (r *Resolver) Resolve(ctx context.Context, cfg map[string]string) (map[string]string, error) {
	out, ttl, err := r.ResolveTTL(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if ttl > 0 {
		if rep := ttlReporterOf(ctx); rep != nil {
			rep(cfg, ttl)
		}
	}
	return out, nil
}

// ResolveTTL is Resolve that also returns the smallest TTL the providers
// gave for the paths used (0: nothing expires), and reports it to no one.
// Kafka's ConfigTransformer keeps a TTL per path; one restart reads every
// path again, so the earliest is the one that matters.
func (r *Resolver) ResolveTTL(ctx context.Context, cfg map[string]string) (map[string]string, time.Duration, error) {
	out := maps.Clone(cfg)
	if r == nil || len(r.providers) == 0 || len(cfg) == 0 {
		return out, 0, nil
	}
	// Collect, per provider and path, the keys asked for, and which config
	// key first asked (for the error message).
	wanted := map[pathRef][]string{}
	firstKey := map[pathRef]string{}
	keys := slices.Sorted(maps.Keys(cfg))
	for _, k := range keys {
		for _, m := range variable.FindAllStringSubmatch(cfg[k], -1) {
			ref := pathRef{m[1], m[3]}
			if _, ok := r.providers[ref.provider]; !ok {
				continue
			}
			if _, seen := firstKey[ref]; !seen {
				firstKey[ref] = k
			}
			if !slices.Contains(wanted[ref], m[4]) {
				wanted[ref] = append(wanted[ref], m[4])
			}
		}
	}
	if len(wanted) == 0 {
		return out, 0, nil
	}
	data := make(map[pathRef]map[string]string, len(wanted))
	refs := slices.SortedFunc(maps.Keys(wanted), func(a, b pathRef) int {
		return strings.Compare(firstKey[a]+"\x00"+a.provider+"\x00"+a.path, firstKey[b]+"\x00"+b.provider+"\x00"+b.path)
	})
	var ttl time.Duration
	for _, ref := range refs {
		d, err := get(ctx, r.providers[ref.provider], ref.path, wanted[ref])
		if err != nil {
			return nil, 0, &ResolveError{Key: firstKey[ref], Provider: ref.provider, Path: ref.path, Err: err}
		}
		data[ref] = d.Values
		if d.TTL > 0 && (ttl == 0 || d.TTL < ttl) {
			ttl = d.TTL
		}
	}
	for _, k := range keys {
		v := cfg[k]
		if !strings.Contains(v, "${") {
			continue
		}
		out[k] = variable.ReplaceAllStringFunc(v, func(s string) string {
			m := variable.FindStringSubmatch(s)
			if got, ok := data[pathRef{m[1], m[3]}][m[4]]; ok {
				return got
			}
			return s
		})
	}
	return out, ttl, nil
}

// ResolveWorker resolves worker properties with the providers they
// configure themselves, as Kafka's AbstractConfig does before parsing.
func ResolveWorker(ctx context.Context, props map[string]string) (map[string]string, *Resolver, error) {
	r, err := New(props)
	if err != nil {
		return nil, nil, fmt.Errorf("worker config: %w", err)
	}
	out, err := r.Resolve(ctx, props)
	if err != nil {
		return nil, nil, fmt.Errorf("worker config: %w", err)
	}
	return out, r, nil
}

// Unresolve maps resolved values back to the submitted ones: for each key
// whose raw value holds a variable, a present key of cfg gets the raw value
// back. It is Kafka's reverse transform of generated task configs, so the
// secrets a connector copies into its task configs are stored and shown as
// placeholders.
func Unresolve(raw, cfg map[string]string) map[string]string {
	out := maps.Clone(cfg)
	for k, v := range raw {
		if _, ok := out[k]; ok && HasVariable(v) {
			out[k] = v
		}
	}
	return out
}

package herder

import (
	"context"
	"strings"

	"github.com/sluice-io/sluice/host/configprovider"
)

// Config variables (${provider:path:key}) are resolved only on the way
// into a plugin or a task runner: when a connector starts, when a task
// starts (its stored config holds placeholders again, see taskConfig),
// when a config is validated and when a connector is asked about an
// offsets change. Stored configs and REST answers keep them as written.

// resolveSpec resolves a task's connector and task configs.
func resolveSpec(ctx context.Context, r *configprovider.Resolver, spec TaskSpec) (TaskSpec, error) {
	cc, err := r.Resolve(ctx, spec.ConnectorConfig)
	if err != nil {
		return spec, err
	}
	tc, err := r.Resolve(ctx, spec.TaskConfig)
	if err != nil {
		return spec, err
	}
	spec.ConnectorConfig, spec.TaskConfig = cc, tc
	return spec, nil
}

// resolvedOrRaw is cfg resolved, or cfg itself when resolution fails (the
// start that follows reports the failure).
func resolvedOrRaw(ctx context.Context, r *configprovider.Resolver, cfg map[string]string) map[string]string {
	if out, err := r.Resolve(ctx, cfg); err == nil {
		return out
	}
	return cfg
}

// maskResolved puts the submitted value back in place of each resolved one
// in a validation answer, and in its error messages, so a secret never
// reaches the REST client.
func maskResolved(infos *ConfigInfos, raw, resolved map[string]string) {
	for _, ci := range infos.Configs {
		v := ci.Value
		if v == nil {
			continue
		}
		rv, ok := raw[v.Name]
		if !ok || rv == resolved[v.Name] {
			continue
		}
		if v.Value != nil && *v.Value == resolved[v.Name] {
			s := rv
			v.Value = &s
		}
		if secret := resolved[v.Name]; secret != "" {
			for i, e := range v.Errors {
				v.Errors[i] = strings.ReplaceAll(e, secret, rv)
			}
		}
	}
}

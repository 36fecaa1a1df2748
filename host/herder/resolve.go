package herder

import (
	"context"
	"errors"

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

// masker puts the submitted text back in place of resolved values in
// validation answers and errors.
type masker struct{ *configprovider.Masker }

func newMasker(raw, resolved map[string]string) masker {
	return masker{configprovider.NewMasker(raw, resolved)}
}

// infos masks every value, error and recommended value of a validation
// answer.
func (m masker) infos(infos *ConfigInfos) {
	for _, ci := range infos.Configs {
		v := ci.Value
		if v == nil {
			continue
		}
		if v.Value != nil {
			s := m.Text(*v.Value)
			v.Value = &s
		}
		for i, e := range v.Errors {
			v.Errors[i] = m.Text(e)
		}
		for i, r := range v.RecommendedValues {
			v.RecommendedValues[i] = m.Text(r)
		}
	}
}

// err masks an error's text. The result keeps the kinds errors.Is finds in
// err, but not its values (errors.As would find the unmasked message).
func (m masker) err(err error) error {
	if err == nil || m.Empty() {
		return err
	}
	msg := m.Text(err.Error())
	var he *Error
	if errors.As(err, &he) {
		return &Error{Kind: he.Kind, Message: msg}
	}
	return &maskedError{msg: msg, cause: err}
}

type maskedError struct {
	msg   string
	cause error
}

func (e *maskedError) Error() string        { return e.msg }
func (e *maskedError) Is(target error) bool { return errors.Is(e.cause, target) }

package herder

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
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

// minMaskInText is the shortest resolved value replaced inside longer
// text. A shorter one ("1", "on", "abc") occurs by chance in unrelated
// words and numbers, and replacing it there would garble the message while
// hiding next to nothing; such a value is still replaced where it is a
// whole value, error or recommended value on its own.
const minMaskInText = 4

// masker puts the submitted text back in place of resolved values.
type masker struct {
	pairs []maskPair // longest resolved text first
}

type maskPair struct{ resolved, raw string }

// newMasker collects, for every key whose submitted value differs from its
// resolved one, the resolved value and its trimmed form (validation trims
// values and reformats lists, so the trimmed form is what comes back),
// each mapped to the submitted value.
func newMasker(raw, resolved map[string]string) *masker {
	seen := map[string]bool{}
	m := &masker{}
	add := func(res, rv string) {
		if res == "" || res == rv || seen[res] {
			return
		}
		seen[res] = true
		m.pairs = append(m.pairs, maskPair{res, rv})
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		rv, res := raw[k], resolved[k]
		if rv == res {
			continue
		}
		add(res, rv)
		add(strings.TrimSpace(res), rv)
	}
	slices.SortStableFunc(m.pairs, func(a, b maskPair) int { return cmp.Compare(len(b.resolved), len(a.resolved)) })
	return m
}

// text masks s: a whole match of any resolved value first, then every
// occurrence of those at least minMaskInText long, longest first, in one
// pass so a replacement is never itself rewritten.
func (m *masker) text(s string) string {
	if m == nil || len(m.pairs) == 0 || s == "" {
		return s
	}
	for _, p := range m.pairs {
		if s == p.resolved {
			return p.raw
		}
	}
	var args []string
	for _, p := range m.pairs {
		if len(p.resolved) >= minMaskInText {
			args = append(args, p.resolved, p.raw)
		}
	}
	if len(args) == 0 {
		return s
	}
	// strings.Replacer tries its old strings in argument order at each
	// position, so the longest resolved value wins.
	return strings.NewReplacer(args...).Replace(s)
}

// infos masks every value, error and recommended value of a validation
// answer.
func (m *masker) infos(infos *ConfigInfos) {
	for _, ci := range infos.Configs {
		v := ci.Value
		if v == nil {
			continue
		}
		if v.Value != nil {
			s := m.text(*v.Value)
			v.Value = &s
		}
		for i, e := range v.Errors {
			v.Errors[i] = m.text(e)
		}
		for i, r := range v.RecommendedValues {
			v.RecommendedValues[i] = m.text(r)
		}
	}
}

// err masks an error's text. The result keeps the kinds errors.Is finds in
// err, but not its values (errors.As would find the unmasked message).
func (m *masker) err(err error) error {
	if err == nil || m == nil || len(m.pairs) == 0 {
		return err
	}
	msg := m.text(err.Error())
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
func (e *maskedError) Unwrap() error        { return nil }
func (e *maskedError) As(_ any) bool        { return false }

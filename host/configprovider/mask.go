package configprovider

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// MinMaskInText is the shortest resolved value a Masker replaces inside
// longer text. A shorter one ("1", "on", "abc") occurs by chance in
// unrelated words and numbers, and replacing it there would garble the
// message while hiding next to nothing; such a value is still replaced
// where it is the whole text.
const MinMaskInText = 4

// Masker puts submitted text back in place of resolved values, so that
// what is shown of a config (a validation answer, an error quoting it)
// carries placeholders rather than what they resolved to.
type Masker struct {
	pairs []maskPair // longest resolved text first
}

type maskPair struct{ resolved, raw string }

// NewMasker collects, for every key whose submitted value differs from its
// resolved one, the resolved value and its trimmed form (validation trims
// values and reformats lists, so the trimmed form is what comes back),
// each mapped to the submitted value.
func NewMasker(raw, resolved map[string]string) *Masker {
	seen := map[string]bool{}
	m := &Masker{}
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

// Empty reports whether m replaces nothing.
func (m *Masker) Empty() bool { return m == nil || len(m.pairs) == 0 }

// Text masks s: a whole match of any resolved value first, then every
// occurrence of those at least MinMaskInText long, longest first, in one
// pass so a replacement is never itself rewritten.
func (m *Masker) Text(s string) string {
	if m.Empty() || s == "" {
		return s
	}
	for _, p := range m.pairs {
		if s == p.resolved {
			return p.raw
		}
	}
	var args []string
	for _, p := range m.pairs {
		if len(p.resolved) >= MinMaskInText {
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

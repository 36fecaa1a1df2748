package plugin

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Lookup errors; the messages name the candidates.
var (
	ErrUnknownClass   = errors.New("unknown connector class")
	ErrAmbiguousClass = errors.New("ambiguous connector class")
)

// namesOf lists the short names a class answers to, Kafka Connect style:
// the simple name (after the last '.'), the simple name without a
// "Connector" suffix, and the declared aliases.
func namesOf(c Class) []string {
	simple := c.Name[strings.LastIndex(c.Name, ".")+1:]
	names := []string{simple}
	if short, ok := strings.CutSuffix(simple, "Connector"); ok && short != "" {
		names = append(names, short)
	}
	names = append(names, c.Def.GetAliases()...)
	var out []string
	seen := map[string]bool{c.Name: true}
	for _, n := range names {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// index sorts classes and builds the lookup maps. An alias claimed by
// several classes stays in byAlias with all of them, so Lookup can name the
// candidates; Class.Aliases lists only the unambiguous ones.
func index(classes []Class) (map[string]int, map[string][]int) {
	sortClasses(classes)
	byName := make(map[string]int, len(classes))
	byAlias := map[string][]int{}
	for i, c := range classes {
		byName[c.Name] = i
		for _, n := range namesOf(c) {
			byAlias[n] = append(byAlias[n], i)
		}
	}
	for i := range classes {
		var aliases []string
		for _, n := range namesOf(classes[i]) {
			if _, full := byName[n]; len(byAlias[n]) == 1 && !full {
				aliases = append(aliases, n)
			}
		}
		classes[i].Aliases = aliases
	}
	return byName, byAlias
}

// Lookup resolves a connector.class value: a full class name, or a short
// name (simple name, simple name without "Connector", declared alias) that
// only one class answers to.
func (m *Manager) Lookup(name string) (Class, error) {
	m.catMu.RLock()
	defer m.catMu.RUnlock()
	if i, ok := m.byName[name]; ok {
		return m.classes[i], nil
	}
	switch idx := m.byAlias[name]; len(idx) {
	case 1:
		return m.classes[idx[0]], nil
	case 0:
	default:
		names := make([]string, len(idx))
		for k, i := range idx {
			names[k] = m.classes[i].Name
		}
		return Class{}, fmt.Errorf("%w %q: it names %s; use the full class name", ErrAmbiguousClass, name, strings.Join(names, ", "))
	}
	if near := m.closeNames(name); len(near) > 0 {
		return Class{}, fmt.Errorf("%w %q; did you mean %s?", ErrUnknownClass, name, strings.Join(near, ", "))
	}
	return Class{}, fmt.Errorf("%w %q (%d classes known)", ErrUnknownClass, name, len(m.classes))
}

// closeNames suggests up to five known names near name: by edit distance,
// ignoring case, or containing it.
func (m *Manager) closeNames(name string) []string {
	type scored struct {
		name string
		d    int
	}
	want := strings.ToLower(name)
	limit := max(2, len(want)/3)
	var found []scored
	seen := map[string]bool{}
	consider := func(n string) {
		if seen[n] {
			return
		}
		seen[n] = true
		l := strings.ToLower(n)
		d := editDistance(want, l)
		if d <= limit || (len(want) >= 3 && strings.Contains(l, want)) {
			found = append(found, scored{n, d})
		}
	}
	for _, c := range m.classes {
		consider(c.Name)
		for _, n := range namesOf(c) {
			consider(n)
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].d != found[j].d {
			return found[i].d < found[j].d
		}
		return found[i].name < found[j].name
	})
	var out []string
	for _, s := range found {
		if len(out) == 5 {
			break
		}
		out = append(out, s.name)
	}
	return out
}

// editDistance is the Levenshtein distance over bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

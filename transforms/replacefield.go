package transforms

import (
	"maps"
	"slices"
	"strings"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

const replaceFieldDoc = "Filter or rename fields."

// renamesValidator checks the renames list when the key is defined.
var renamesValidator = config.Lambda(func(name string, v any) error {
	l, _ := v.([]string)
	_, err := parseRenames(name, l)
	return err
}, "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>")

func replaceFieldDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "exclude", Type: config.List, Default: []string{}, Importance: config.Medium,
			Doc: "Fields to exclude. This takes precedence over the fields to include."}).
		Define(config.Key{Name: "include", Type: config.List, Default: []string{}, Importance: config.Medium,
			Doc: "Fields to include. If specified, only these fields will be used."}).
		Define(config.Key{Name: "renames", Type: config.List, Default: []string{}, Validator: renamesValidator,
			Importance: config.Medium, Doc: "Field rename mappings."}).
		Define(replaceNullKey()).
		// Removed from Kafka in 4.0; Sluice still reads them, as Kafka 3.x did,
		// so that older configurations keep filtering instead of passing
		// every field through unnoticed.
		Define(config.Key{Name: "blacklist", Type: config.List, Importance: config.Low,
			Doc: "Deprecated. Use exclude instead."}).
		Define(config.Key{Name: "whitelist", Type: config.List, Importance: config.Low,
			Doc: "Deprecated. Use include instead."})
}

const replacePurpose = "field replacement"

// javaSplit is String.split with a one-character separator: trailing empty
// strings are dropped.
func javaSplit(s, sep string) []string {
	if s == "" {
		// Java's "".split(sep) is [""], not []: no trailing empty
		// strings are removed from an input that has no separator.
		return []string{""}
	}
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

func parseRenames(name string, mappings []string) (map[string]string, error) {
	m := make(map[string]string, len(mappings))
	for _, mapping := range mappings {
		parts := javaSplit(mapping, ":")
		if len(parts) != 2 {
			return nil, config.Invalid(name, mappings, "Invalid rename mapping: "+mapping)
		}
		m[parts[0]] = parts[1]
	}
	return m, nil
}

type replaceField struct {
	side             side
	exclude, include map[string]bool
	renames, reverse map[string]string
	replaceNull      bool
	cache            schemaCache
}

func setOf(l []string) map[string]bool {
	m := make(map[string]bool, len(l))
	for _, s := range l {
		m[s] = true
	}
	return m
}

func newReplaceField(s side, v *config.Values) (Transformation, error) {
	exclude, include := v.List("exclude"), v.List("include")
	// The deprecated names count only where the new ones are not given.
	if !v.Has("exclude") && !v.IsNull("blacklist") {
		exclude = v.List("blacklist")
	}
	if !v.Has("include") && !v.IsNull("whitelist") {
		include = v.List("whitelist")
	}
	renames, err := parseRenames("renames", v.List("renames"))
	if err != nil {
		return nil, err
	}
	t := &replaceField{side: s, exclude: setOf(exclude), include: setOf(include), renames: renames,
		reverse: make(map[string]string, len(renames)), replaceNull: v.Bool("replace.null.with.default")}
	for k, n := range renames {
		t.reverse[n] = k
	}
	return t, nil
}

func (t *replaceField) keep(name string) bool {
	return !t.exclude[name] && (len(t.include) == 0 || t.include[name])
}

func (t *replaceField) renamed(name string) string {
	if n, ok := t.renames[name]; ok {
		return n
	}
	return name
}

func (t *replaceField) reverseRenamed(name string) string {
	if n, ok := t.reverse[name]; ok {
		return n
	}
	return name
}

func (t *replaceField) Apply(r *data.Record) (*data.Record, error) {
	schema, value := t.side.get(r)
	if value == nil {
		return r, nil
	}
	if schema == nil {
		m, err := requireMap(value, replacePurpose)
		if err != nil {
			return nil, err
		}
		if err := requireStringKeys(value); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m))
		// Keys in order, so that a rename onto a key the map already has
		// gives the same result every time: the later key in order wins.
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if t.keep(k) {
				out[t.renamed(k)] = m[k]
			}
		}
		return t.side.with(r, nil, out), nil
	}
	st, err := requireStruct(value, replacePurpose)
	if err != nil {
		return nil, err
	}
	updated, err := t.cache.get(st.Schema(), func() (*data.Schema, error) {
		out := copyBasics(st.Schema(), data.StructType)
		for _, f := range st.Schema().Fields {
			if t.keep(f.Name) {
				if err := addField(out, t.renamed(f.Name), f.Schema); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	out := data.NewStruct(updated)
	for _, f := range updated.Fields {
		if err := putField(out, f.Name, fieldValueByName(st, t.reverseRenamed(f.Name), t.replaceNull)); err != nil {
			return nil, err
		}
	}
	return t.side.with(r, updated, out), nil
}

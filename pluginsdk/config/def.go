package config

import (
	"fmt"
	"slices"
	"strings"
)

// Key declares one setting (ConfigDef.ConfigKey).
type Key struct {
	Name string
	Type Type
	// Default is the value used when the setting is not given, in Go
	// (1 for an INT, "a,b" or []string{"a","b"} for a LIST) or as the string
	// a user would write; it is checked against Type and Validator when the
	// key is defined. nil with Required false is a null default.
	Default any
	// Required means the setting has no default and must be given.
	Required   bool
	Importance Importance
	Doc        string
	// Group and OrderInGroup place the setting in UIs and generated docs.
	// A key without a group gets order -1, as in Kafka.
	Group        string
	OrderInGroup int
	Width        Width
	// DisplayName defaults to Name.
	DisplayName string
	// Dependents are settings whose recommended values or visibility depend
	// on this one.
	Dependents []string
	Validator  Validator
	// Recommended are values a UI may offer.
	Recommended []string
	// Recommender, if set, computes recommended values and visibility from
	// the other settings, overriding Recommended.
	Recommender Recommender
}

// Recommender is Kafka's ConfigDef.Recommender. parsed holds the parsed
// value of every defined key (nil where missing or invalid).
type Recommender interface {
	ValidValues(name string, parsed map[string]any) ([]string, error)
	Visible(name string, parsed map[string]any) (bool, error)
}

// HasDefault reports whether the key may be omitted.
func (k Key) HasDefault() bool { return !k.Required }

// DefaultString is the default as Kafka Connect prints it; ok is false for a
// required key or a null default. Secrets print as "[hidden]".
func (k Key) DefaultString() (s string, ok bool) {
	if k.Required {
		return "", false
	}
	return FormatValue(k.Default)
}

// Def is a connector's or transform's set of settings (ConfigDef): declared
// once, it drives parsing, validation, defaults and the REST API's
// description. Keys keep the order they were defined in.
//
// A Def is built at start-up and read afterwards; reads are safe from many
// goroutines, building is not.
type Def struct {
	keys  []Key
	index map[string]int
}

// NewDef returns an empty definition.
func NewDef() *Def { return &Def{index: map[string]int{}} }

// Define adds a key and returns d so calls chain. A bad key (no name, no
// type, defined twice, a default that does not parse or fails the
// validator, Required with a default) is a programming error and panics,
// as Kafka's define throws; use Add to get the error instead.
func (d *Def) Define(k Key) *Def {
	if err := d.Add(k); err != nil {
		panic("config.Def.Define: " + err.Error())
	}
	return d
}

// Add is Define returning the error.
func (d *Def) Add(k Key) error {
	if k.Name == "" {
		return fmt.Errorf("configuration key without a name")
	}
	if _, dup := d.index[k.Name]; dup {
		return fmt.Errorf("Configuration %s is defined twice.", k.Name)
	}
	if k.Type <= TypeInvalid || int(k.Type) >= len(typeNames) {
		return fmt.Errorf("configuration %s: invalid type %s", k.Name, k.Type)
	}
	if k.Required && k.Default != nil {
		return fmt.Errorf("configuration %s: a required key has no default, but %v was given", k.Name, k.Default)
	}
	def, err := normalize(k.Name, k.Default, k.Type)
	if err != nil {
		return fmt.Errorf("Invalid default value for %s: %w", k.Name, err)
	}
	k.Default = def
	// Kafka checks every default, null included, against the validator.
	if !k.Required && k.Validator != nil {
		if err := k.Validator.Validate(k.Name, k.Default); err != nil {
			return fmt.Errorf("Invalid default value for %s: %w", k.Name, err)
		}
	}
	if k.Importance == ImportanceUnset {
		k.Importance = Low
	}
	if k.Group == "" && k.OrderInGroup == 0 {
		k.OrderInGroup = -1
	}
	if k.DisplayName == "" {
		k.DisplayName = k.Name
	}
	k.Dependents = slices.Clone(k.Dependents)
	k.Recommended = slices.Clone(k.Recommended)
	if d.index == nil {
		d.index = map[string]int{}
	}
	d.index[k.Name] = len(d.keys)
	d.keys = append(d.keys, k)
	return nil
}

// Keys returns the keys in definition order.
func (d *Def) Keys() []Key { return slices.Clone(d.keys) }

// Key returns the named key.
func (d *Def) Key(name string) (Key, bool) {
	i, ok := d.index[name]
	if !ok {
		return Key{}, false
	}
	return d.keys[i], true
}

// Names returns the key names in definition order.
func (d *Def) Names() []string {
	out := make([]string, len(d.keys))
	for i, k := range d.keys {
		out[i] = k.Name
	}
	return out
}

// Len returns the number of keys.
func (d *Def) Len() int { return len(d.keys) }

// Clone returns an independent copy.
func (d *Def) Clone() *Def {
	c := NewDef()
	for _, k := range d.keys {
		c.index[k.Name] = len(c.keys)
		c.keys = append(c.keys, k)
	}
	return c
}

// Merge returns a new Def holding d's keys followed by the keys of others
// that d (or an earlier other) does not define: the first definition of a
// name wins. The worker uses it to put the common connector settings and a
// connector's own settings into one definition.
func (d *Def) Merge(others ...*Def) *Def {
	out := d.Clone()
	for _, o := range others {
		if o == nil {
			continue
		}
		for _, k := range o.keys {
			if _, dup := out.index[k.Name]; dup {
				continue
			}
			out.index[k.Name] = len(out.keys)
			out.keys = append(out.keys, k)
		}
	}
	return out
}

// Embed adds child's keys, in child's Sorted order, under a key prefix
// (ConfigDef.embed): how the worker describes "transforms.<alias>."
// settings. Each key's group becomes group, or "group: childGroup" when the
// child grouped it; OrderInGroup counts up from startingOrder. Validators
// and recommenders see the names without the prefix, so their messages name
// the child's own setting, as Kafka's do. Keys d already defines are an
// error.
func (d *Def) Embed(prefix, group string, startingOrder int, child *Def) error {
	order := startingOrder
	for _, k := range child.Sorted() {
		k.Name = prefix + k.Name
		deps := make([]string, len(k.Dependents))
		for i, dep := range k.Dependents {
			deps[i] = prefix + dep
		}
		k.Dependents = deps
		if k.Group != "" {
			k.Group = group + ": " + k.Group
		} else {
			k.Group = group
		}
		k.OrderInGroup = order
		order++
		if k.Validator != nil {
			k.Validator = &embeddedValidator{prefix: prefix, base: k.Validator}
		}
		if k.Recommender != nil {
			k.Recommender = &embeddedRecommender{prefix: prefix, base: k.Recommender}
		}
		if _, dup := d.index[k.Name]; dup {
			return fmt.Errorf("Configuration %s is defined twice.", k.Name)
		}
		if d.index == nil {
			d.index = map[string]int{}
		}
		d.index[k.Name] = len(d.keys)
		d.keys = append(d.keys, k)
	}
	return nil
}

type embeddedValidator struct {
	prefix string
	base   Validator
}

func (e *embeddedValidator) Validate(name string, value any) error {
	return e.base.Validate(strings.TrimPrefix(name, e.prefix), value)
}

func (e *embeddedValidator) String() string { return e.base.String() }

type embeddedRecommender struct {
	prefix string
	base   Recommender
}

func (e *embeddedRecommender) unprefixed(parsed map[string]any) map[string]any {
	out := make(map[string]any)
	for k, v := range parsed {
		if rest, ok := strings.CutPrefix(k, e.prefix); ok {
			out[rest] = v
		}
	}
	return out
}

func (e *embeddedRecommender) ValidValues(name string, parsed map[string]any) ([]string, error) {
	return e.base.ValidValues(strings.TrimPrefix(name, e.prefix), e.unprefixed(parsed))
}

func (e *embeddedRecommender) Visible(name string, parsed map[string]any) (bool, error) {
	return e.base.Visible(strings.TrimPrefix(name, e.prefix), e.unprefixed(parsed))
}

// Groups returns the groups in the order they first appear (ConfigInfos.groups).
func (d *Def) Groups() []string {
	var out []string
	for _, k := range d.keys {
		if k.Group != "" && !slices.Contains(out, k.Group) {
			out = append(out, k.Group)
		}
	}
	return out
}

// Sorted returns the keys in Kafka's documentation order: ungrouped keys
// first, then groups in order of first appearance; within a group by
// OrderInGroup, then keys without a default, then by importance, then by
// name.
func (d *Def) Sorted() []Key {
	groupOrd := map[string]int{}
	for i, g := range d.Groups() {
		groupOrd[g] = i
	}
	out := d.Keys()
	slices.SortStableFunc(out, func(a, b Key) int {
		switch {
		case a.Group == "" && b.Group != "":
			return -1
		case a.Group != "" && b.Group == "":
			return 1
		}
		if c := groupOrd[a.Group] - groupOrd[b.Group]; c != 0 {
			return c
		}
		if c := a.OrderInGroup - b.OrderInGroup; c != 0 {
			return c
		}
		if a.HasDefault() != b.HasDefault() {
			if !a.HasDefault() {
				return -1
			}
			return 1
		}
		if c := int(a.Importance) - int(b.Importance); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

package transforms

import (
	"errors"
	"slices"
	"strings"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Connector settings that configure the chain (ConnectorConfig).
const (
	KeyTransforms = "transforms"
	KeyPredicates = "predicates"

	GroupTransforms = "Transforms"
	GroupPredicates = "Predicates"
)

// aliases reads a list setting as Kafka's enrich does: trimmed, the empty
// string for no aliases, each alias once in first-seen order.
func aliases(cfg map[string]string, key string) []string {
	raw := strings.TrimSpace(cfg[key])
	if raw == "" {
		return nil
	}
	var out []string
	for _, a := range strings.Split(raw, ",") {
		a = strings.TrimSpace(a)
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

func aliasListValidator(kind string) config.Validator {
	return config.All(config.NonNull(), config.Lambda(func(name string, v any) error {
		l, _ := v.([]string)
		seen := map[string]bool{}
		for _, a := range l {
			if seen[a] {
				return config.Invalid(name, v, "Duplicate alias provided.")
			}
			seen[a] = true
		}
		return nil
	}, "unique "+kind+" aliases"))
}

// Def is the connector-level definition of the chain for cfg: the
// transforms and predicates lists and, as AliasDef, the settings of each
// alias they name.
func Def(cfg map[string]string) *config.Def {
	d := config.NewDef().
		Define(config.Key{Name: KeyTransforms, Type: config.List, Default: []string{}, Validator: aliasListValidator(TypeTransformation),
			Importance: config.Low, Group: GroupTransforms, OrderInGroup: 1, Width: config.WidthLong, DisplayName: "Transforms",
			Doc: "Aliases for the transformations to be applied to records."}).
		Define(config.Key{Name: KeyPredicates, Type: config.List, Default: []string{}, Validator: aliasListValidator(TypePredicate),
			Importance: config.Low, Group: GroupPredicates, OrderInGroup: 1, Width: config.WidthLong, DisplayName: "Predicates",
			Doc: "Aliases for the predicates used by transformations."})
	addAliasKeys(d, cfg)
	return d
}

// AliasDef declares the settings of each alias in cfg, as Kafka's
// ConnectorConfig.enrich does: transforms.<a>.type in group
// "Transforms: <a>", then (when the class is known) transforms.<a>.predicate,
// transforms.<a>.negate and the class's own settings under the prefix;
// likewise predicates.<p>.type and the predicate's settings in
// "Predicates: <p>".
func AliasDef(cfg map[string]string) *config.Def {
	d := config.NewDef()
	addAliasKeys(d, cfg)
	return d
}

func addAliasKeys(d *config.Def, cfg map[string]string) {
	for _, a := range aliases(cfg, KeyTransforms) {
		addAlias(d, cfg, a, TypeTransformation)
	}
	for _, a := range aliases(cfg, KeyPredicates) {
		addAlias(d, cfg, a, TypePredicate)
	}
}

func addAlias(d *config.Def, cfg map[string]string, alias, kind string) {
	listKey, group, display := KeyTransforms, GroupTransforms+": "+alias, "Transformation type for "
	if kind == TypePredicate {
		listKey, group, display = KeyPredicates, GroupPredicates+": "+alias, "Predicate type for "
	}
	prefix := listKey + "." + alias + "."
	var recommended []string
	for _, c := range Classes() {
		if c.Type == kind {
			recommended = append(recommended, c.Name)
		}
	}
	if err := d.Add(config.Key{Name: prefix + "type", Type: config.Class, Required: true,
		Validator: typeValidator(cfg, prefix, alias, kind), Importance: config.High,
		Doc: "Class for the '" + alias + "' " + kind + ".", Group: group, OrderInGroup: 0, Width: config.WidthLong,
		DisplayName: display + alias, Recommended: recommended}); err != nil {
		// An alias seen twice was dropped by aliases; a clash with
		// another key means a malformed alias such as "a.type".
		return
	}
	p, err := resolve(cfg[prefix+"type"], kind)
	if err != nil {
		return
	}
	child := config.NewDef()
	if kind == TypeTransformation {
		child.Define(config.Key{Name: "predicate", Type: config.String, Importance: config.Medium,
			Validator: predicateRefValidator(cfg),
			Doc:       "The alias of a predicate used to determine whether to apply this transformation."})
		child.Define(config.Key{Name: "negate", Type: config.Boolean, Default: false, Importance: config.Medium,
			Doc: "Whether the configured predicate should be negated."})
	}
	for _, k := range p.Config.Keys() {
		// The implicit predicate and negate mask a class's own.
		if _, dup := child.Key(k.Name); !dup {
			_ = child.Add(k)
		}
	}
	_ = d.Embed(prefix, group, 1, child)
}

// typeValidator checks transforms.<a>.type or predicates.<p>.type with
// Kafka's messages; for a transformation it also refuses negate without a
// predicate, as Kafka does on this key.
func typeValidator(cfg map[string]string, prefix, alias, kind string) config.Validator {
	return config.Lambda(func(name string, v any) error {
		s, _ := v.(string)
		if s != "" {
			if _, err := resolve(s, kind); err == errClassNotFound {
				return config.Invalid(name, s, classNotFound(s))
			} else if err != nil {
				return &config.Error{Name: name, Message: err.Error()}
			}
		}
		if kind == TypeTransformation {
			negate, predicate := prefix+"negate", prefix+"predicate"
			_, hasNegate := cfg[negate]
			_, hasPredicate := cfg[predicate]
			if hasNegate && !hasPredicate {
				return &config.Error{Name: name, Message: "Config '" + negate + "' was provided but there is no config '" + predicate + "' defining a predicate to be negated."}
			}
		}
		return nil
	}, "valid configs for "+alias+" "+kind)
}

// predicateRefValidator refuses a predicate alias the predicates list does
// not name. Kafka accepts it at validation and fails the task when it
// starts; Sluice says so before.
func predicateRefValidator(cfg map[string]string) config.Validator {
	defined := aliases(cfg, KeyPredicates)
	return config.Lambda(func(name string, v any) error {
		s, _ := v.(string)
		if v == nil || slices.Contains(defined, s) {
			return nil
		}
		return config.Invalid(name, s, "The predicate '"+s+"' is not defined in "+KeyPredicates)
	}, "a predicate alias listed in "+KeyPredicates)
}

// ValidateConfig validates the transform and predicate settings of a
// connector configuration for PUT /connector-plugins/{plugin}/config/validate:
// one ConfigValue per key of Def(cfg), in its order, with Kafka's messages
// for a duplicate alias, a missing or unknown class, a class of the wrong
// kind or an abstract one, negate without predicate, and each class's own
// settings (a bad regex among them). Beyond Kafka, it also reports an
// undefined predicate alias and what the class would refuse when
// configured (InsertField with nothing to insert, say), which Kafka only
// finds when the task starts: those land on the offending key, or on
// the type key when the class names none.
func ValidateConfig(cfg map[string]string) []config.ConfigValue {
	d := Def(cfg)
	values := d.Validate(cfg)
	index := map[string]int{}
	for i, v := range values {
		index[v.Name] = i
	}
	clean := func(prefix string) bool {
		for _, v := range values {
			if strings.HasPrefix(v.Name, prefix) && len(v.Errors) > 0 {
				return false
			}
		}
		return true
	}
	for _, kind := range []string{TypeTransformation, TypePredicate} {
		listKey := KeyTransforms
		if kind == TypePredicate {
			listKey = KeyPredicates
		}
		for _, a := range aliases(cfg, listKey) {
			prefix := listKey + "." + a + "."
			if !clean(prefix) {
				continue
			}
			if _, ok := d.Key(prefix + "type"); !ok {
				continue
			}
			props := withPrefix(cfg, prefix)
			var err error
			if kind == TypeTransformation {
				_, err = New(props["type"], props)
			} else {
				_, err = NewPredicate(props["type"], props)
			}
			if err == nil {
				continue
			}
			for _, e := range unjoin(err) {
				target := prefix + "type"
				var ce *config.Error
				if errors.As(e, &ce) && ce.Name != "" {
					if _, ok := index[prefix+ce.Name]; ok {
						target = prefix + ce.Name
					}
				}
				values[index[target]].AddError(e.Error())
			}
		}
	}
	return values
}

// unjoin splits an errors.Join into its errors.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// withPrefix returns the settings under prefix, without it
// (originalsWithPrefix).
func withPrefix(cfg map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range cfg {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out[rest] = v
		}
	}
	return out
}

// stage is one transformation of a chain and the predicate it runs under.
type stage struct {
	alias, class string
	t            Transformation
	pred         Predicate
	negate       bool
}

// ChainT is a connector's transformation chain. It is safe for concurrent
// use: each task may share one.
type ChainT struct {
	stages []stage
}

// Chain builds the chain a connector configuration describes: transforms
// (aliases in order), transforms.<a>.type and further transforms.<a>.
// settings, transforms.<a>.predicate and .negate, predicates and
// predicates.<p>.*. A configuration ValidateConfig finds fault with is
// refused with every problem, each naming its key.
func Chain(cfg map[string]string) (*ChainT, error) {
	var problems []error
	for _, v := range ValidateConfig(cfg) {
		for _, e := range v.Errors {
			problems = append(problems, &config.Error{Name: v.Name, Message: e})
		}
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	c := &ChainT{}
	for _, a := range aliases(cfg, KeyTransforms) {
		prefix := KeyTransforms + "." + a + "."
		props := withPrefix(cfg, prefix)
		class := props["type"]
		predAlias, hasPred := props["predicate"]
		negate := strings.EqualFold(strings.TrimSpace(props["negate"]), "true")
		delete(props, "predicate")
		delete(props, "negate")
		t, err := New(class, props)
		if err != nil {
			return nil, &config.Error{Name: prefix + "type", Message: "configure transformation " + a + ": " + err.Error()}
		}
		p, _ := resolve(class, TypeTransformation)
		s := stage{alias: a, class: p.Name, t: t, negate: negate}
		if predAlias = strings.TrimSpace(predAlias); hasPred && predAlias != "" {
			pp := KeyPredicates + "." + predAlias + "."
			pprops := withPrefix(cfg, pp)
			if s.pred, err = NewPredicate(pprops["type"], pprops); err != nil {
				return nil, &config.Error{Name: pp + "type", Message: "configure predicate " + predAlias + ": " + err.Error()}
			}
		}
		c.stages = append(c.stages, s)
	}
	return c, nil
}

// Len is the number of transformations in the chain.
func (c *ChainT) Len() int {
	if c == nil {
		return 0
	}
	return len(c.stages)
}

// Apply runs the chain on a record from a source task (or any record
// without a Kafka offset): each transformation whose predicate allows it,
// in order, until one drops the record (nil, nil) or fails (a
// *StageError). The input record is never modified; an empty chain
// returns it as it is.
func (c *ChainT) Apply(r *data.Record) (*data.Record, error) { return c.apply(r, nil) }

// ApplySink is Apply for a record consumed from Kafka, whose offset
// InsertField's offset.field inserts.
func (c *ChainT) ApplySink(r *data.SinkRecord) (*data.Record, error) {
	off := r.Offset
	return c.apply(&r.Record, &off)
}

func (c *ChainT) apply(r *data.Record, offset *int64) (*data.Record, error) {
	if c == nil {
		return r, nil
	}
	for _, s := range c.stages {
		if s.pred != nil {
			ok, err := s.pred.Test(r)
			if err != nil {
				return nil, &StageError{Alias: s.alias, Class: s.class, Err: err}
			}
			if ok == s.negate {
				continue
			}
		}
		var out *data.Record
		var err error
		if st, isSink := s.t.(SinkTransformation); isSink && offset != nil {
			out, err = st.ApplySink(r, *offset)
		} else {
			out, err = s.t.Apply(r)
		}
		if err != nil {
			return nil, &StageError{Alias: s.alias, Class: s.class, Err: err}
		}
		if out == nil {
			return nil, nil
		}
		r = out
	}
	return r, nil
}

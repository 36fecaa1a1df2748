package config

// ConfigValue is the validation result of one setting (Kafka's ConfigValue):
// the value parsed or defaulted (nil when missing or unparsable), its
// problems, the values a UI may offer and whether the UI should show it.
type ConfigValue struct {
	Name string
	// Value is the typed value (see Values.Get), or a string when the
	// ConfigValue came over the wire.
	Value       any
	Recommended []string
	Errors      []string
	Visible     bool
}

// AddError appends a problem.
func (c *ConfigValue) AddError(msg string) { c.Errors = append(c.Errors, msg) }

// ValueString is the value as Kafka Connect's REST API shows it (lists
// joined by ",", secrets "[hidden]"); ok is false for null.
func (c ConfigValue) ValueString() (string, bool) { return FormatValue(c.Value) }

// Validate checks props against the definition with Kafka's semantics
// (ConfigDef.validate): one ConfigValue per key, in definition order. A key
// that is missing (with no default) or does not parse gets the error and a
// nil value, and its validator still runs on that nil value, so a Range
// adds "Value must be non-null" as Kafka's does. Recommenders run after all
// keys are parsed. A dependent that is not defined gets a ConfigValue of its
// own, invisible, with the error Kafka gives. Keys that are not defined are
// ignored.
func (d *Def) Validate(props map[string]string) []ConfigValue {
	out := make([]ConfigValue, 0, len(d.keys))
	parsed := make(map[string]any, len(d.keys))
	for _, k := range d.keys {
		cv := ConfigValue{Name: k.Name, Visible: true}
		var val any
		if raw, given := props[k.Name]; given {
			p, err := parseString(k.Name, raw, k.Type)
			if err != nil {
				cv.AddError(err.Error())
			} else {
				val = p
			}
		} else if k.Required {
			cv.AddError(missing(k.Name).Error())
		} else {
			val = k.Default
		}
		if k.Validator != nil {
			if err := k.Validator.Validate(k.Name, val); err != nil {
				cv.AddError(asConfigError(k.Name, val, err).Error())
			}
		}
		cv.Value = val
		parsed[k.Name] = val
		out = append(out, cv)
	}
	for i, k := range d.keys {
		cv := &out[i]
		if k.Recommender == nil {
			cv.Recommended = append([]string{}, k.Recommended...)
			continue
		}
		rec, err := k.Recommender.ValidValues(k.Name, parsed)
		if err != nil {
			cv.AddError(asConfigError(k.Name, parsed[k.Name], err).Error())
			continue
		}
		// Static recommendations, when given, bound the computed ones.
		if len(k.Recommended) > 0 {
			kept := rec[:0:0]
			for _, r := range rec {
				for _, s := range k.Recommended {
					if r == s {
						kept = append(kept, r)
						break
					}
				}
			}
			rec = kept
		}
		cv.Recommended = rec
		vis, err := k.Recommender.Visible(k.Name, parsed)
		if err != nil {
			cv.AddError(asConfigError(k.Name, parsed[k.Name], err).Error())
			continue
		}
		cv.Visible = vis
	}
	for _, name := range d.undefinedDependents() {
		out = append(out, ConfigValue{
			Name:    name,
			Errors:  []string{name + " is referred in the dependents, but not defined."},
			Visible: false,
		})
	}
	return out
}

func (d *Def) undefinedDependents() []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range d.keys {
		for _, dep := range k.Dependents {
			if _, ok := d.index[dep]; !ok && !seen[dep] {
				seen[dep] = true
				out = append(out, dep)
			}
		}
	}
	return out
}

// ErrorCount is the number of error messages over all values
// (ConfigInfos.error_count).
func ErrorCount(vs []ConfigValue) int {
	n := 0
	for _, v := range vs {
		n += len(v.Errors)
	}
	return n
}

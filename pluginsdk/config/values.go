package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Values is a parsed configuration: the typed value of every defined key
// (given or default) plus every given property, defined or not, as given.
// Unknown properties are kept, as Kafka keeps them in originals(), so that
// connectors can pass them through (to a client, to their tasks).
//
// Getters panic when the key is not defined or has another type: that is a
// programming error in the connector (Kafka throws ConfigException there).
type Values struct {
	def    *Def
	parsed map[string]any
	props  map[string]string
}

// Parse checks props against the definition and returns the typed values.
// Every problem is reported, each naming its key, joined with errors.Join;
// each is an *Error. Keys that are not defined are not errors.
func (d *Def) Parse(props map[string]string) (*Values, error) {
	v := &Values{def: d, parsed: make(map[string]any, len(d.keys)), props: maps.Clone(props)}
	if v.props == nil {
		v.props = map[string]string{}
	}
	var errs []error
	for _, k := range d.keys {
		var val any
		if raw, given := props[k.Name]; given {
			p, err := parseString(k.Name, raw, k.Type)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			val = p
		} else if k.Required {
			errs = append(errs, missing(k.Name))
			continue
		} else {
			val = k.Default
		}
		if k.Validator != nil {
			if err := k.Validator.Validate(k.Name, val); err != nil {
				errs = append(errs, asConfigError(k.Name, val, err))
				continue
			}
		}
		v.parsed[k.Name] = val
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return v, nil
}

// asConfigError keeps a validator's *Error and turns any other error into
// Kafka's "Invalid value" form.
func asConfigError(name string, value any, err error) error {
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	return Invalid(name, value, err.Error())
}

func (v *Values) get(name string, t Type) any {
	k, ok := v.def.Key(name)
	if !ok {
		panic(fmt.Sprintf("config: unknown configuration '%s'", name))
	}
	if k.Type != t {
		panic(fmt.Sprintf("config: configuration %s is of type %s, not %s", name, k.Type, t))
	}
	return v.parsed[name]
}

// Get returns the typed value of a defined key (nil for a null default):
// bool, string, int32, int16, int64, float64, []string or Secret.
func (v *Values) Get(name string) any {
	if _, ok := v.def.Key(name); !ok {
		panic(fmt.Sprintf("config: unknown configuration '%s'", name))
	}
	return v.parsed[name]
}

// String returns a STRING setting ("" for a null default).
func (v *Values) String(name string) string { s, _ := v.get(name, String).(string); return s }

// Class returns a CLASS setting: the class name as given.
func (v *Values) Class(name string) string { s, _ := v.get(name, Class).(string); return s }

// Int returns an INT setting (0 for a null default).
func (v *Values) Int(name string) int { n, _ := v.get(name, Int).(int32); return int(n) }

// Short returns a SHORT setting.
func (v *Values) Short(name string) int16 { n, _ := v.get(name, Short).(int16); return n }

// Long returns a LONG setting.
func (v *Values) Long(name string) int64 { n, _ := v.get(name, Long).(int64); return n }

// Double returns a DOUBLE setting.
func (v *Values) Double(name string) float64 { f, _ := v.get(name, Double).(float64); return f }

// Bool returns a BOOLEAN setting.
func (v *Values) Bool(name string) bool { b, _ := v.get(name, Boolean).(bool); return b }

// List returns a LIST setting (nil for a null default). The slice is a copy.
func (v *Values) List(name string) []string {
	l, _ := v.get(name, List).([]string)
	return slices.Clone(l)
}

// Password returns a PASSWORD setting; call Value on it for the secret.
func (v *Values) Password(name string) Secret { s, _ := v.get(name, Password).(Secret); return s }

// IsNull reports whether a defined key's value is null (a null default).
func (v *Values) IsNull(name string) bool { return v.Get(name) == nil }

// Has reports whether the property was given (as opposed to defaulted);
// it works for keys that are not defined too.
func (v *Values) Has(name string) bool { _, ok := v.props[name]; return ok }

// Raw returns a property as given, defined or not; for a defined key that
// was not given, the default as Kafka prints it; "" otherwise.
func (v *Values) Raw(name string) string {
	if s, ok := v.props[name]; ok {
		return s
	}
	if k, ok := v.def.Key(name); ok {
		s, _ := k.DefaultString()
		return s
	}
	return ""
}

// Originals returns a copy of the properties as given, unknown keys included.
func (v *Values) Originals() map[string]string { return maps.Clone(v.props) }

// Unknown returns the given properties the definition does not declare.
func (v *Values) Unknown() map[string]string {
	out := map[string]string{}
	for k, s := range v.props {
		if _, ok := v.def.Key(k); !ok {
			out[k] = s
		}
	}
	return out
}

// WithPrefix returns the given properties whose names start with prefix,
// with the prefix removed (AbstractConfig.originalsWithPrefix), e.g. the
// "producer.override." settings.
func (v *Values) WithPrefix(prefix string) map[string]string {
	out := map[string]string{}
	for k, s := range v.props {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			out[k[len(prefix):]] = s
		}
	}
	return out
}

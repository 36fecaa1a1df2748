package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Error is one configuration problem (Kafka's ConfigException). Its message
// is what users see in the REST API, so it follows Kafka's wording.
type Error struct {
	// Name is the setting the problem is about.
	Name    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Invalid returns Kafka's "Invalid value <v> for configuration <name>: <msg>"
// error. Validators and connector code use it so that messages read the same
// as Kafka Connect's.
func Invalid(name string, value any, msg string) error {
	m := "Invalid value " + javaString(value) + " for configuration " + name
	if msg != "" {
		m += ": " + msg
	}
	return &Error{Name: name, Message: m}
}

func missing(name string) error {
	return &Error{Name: name, Message: `Missing required configuration "` + name + `" which has no default value.`}
}

// Validator checks a parsed value (ConfigDef.Validator). The value is the
// typed value of the key (int32 for INT, []string for LIST, ...) or nil:
// validators also see a null default and, during Validate, a missing or
// unparsable value, and most of Kafka's reject it. String describes the
// accepted values; the REST API shows it.
type Validator interface {
	Validate(name string, value any) error
	String() string
}

type number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64
}

// Range accepts numbers between min and max inclusive (Range.between),
// described as "[min,...,max]".
func Range[T number](min, max T) Validator {
	lo, hi := bound(min), bound(max)
	return &rangeValidator{min: &lo, max: &hi}
}

// AtLeast accepts numbers of at least n (Range.atLeast), described as "[n,...]".
func AtLeast[T number](n T) Validator {
	lo := bound(n)
	return &rangeValidator{min: &lo}
}

// AtMost accepts numbers of at most n, described as "[...,n]".
func AtMost[T number](n T) Validator {
	hi := bound(n)
	return &rangeValidator{max: &hi}
}

type numBound struct {
	v    float64
	text string
}

func bound[T number](n T) numBound {
	switch x := any(n).(type) {
	case float32:
		return numBound{float64(x), javaDouble(float64(x))}
	case float64:
		return numBound{x, javaDouble(x)}
	}
	return numBound{float64(n), fmt.Sprint(n)}
}

type rangeValidator struct{ min, max *numBound }

func (r *rangeValidator) Validate(name string, value any) error {
	if value == nil {
		return Invalid(name, nil, "Value must be non-null")
	}
	var f float64
	switch x := value.(type) {
	case int32:
		f = float64(x)
	case int16:
		f = float64(x)
	case int64:
		f = float64(x)
	case int:
		f = float64(x)
	case float64:
		f = x
	default:
		return Invalid(name, value, "Value must be a number")
	}
	if r.min != nil && f < r.min.v {
		return Invalid(name, value, "Value must be at least "+r.min.text)
	}
	if r.max != nil && f > r.max.v {
		return Invalid(name, value, "Value must be no more than "+r.max.text)
	}
	return nil
}

func (r *rangeValidator) String() string {
	switch {
	case r.min == nil && r.max == nil:
		return "[...]"
	case r.min == nil:
		return "[...," + r.max.text + "]"
	case r.max == nil:
		return "[" + r.min.text + ",...]"
	}
	return "[" + r.min.text + ",...," + r.max.text + "]"
}

// ValidString accepts exactly one of the given strings (ValidString.in),
// described as "[a, b]". null is rejected.
func ValidString(valid ...string) Validator {
	return &validString{valid: append([]string{}, valid...)}
}

type validString struct{ valid []string }

func (v *validString) Validate(name string, value any) error {
	if s, ok := value.(string); ok {
		for _, x := range v.valid {
			if x == s {
				return nil
			}
		}
	}
	return Invalid(name, value, "String must be one of: "+strings.Join(v.valid, ", "))
}

func (v *validString) String() string { return "[" + strings.Join(v.valid, ", ") + "]" }

// CaseInsensitiveValidString accepts one of the strings in any case
// (CaseInsensitiveValidString.in). Like Kafka, it lists the strings upper
// case: "(case insensitive) [NONE, ALL]".
func CaseInsensitiveValidString(valid ...string) Validator {
	up := make([]string, len(valid))
	for i, s := range valid {
		up[i] = strings.ToUpper(s)
	}
	return &ciValidString{valid: up}
}

type ciValidString struct{ valid []string }

func (v *ciValidString) Validate(name string, value any) error {
	if s, ok := value.(string); ok {
		u := strings.ToUpper(s)
		for _, x := range v.valid {
			if x == u {
				return nil
			}
		}
	}
	return Invalid(name, value, "String must be one of (case insensitive): "+strings.Join(v.valid, ", "))
}

func (v *ciValidString) String() string {
	return "(case insensitive) [" + strings.Join(v.valid, ", ") + "]"
}

// ValidList accepts lists whose every element is one of the strings
// (ValidList.in), described as "[a, b]". Each bad element is reported with
// its own value. A null list passes: presence is Required's business.
func ValidList(valid ...string) Validator {
	return &validList{elem: validString{valid: append([]string{}, valid...)}}
}

type validList struct{ elem validString }

func (v *validList) Validate(name string, value any) error {
	if value == nil {
		return nil
	}
	l, ok := value.([]string)
	if !ok {
		return Invalid(name, value, "Expected a comma separated list.")
	}
	for _, s := range l {
		if err := v.elem.Validate(name, s); err != nil {
			return err
		}
	}
	return nil
}

func (v *validList) String() string { return v.elem.String() }

// NonEmptyString rejects the empty string but accepts null
// (ConfigDef.NonEmptyString), described as "non-empty string".
func NonEmptyString() Validator { return nonEmptyString{} }

type nonEmptyString struct{}

func (nonEmptyString) Validate(name string, value any) error {
	if s, ok := value.(string); ok && s == "" {
		return Invalid(name, value, "String must be non-empty")
	}
	return nil
}

func (nonEmptyString) String() string { return "non-empty string" }

// NonNull rejects null (ConfigDef.NonNullValidator), described as
// "non-null value".
func NonNull() Validator { return nonNull{} }

type nonNull struct{}

func (nonNull) Validate(name string, value any) error {
	if value == nil {
		return Invalid(name, nil, "Value must be non-null")
	}
	return nil
}

func (nonNull) String() string { return "non-null value" }

// NonNullOrEmpty rejects null, the empty string and the empty list,
// described as "non-null and non-empty value".
func NonNullOrEmpty() Validator { return nonNullOrEmpty{} }

type nonNullOrEmpty struct{}

func (nonNullOrEmpty) Validate(name string, value any) error {
	switch x := value.(type) {
	case nil:
		return Invalid(name, nil, "Value must be non-null")
	case string:
		if x == "" {
			return Invalid(name, value, "String must be non-empty")
		}
	case Secret:
		if x == "" {
			return Invalid(name, value, "String must be non-empty")
		}
	case []string:
		if len(x) == 0 {
			return Invalid(name, value, "List must be non-empty")
		}
	}
	return nil
}

func (nonNullOrEmpty) String() string { return "non-null and non-empty value" }

// NonEmptyStringWithoutControlChars rejects the empty string and strings
// holding ISO control characters, accepts null
// (ConfigDef.NonEmptyStringWithoutControlChars, used for connector names).
func NonEmptyStringWithoutControlChars() Validator { return noControlChars{} }

type noControlChars struct{}

func (noControlChars) Validate(name string, value any) error {
	s, ok := value.(string)
	if !ok {
		return nil
	}
	if s == "" {
		return Invalid(name, value, "String may not be empty")
	}
	var found []string
	for _, r := range s {
		if unicode.IsControl(r) {
			found = append(found, fmt.Sprint(int(r)))
		}
	}
	if len(found) > 0 {
		return Invalid(name, value, "String may not contain control sequences but had the following ASCII control characters: "+strings.Join(found, ", "))
	}
	return nil
}

func (noControlChars) String() string { return "non-empty string without ISO control characters" }

// ValidRegex accepts strings that compile as regular expressions (Kafka
// Connect's RegexValidator, used for topics.regex), described as
// "valid regex"; null passes. Go's RE2 syntax is what is checked.
func ValidRegex() Validator { return validRegex{} }

type validRegex struct{}

func (validRegex) Validate(name string, value any) error {
	s, ok := value.(string)
	if !ok {
		return nil
	}
	if _, err := regexp.Compile(s); err != nil {
		return Invalid(name, value, "Invalid regex: "+err.Error())
	}
	return nil
}

func (validRegex) String() string { return "valid regex" }

// Matches accepts strings matching the pattern in full, described as the
// pattern itself; null passes. It panics if the pattern does not compile.
func Matches(pattern string) Validator {
	return &matches{re: regexp.MustCompile(`^(?:` + pattern + `)$`), text: pattern}
}

type matches struct {
	re   *regexp.Regexp
	text string
}

func (m *matches) Validate(name string, value any) error {
	var s string
	switch x := value.(type) {
	case nil:
		return nil
	case string:
		s = x
	case Secret:
		s = string(x)
	default:
		return Invalid(name, value, "Value must be a string")
	}
	if !m.re.MatchString(s) {
		return Invalid(name, value, "String must match the pattern "+m.text)
	}
	return nil
}

func (m *matches) String() string { return m.text }

// Lambda makes a validator from a function and its description
// (LambdaValidator.with). An error that is not already an *Error is
// reported as "Invalid value <v> for configuration <name>: <err>".
func Lambda(fn func(name string, value any) error, description string) Validator {
	return &lambda{fn: fn, desc: description}
}

type lambda struct {
	fn   func(string, any) error
	desc string
}

func (l *lambda) Validate(name string, value any) error {
	err := l.fn(name, value)
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	return Invalid(name, value, err.Error())
}

func (l *lambda) String() string { return l.desc }

// All runs validators in order and reports the first failure
// (CompositeValidator), described as the descriptions joined by ", ".
func All(vs ...Validator) Validator { return composite(vs) }

type composite []Validator

func (c composite) Validate(name string, value any) error {
	for _, v := range c {
		if err := v.Validate(name, value); err != nil {
			return err
		}
	}
	return nil
}

func (c composite) String() string {
	parts := make([]string, len(c))
	for i, v := range c {
		parts[i] = v.String()
	}
	return strings.Join(parts, ", ")
}

// Described is a validator that accepts everything and only carries a
// description: what a definition received over the wire holds, since the
// plugin that declared the key applies the real validator itself.
func Described(description string) Validator { return described(description) }

type described string

func (described) Validate(string, any) error { return nil }
func (d described) String() string           { return string(d) }

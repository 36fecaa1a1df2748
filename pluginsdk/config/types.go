package config

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Type is a setting's type (ConfigDef.Type).
type Type int8

// Setting types. The zero Type is invalid so that a forgotten type is caught
// when the key is defined.
const (
	TypeInvalid Type = iota
	Boolean
	String
	Int
	Short
	Long
	Double
	List
	Class
	// Password values are secrets: they print as "[hidden]".
	Password
)

var typeNames = [...]string{"INVALID", "BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD"}

// String returns Kafka's name of the type ("INT"), as the REST API shows it.
func (t Type) String() string {
	if t < 0 || int(t) >= len(typeNames) {
		return fmt.Sprintf("Type(%d)", int8(t))
	}
	return typeNames[t]
}

// Importance is how much a setting matters to users (ConfigDef.Importance).
// Constants are ordered as Kafka orders them when sorting keys.
type Importance int8

// Importance levels. A Key without an importance is defined as Low.
const (
	ImportanceUnset Importance = iota
	High
	Medium
	Low
)

func (i Importance) String() string {
	switch i {
	case High:
		return "HIGH"
	case Medium:
		return "MEDIUM"
	case Low:
		return "LOW"
	}
	return fmt.Sprintf("Importance(%d)", int8(i))
}

// Width is the display width hint of a setting (ConfigDef.Width).
type Width int8

// Widths; the zero Width is NONE.
const (
	WidthNone Width = iota
	WidthShort
	WidthMedium
	WidthLong
)

func (w Width) String() string {
	switch w {
	case WidthNone:
		return "NONE"
	case WidthShort:
		return "SHORT"
	case WidthMedium:
		return "MEDIUM"
	case WidthLong:
		return "LONG"
	}
	return fmt.Sprintf("Width(%d)", int8(w))
}

// Secret is the value of a PASSWORD setting. It prints as "[hidden]" under
// every fmt verb so that it cannot leak into logs or messages by accident;
// Value returns the secret itself.
type Secret string

// Hidden is how secrets print, in Go as in Kafka's Password.toString.
const Hidden = "[hidden]"

// Value returns the secret.
func (s Secret) Value() string { return string(s) }

// String returns "[hidden]".
func (s Secret) String() string { return Hidden }

// GoString returns a hidden form for %#v.
func (s Secret) GoString() string { return "config.Secret(" + strconv.Quote(Hidden) + ")" }

// commaWithWhitespace is Kafka's list separator: a comma and any whitespace
// around it.
var commaWithWhitespace = regexp.MustCompile(`\s*,\s*`)

// parseString turns a given string into the typed value of t, with Kafka's
// rules: values are trimmed; booleans are "true"/"false" in any case; lists
// are comma-separated, the empty string being the empty list; numbers must
// fit their Java type. Errors carry Kafka's message.
func parseString(name, raw string, t Type) (any, error) {
	s := strings.TrimSpace(raw)
	switch t {
	case Boolean:
		switch {
		case strings.EqualFold(s, "true"):
			return true, nil
		case strings.EqualFold(s, "false"):
			return false, nil
		}
		return nil, Invalid(name, raw, "Expected value to be either true or false")
	case String, Class:
		return s, nil
	case Password:
		return Secret(s), nil
	case Int:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, Invalid(name, raw, "Not a number of type INT")
		}
		return int32(n), nil
	case Short:
		n, err := strconv.ParseInt(s, 10, 16)
		if err != nil {
			return nil, Invalid(name, raw, "Not a number of type SHORT")
		}
		return int16(n), nil
	case Long:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, Invalid(name, raw, "Not a number of type LONG")
		}
		return n, nil
	case Double:
		f, err := parseJavaDouble(s)
		if err != nil {
			return nil, Invalid(name, raw, "Not a number of type DOUBLE")
		}
		return f, nil
	case List:
		if s == "" {
			return []string{}, nil
		}
		return commaWithWhitespace.Split(s, -1), nil
	}
	return nil, fmt.Errorf("configuration %s: unknown type %s", name, t)
}

// parseJavaDouble accepts what Double.parseDouble accepts in practice:
// decimal and exponent forms with an optional f/d suffix, "NaN" and
// "Infinity". Go's own spellings ("inf", "0x1p3", "1_0") are refused.
func parseJavaDouble(s string) (float64, error) {
	switch s {
	case "NaN", "+NaN", "-NaN":
		return math.NaN(), nil
	case "Infinity", "+Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	if n := len(s); n > 1 && strings.ContainsRune("fFdD", rune(s[n-1])) {
		s = s[:n-1]
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, fmt.Errorf("not a number: %q", s)
		}
	}
	return strconv.ParseFloat(s, 64)
}

// normalize turns a default given in Go (1 for an INT, "a,b" or []string
// for a LIST, ...) into the typed value parseString would produce.
func normalize(name string, v any, t Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	if s, ok := v.(string); ok && t != String && t != Class && t != Password {
		return parseString(name, s, t)
	}
	bad := func() error {
		return fmt.Errorf("invalid default for configuration %s of type %s: %T %v", name, t, v, v)
	}
	switch t {
	case Boolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case String, Class:
		if s, ok := v.(string); ok {
			return strings.TrimSpace(s), nil
		}
	case Password:
		switch x := v.(type) {
		case string:
			return Secret(strings.TrimSpace(x)), nil
		case Secret:
			return x, nil
		}
	case Int, Short, Long:
		n, ok := toInt64(v)
		if !ok {
			return nil, bad()
		}
		switch {
		case t == Int && n >= math.MinInt32 && n <= math.MaxInt32:
			return int32(n), nil
		case t == Short && n >= math.MinInt16 && n <= math.MaxInt16:
			return int16(n), nil
		case t == Long:
			return n, nil
		}
		return nil, fmt.Errorf("invalid default for configuration %s: %d out of range for %s", name, n, t)
	case Double:
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		}
		if n, ok := toInt64(v); ok {
			return float64(n), nil
		}
	case List:
		switch x := v.(type) {
		case []string:
			return append([]string{}, x...), nil
		case []any:
			out := make([]string, len(x))
			for i, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, bad()
				}
				out[i] = s
			}
			return out, nil
		}
	}
	return nil, bad()
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	}
	return 0, false
}

// FormatValue renders a typed value as Kafka Connect prints it in the REST
// API (ConfigDef.convertToString): lists joined by ",", doubles as Java
// prints them ("1.0"), secrets as "[hidden]". A nil value has no form and
// returns ok=false.
func FormatValue(v any) (s string, ok bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case []string:
		return strings.Join(x, ","), true
	}
	return javaString(v), true
}

// javaString renders a value as Java's toString would, for error messages:
// lists "[a, b]", doubles "1.0", secrets "[hidden]", null "null".
func javaString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case Secret:
		return Hidden
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return javaDouble(x)
	case float32:
		return javaDouble(float64(x))
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = javaString(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// javaDouble formats f like Java's Double.toString: plain notation with at
// least one fractional digit for 1e-3 <= |f| < 1e7, otherwise "d.dddE±n".
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(n)
}

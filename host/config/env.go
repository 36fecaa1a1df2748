package config

import "strings"

// EnvPrefix is the prefix of environment variables that override worker
// properties, as in Confluent's Kafka Connect image.
const EnvPrefix = "CONNECT_"

// EnvOverrides returns the worker properties set by environment variables
// with the prefix, the rest of the name mapped by EnvNameToProperty:
// CONNECT_BOOTSTRAP_SERVERS sets bootstrap.servers, CONNECT_PLUGIN__PATH
// would set plugin_path and CONNECT_A___B a-b.
func EnvOverrides(environ []string, prefix string) map[string]string {
	out := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, prefix) || len(name) == len(prefix) {
			continue
		}
		out[EnvNameToProperty(name[len(prefix):])] = value
	}
	return out
}

// EnvNameToProperty maps the part after the prefix to a property name as
// Confluent's image does: lower-cased; an underscore with another character
// on each side becomes "."; in a longer run of underscores (or one at either
// end) each "___" becomes "-" and what is left, "_" or "__", becomes "_".
func EnvNameToProperty(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '_' {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '_' {
			j++
		}
		n := j - i
		if n == 1 && i > 0 && j < len(s) {
			b.WriteByte('.')
		} else {
			b.WriteString(strings.Repeat("-", n/3))
			if n%3 != 0 {
				b.WriteByte('_')
			}
		}
		i = j
	}
	return b.String()
}

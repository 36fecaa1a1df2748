package config

import "strings"

// EnvPrefix is the prefix of environment variables that override worker
// properties, as in Confluent's Kafka Connect image.
const EnvPrefix = "CONNECT_"

// EnvOverrides returns the worker properties set by environment variables
// with the prefix: the rest of the name is lower-cased, "___" becomes "-",
// "__" becomes "_" and "_" becomes ".", so CONNECT_BOOTSTRAP_SERVERS sets
// bootstrap.servers and CONNECT_PLUGIN__PATH would set plugin_path.
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

// EnvNameToProperty maps the part after the prefix to a property name.
func EnvNameToProperty(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "___"):
			b.WriteByte('-')
			i += 3
		case strings.HasPrefix(s[i:], "__"):
			b.WriteByte('_')
			i += 2
		case s[i] == '_':
			b.WriteByte('.')
			i++
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

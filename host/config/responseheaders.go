package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HeaderRule is one rule of response.http.headers.config (KIP-577, Jetty's
// HeaderFilter syntax): "[action] [header name]:[header value]".
type HeaderRule struct {
	// Action is set, add, setDate or addDate (as written; matched without
	// regard to case).
	Action string
	Name   string
	Value  string
	// Offset is a date action's value: the header is the HTTP date this
	// long after the response is made.
	Offset time.Duration
	// Replace (set, setDate) replaces the header's values, where add and
	// addDate add one; Date marks the date actions. Derived from Action
	// once, for the server to apply per answer.
	Replace, Date bool
}

// headerActions are Kafka's HEADER_ACTIONS, in its order (its messages
// list them so).
var headerActions = []string{"set", "add", "setDate", "addDate"}

// ParseResponseHeaders reads response.http.headers.config: comma-separated
// rules, each optionally in double quotes when it holds a comma, checked
// as Kafka's RestServerConfig checks them and with its messages. Empty or
// blank is no rules.
func ParseResponseHeaders(s string) ([]HeaderRule, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var rules []HeaderRule
	for _, rule := range csvSplit(s) {
		r, err := parseHeaderRule(rule)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func parseHeaderRule(rule string) (HeaderRule, error) {
	tokens := strings.Fields(rule)
	if len(tokens) < 2 {
		return HeaderRule{}, fmt.Errorf("Invalid format of header config '%s'. Expected: '[action] [header name]:[header value]'", rule)
	}
	action := tokens[0]
	known := false
	for _, a := range headerActions {
		known = known || strings.EqualFold(action, a)
	}
	if !known {
		return HeaderRule{}, fmt.Errorf("Invalid header config action: '%s'. Expected one of [%s]", action, strings.Join(headerActions, ", "))
	}
	// What follows the action and its whitespace, as Java's split("\\s+", 2).
	header := strings.TrimLeft(strings.TrimSpace(rule)[len(action):], " \t\r\n\f\v")
	parts := strings.Split(strings.TrimSpace(header), ":")
	// Java's split drops trailing empty strings: "X-Foo:" is one token.
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) != 2 {
		return HeaderRule{}, fmt.Errorf("Invalid format of header name and header value pair '%s'. Expected: '[header name]:[header value]'", header)
	}
	name := strings.TrimSpace(parts[0])
	if name == "" || strings.ContainsAny(name, " \t\r\n\f\v") {
		return HeaderRule{}, fmt.Errorf("Invalid header name '%s'. The '[header name]' cannot contain whitespace", name)
	}
	lower := strings.ToLower(action)
	r := HeaderRule{Action: action, Name: name, Value: strings.TrimSpace(parts[1]),
		Replace: strings.HasPrefix(lower, "set"), Date: strings.HasSuffix(lower, "date")}
	if r.Date {
		// Jetty reads a date action's value as milliseconds from now.
		ms, err := strconv.ParseInt(r.Value, 10, 64)
		if err != nil {
			return HeaderRule{}, fmt.Errorf("Invalid header value '%s' of '%s': a %s rule's value is a number of milliseconds", r.Value, rule, action)
		}
		r.Offset = time.Duration(ms) * time.Millisecond
	}
	return r, nil
}

// csvSplit splits a comma-separated list as Jetty's StringUtil.csvSplit
// does: items are trimmed, and an item in double quotes may hold commas
// (the quotes are removed, a backslash escapes the next character).
func csvSplit(s string) []string {
	var out []string
	var b strings.Builder
	quoted, escaped, inQuotes := false, false, false
	flush := func() {
		item := b.String()
		if !quoted {
			item = strings.TrimSpace(item)
		}
		if item != "" || quoted {
			out = append(out, item)
		}
		b.Reset()
		quoted = false
	}
	for _, c := range s {
		switch {
		case escaped:
			b.WriteRune(c)
			escaped = false
		case inQuotes && c == '\\':
			escaped = true
		case c == '"' && (inQuotes || strings.TrimSpace(b.String()) == ""):
			if !inQuotes {
				b.Reset()
			}
			inQuotes, quoted = !inQuotes, true
		case c == ',' && !inQuotes:
			flush()
		case quoted && !inQuotes:
			// After a closing quote only whitespace belongs to the item.
		default:
			b.WriteRune(c)
		}
	}
	flush()
	return out
}

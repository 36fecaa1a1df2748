package transforms

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// RegexRouter, TimestampRouter and Filter: transformations of the record
// as a whole.

const regexRouterDoc = "Update the record topic using the configured regular expression and replacement string.<p/>Under the hood, the regex is compiled to a <code>java.util.regex.Pattern</code>. If the pattern matches the input topic, <code>java.util.regex.Matcher#replaceFirst()</code> is used with the replacement string to obtain the new topic."

func regexRouterDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "regex", Type: config.String, Required: true, Validator: config.ValidRegex(),
			Importance: config.High, Doc: "Regular expression to use for matching."}).
		Define(config.Key{Name: "replacement", Type: config.String, Required: true, Importance: config.High,
			Doc: "Replacement string."})
}

// compileFull compiles a pattern that must match a whole string, as
// Matcher.matches requires. The syntax is Go's (RE2), which has no
// lookaround or backreferences.
func compileFull(pattern string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, err
	}
	if why := javaOnlySyntax(pattern); why != "" {
		return nil, errors.New(why + ", which java.util.regex and Go's RE2 both accept but read differently; Sluice does not support it")
	}
	return regexp.Compile(`^(?:` + pattern + `)$`)
}

// javaOnlySyntax names syntax that RE2 compiles with another meaning than
// java.util.regex gives it, or returns "". Refusing it when configured
// beats routing or matching other topics than Kafka would: RE2 reads
// Java's class intersection [a-z&&[^t]] and union [a-d[m-p]] as plain
// characters ("[[:alpha:]]" is a POSIX class to RE2, a union of ":alph"
// to Java), and its (?U) flag makes quantifiers lazy where Java's makes
// \w and friends Unicode-aware.
func javaOnlySyntax(p string) string {
	inClass, classStart := false, 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			if i+1 < len(p) && p[i+1] == 'Q' {
				// \Q...\E is literal text, in and out of classes.
				end := strings.Index(p[i+2:], `\E`)
				if end < 0 {
					return ""
				}
				i += 2 + end + 1
				continue
			}
			if i+1 < len(p) && '0' <= p[i+1] && p[i+1] <= '9' {
				// RE2 reads \101 as the octal code of A and \0101 as \010
				// then 1; Java reads a backreference, and A.
				return "a backslash before a digit (" + p[i:i+2] + ")"
			}
			i++
		case inClass:
			switch {
			case c == '[':
				return "a class inside a class (Java's class union)"
			case c == '&' && i+1 < len(p) && p[i+1] == '&':
				return "a class intersection (&&)"
			case c == ']' && i != classStart+1 && !(i == classStart+2 && p[classStart+1] == '^'):
				inClass = false
			}
		case c == '[':
			inClass, classStart = true, i
		case c == '(' && strings.HasPrefix(p[i:], "(?"):
			for j := i + 2; j < len(p) && (p[j] == '-' || 'a' <= p[j] && p[j] <= 'z' || 'A' <= p[j] && p[j] <= 'Z'); j++ {
				if p[j] == 'U' {
					return "the flag (?U)"
				}
			}
		}
	}
	return ""
}

type regexRouter struct {
	// whole tests that the pattern matches the whole topic; first finds
	// the match that is replaced.
	whole, first *regexp.Regexp
	replacement  string
}

func newRegexRouter(v *config.Values) (Transformation, error) {
	whole, err := compileFull(v.String("regex"))
	if err != nil {
		return nil, config.Invalid("regex", v.String("regex"), "Invalid regex: "+err.Error())
	}
	return &regexRouter{whole: whole, first: regexp.MustCompile(v.String("regex")), replacement: v.String("replacement")}, nil
}

// Apply renames a topic the pattern matches as a whole. Kafka then calls
// Matcher.replaceFirst, which searches afresh: the match it replaces is
// the first one found from the start, and a lazy quantifier or an
// alternation can end it before the topic ends ("(.*?)-x" in "a-x-x"
// replaces "a-x" only). Go's search prefers the same match as Java's.
func (t *regexRouter) Apply(r *data.Record) (*data.Record, error) {
	if !t.whole.MatchString(r.Topic) {
		return r, nil
	}
	m := t.first.FindStringSubmatchIndex(r.Topic)
	repl, err := javaReplacement(t.first, t.replacement, r.Topic, m)
	if err != nil {
		return nil, err
	}
	out := *r
	out.Topic = r.Topic[:m[0]] + repl + r.Topic[m[1]:]
	return &out, nil
}

// javaReplacement expands a java.util.regex replacement string for the
// match m of re in src: $n and ${name} insert groups, a backslash quotes
// the next character. Errors carry Java's messages.
func javaReplacement(re *regexp.Regexp, repl, src string, m []int) (string, error) {
	groups := re.NumSubexp()
	group := func(i int) string {
		if m[2*i] < 0 {
			return ""
		}
		return src[m[2*i]:m[2*i+1]]
	}
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch c {
		case '\\':
			i++
			if i >= len(repl) {
				return "", &Exception{Class: IllegalArgumentException, Message: "character to be escaped is missing"}
			}
			b.WriteByte(repl[i])
		case '$':
			i++
			if i >= len(repl) {
				return "", &Exception{Class: IllegalArgumentException, Message: "Illegal group reference: group index is missing"}
			}
			if repl[i] == '{' {
				end := strings.IndexByte(repl[i:], '}')
				if end < 0 {
					return "", &Exception{Class: IllegalArgumentException, Message: "named capturing group is missing trailing '}'"}
				}
				name := repl[i+1 : i+end]
				idx := re.SubexpIndex(name)
				if idx < 0 {
					return "", &Exception{Class: IllegalArgumentException, Message: "No group with name {" + name + "}"}
				}
				b.WriteString(group(idx))
				i += end
				continue
			}
			if repl[i] < '0' || repl[i] > '9' {
				return "", &Exception{Class: IllegalArgumentException, Message: "Illegal group reference"}
			}
			n := int(repl[i] - '0')
			if n > groups {
				return "", &Exception{Class: "java.lang.IndexOutOfBoundsException", Message: fmt.Sprintf("No group %d", n)}
			}
			// Further digits extend the number while it names a group.
			for i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9' {
				next := n*10 + int(repl[i+1]-'0')
				if next > groups {
					break
				}
				n = next
				i++
			}
			b.WriteString(group(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

const timestampRouterDoc = "Update the record's topic field as a function of the original topic value and the record timestamp.<p/>This is mainly useful for sink connectors, since the topic field is often used to determine the equivalent entity name in the destination system(e.g. database table or search index name)."

func timestampRouterDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "topic.format", Type: config.String, Default: "${topic}-${timestamp}", Importance: config.High,
			Doc: "Format string which can contain <code>${topic}</code> and <code>${timestamp}</code> as placeholders for the topic and timestamp, respectively."}).
		Define(config.Key{Name: "timestamp.format", Type: config.String, Default: "yyyyMMdd", Importance: config.High,
			Doc: "Format string for the timestamp that is compatible with <code>java.text.SimpleDateFormat</code>."})
}

type timestampRouter struct {
	topicFormat string
	format      *dateFormat
}

func newTimestampRouter(v *config.Values) (Transformation, error) {
	f, err := compileDateFormat(v.String("timestamp.format"))
	if err != nil {
		return nil, config.Invalid("timestamp.format", v.String("timestamp.format"), err.Error())
	}
	return &timestampRouter{topicFormat: v.String("topic.format"), format: f}, nil
}

func (t *timestampRouter) Apply(r *data.Record) (*data.Record, error) {
	if r.Timestamp.IsZero() {
		return nil, dataErr("Timestamp missing on record: %s", recordString(r))
	}
	topic := strings.ReplaceAll(t.topicFormat, "${topic}", r.Topic)
	topic = strings.ReplaceAll(topic, "${timestamp}", t.format.Format(r.Timestamp))
	out := *r
	out.Topic = topic
	return &out, nil
}

// recordString renders a record as ConnectRecord.toString does.
func recordString(r *data.Record) string {
	part := "null"
	if r.Partition != data.NoPartition {
		part = fmt.Sprint(r.Partition)
	}
	ts := "null"
	if !r.Timestamp.IsZero() {
		ts = fmt.Sprint(r.Timestamp.UnixMilli())
	}
	schema := func(s *data.Schema) string {
		if s == nil {
			return "null"
		}
		return s.String()
	}
	// ConnectHeaders prints its list (Java's "[a, b]"), or nothing when no
	// header was ever added; ConnectHeader names a struct value's schema
	// when it was given none.
	headers := ""
	if len(r.Headers) > 0 {
		hs := make([]string, len(r.Headers))
		for i, h := range r.Headers {
			hsch := h.Schema
			if st, ok := h.Value.(*data.Struct); ok && hsch == nil && st != nil {
				hsch = st.Schema()
			}
			hs[i] = "ConnectHeader(key=" + h.Key + ", value=" + data.FormatValue(h.Value) + ", schema=" + schema(hsch) + ")"
		}
		headers = "[" + strings.Join(hs, ", ") + "]"
	}
	return fmt.Sprintf("ConnectRecord{topic='%s', kafkaPartition=%s, key=%s, keySchema=%s, value=%s, valueSchema=%s, timestamp=%s, headers=ConnectHeaders(headers=%s)}",
		r.Topic, part, data.FormatValue(r.Key), schema(r.KeySchema), data.FormatValue(r.Value), schema(r.ValueSchema), ts, headers)
}

const filterDoc = "Drops all records, filtering them from subsequent transformations in the chain. This is intended to be used conditionally to filter out records matching (or not matching) a particular Predicate."

type filter struct{}

func newFilter(*config.Values) (Transformation, error) { return filter{}, nil }

func (filter) Apply(*data.Record) (*data.Record, error) { return nil, nil }

package convert

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// jkind is the type of a parsed JSON node. The names Kafka prints in its
// messages (Jackson's JsonNodeType) come from jkind.String.
type jkind uint8

const (
	jMissing jkind = iota // absent: an empty document or a missing field
	jNull
	jBool
	jInt   // integral literal: no fraction, no exponent
	jFloat // any other number literal
	jString
	jArray
	jObject
	jRaw // validated but not built: only start and end are set
)

func (k jkind) String() string {
	switch k {
	case jMissing:
		return "MISSING"
	case jNull:
		return "NULL"
	case jBool:
		return "BOOLEAN"
	case jInt, jFloat:
		return "NUMBER"
	case jString:
		return "STRING"
	case jArray:
		return "ARRAY"
	case jRaw:
		return "RAW"
	}
	return "OBJECT"
}

// jnode is one parsed JSON value. Numbers keep their literal text so that
// each schema type can read them exactly (Jackson keeps floats as
// BigDecimal in Kafka's JsonConverter).
type jnode struct {
	kind jkind
	b    bool
	s    string   // string value or number literal
	kids []jnode  // array elements or object member values
	keys []string // object member names, parallel to kids
	// start and end delimit the node's text in the document; the schema
	// cache is keyed by the text of the schema object.
	start, end int
}

// get returns the member named key, or nil. hint is the index where the
// member is expected (struct fields usually come in schema order).
func (n *jnode) get(key string, hint int) *jnode {
	if hint >= 0 && hint < len(n.keys) && n.keys[hint] == key {
		return &n.kids[hint]
	}
	for i, k := range n.keys {
		if k == key {
			return &n.kids[i]
		}
	}
	return nil
}

// Limits Jackson applies by default (StreamReadConstraints); the depth limit
// also keeps recursion bounded on hostile input.
const (
	maxDepth     = 1000
	maxNumberLen = 1000
)

// jsonParser parses one JSON document the way Kafka's JsonDeserializer
// (Jackson's ObjectMapper.readTree) accepts it: strict RFC 8259 syntax, no
// NaN or comments, duplicate member names keep the first position and the
// last value, and anything after the first complete value is ignored.
type jsonParser struct {
	buf   []byte
	pos   int
	depth int
	// lazySchema makes the root object's "schema" member a jRaw node: it is
	// only checked for syntax, and built when the schema cache misses.
	lazySchema bool
}

type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

func (p *jsonParser) fail(format string, args ...any) error {
	return &syntaxError{msg: fmt.Sprintf(format, args...), off: p.pos}
}

// parseJSON parses a document. An empty (or all-whitespace) document gives
// a node of kind jMissing, as Jackson's readTree does.
func parseJSON(b []byte) (jnode, error) {
	return parseDoc(b, false)
}

// parseDoc is parseJSON; with lazySchema the root object's "schema" member
// is validated but returned as a jRaw node, for parseJSON on its text later.
func parseDoc(b []byte, lazySchema bool) (jnode, error) {
	p := jsonParser{buf: b, lazySchema: lazySchema}
	if len(b) >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf {
		p.pos = 3 // a UTF-8 byte order mark is skipped
	}
	p.skipSpace()
	if p.pos == len(p.buf) {
		return jnode{kind: jMissing}, nil
	}
	var n jnode
	if err := p.value(&n); err != nil {
		return jnode{}, err
	}
	// Jackson insists that a root-level number is followed by whitespace
	// (or the end), then stops reading.
	if (n.kind == jInt || n.kind == jFloat) && p.pos < len(p.buf) && !isSpace(p.buf[p.pos]) {
		return jnode{}, p.fail("unexpected character %q after root-level number", p.buf[p.pos])
	}
	return n, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.buf) && isSpace(p.buf[p.pos]) {
		p.pos++
	}
}

// value parses one value into n. A nil n validates the value without
// building anything (no allocation), for the lazily built schema.
func (p *jsonParser) value(n *jnode) error {
	if p.pos >= len(p.buf) {
		return p.fail("unexpected end of input")
	}
	var scratch jnode
	if n == nil {
		n = &scratch
	}
	discard := n == &scratch
	n.start = p.pos
	var err error
	switch c := p.buf[p.pos]; {
	case c == '{':
		err = p.object(n, discard)
	case c == '[':
		err = p.array(n, discard)
	case c == '"':
		n.kind = jString
		n.s, err = p.str(discard)
	case c == '-' || (c >= '0' && c <= '9'):
		err = p.number(n, discard)
	case c == 't':
		n.kind, n.b = jBool, true
		err = p.literal("true")
	case c == 'f':
		n.kind = jBool
		err = p.literal("false")
	case c == 'n':
		n.kind = jNull
		err = p.literal("null")
	default:
		err = p.fail("unexpected character %q", c)
	}
	n.end = p.pos
	return err
}

func (p *jsonParser) literal(word string) error {
	if len(p.buf)-p.pos < len(word) || string(p.buf[p.pos:p.pos+len(word)]) != word {
		return p.fail("unrecognized token")
	}
	p.pos += len(word)
	// "truex" is one unrecognized token for Jackson, not true then x.
	if p.pos < len(p.buf) {
		c := p.buf[p.pos]
		if c == '_' || c == '$' || c >= 0x80 || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z') {
			return p.fail("unrecognized token")
		}
	}
	return nil
}

func (p *jsonParser) number(n *jnode, discard bool) error {
	start := p.pos
	digits := func() int {
		s := p.pos
		for p.pos < len(p.buf) && p.buf[p.pos] >= '0' && p.buf[p.pos] <= '9' {
			p.pos++
		}
		return p.pos - s
	}
	if p.buf[p.pos] == '-' {
		p.pos++
	}
	intStart := p.pos
	if nd := digits(); nd == 0 {
		return p.fail("invalid number: no digits")
	} else if nd > 1 && p.buf[intStart] == '0' {
		return p.fail("invalid number: leading zeroes not allowed")
	}
	kind := jInt
	if p.pos < len(p.buf) && p.buf[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return p.fail("invalid number: decimal point not followed by a digit")
		}
		kind = jFloat
	}
	if p.pos < len(p.buf) && (p.buf[p.pos] == 'e' || p.buf[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.buf) && (p.buf[p.pos] == '+' || p.buf[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return p.fail("invalid number: exponent without digits")
		}
		kind = jFloat
	}
	if p.pos-start > maxNumberLen {
		return p.fail("number longer than %d characters", maxNumberLen)
	}
	n.kind = kind
	if !discard {
		n.s = string(p.buf[start:p.pos])
	}
	return nil
}

// str reads a string literal; p.pos is at the opening quote. With discard
// it only validates.
func (p *jsonParser) str(discard bool) (string, error) {
	p.pos++
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.buf) {
		c := p.buf[p.pos]
		if c == '"' {
			raw := p.buf[start:p.pos]
			if !utf8.Valid(raw) {
				return "", p.fail("invalid UTF-8 in string")
			}
			p.pos++
			if discard {
				return "", nil
			}
			return string(raw), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.fail("unescaped control character %#x in string", c)
		}
		p.pos++
	}
	out := append([]byte(nil), p.buf[start:p.pos]...)
	for p.pos < len(p.buf) {
		c := p.buf[p.pos]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", p.fail("invalid UTF-8 in string")
			}
			p.pos++
			return string(out), nil
		case c < 0x20:
			return "", p.fail("unescaped control character %#x in string", c)
		case c != '\\':
			out = append(out, c)
			p.pos++
			continue
		}
		p.pos++
		if p.pos >= len(p.buf) {
			break
		}
		e := p.buf[p.pos]
		p.pos++
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				// A pair makes one character; a lone surrogate (which Java
				// would keep) has no UTF-8 form and becomes U+FFFD.
				if r < 0xdc00 && p.pos+1 < len(p.buf) && p.buf[p.pos] == '\\' && p.buf[p.pos+1] == 'u' {
					save := p.pos
					p.pos += 2
					r2, err := p.hex4()
					if err != nil {
						return "", err
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						continue
					}
					p.pos = save
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			p.pos--
			return "", p.fail("unrecognized character escape %q", e)
		}
	}
	return "", p.fail("unexpected end of input in string")
}

func (p *jsonParser) hex4() (rune, error) {
	if len(p.buf)-p.pos < 4 {
		return 0, p.fail("unexpected end of input in \\u escape")
	}
	var r rune
	for _, c := range p.buf[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, p.fail("invalid hex digit %q in \\u escape", c)
		}
	}
	p.pos += 4
	return r, nil
}

// addMember adds a member to an object node, as settleLast settles it.
func (n *jnode) addMember(key string, v jnode, index map[string]int) map[string]int {
	n.keys = append(n.keys, key)
	n.kids = append(n.kids, v)
	return n.settleLast(index)
}

// settleLast handles the member just appended: a repeated name keeps its
// first position and takes the last value, as Jackson's ObjectNode does.
// index maps names to positions once the object is large; the possibly new
// index is returned.
func (n *jnode) settleLast(index map[string]int) map[string]int {
	last := len(n.keys) - 1
	key := n.keys[last]
	dup := -1
	if index != nil {
		if i, ok := index[key]; ok {
			dup = i
		}
	} else {
		for i, k := range n.keys[:last] {
			if k == key {
				dup = i
				break
			}
		}
	}
	if dup >= 0 {
		n.kids[dup] = n.kids[last]
		n.keys, n.kids = n.keys[:last], n.kids[:last]
		return index
	}
	if index != nil {
		index[key] = last
	} else if len(n.keys) > 16 {
		index = make(map[string]int, 2*len(n.keys))
		for i, k := range n.keys {
			index[k] = i
		}
	}
	return index
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.fail("document nested deeper than %d levels", maxDepth)
	}
	return nil
}

func (p *jsonParser) array(n *jnode, discard bool) error {
	if err := p.enter(); err != nil {
		return err
	}
	n.kind = jArray
	p.pos++
	p.skipSpace()
	if p.pos < len(p.buf) && p.buf[p.pos] == ']' {
		p.pos++
		p.depth--
		return nil
	}
	for {
		p.skipSpace()
		var kid *jnode
		if !discard {
			n.kids = append(n.kids, jnode{})
			kid = &n.kids[len(n.kids)-1]
		}
		if err := p.value(kid); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.buf) {
			return p.fail("unexpected end of input in array")
		}
		switch p.buf[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			return nil
		default:
			return p.fail("unexpected character %q in array: expected ',' or ']'", p.buf[p.pos])
		}
	}
}

func (p *jsonParser) object(n *jnode, discard bool) error {
	if err := p.enter(); err != nil {
		return err
	}
	n.kind = jObject
	p.pos++
	p.skipSpace()
	if p.pos < len(p.buf) && p.buf[p.pos] == '}' {
		p.pos++
		p.depth--
		return nil
	}
	var index map[string]int // built once an object grows past a few members
	for {
		p.skipSpace()
		if p.pos >= len(p.buf) || p.buf[p.pos] != '"' {
			return p.fail("expected a double-quoted member name")
		}
		key, err := p.str(discard)
		if err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.buf) || p.buf[p.pos] != ':' {
			return p.fail("expected ':' after member name")
		}
		p.pos++
		p.skipSpace()
		if discard {
			if err := p.value(nil); err != nil {
				return err
			}
		} else if p.lazySchema && p.depth == 1 && key == "schema" {
			v := jnode{kind: jRaw, start: p.pos}
			if p.pos < len(p.buf) && p.buf[p.pos] == 'n' {
				v.kind = jNull
			}
			if err := p.value(nil); err != nil {
				return err
			}
			v.end = p.pos
			index = n.addMember(key, v, index)
		} else {
			// Parse into a new last slot, then let addMember settle a
			// repeated name; parsing into a local would move it to the heap.
			n.keys = append(n.keys, key)
			n.kids = append(n.kids, jnode{})
			if err := p.value(&n.kids[len(n.kids)-1]); err != nil {
				return err
			}
			index = n.settleLast(index)
		}
		p.skipSpace()
		if p.pos >= len(p.buf) {
			return p.fail("unexpected end of input in object")
		}
		switch p.buf[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.depth--
			return nil
		default:
			return p.fail("unexpected character %q in object: expected ',' or '}'", p.buf[p.pos])
		}
	}
}

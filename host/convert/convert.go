package convert

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Converter is Kafka Connect's Converter: it turns a record key or value
// into the bytes written to Kafka and back.
//
// FromConnectData returns nil bytes for a null value without a schema (a
// tombstone). ToConnectData receives nil for a null record key or value.
// A top-level data.Raw value is bytes the connector already serialized;
// every converter here returns it unchanged.
type Converter interface {
	FromConnectData(topic string, headers data.Headers, s *data.Schema, v any) ([]byte, error)
	ToConnectData(topic string, headers data.Headers, b []byte) (*data.Schema, any, error)
}

// HeaderConverter is Kafka Connect's HeaderConverter: it turns one header
// value into bytes and back.
type HeaderConverter interface {
	FromConnectHeader(topic, key string, s *data.Schema, v any) ([]byte, error)
	ToConnectHeader(topic, key string, b []byte) (*data.Schema, any, error)
}

// Plugin types, as the REST API names them.
const (
	TypeConverter       = "converter"
	TypeHeaderConverter = "header_converter"
)

// Class describes one converter class for the REST API: a class that is
// both a Converter and a HeaderConverter is listed once per type, as Kafka
// Connect lists it.
type Class struct {
	// Name is the Java class name Kafka Connect configurations use.
	Name string
	// Type is TypeConverter or TypeHeaderConverter.
	Type string
	// Aliases are the other names New and NewHeader accept: the simple
	// class name and the simple name without its type suffix.
	Aliases []string
	// Config is the class's ConfigDef, keys in Kafka's declaration order.
	// It is shared: read it, do not define more keys in it.
	Config *config.Def
}

// class is a registry entry.
type class struct {
	name       string
	def        *config.Def
	newConv    func(usage string, props map[string]string) (Converter, error)
	newHeader  func(props map[string]string) (HeaderConverter, error)
	simpleName string
}

const (
	pkgStorage    = "org.apache.kafka.connect.storage."
	pkgConverters = "org.apache.kafka.connect.converters."
	pkgJSON       = "org.apache.kafka.connect.json."
)

// both builds the constructors of a converter that is also a header
// converter, the way Kafka Connect configures one class for either use.
func both[T interface {
	Converter
	HeaderConverter
}](mk func(usage string, props map[string]string) (T, error)) (
	func(string, map[string]string) (Converter, error),
	func(map[string]string) (HeaderConverter, error),
) {
	return func(usage string, props map[string]string) (Converter, error) {
			return mk(usage, props)
		}, func(props map[string]string) (HeaderConverter, error) {
			return mk(usageHeader, props)
		}
}

func stateless[T interface {
	Converter
	HeaderConverter
}](v T) func(string, map[string]string) (T, error) {
	return func(string, map[string]string) (T, error) { return v, nil }
}

var registry = func() []class {
	var cs []class
	add := func(pkg, simple string, def *config.Def,
		nc func(string, map[string]string) (Converter, error),
		nh func(map[string]string) (HeaderConverter, error)) {
		cs = append(cs, class{name: pkg + simple, simpleName: simple, def: def, newConv: nc, newHeader: nh})
	}
	nc, nh := both(newJSONFromProps)
	add(pkgJSON, "JsonConverter", jsonConfigDef, nc, nh)
	nc, nh = both(newStringFromProps)
	add(pkgStorage, "StringConverter", stringConfigDef, nc, nh)
	nc, nh = both(stateless(ByteArrayConverter{}))
	add(pkgConverters, "ByteArrayConverter", baseConfigDef, nc, nh)
	nc, nh = both(stateless(ShortConverter{}))
	add(pkgConverters, "ShortConverter", baseConfigDef, nc, nh)
	nc, nh = both(stateless(IntegerConverter{}))
	add(pkgConverters, "IntegerConverter", baseConfigDef, nc, nh)
	nc, nh = both(stateless(LongConverter{}))
	add(pkgConverters, "LongConverter", baseConfigDef, nc, nh)
	nc, nh = both(stateless(FloatConverter{}))
	add(pkgConverters, "FloatConverter", baseConfigDef, nc, nh)
	nc, nh = both(stateless(DoubleConverter{}))
	add(pkgConverters, "DoubleConverter", baseConfigDef, nc, nh)
	nc, nh = both(stateless(BooleanConverter{}))
	add(pkgConverters, "BooleanConverter", baseConfigDef, nc, nh)
	add(pkgStorage, "SimpleHeaderConverter", simpleHeaderConfigDef, nil,
		func(map[string]string) (HeaderConverter, error) { return SimpleHeaderConverter{}, nil })
	return cs
}()

// aliases returns the simple name and Kafka's pruned names: the simple name
// without "Converter" for a converter class, without "HeaderConverter" for
// a header converter class. Kafka keeps one alias map for all plugin types
// and resolves every class setting through it, so a class answers to each
// of its aliases whatever it is configured as (header.converter=Json loads
// JsonConverter); typ only orders the list.
func (c *class) aliases(typ string) []string {
	out := []string{c.simpleName}
	add := func(suffix string) {
		if i := strings.LastIndex(c.simpleName, suffix); i > 0 && !slices.Contains(out, c.simpleName[:i]) {
			out = append(out, c.simpleName[:i])
		}
	}
	conv := func() {
		if c.newConv != nil {
			add("Converter")
		}
	}
	header := func() {
		if c.newHeader != nil {
			add("HeaderConverter")
		}
	}
	if typ == TypeHeaderConverter {
		header()
		conv()
	} else {
		conv()
		header()
	}
	return out
}

func lookup(name, typ string) (*class, error) {
	n := strings.TrimSpace(name)
	for i := range registry {
		c := &registry[i]
		if (typ == TypeConverter && c.newConv == nil) || (typ == TypeHeaderConverter && c.newHeader == nil) {
			continue
		}
		if c.name == n || slices.Contains(c.aliases(typ), n) {
			return c, nil
		}
	}
	var known []string
	for _, c := range Classes() {
		if c.Type == typ {
			known = append(known, c.Name)
		}
	}
	return nil, fmt.Errorf("%w %q; known %s classes: %s", ErrUnknownClass, name, typ, strings.Join(known, ", "))
}

// Exists reports whether className (a class name or an alias) is a class
// of type typ (TypeConverter or TypeHeaderConverter).
func Exists(className, typ string) bool {
	_, err := lookup(className, typ)
	return err == nil
}

// New returns the Converter of a class, configured as Kafka Connect
// configures a key (isKey) or value converter. className is a Java class
// name (org.apache.kafka.connect.json.JsonConverter) or an alias
// (JsonConverter, Json); props are the converter's own settings, already
// stripped of their prefix (see PrefixedProps).
func New(className string, isKey bool, props map[string]string) (Converter, error) {
	c, err := lookup(className, TypeConverter)
	if err != nil {
		return nil, err
	}
	usage := usageValue
	if isKey {
		usage = usageKey
	}
	conv, err := c.newConv(usage, props)
	if err != nil {
		return nil, fmt.Errorf("configure %s: %w", c.name, err)
	}
	return conv, nil
}

// NewHeader returns the HeaderConverter of a class, configured for headers.
func NewHeader(className string, props map[string]string) (HeaderConverter, error) {
	c, err := lookup(className, TypeHeaderConverter)
	if err != nil {
		return nil, err
	}
	conv, err := c.newHeader(props)
	if err != nil {
		return nil, fmt.Errorf("configure %s: %w", c.name, err)
	}
	return conv, nil
}

// Classes lists every converter and header converter class, sorted by name
// then type, with its config definition.
func Classes() []Class {
	var out []Class
	for i := range registry {
		c := &registry[i]
		if c.newConv != nil {
			out = append(out, Class{Name: c.name, Type: TypeConverter, Aliases: c.aliases(TypeConverter), Config: c.def})
		}
		if c.newHeader != nil {
			out = append(out, Class{Name: c.name, Type: TypeHeaderConverter, Aliases: c.aliases(TypeHeaderConverter), Config: c.def})
		}
	}
	slices.SortFunc(out, func(a, b Class) int {
		if a.Name != b.Name {
			return strings.Compare(a.Name, b.Name)
		}
		return strings.Compare(a.Type, b.Type)
	})
	return out
}

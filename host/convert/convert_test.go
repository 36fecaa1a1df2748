package convert

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

func TestNewResolvesKafkaClassNames(t *testing.T) {
	cases := []struct {
		name string
		want string // Go type of the converter
	}{
		{"org.apache.kafka.connect.json.JsonConverter", "*convert.JSONConverter"},
		{"JsonConverter", "*convert.JSONConverter"},
		{"Json", "*convert.JSONConverter"},
		{" org.apache.kafka.connect.storage.StringConverter ", "*convert.StringConverter"},
		{"String", "*convert.StringConverter"},
		{"org.apache.kafka.connect.converters.ByteArrayConverter", "convert.ByteArrayConverter"},
		{"org.apache.kafka.connect.converters.ShortConverter", "convert.ShortConverter"},
		{"org.apache.kafka.connect.converters.IntegerConverter", "convert.IntegerConverter"},
		{"LongConverter", "convert.LongConverter"},
		{"Float", "convert.FloatConverter"},
		{"org.apache.kafka.connect.converters.DoubleConverter", "convert.DoubleConverter"},
		{"org.apache.kafka.connect.converters.BooleanConverter", "convert.BooleanConverter"},
	}
	for _, tc := range cases {
		c, err := New(tc.name, false, nil)
		if err != nil {
			t.Errorf("New(%q): %v", tc.name, err)
			continue
		}
		if got := fmt.Sprintf("%T", c); got != tc.want {
			t.Errorf("New(%q) = %s, want %s", tc.name, got, tc.want)
		}
	}
	_, err := New("org.apache.kafka.connect.storage.SimpleHeaderConverter", false, nil)
	if !errors.Is(err, ErrUnknownClass) {
		t.Errorf("SimpleHeaderConverter is not a Converter; New gave %v", err)
	}
}

func TestNewUnknownClassListsKnownOnes(t *testing.T) {
	_, err := New("io.confluent.connect.avro.AvroConverter", true, nil)
	if !errors.Is(err, ErrUnknownClass) {
		t.Fatalf("error = %v, want ErrUnknownClass", err)
	}
	for _, s := range []string{`"io.confluent.connect.avro.AvroConverter"`, "org.apache.kafka.connect.json.JsonConverter", "org.apache.kafka.connect.converters.BooleanConverter"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q should mention %s", err, s)
		}
	}
	if strings.Contains(err.Error(), "SimpleHeaderConverter") {
		t.Errorf("error %q lists a header converter as a converter", err)
	}
}

func TestNewPassesProps(t *testing.T) {
	cfg := map[string]string{
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
		"key.converter.schemas.enable":   "true",
		"value.converter.":               "ignored",
	}
	props := PrefixedProps(cfg, "value.converter.")
	if len(props) != 1 || props["schemas.enable"] != "false" {
		t.Fatalf("PrefixedProps = %v", props)
	}
	c, err := New(cfg["value.converter"], false, props)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.FromConnectData("t", nil, data.StringSchema, "x")
	if err != nil || string(b) != `"x"` {
		t.Fatalf("schemas.enable=false not applied: %s %v", b, err)
	}
	_, err = New("JsonConverter", false, map[string]string{"schemas.enable": "yes"})
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Name != "schemas.enable" || !strings.Contains(err.Error(), "configure org.apache.kafka.connect.json.JsonConverter") {
		t.Fatalf("bad setting error = %v", err)
	}
	sc, err := New("StringConverter", true, map[string]string{"converter.encoding": "ISO-8859-1"})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := sc.FromConnectData("t", nil, nil, "é"); string(b) != "\xe9" {
		t.Fatalf("converter.encoding not applied: %x", b)
	}
}

func TestNewHeader(t *testing.T) {
	for name, want := range map[string]string{
		"org.apache.kafka.connect.storage.SimpleHeaderConverter": "convert.SimpleHeaderConverter",
		"SimpleHeaderConverter":                                  "convert.SimpleHeaderConverter",
		"Simple":                                                 "convert.SimpleHeaderConverter",
		"org.apache.kafka.connect.json.JsonConverter":            "*convert.JSONConverter",
		"JsonConverter":                                          "*convert.JSONConverter",
		"StringConverter":                                        "*convert.StringConverter",
	} {
		h, err := NewHeader(name, nil)
		if err != nil {
			t.Errorf("NewHeader(%q): %v", name, err)
			continue
		}
		if got := fmt.Sprintf("%T", h); got != want {
			t.Errorf("NewHeader(%q) = %s, want %s", name, got, want)
		}
	}
}

// TestAliasesAcrossTypes checks that an alias names its class whatever the
// setting: Kafka keeps one alias map for every plugin type (the simple name
// and the name pruned of its type's suffix), and its class loader resolves
// header.converter=Json through it as it does value.converter=Json.
func TestAliasesAcrossTypes(t *testing.T) {
	for alias, want := range map[string]string{
		"Json":      "*convert.JSONConverter",
		"String":    "*convert.StringConverter",
		"ByteArray": "convert.ByteArrayConverter",
		"Short":     "convert.ShortConverter",
		"Integer":   "convert.IntegerConverter",
		"Long":      "convert.LongConverter",
		"Float":     "convert.FloatConverter",
		"Double":    "convert.DoubleConverter",
		"Boolean":   "convert.BooleanConverter",
	} {
		h, err := NewHeader(alias, nil)
		if err != nil {
			t.Errorf("NewHeader(%q): %v", alias, err)
			continue
		}
		if got := fmt.Sprintf("%T", h); got != want {
			t.Errorf("NewHeader(%q) = %s, want %s", alias, got, want)
		}
	}
	// SimpleHeaderConverter's alias names a class that is no Converter.
	if _, err := New("Simple", false, nil); !errors.Is(err, ErrUnknownClass) {
		t.Errorf("New(Simple) = %v, want ErrUnknownClass", err)
	}
	for _, c := range Classes() {
		if c.Name == pkgJSON+"JsonConverter" && !slices.Contains(c.Aliases, "Json") {
			t.Errorf("%s/%s aliases = %v, want Json among them", c.Name, c.Type, c.Aliases)
		}
	}
}

func TestClasses(t *testing.T) {
	cs := Classes()
	var got []string
	for _, c := range cs {
		got = append(got, c.Name+"/"+c.Type)
	}
	want := []string{
		"org.apache.kafka.connect.converters.BooleanConverter/converter",
		"org.apache.kafka.connect.converters.BooleanConverter/header_converter",
		"org.apache.kafka.connect.converters.ByteArrayConverter/converter",
		"org.apache.kafka.connect.converters.ByteArrayConverter/header_converter",
		"org.apache.kafka.connect.converters.DoubleConverter/converter",
		"org.apache.kafka.connect.converters.DoubleConverter/header_converter",
		"org.apache.kafka.connect.converters.FloatConverter/converter",
		"org.apache.kafka.connect.converters.FloatConverter/header_converter",
		"org.apache.kafka.connect.converters.IntegerConverter/converter",
		"org.apache.kafka.connect.converters.IntegerConverter/header_converter",
		"org.apache.kafka.connect.converters.LongConverter/converter",
		"org.apache.kafka.connect.converters.LongConverter/header_converter",
		"org.apache.kafka.connect.converters.ShortConverter/converter",
		"org.apache.kafka.connect.converters.ShortConverter/header_converter",
		"org.apache.kafka.connect.json.JsonConverter/converter",
		"org.apache.kafka.connect.json.JsonConverter/header_converter",
		"org.apache.kafka.connect.storage.SimpleHeaderConverter/header_converter",
		"org.apache.kafka.connect.storage.StringConverter/converter",
		"org.apache.kafka.connect.storage.StringConverter/header_converter",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Classes() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, c := range cs {
		names := c.Config.Names()
		switch {
		case strings.HasSuffix(c.Name, "JsonConverter"):
			if strings.Join(names, ",") != "converter.type,schemas.enable,schemas.cache.size,schema.content,decimal.format,replace.null.with.default" {
				t.Errorf("JsonConverter configs = %v", names)
			}
			k, _ := c.Config.Key("schemas.enable")
			if d, ok := k.DefaultString(); k.Type != config.Boolean || d != "true" || !ok || k.Importance != config.High || k.Group != "Schemas" {
				t.Errorf("schemas.enable = %+v", k)
			}
			k, _ = c.Config.Key("decimal.format")
			if k.Validator == nil || k.Validator.String() != "(case insensitive) [BASE64, NUMERIC]" || k.OrderInGroup != 0 || k.Group != "Serialization" {
				t.Errorf("decimal.format = %+v", k)
			}
		case strings.HasSuffix(c.Name, "StringConverter"):
			k, _ := c.Config.Key("converter.encoding")
			if d, _ := k.DefaultString(); strings.Join(names, ",") != "converter.type,converter.encoding" || d != "UTF-8" || k.OrderInGroup != -1 {
				t.Errorf("StringConverter configs = %+v", c.Config.Keys())
			}
		case strings.HasSuffix(c.Name, "SimpleHeaderConverter"):
			if len(names) != 0 {
				t.Errorf("SimpleHeaderConverter configs = %v", names)
			}
		default:
			k, _ := c.Config.Key("converter.type")
			if strings.Join(names, ",") != "converter.type" || !k.Required || k.Validator.String() != "[key, value, header]" {
				t.Errorf("%s configs = %+v", c.Name, c.Config.Keys())
			}
		}
	}
}

package convert

import (
	"maps"
	"strings"

	"github.com/sluice-io/sluice/pluginsdk/config"
)

// Setting names.
const (
	// ConverterTypeConfig is set by the framework: key, value or header.
	ConverterTypeConfig = "converter.type"
	// EncodingConfig is StringConverter's character set.
	EncodingConfig = "converter.encoding"
	// SchemasEnableConfig and the rest are JsonConverter's settings.
	SchemasEnableConfig          = "schemas.enable"
	SchemasCacheSizeConfig       = "schemas.cache.size"
	DecimalFormatConfig          = "decimal.format"
	ReplaceNullWithDefaultConfig = "replace.null.with.default"
	SchemaContentConfig          = "schema.content"
)

// Converter usages, the values of converter.type.
const (
	usageKey    = "key"
	usageValue  = "value"
	usageHeader = "header"
)

// converterDef is ConverterConfig's definition, which every converter's
// starts with.
func converterDef() *config.Def {
	return config.NewDef().Define(config.Key{
		Name: ConverterTypeConfig, Type: config.String, Required: true,
		Validator:  config.ValidString(usageKey, usageValue, usageHeader),
		Importance: config.Low, Doc: "How this converter will be used.",
	})
}

// The config definitions of the converters, as Kafka declares them.
var (
	baseConfigDef   = converterDef()
	stringConfigDef = converterDef().Define(config.Key{
		Name: EncodingConfig, Type: config.String, Default: "UTF-8", Importance: config.High,
		Doc:   "The name of the Java character set to use for encoding strings as byte arrays.",
		Width: config.WidthMedium, DisplayName: "Encoding",
	})
	jsonConfigDef = converterDef().
			Define(config.Key{
			Name: SchemasEnableConfig, Type: config.Boolean, Default: true, Importance: config.High,
			Doc:   "Include schemas within each of the serialized values and keys.",
			Group: "Schemas", OrderInGroup: 0, Width: config.WidthMedium, DisplayName: "Enable Schemas",
		}).
		Define(config.Key{
			Name: SchemasCacheSizeConfig, Type: config.Int, Default: 1000, Importance: config.High,
			Doc:   "The maximum number of schemas that can be cached in this converter instance.",
			Group: "Schemas", OrderInGroup: 1, Width: config.WidthMedium, DisplayName: "Schema Cache Size",
		}).
		Define(config.Key{
			// KIP-1054 (Kafka 4.0): no default; unset or empty means each
			// message carries its schema in the envelope.
			Name: SchemaContentConfig, Type: config.String, Importance: config.High,
			Doc: "When set, this is used as the schema for all messages, and the schemas within each of the message will be ignored." +
				" Otherwise, the schema will be included in the content of each message." +
				" This configuration applies only 'schemas.enable' is true, and it exclusively affects the sink connector.",
			Group: "Schemas", OrderInGroup: 2, Width: config.WidthMedium, DisplayName: "Schema Content",
		}).
		Define(config.Key{
			Name: DecimalFormatConfig, Type: config.String, Default: "BASE64", Importance: config.Low,
			Validator: config.CaseInsensitiveValidString("BASE64", "NUMERIC"),
			Doc: "Controls which format this converter will serialize decimals in." +
				" This value is case insensitive and can be either 'BASE64' (default) or 'NUMERIC'",
			Group: "Serialization", OrderInGroup: 0, Width: config.WidthMedium, DisplayName: "Decimal Format",
		}).
		Define(config.Key{
			Name: ReplaceNullWithDefaultConfig, Type: config.Boolean, Default: true, Importance: config.Low,
			Doc: "Whether to replace fields that have a default value and that are null to the default value." +
				" When set to true, the default value is used, otherwise null is used.",
			Group: "Serialization", OrderInGroup: 1, Width: config.WidthMedium, DisplayName: "Replace null with default",
		})
	// SimpleHeaderConverter has no settings, not even converter.type.
	simpleHeaderConfigDef = config.NewDef()
)

// parseConfig parses a converter's settings with converter.type set to its
// usage, as Kafka's configure(props, isKey) does.
func parseConfig(def *config.Def, usage string, props map[string]string) (*config.Values, error) {
	p := maps.Clone(props)
	if p == nil {
		p = map[string]string{}
	}
	p[ConverterTypeConfig] = usage
	return def.Parse(p)
}

// PrefixedProps returns the settings of cfg whose keys start with prefix,
// with the prefix removed: PrefixedProps(cfg, "value.converter.") turns
// "value.converter.schemas.enable" into "schemas.enable", as Kafka's
// originalsWithPrefix does when it configures a converter. The key equal to
// the prefix without its final dot ("value.converter", the class) is not
// included.
func PrefixedProps(cfg map[string]string, prefix string) map[string]string {
	out := make(map[string]string)
	for k, v := range cfg {
		if len(k) > len(prefix) && strings.HasPrefix(k, prefix) {
			out[k[len(prefix):]] = v
		}
	}
	return out
}

package convert

import (
	"strconv"
	"strings"
)

// ConfigKey declares one converter setting the way Kafka's ConfigDef does,
// so that the REST API can list converter configs
// (GET /connector-plugins/{plugin}/config) with Kafka's names and defaults.
type ConfigKey struct {
	Name string
	// Type is Kafka's ConfigDef.Type name: "BOOLEAN", "INT" or "STRING".
	Type string
	// Default is the default in Kafka's string form; HasDefault is false for
	// settings without one (Kafka's NO_DEFAULT_VALUE).
	Default    string
	HasDefault bool
	// Importance is "HIGH", "MEDIUM" or "LOW".
	Importance   string
	Doc          string
	Group        string
	OrderInGroup int
	Width        string
	DisplayName  string
	// ValidValues lists the accepted values, when the setting is an enumeration.
	ValidValues []string
}

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
)

// Converter usages, the values of converter.type.
const (
	usageKey    = "key"
	usageValue  = "value"
	usageHeader = "header"
)

// TODO(config): move these declarations to pluginsdk/config once it lands,
// keeping names, types, defaults and docs as they are.

var converterTypeKey = ConfigKey{
	Name: ConverterTypeConfig, Type: "STRING", Importance: "LOW",
	Doc:         "How this converter will be used.",
	ValidValues: []string{usageKey, usageValue, usageHeader},
}

// baseConfigs are ConverterConfig's settings, shared by every converter.
var baseConfigs = []ConfigKey{converterTypeKey}

var stringConfigs = []ConfigKey{
	converterTypeKey,
	{
		Name: EncodingConfig, Type: "STRING", Default: "UTF-8", HasDefault: true, Importance: "HIGH",
		Doc:          "The name of the Java character set to use for encoding strings as byte arrays.",
		OrderInGroup: -1, Width: "MEDIUM", DisplayName: "Encoding",
	},
}

var jsonConfigs = []ConfigKey{
	converterTypeKey,
	{
		Name: SchemasEnableConfig, Type: "BOOLEAN", Default: "true", HasDefault: true, Importance: "HIGH",
		Doc:   "Include schemas within each of the serialized values and keys.",
		Group: "Schemas", OrderInGroup: 0, Width: "MEDIUM", DisplayName: "Enable Schemas",
	},
	{
		Name: SchemasCacheSizeConfig, Type: "INT", Default: "1000", HasDefault: true, Importance: "HIGH",
		Doc:   "The maximum number of schemas that can be cached in this converter instance.",
		Group: "Schemas", OrderInGroup: 1, Width: "MEDIUM", DisplayName: "Schema Cache Size",
	},
	{
		Name: DecimalFormatConfig, Type: "STRING", Default: "BASE64", HasDefault: true, Importance: "LOW",
		Doc: "Controls which format this converter will serialize decimals in." +
			" This value is case insensitive and can be either 'BASE64' (default) or 'NUMERIC'",
		Group: "Serialization", OrderInGroup: 0, Width: "MEDIUM", DisplayName: "Decimal Format",
		ValidValues: []string{"BASE64", "NUMERIC"},
	},
	{
		Name: ReplaceNullWithDefaultConfig, Type: "BOOLEAN", Default: "true", HasDefault: true, Importance: "LOW",
		Doc: "Whether to replace fields that have a default value and that are null to the default value." +
			" When set to true, the default value is used, otherwise null is used.",
		Group: "Serialization", OrderInGroup: 1, Width: "MEDIUM", DisplayName: "Replace null with default",
	},
}

// parseBool reads a BOOLEAN setting as ConfigDef does: trimmed, case-insensitive.
func parseBool(props map[string]string, name string, def bool) (bool, error) {
	raw, ok := props[name]
	if !ok {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(raw)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, &ConfigError{Name: name, Value: raw, Msg: "Expected value to be either true or false"}
}

// parseInt reads an INT setting as ConfigDef does.
func parseInt(props map[string]string, name string, def int) (int, error) {
	raw, ok := props[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 32)
	if err != nil {
		return 0, &ConfigError{Name: name, Value: raw, Msg: "Not a number of type INT"}
	}
	return int(n), nil
}

// parseChoice reads a STRING setting that must be one of valid, compared
// case-insensitively (ConfigDef.CaseInsensitiveValidString); it returns the
// canonical spelling.
func parseChoice(props map[string]string, name, def string, valid []string) (string, error) {
	raw, ok := props[name]
	if !ok {
		return def, nil
	}
	v := strings.TrimSpace(raw)
	for _, c := range valid {
		if strings.EqualFold(c, v) {
			return c, nil
		}
	}
	return "", &ConfigError{Name: name, Value: raw,
		Msg: "String must be one of (case insensitive): " + strings.Join(valid, ", ")}
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

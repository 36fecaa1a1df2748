// Package config declares connector and transform settings the way Kafka
// Connect's ConfigDef does: each setting is declared once (Key: name, type,
// default or required, importance, documentation, group, validator) in a
// Def, and that one declaration drives everything else — Parse for the
// typed values a connector runs with, Validate for the per-setting results
// of PUT /connector-plugins/{plugin}/config/validate, and Proto for
// GET /connector-plugins/{plugin}/config.
//
//	def := config.NewDef().
//		Define(config.Key{Name: "file", Type: config.String, Required: true,
//			Importance: config.High, Doc: "Source file."}).
//		Define(config.Key{Name: "batch.size", Type: config.Int, Default: 2000,
//			Validator: config.AtLeast(1), Importance: config.Low})
//	vals, err := def.Parse(props)
//
// Parsing follows Kafka's rules: values are trimmed; BOOLEAN is "true" or
// "false" in any case; INT, SHORT and LONG must fit Java's int, short and
// long; LIST is comma-separated with the whitespace around commas dropped
// and "" the empty list; PASSWORD values are Secret, which prints as
// "[hidden]". Messages reach REST users and are Kafka's, word for word:
//
//	Invalid value abc for configuration tasks.max: Not a number of type INT
//	Missing required configuration "file" which has no default value.
//	Invalid value 0 for configuration tasks.max: Value must be at least 1
//
// Properties that are not declared are not errors; Values keeps them
// (Originals, Unknown, WithPrefix) so connectors can pass them on.
//
// Validators run in the plugin that declares them. A Def that crossed the
// wire (DefFromProto, on the worker) keeps only their descriptions.
package config

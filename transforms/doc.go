// Package transforms holds Apache Kafka Connect's built-in single message
// transforms (KIP-66) and predicates (KIP-585), which the worker runs
// between a connector and Kafka: for a source, after poll and before the
// converters; for a sink, after the converters and before put.
//
// A connector configuration names them as Kafka Connect's does:
//
//	transforms=wrap,stamp
//	transforms.wrap.type=org.apache.kafka.connect.transforms.HoistField$Value
//	transforms.wrap.field=content
//	transforms.stamp.type=org.apache.kafka.connect.transforms.InsertField$Value
//	transforms.stamp.timestamp.field=ts
//	transforms.stamp.predicate=notTombstone
//	transforms.stamp.negate=true
//	predicates=notTombstone
//	predicates.notTombstone.type=RecordIsTombstone
//
// Chain builds the chain from such a configuration and ValidateConfig checks
// it for the validate endpoint; AliasDef and Def describe the per-alias
// settings (groups "Transforms: <alias>" and "Predicates: <alias>") as
// Kafka's ConnectorConfig.enrich does. New and NewPredicate make one
// transformation or predicate; Classes lists them for GET /connector-plugins.
//
// # Classes
//
// Transformations, package org.apache.kafka.connect.transforms, with $Key and
// $Value variants: Cast, ExtractField, Flatten, HeaderFrom, HoistField,
// InsertField, MaskField, ReplaceField, SetSchemaMetadata,
// TimestampConverter. Without variants: DropHeaders, Filter, InsertHeader,
// RegexRouter, TimestampRouter, ValueToKey. Predicates, package
// org.apache.kafka.connect.transforms.predicates: HasHeaderKey,
// RecordIsTombstone, TopicNameMatches.
//
// Names accepted: the full class name; the simple name where Kafka has that
// alias (the classes without variants and the predicates: "RegexRouter",
// "TopicNameMatches"); and, beyond Kafka, "InsertField$Value" for the
// nested classes, which Kafka cannot alias because their simple names (Key,
// Value) collide. The abstract base ("...InsertField") is refused with
// Kafka's "This class is abstract and cannot be created. Did you mean ...?".
//
// Settings, defaults, validators and messages are Kafka 4.0's, including
// replace.null.with.default (KIP-1040) on Cast, ExtractField, HeaderFrom,
// InsertField, MaskField, ReplaceField, SetSchemaMetadata,
// TimestampConverter and ValueToKey, field.syntax.version (KIP-821) on
// ExtractField and (as from Kafka 4.1) ValueToKey, MaskField's replacement, TimestampConverter's
// unix.precision. Failures carry Kafka's message and Java exception class
// (Exception); a chain wraps them in a StageError naming the alias and
// class, which the worker's error handling reports.
//
// # Differences from Kafka
//
//   - Regular expressions (RegexRouter.regex, TopicNameMatches.pattern) are
//     Go's RE2: no lookaround, no backreferences; such a pattern is refused
//     as an invalid regex. So is what RE2 would read otherwise than Java:
//     class intersection ([a-z&&[^t]]), a class inside a class
//     ([a-d[m-p]], [[:alpha:]]), the (?U) flag and a backslash before a
//     digit (an octal code to RE2, a backreference or \0 octal to Java).
//     Both still match the whole topic, and RegexRouter's replacement
//     follows Java's syntax ($1, ${name}, \$).
//   - Date patterns (TimestampConverter.format, TimestampRouter.timestamp.format)
//     are SimpleDateFormat's letters G y Y M L w W D d F E u a H k K h m s S z
//     Z X and quoted text, in UTC with English names. Y is read as the
//     calendar year; parsing ignores the week and weekday fields and reads
//     zones as offsets (Z, +hh, +hhmm, +hh:mm, GMT/UTC with or without one).
//     Like Java's lenient default, out-of-range values roll over, spaces
//     and tabs before a field are skipped and text after the last field is
//     ignored. As in Java, dates before 1582-10-15 are Julian (Cast,
//     InsertHeader and TimestampConverter alike), so 0001-01-01T00:00Z in
//     Go's proleptic calendar prints as 0001-01-03.
//   - InsertHeader's value.literal infers null, booleans, numbers and ISO
//     dates, times and timestamps as Values.parseString does; arrays and
//     maps ("[1,2]", "{a:1}") stay strings, and so does a number followed
//     by one of its delimiters (:,[]{}"), which Kafka cuts to the number
//     ("12:30" becomes the INT8 12 there).
//   - ReplaceField still reads blacklist and whitelist, which Kafka 4.0
//     removed (there they would be ignored silently); exclude and include
//     win when both are given.
//   - A masked or replaced Decimal (MaskField) keeps the value's scale;
//     Kafka puts a BigDecimal of its own scale.
//   - A whole-value Cast of a logical type (Decimal, Date, Time, Timestamp)
//     drops the logical name from the result schema; Kafka copies it onto a
//     schema whose value no longer matches it.
//   - SetSchemaMetadata sets the name and version of a schema of any type;
//     Kafka 4.x fails on any but a struct ("Cannot list fields on
//     non-struct type").
//   - Where Kafka's message embeds Java's own text (Cast's unknown type,
//     "Invalid value java.lang.IllegalArgumentException: No enum constant
//     ..."; a SimpleDateFormat pattern it refuses; InsertField's static
//     field without a value, printed as an object hash), Sluice keeps
//     Kafka's words about the setting and leaves the Java text out. Where
//     Kafka fails with a Java runtime exception (HeaderFrom naming a field
//     the struct lacks, TimestampConverter reading a string without a
//     format, ExtractField's empty V2 path), Sluice says what is wrong.
//   - A transformation's predicate that names no alias in predicates, and
//     what a class refuses when configured (InsertField with nothing to
//     insert, HeaderFrom with fields and headers of different lengths, ...),
//     are reported by ValidateConfig; Kafka finds them only when the task
//     starts.
//   - InsertField's offset.field needs the record's Kafka offset: the
//     worker passes it with ChainT.ApplySink; through Apply the record is
//     taken for a source record and the insertion fails, as in Kafka.
//   - Schemas derived from an input schema are cached per schema pointer
//     (Kafka keys its cache by schema equality).
package transforms

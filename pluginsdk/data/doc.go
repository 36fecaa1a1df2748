// Package data is Sluice's copy of Kafka Connect's data API: schemas, structs,
// logical types, headers and the source and sink records connectors exchange
// with the worker. Worker and plugins share it: the worker's converters and
// transforms operate on these values, and package wire moves them across the
// plugin boundary.
//
// Go representation of values, by schema type:
//
//	INT8 int8, INT16 int16, INT32 int32, INT64 int64
//	FLOAT32 float32, FLOAT64 float64, BOOLEAN bool, STRING string, BYTES []byte
//	ARRAY []any
//	MAP   map[string]any when every key is a string, otherwise Map (ordered entries);
//	      readers accept both
//	STRUCT *Struct
//	Decimal Decimal, Date/Time/Timestamp time.Time (UTC)
//
// Schemaless values (nil schema) use the same Go types; numbers read from
// schemaless JSON are int64 or float64, as JsonConverter produces them.
//
// Schemas are built with SchemaBuilder (StructBuilder().Name(..).Field(..)),
// ArrayOf and MapOf, or written as literals; either way they are values not
// to be modified once used. SchemaEqual and ValueEqual compare by content,
// the way Kafka Connect's equals does; String and FormatValue render schemas
// and values for messages. A schema keeps what Kafka Connect's keeps beyond
// the plain fields: the order its parameters were set in (ParameterOrder)
// and whether a name or doc of "" was set at all (EmptyName, EmptyDoc;
// Kafka's name() is then "" rather than null, and JsonConverter writes it).
//
// JavaCalendarDate and JavaCalendarTime turn an instant into Java's calendar
// date and back (Julian before 1582-10-15, as java.util.Date and
// SimpleDateFormat reckon), for everything that prints or parses dates as
// Kafka Connect does; Go's own calendar is proleptic Gregorian.
//
// A value of type Raw is bytes the connector already serialized: the worker
// writes them to Kafka as they are and skips the converter.
//
// BytesAt, RawAt and Int64At make the interface value of a []byte, Raw or
// int64 point at a slot the caller owns instead of allocating a copy, for
// code that makes records by the million; box.go says what the caller
// must then keep to.
package data

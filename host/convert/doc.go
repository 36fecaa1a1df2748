// Package convert holds Kafka Connect's converters: what turns a record's
// key, value and headers (pluginsdk/data values with their schemas) into the
// bytes written to Kafka, and back. The worker runs them; connectors never
// see bytes unless they hand over data.Raw, which every converter here
// passes through unchanged.
//
// # Converters
//
//	JsonConverter          org.apache.kafka.connect.json.JsonConverter
//	StringConverter        org.apache.kafka.connect.storage.StringConverter
//	ByteArrayConverter     org.apache.kafka.connect.converters.ByteArrayConverter
//	Short/Integer/Long/Float/DoubleConverter, BooleanConverter
//	                       org.apache.kafka.connect.converters.*
//	SimpleHeaderConverter  org.apache.kafka.connect.storage.SimpleHeaderConverter
//	                       (header converter only; Kafka's default header.converter)
//
// New and NewHeader build one from a class name (full, simple, or simple
// without its type suffix: "Json", for either use, since Kafka keeps one
// alias map for all plugin types) and its settings, which PrefixedProps
// extracts from a worker or connector config ("value.converter.*").
// Classes lists them with their config definitions for the REST API. All
// converters are safe for concurrent use.
//
// # JsonConverter
//
// FromConnectData writes the bytes Kafka Connect writes, so that either
// worker reads what the other wrote: the {"schema":...,"payload":...}
// envelope with schema fields in Jackson's order (type; items, keys and
// values, or fields; optional; name; version; doc; parameters; default; and
// "field" last in a struct field), compact, strings escaped as Jackson
// escapes them (characters beyond U+FFFF as two \uXXXX surrogate
// escapes), floats and doubles as Java's Float.toString and
// Double.toString print them ("1.0", "1.0E20", NaN and infinities as the
// strings "NaN", "Infinity"), bytes in base64, Decimals in base64 or as a
// number (decimal.format), Date, Time and Timestamp as integers, maps with
// string keys as objects and other maps as [key, value] pairs. Null with no
// schema is a tombstone (nil bytes); null with an optional schema is the
// JSON null.
//
// Where the output cannot match byte for byte, it is deterministic instead:
// a map[string]any is written in sorted key order and schema parameters in
// sorted order (Kafka writes Java's HashMap and insertion order). Doubles
// follow Java 19+'s shortest-digits rule; Java 17 prints a few rare values
// (mostly subnormal) with one more digit. A Go string holding invalid UTF-8,
// which a Java string cannot, is written with U+FFFD in its place.
//
// With schema.content set (KIP-1054, Kafka 4.0) and schemas.enable on,
// ToConnectData reads every message as a bare payload of that schema,
// written in the envelope's schema form, with no envelope; FromConnectData
// still writes the envelope. The schema is parsed once, when the converter
// is built, and one that does not parse is a config error naming the key.
//
// ToConnectData reads everything Kafka's reads (Jackson's syntax rules,
// duplicate names keep the last value, content after the first value is
// ignored), with these differences:
//
//   - Kafka silently coerces a JSON value of the wrong type (a string or a
//     boolean for an INT32 reads as 0, 300 for an INT8 wraps to 44, 1.5 for
//     an INT32 truncates to 1, a string for an ARRAY reads as an empty
//     list); this package returns a DataError naming the problem and where
//     it is ("INT32 values should be encoded as JSON numbers, but found
//     STRING (at lines[1].qty)"). Integral numbers written as 3.0 or 3e2
//     are accepted for integer types.
//   - "NaN", "Infinity" and "-Infinity" read back as floats (Kafka: 0.0).
//   - A NUMERIC Decimal comes back at its schema's scale when no digit is
//     lost ("1.5" with scale 2 reads as 1.50; Kafka keeps the scale of the
//     literal). Schemaless integers beyond 64 bits are errors (Kafka wraps).
//
// Kafka's messages are kept word for word where it has one (the envelope
// message, "Invalid null value for required INT32 field", "Mismatching
// schema.", ...), with Go type names in place of Java class names.
//
// # Other converters
//
// StringConverter writes strings in converter.encoding (UTF-8, US-ASCII,
// ISO-8859-1 and the UTF-16 forms are supported; as in Kafka, a key
// converter's key.serializer.encoding and key.deserializer.encoding, value.*
// for the others, override it) and any other value in the form Java's
// toString gives the value Kafka Connect would hold ("1.0", "[1, 2]",
// "Struct{a=1}"); []byte is written unchanged. It reads an
// optional STRING; UTF-8 input is kept byte for byte.
//
// The number converters and BooleanConverter write Kafka's serializer
// formats (big-endian, IEEE 754 bits, one byte 0 or 1) and want exactly the
// Go type of their schema type (int16 for ShortConverter); null stays null.
//
// SimpleHeaderConverter writes Values.convertToString's text and infers a
// schema on read (Values.parseString); its type comment lists the few
// places it parses more consistently than Kafka. As in Kafka, a Date, Time
// or Timestamp is written in the form its instant suggests, not its
// schema's: before 1970-01-02 UTC as a time of day, at a later midnight UTC
// as a date, otherwise as a timestamp (as a Kafka worker in UTC writes it).
//
// # Time zones
//
// Every date and time is written and read in UTC, whatever the worker's
// zone: what Kafka Connect does in a JVM whose default zone is UTC, the
// usual deployment. A Kafka worker in another zone formats and parses in
// that zone, with results that break Connect's own types (measured with
// Kafka 4.4.0's classes, TZ=America/New_York): StringConverter writes a
// Date as "Mon Nov 13 19:00:00 EST 2023", the day before; the
// SimpleHeaderConverter text of a Timestamp is local time followed by a
// literal Z ("2023-11-14T17:13:20.123Z" for 22:13:20 UTC), and the header
// "2023-11-14" reads back as a Date five hours past midnight UTC, which no
// Date may be (in Asia/Seoul, "01:00:00.000Z" reads as a Time of
// -28,800,000 ms). Cast to string goes through the same formats;
// TimestampConverter formats in UTC in Kafka too.
package convert

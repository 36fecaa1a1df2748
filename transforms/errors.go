package transforms

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Java exception classes the transforms raise, as Kafka Connect's do. The
// worker writes the class into the __connect.errors.exception.class.name
// header of a dead-lettered record.
const (
	DataException = "org.apache.kafka.connect.errors.DataException"
	// SchemaBuilderException is what SchemaBuilder throws for a field
	// name given twice (Flatten, InsertField, ReplaceField renames).
	SchemaBuilderException   = "org.apache.kafka.connect.errors.SchemaBuilderException"
	ConnectException         = "org.apache.kafka.connect.errors.ConnectException"
	ConfigException          = "org.apache.kafka.common.config.ConfigException"
	IllegalArgumentException = "java.lang.IllegalArgumentException"
)

// Exception is a transform's failure: the message is Kafka's, word for
// word, and Class names the Java exception Kafka would throw.
type Exception struct {
	Class   string
	Message string
}

func (e *Exception) Error() string { return e.Message }

func dataErr(format string, args ...any) error {
	return &Exception{Class: DataException, Message: fmt.Sprintf(format, args...)}
}

func connectErr(format string, args ...any) error {
	return &Exception{Class: ConnectException, Message: fmt.Sprintf(format, args...)}
}

// StageError is a failure of one stage of a chain: the transformation or
// its predicate returned Err. The worker's error handling reports Class as
// the failing class, as Kafka Connect does.
type StageError struct {
	// Alias is the name the connector config gives the transformation.
	Alias string
	// Class is the transformation's full Java class name.
	Class string
	Err   error
}

func (e *StageError) Error() string {
	return "transformation " + e.Alias + " (" + e.Class + "): " + e.Err.Error()
}

func (e *StageError) Unwrap() error { return e.Err }

// javaClassName is what value.getClass().getName() returns in Kafka
// Connect for the Go representation of a value; messages quote it.
func javaClassName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "java.lang.String"
	case int8:
		return "java.lang.Byte"
	case int16:
		return "java.lang.Short"
	case int32:
		return "java.lang.Integer"
	case int64:
		return "java.lang.Long"
	case float32:
		return "java.lang.Float"
	case float64:
		return "java.lang.Double"
	case bool:
		return "java.lang.Boolean"
	case []byte, data.Raw:
		return "[B"
	case []any:
		return "java.util.ArrayList"
	case map[string]any, data.Map:
		return "java.util.HashMap"
	case *data.Struct:
		return "org.apache.kafka.connect.data.Struct"
	case time.Time:
		return "java.util.Date"
	case data.Decimal:
		return "java.math.BigDecimal"
	}
	return fmt.Sprintf("%T", v)
}

// javaClass is value.getClass().toString(): "class java.lang.String".
func javaClass(v any) string { return "class " + javaClassName(v) }

// Kafka's Requirements helpers: the messages a transform gives when the
// key or value is not of the kind it works on.

func requireMap(v any, purpose string) (map[string]any, error) {
	if m, ok := asMap(v); ok {
		return m, nil
	}
	return nil, dataErr("Only Map objects supported in absence of schema for [%s], found: %s", purpose, javaClassName(v))
}

func requireStruct(v any, purpose string) (*data.Struct, error) {
	if s, ok := v.(*data.Struct); ok && s != nil {
		return s, nil
	}
	return nil, dataErr("Only Struct objects supported for [%s], found: %s", purpose, javaClassName(v))
}

func requireStructOrNull(v any, purpose string) (*data.Struct, error) {
	if v == nil {
		return nil, nil
	}
	if s, ok := v.(*data.Struct); ok && s == nil {
		return nil, nil
	}
	return requireStruct(v, purpose)
}

func requireMapOrNull(v any, purpose string) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	return requireMap(v, purpose)
}

func requireSchema(s *data.Schema, purpose string) error {
	if s == nil {
		return dataErr("Schema required for [%s]", purpose)
	}
	return nil
}

// asMap reads a MAP value as a map with string keys: the representation
// schemaless records use. Of a data.Map only the entries with string keys
// are read: a Java Map.get(name) never finds an Integer key 1 by "1".
// withOthers puts the other entries back.
func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, m != nil
	case data.Map:
		out := make(map[string]any, len(m))
		for _, e := range m {
			if k, ok := e.Key.(string); ok {
				out[k] = e.Value
			}
		}
		return out, true
	}
	return nil, false
}

// nonStringEntries returns the entries of a data.Map whose keys are not
// strings (nil for any other value).
func nonStringEntries(v any) data.Map {
	m, _ := v.(data.Map)
	var out data.Map
	for _, e := range m {
		if _, ok := e.Key.(string); !ok {
			out = append(out, e)
		}
	}
	return out
}

// withOthers is the updated string-keyed map out of a transformation of
// in, with in's entries whose keys are not strings carried over as they
// were: Kafka copies every entry of the map it updates, key types kept.
func withOthers(out map[string]any, in any) any {
	others := nonStringEntries(in)
	if len(others) == 0 {
		return out
	}
	dm := make(data.Map, 0, len(out)+len(others))
	for _, k := range slices.Sorted(maps.Keys(out)) {
		dm = append(dm, data.MapEntry{Key: k, Value: out[k]})
	}
	return append(dm, others...)
}

// requireStringKeys fails, as Kafka's (String) cast of each key does, for
// a map that has a key of another type (Flatten, ReplaceField).
func requireStringKeys(v any) error {
	others := nonStringEntries(v)
	if len(others) == 0 {
		return nil
	}
	c := javaClassName(others[0].Key)
	return &Exception{Class: "java.lang.ClassCastException",
		Message: "class " + c + " cannot be cast to class java.lang.String (" + c + " and java.lang.String are in module java.base of loader 'bootstrap')"}
}

// schemaTypeOf is ConnectSchema.schemaType: the schema type Kafka infers
// for a schemaless value, or TypeInvalid when the data API has none (a
// date or a decimal without a schema).
func schemaTypeOf(v any) data.Type {
	switch v.(type) {
	case int8:
		return data.Int8
	case int16:
		return data.Int16
	case int32:
		return data.Int32
	case int64:
		return data.Int64
	case float32:
		return data.Float32
	case float64:
		return data.Float64
	case bool:
		return data.Boolean
	case string:
		return data.String
	case []byte, data.Raw:
		return data.Bytes
	case []any:
		return data.Array
	case map[string]any, data.Map:
		return data.MapType
	case *data.Struct:
		return data.StructType
	}
	return data.TypeInvalid
}

// upperType is Schema.Type.toString: "INT32".
func upperType(t data.Type) string {
	b := []byte(t.String())
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

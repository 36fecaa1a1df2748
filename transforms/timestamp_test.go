package transforms

import (
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// 2017-01-02T03:04:05.006Z
var (
	tsDateTime = time.Date(2017, 1, 2, 3, 4, 5, 6e6, time.UTC)
	tsDateOnly = time.Date(2017, 1, 2, 0, 0, 0, 0, time.UTC)
	tsTimeOnly = time.UnixMilli(((3*60+4)*60+5)*1000 + 6).UTC()
	tsMillis   = tsDateTime.UnixMilli()
)

const tsFormat = "yyyy MM dd HH mm ss SSS z"

func TestTimestampConverterWholeValue(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.TimestampConverter$Value"
	tsString := "2017 01 02 03 04 05 006 UTC"
	p := func(target string, kv ...string) map[string]string {
		return props(append([]string{"target.type", target, "format", tsFormat}, kv...)...)
	}
	var cases []golden
	for _, c := range []struct {
		name     string
		props    map[string]string
		inSchema *data.Schema
		in       any
		schema   *data.Schema
		want     any
	}{
		{"timestamp to timestamp", p("Timestamp"), data.TimestampSchema(false), tsDateTime, data.TimestampSchema(false), tsDateTime},
		{"timestamp to date", p("Date"), data.TimestampSchema(false), tsDateTime, data.DateSchema(false), tsDateOnly},
		{"timestamp to time", p("Time"), data.TimestampSchema(false), tsDateTime, data.TimeSchema(false), tsTimeOnly},
		{"timestamp to unix", p("unix"), data.TimestampSchema(false), tsDateTime, data.Int64Schema, tsMillis},
		{"timestamp to string", p("string"), data.TimestampSchema(false), tsDateTime, data.StringSchema, tsString},
		{"date to timestamp", p("Timestamp"), data.DateSchema(false), tsDateOnly, data.TimestampSchema(false), tsDateOnly},
		{"time to timestamp", p("Timestamp"), data.TimeSchema(false), tsTimeOnly, data.TimestampSchema(false), tsTimeOnly},
		{"unix to timestamp", p("Timestamp"), data.Int64Schema, tsMillis, data.TimestampSchema(false), tsDateTime},
		{"string to timestamp", p("Timestamp"), data.StringSchema, tsString, data.TimestampSchema(false), tsDateTime},
		{"optional stays optional", p("unix"), data.TimestampSchema(true), tsDateTime, data.OptionalInt64Schema, tsMillis},
		{"null", p("unix"), data.TimestampSchema(true), nil, data.OptionalInt64Schema, nil},
		{"unix seconds out", p("unix", "unix.precision", "seconds"), data.TimestampSchema(false), tsDateTime, data.Int64Schema, tsMillis / 1000},
		{"unix micros out", p("unix", "unix.precision", "microseconds"), data.TimestampSchema(false), tsDateTime, data.Int64Schema, tsMillis * 1000},
		{"unix nanos out", p("unix", "unix.precision", "nanoseconds"), data.TimestampSchema(false), tsDateTime, data.Int64Schema, tsMillis * 1000000},
		{"unix micros in", p("Timestamp", "unix.precision", "microseconds"), data.Int64Schema, tsMillis*1000 + 999, data.TimestampSchema(false), tsDateTime},
		{"unix seconds in", p("Timestamp", "unix.precision", "seconds"), data.Int64Schema, tsMillis / 1000, data.TimestampSchema(false), tsDateTime.Truncate(time.Second)},
	} {
		c := c
		cases = append(cases, golden{name: c.name, class: cls, props: c.props,
			in: func() *data.Record { return valueRec(c.inSchema, c.in) }, want: valueRec(c.schema, c.want)})
	}
	// Schemaless: the kind comes from the Go type.
	for _, c := range []struct {
		name   string
		props  map[string]string
		in     any
		want   any
		err    string
		errCls string
	}{
		{name: "schemaless date to unix", props: p("unix"), in: tsDateTime, want: tsMillis},
		{name: "schemaless unix to string", props: p("string"), in: tsMillis, want: tsString},
		{name: "schemaless string to Date", props: p("Date"), in: tsString, want: tsDateOnly},
		{name: "schemaless null", props: p("Date"), in: nil, want: nil},
		{name: "schemaless int32 refused", props: p("Date"), in: int32(5), err: "TimestampConverter does not support class java.lang.Integer objects as timestamps"},
		{name: "unparseable string", props: p("unix"), in: "2017-01-02", err: "Could not parse timestamp: value (2017-01-02) does not match pattern (yyyy MM dd HH mm ss SSS z)", errCls: DataException},
	} {
		c := c
		g := golden{name: c.name, class: cls, props: c.props, in: func() *data.Record { return valueRec(nil, c.in) },
			want: valueRec(nil, c.want), err: c.err, errClass: c.errCls}
		cases = append(cases, g)
	}
	cases = append(cases,
		golden{name: "int32 schema refused", class: cls, props: p("unix"),
			in:       func() *data.Record { return valueRec(data.Int32Schema, int32(1)) },
			err:      "Schema Schema{INT32} does not correspond to a known timestamp type format",
			errClass: ConnectException},
		golden{name: "unix needs a long", class: cls, props: p("Timestamp"),
			in:  func() *data.Record { return valueRec(data.Int64Schema, "x") },
			err: "Expected Unix timestamp to be a Long, but found class java.lang.String"},
		golden{name: "key", class: "TimestampConverter$Key", props: p("unix"),
			in: func() *data.Record { return keyRec(nil, tsDateTime) }, want: keyRec(nil, tsMillis)},
	)
	runGolden(t, cases)
}

func TestTimestampConverterField(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.TimestampConverter$Value"
	in := data.StructBuilder().Name("r").Field("ts", data.TimestampSchema(false)).Field("other", data.StringSchema).Optional().MustBuild()
	out := &data.Schema{Type: data.StructType, Name: "r", Optional: true, Fields: []data.Field{
		{Name: "ts", Index: 0, Schema: data.Int64Schema}, {Name: "other", Index: 1, Schema: data.StringSchema}}}
	// A struct default is converted too.
	defIn := data.StructBuilder().Field("ts", data.TimestampSchema(false)).MustBuild()
	withDefault := &data.Schema{Type: data.StructType, Fields: defIn.Fields, Default: mustStruct(defIn, "ts", tsDateTime)}
	defOutBare := &data.Schema{Type: data.StructType, Fields: []data.Field{{Name: "ts", Schema: data.Int64Schema}}}
	defOut := &data.Schema{Type: data.StructType, Fields: defOutBare.Fields, Default: mustStruct(defOutBare, "ts", tsMillis)}
	optField := data.StructBuilder().Field("ts", data.NewSchemaBuilder(data.Int64).Optional().Default(tsMillis).MustBuild()).MustBuild()
	optOut := &data.Schema{Type: data.StructType, Fields: []data.Field{{Name: "ts", Schema: data.DateSchema(true)}}}
	runGolden(t, []golden{
		{name: "struct field", class: cls, props: props("target.type", "unix", "field", "ts"),
			in:   func() *data.Record { return valueRec(in, mustStruct(in, "ts", tsDateTime, "other", "x")) },
			want: valueRec(out, mustStruct(out, "ts", tsMillis, "other", "x"))},
		{name: "null struct", class: cls, props: props("target.type", "unix", "field", "ts"),
			in: func() *data.Record { return valueRec(in, nil) }, want: valueRec(out, nil)},
		{name: "struct default converted", class: cls, props: props("target.type", "unix", "field", "ts"),
			in:   func() *data.Record { return valueRec(withDefault, mustStruct(withDefault, "ts", tsDateTime)) },
			want: valueRec(defOut, mustStruct(defOutBare, "ts", tsMillis))},
		{name: "field default used", class: cls, props: props("target.type", "Date", "field", "ts"),
			in:   func() *data.Record { return valueRec(optField, data.NewStruct(optField)) },
			want: valueRec(optOut, mustStruct(optOut, "ts", tsDateOnly))},
		{name: "replace.null.with.default=false", class: cls, props: props("target.type", "Date", "field", "ts", "replace.null.with.default", "false"),
			in:   func() *data.Record { return valueRec(optField, data.NewStruct(optField)) },
			want: valueRec(optOut, data.NewStruct(optOut))},
		{name: "schemaless field", class: cls, props: props("target.type", "Timestamp", "field", "ts"),
			in:   func() *data.Record { return valueRec(nil, map[string]any{"ts": tsMillis, "other": "x"}) },
			want: valueRec(nil, map[string]any{"ts": tsDateTime, "other": "x"})},
		{name: "schemaless field, map required", class: cls, props: props("target.type", "Timestamp", "field", "ts"),
			in:  func() *data.Record { return valueRec(nil, "x") },
			err: "Only Map objects supported in absence of schema for [converting timestamp formats], found: java.lang.String"},
		{name: "struct required", class: cls, props: props("target.type", "unix", "field", "ts"),
			in:  func() *data.Record { return valueRec(in, "x") },
			err: "Only Struct objects supported for [converting timestamp formats], found: java.lang.String"},
	})
}

func TestTimestampConverterConfig(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{props(), `Missing required configuration "target.type" which has no default value.`},
		{props("target.type", "epoch"), "Invalid value epoch for configuration target.type: String must be one of: string, unix, Date, Time, Timestamp"},
		{props("target.type", "string"), "TimestampConverter requires format option to be specified when using string timestamps"},
		{props("target.type", "string", "format", "yyyy-qq"), "TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: yyyy-qq"},
		{props("target.type", "unix", "unix.precision", "minutes"), "Invalid value minutes for configuration unix.precision: String must be one of: nanoseconds, microseconds, milliseconds, seconds"},
	} {
		_, err := New("TimestampConverter$Value", c.props)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: error %v, want %q", c.props, err, c.want)
		}
	}
}

func TestDateFormat(t *testing.T) {
	at := time.Date(2024, 12, 31, 15, 4, 5, 7e6, time.UTC)
	for _, c := range []struct{ pattern, want string }{
		{"yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2024-12-31T15:04:05.007Z"},
		{"yyyyMMdd", "20241231"},
		{"yy/M/d h:mm a", "24/12/31 3:04 PM"},
		{"EEE, d MMM yyyy HH:mm:ss Z", "Tue, 31 Dec 2024 15:04:05 +0000"},
		{"EEEE MMMM dd G", "Tuesday December 31 AD"},
		{"'at' hh 'o''clock' k K", "at 03 o'clock 15 3"},
		{"D w W F u", "366 1 5 5 2"},
		{"S SS SSSS", "7 07 0007"},
		{"z zzzz", "UTC Coordinated Universal Time"},
	} {
		f, err := compileDateFormat(c.pattern)
		if err != nil {
			t.Fatalf("%s: %v", c.pattern, err)
		}
		if got := f.Format(at); got != c.want {
			t.Errorf("format %q: %q, want %q", c.pattern, got, c.want)
		}
	}
	for _, c := range []struct {
		pattern, in string
		want        time.Time
	}{
		{"yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2024-12-31T15:04:05.007+01:00", time.Date(2024, 12, 31, 14, 4, 5, 7e6, time.UTC)},
		{"yyyyMMddHHmm", "202412311504", time.Date(2024, 12, 31, 15, 4, 0, 0, time.UTC)},
		{"yyyy-MM-dd", "2024-12-31T10:00", time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC)}, // trailing text ignored
		{"yyyy-MM-dd", "2024-02-30", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},         // lenient roll-over
		{"dd MMM yyyy hh:mm a", "05 feb 2024 12:30 AM", time.Date(2024, 2, 5, 0, 30, 0, 0, time.UTC)},
		{"dd MMMM yyyy hh:mm a", "05 February 2024 01:30 PM", time.Date(2024, 2, 5, 13, 30, 0, 0, time.UTC)},
		{"HH:mm Z", "10:00 -0230", time.Date(1970, 1, 1, 12, 30, 0, 0, time.UTC)},
		{"HH:mm z", "10:00 GMT+01:00", time.Date(1970, 1, 1, 9, 0, 0, 0, time.UTC)},
		{"EEE yyyy.D", "Mon 2024.60", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		// Spaces and tabs before a field are skipped, not before a literal.
		{"yyyy-MM-dd HH:mm", " 2024-12-31  \t7:08", time.Date(2024, 12, 31, 7, 8, 0, 0, time.UTC)},
		{"dd MMM yyyy", "05  Feb 2024", time.Date(2024, 2, 5, 0, 0, 0, 0, time.UTC)},
	} {
		f, err := compileDateFormat(c.pattern)
		if err != nil {
			t.Fatalf("%s: %v", c.pattern, err)
		}
		got, err := f.Parse(c.in)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("parse %q with %q: %v %v, want %v", c.in, c.pattern, got, err, c.want)
		}
	}
	for _, c := range []struct{ pattern, in string }{
		{"yyyy-MM-dd", "2024/01/01"}, {"yyyy-MM-dd", "x"}, {"yyyy-MM-dd", "2024 -01-01"}, {"yyyy-MM-dd", "   "}, {"MMM", "Foo"}, {"HH a", "10 XM"}, {"Z", "0100"},
	} {
		f, _ := compileDateFormat(c.pattern)
		if got, err := f.Parse(c.in); err == nil {
			t.Errorf("parse %q with %q: %v, want an error", c.in, c.pattern, got)
		}
	}
	for p, want := range map[string]string{"yyyy-qq": "Illegal pattern character 'q'", "'open": "Unterminated quote"} {
		if _, err := compileDateFormat(p); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", p, err, want)
		}
	}
	// Two-digit years land within 80 years before and 20 after now.
	f, _ := compileDateFormat("yy")
	got, _ := f.Parse("00")
	if now := time.Now().Year(); got.Year() < now-80 || got.Year() >= now+20 || got.Year()%100 != 0 {
		t.Errorf("yy 00 parsed as %d", got.Year())
	}
}

package transforms

import (
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// The Java values below were printed by OpenJDK 17.0.15 with
// java.text.SimpleDateFormat(pattern, Locale.US) in the UTC zone (a
// throwaway program, not kept): format(new Date(ms)) and parse(text).
// Dates before 1582-10-15 are Julian there.

func TestDateFormatJavaCalendarFormat(t *testing.T) {
	const all = "G yyyy yy y MM MMM dd D w W F E u HH:mm:ss.SSS"
	for _, c := range []struct {
		ms   int64
		want string
	}{
		// Proleptic Gregorian 0001-01-01 is Julian 0001-01-03.
		{-62135596800000, "AD 0001 01 1 01 Jan 03 3 2 2 1 Mon 1 00:00:00.000"},
		{-12219292800000, "AD 1582 82 1582 10 Oct 15 278 40 1 1 Fri 5 00:00:00.000"}, // the cutover
		{-12219292800001, "AD 1582 82 1582 10 Oct 04 277 40 1 1 Thu 4 23:59:59.999"},
		// October 1582 counts weeks by days passed: the 18th is its 8th day.
		{-12219033600000 + 3723004, "AD 1582 82 1582 10 Oct 18 281 41 2 2 Mon 1 01:02:03.004"},
		{-30609792000000, "AD 1000 00 1000 01 Jan 01 1 1 1 1 Mon 1 00:00:00.000"},
		{-30609878400000, "AD 0999 99 999 12 Dec 31 365 1 6 5 Sun 7 00:00:00.000"},
		{-62135769600001, "BC 0001 01 1 12 Dec 31 366 1 5 5 Fri 5 23:59:59.999"},
		{-200000000000000 + 3723004, "BC 4369 69 4369 05 May 07 128 19 2 1 Fri 5 05:28:43.004"},
		{253402300800000, "AD 10000 00 10000 01 Jan 01 1 1 1 1 Sat 6 00:00:00.000"},
	} {
		f, err := compileDateFormat(all)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Format(time.UnixMilli(c.ms)); got != c.want {
			t.Errorf("format %d: %q, want %q", c.ms, got, c.want)
		}
	}
}

// Y is GregorianCalendar.getWeekYear, astronomical and, before year 1,
// with Java's off-by-one look at the next year (6944 BC's week 53 is in
// week year -6942, 5540 BC's week 1 in -5539).
func TestDateFormatWeekYear(t *testing.T) {
	f, err := compileDateFormat("G yyyy Y YY YYYYY w")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ms   int64
		want string
	}{
		{-12243308276996, "AD 1581 1582 82 01582 1"},
		{-281240359243753, "BC 6944 -6942 -42 -06942 53"},
		{-236933349908123, "BC 5540 -5539 -39 -05539 1"},
		{-62167733876996, "BC 0002 0 00 00000 1"},
		{1735603200000, "AD 2024 2025 25 02025 1"},
	} {
		if got := f.Format(time.UnixMilli(c.ms)); got != c.want {
			t.Errorf("format %d: %q, want %q", c.ms, got, c.want)
		}
	}
}

func TestDateFormatJavaCalendarParse(t *testing.T) {
	for _, c := range []struct {
		pattern, in string
		ms          int64
	}{
		{"yyyy-MM-dd", "1000-01-01", -30609792000000},
		{"yyyy-MM-dd", "0001-01-01", -62135769600000},
		{"yyyy-MM-dd", "0001-01-03", -62135596800000},
		{"yyyy-MM-dd", "1582-10-10", -12218860800000}, // a day that was skipped reads as Julian
		{"yyyy-MM-dd", "1582-10-15", -12219292800000},
		{"yyyy-MM-dd HH:mm:ss.SSS", "1582-10-04 23:59:59.999", -12219292800001},
		{"yyyy.D", "1582.300", -12217392000000},
		{"yyyy.D", "1582.278", -12219292800000},
		{"yyyy.D", "1000.366", -30578256000000},
		{"G yyyy-MM-dd", "BC 0001-01-01", -62167392000000},
		{"G yyyy-MM-dd", "AD 0001-01-01", -62135769600000},
		{"G yyyy-MM-dd", "bc 4713-01-01", -210866803200000},
		{"yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "1000-01-01T00:30:00.000+01:00", -30609793800000},
		{"yyyy-MM-dd", "1500-02-29", -14825894400000},
		{"yyyy-MM-dd", "1700-02-29", -8515238400000},
		{"yyyyMMdd", "15821231", -12212640000000},
		{"yyyy-MM-dd", "12345-06-07", 327416947200000},
		{"dd MMM yyyy", "29 Feb 1300", -21137414400000},
		{"yyyy-MM-dd HH:mm", "1582-10-04 48:00", -12219206400000},
	} {
		f, err := compileDateFormat(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Parse(c.in)
		if err != nil || got.UnixMilli() != c.ms {
			t.Errorf("parse %q with %q: %d %v, want %d", c.in, c.pattern, got.UnixMilli(), err, c.ms)
		}
	}
}

// Every day from 4800 BC to AD 10100 prints and reads back to the same
// millisecond.
func TestDateFormatRoundTrip(t *testing.T) {
	f, err := compileDateFormat("G yyyy-MM-dd HH:mm:ss.SSS")
	if err != nil {
		t.Fatal(err)
	}
	ordinal, err := compileDateFormat("G yyyy D HH:mm:ss.SSS")
	if err != nil {
		t.Fatal(err)
	}
	for days := int64(-2_470_000); days < 2_970_000; days += 7 {
		ms := days*86400000 + 45296789 // 12:34:56.789
		for _, f := range []*dateFormat{f, ordinal} {
			s := f.Format(time.UnixMilli(ms))
			back, err := f.Parse(s)
			if err != nil || back.UnixMilli() != ms {
				t.Fatalf("%d printed as %q reads back as %d (%v)", ms, s, back.UnixMilli(), err)
			}
		}
	}
}

// TimestampConverter prints and reads dates before the cutover as Kafka
// Connect does (values from SimpleDateFormat, as above).
func TestTimestampConverterJavaCalendar(t *testing.T) {
	const cls = "org.apache.kafka.connect.transforms.TimestampConverter$Value"
	gregorian1 := time.UnixMilli(-62135596800000).UTC() // proleptic 0001-01-01
	julian1000 := time.UnixMilli(-30609792000000).UTC()
	p := func(target string) map[string]string {
		return props("target.type", target, "format", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")
	}
	runGolden(t, []golden{
		{name: "timestamp to string", class: cls, props: p("string"),
			in:   func() *data.Record { return valueRec(data.TimestampSchema(false), gregorian1) },
			want: valueRec(data.StringSchema, "0001-01-03T00:00:00.000Z")},
		{name: "unix to string", class: cls, props: p("string"),
			in:   func() *data.Record { return valueRec(nil, int64(-30609792000000)) },
			want: valueRec(nil, "1000-01-01T00:00:00.000Z")},
		{name: "string to timestamp", class: cls, props: p("Timestamp"),
			in:   func() *data.Record { return valueRec(data.StringSchema, "1000-01-01T00:00:00.000Z") },
			want: valueRec(data.TimestampSchema(false), julian1000)},
		{name: "string to unix", class: cls, props: p("unix"),
			in:   func() *data.Record { return valueRec(nil, "0001-01-03T00:00:00.000Z") },
			want: valueRec(nil, int64(-62135596800000))},
	})
}

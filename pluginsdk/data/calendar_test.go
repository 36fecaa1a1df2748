package data

import (
	"testing"
	"time"
)

// The reference values in these tests were printed by OpenJDK 17.0.15 with
// java.util.GregorianCalendar in the UTC zone (a throwaway program, not
// kept): for an instant, get(YEAR) (as 1 - year in the BC era), MONTH + 1,
// DAY_OF_MONTH and DAY_OF_YEAR; for fields, clear() then set(ERA, YEAR,
// MONTH, DAY_OF_MONTH, HOUR_OF_DAY, MINUTE, SECOND, MILLISECOND) and
// getTimeInMillis(), lenient.

func TestJavaCalendarDate(t *testing.T) {
	for _, c := range []struct {
		ms                     int64
		year, month, day, yday int
	}{
		{0, 1970, 1, 1, 1},
		{-1, 1969, 12, 31, 365},
		{-12219292800000, 1582, 10, 15, 278}, // the cutover
		{-12219292800001, 1582, 10, 4, 277},
		{-12219379200000, 1582, 10, 4, 277},
		{-12219206400001, 1582, 10, 15, 278},
		{-62135596800000, 1, 1, 3, 3}, // proleptic Gregorian 0001-01-01
		{-62135769600000, 1, 1, 1, 1},
		{-62135769600001, 0, 12, 31, 366},
		{-62135856000000, 0, 12, 31, 366},
		{-30609792000000, 1000, 1, 1, 1},
		{-30609878400000, 999, 12, 31, 365},
		{253402300800000, 10000, 1, 1, 1},
		{-12220156800000, 1582, 9, 25, 268},
		{-100000000000000, -1199, 2, 26, 57},
		{-200000000000000, -4368, 5, 7, 128},
		{-62198755200000, -1, 1, 3, 3},
		{-62167219200000, 0, 1, 3, 3},
		{951782400000, 2000, 2, 29, 60},
		{-12244089600000, 1581, 12, 22, 356},
		{-17987443200000, 1399, 12, 24, 358},
		{4102444800000, 2100, 1, 1, 1},
	} {
		tm := time.UnixMilli(c.ms)
		y, m, d := JavaCalendarDate(tm)
		if y != c.year || int(m) != c.month || d != c.day {
			t.Errorf("%d: %d-%d-%d, want %d-%d-%d", c.ms, y, m, d, c.year, c.month, c.day)
		}
		if got := JavaCalendarYearDay(tm); got != c.yday {
			t.Errorf("%d: day of year %d, want %d", c.ms, got, c.yday)
		}
	}
}

func TestJavaCalendarTime(t *testing.T) {
	for _, c := range []struct {
		year, month, day, hour, minute, sec, msec int
		ms                                        int64
	}{
		{1970, 1, 1, 0, 0, 0, 0, 0},
		{1000, 1, 1, 0, 0, 0, 0, -30609792000000},
		{1, 1, 1, 0, 0, 0, 0, -62135769600000},
		{1, 1, 3, 0, 0, 0, 0, -62135596800000},
		{0, 12, 31, 0, 0, 0, 0, -62135856000000},
		{-4712, 1, 1, 12, 0, 0, 0, -210866760000000}, // Julian day number 0
		{1582, 10, 4, 0, 0, 0, 0, -12219379200000},
		{1582, 10, 5, 0, 0, 0, 0, -12219292800000}, // missing days are Julian
		{1582, 10, 10, 0, 0, 0, 0, -12218860800000},
		{1582, 10, 14, 23, 59, 59, 999, -12218428800001},
		{1582, 10, 15, 0, 0, 0, 0, -12219292800000},
		{1582, 2, 29, 0, 0, 0, 0, -12238128000000},
		{1500, 2, 29, 0, 0, 0, 0, -14825894400000}, // a Julian leap day
		{1700, 2, 29, 0, 0, 0, 0, -8515238400000},  // a Gregorian non-leap day
		{1581, 14, 1, 0, 0, 0, 0, -12240547200000},
		{1583, -2, 1, 0, 0, 0, 0, -12219638400000},
		{1582, 13, 1, 0, 0, 0, 0, -12212553600000},
		{1582, 0, 1, 0, 0, 0, 0, -12245904000000},
		{1582, 10, 0, 0, 0, 0, 0, -12219724800000},
		{1582, 11, -30, 0, 0, 0, 0, -12219638400000},
		{1582, 10, 4, 48, 0, 0, 0, -12219206400000},
		{1582, 10, 16, -48, 0, 0, 0, -12218515200000}, // hours move the date before the calendar is picked
		{2024, 2, 30, 0, 0, 0, 0, 1709251200000},
		{1000, 1, 1, 24, 60, 60, 1000, -30609701939000},
		{1000, -1, -1, -1, -1, -1, -1, -30615238861001},
		{9999, 12, 31, 23, 59, 59, 999, 253402300799999},
		{10000, 1, 1, 0, 0, 0, 0, 253402300800000},
		{12345, 6, 7, 0, 0, 0, 0, 327416947200000},
		{1582, 1, 300, 0, 0, 0, 0, -12218256000000},
	} {
		got := JavaCalendarTime(c.year, time.Month(c.month), c.day, c.hour, c.minute, c.sec, c.msec)
		if got.UnixMilli() != c.ms || got.Location() != time.UTC {
			t.Errorf("%v: %d (%v), want %d", c, got.UnixMilli(), got, c.ms)
		}
	}
}

// Every day from 6000 BC to AD 12000 reads back from its Java date, and
// from the cutover on the Java date is Go's.
func TestJavaCalendarRoundTrip(t *testing.T) {
	const day = 86400000
	prev := 0
	for days := int64(-2_900_000); days < 3_700_000; days++ {
		ms := days * day
		tm := time.UnixMilli(ms + 3723004).UTC() // 01:02:03.004
		y, m, d := JavaCalendarDate(tm)
		back := JavaCalendarTime(y, m, d, 1, 2, 3, 4)
		if !back.Equal(tm) {
			t.Fatalf("%v: Java date %d-%d-%d reads back as %v", tm, y, m, d, back)
		}
		if ms >= cutoverDay*day {
			if gy, gm, gd := tm.Date(); gy != y || gm != m || gd != d {
				t.Fatalf("%v: %d-%d-%d after the cutover", tm, y, m, d)
			}
		}
		yd := JavaCalendarYearDay(tm)
		if prev != 0 && yd != prev+1 && yd != 1 {
			t.Fatalf("%v: day of year %d after %d", tm, yd, prev)
		}
		if got := JavaCalendarOrdinalTime(y, yd, 1, 2, 3, 4); !got.Equal(tm) {
			t.Fatalf("%v: day %d of %d reads back as %v", tm, yd, y, got)
		}
		prev = yd
	}
}

package data

import (
	"math"
	"math/big"
	"strconv"
	"testing"
	"time"
)

// point3 is 0.1+0.2 computed at run time (constants would fold to 0.3).
var point3 = func() float64 { a, b := 0.1, 0.2; return a + b }()

// Java's Double.toString and Float.toString outputs, JDK 19 and later
// (earlier JDKs print a few values with more digits: 2*Double.MIN_VALUE as
// "1.0E-323", Float.MIN_NORMAL as "1.17549435E-38").
func TestJavaDoubleString(t *testing.T) {
	cases := []struct {
		f    float64
		want string
	}{
		{1, "1.0"}, {100, "100.0"}, {-2.5, "-2.5"}, {0.1, "0.1"}, {3.14, "3.14"},
		{0.001, "0.001"}, {0.0001, "1.0E-4"}, {1e-5, "1.0E-5"}, {0.002, "0.002"},
		{9999999, "9999999.0"}, {1e7, "1.0E7"}, {1234567, "1234567.0"}, {12345678.9, "1.23456789E7"},
		{123456789, "1.23456789E8"}, {1e20, "1.0E20"}, {1e21, "1.0E21"}, {1e23, "1.0E23"},
		{point3, "0.30000000000000004"}, {math.MaxFloat64, "1.7976931348623157E308"},
		{math.SmallestNonzeroFloat64, "4.9E-324"}, {2 * math.SmallestNonzeroFloat64, "9.9E-324"},
		{2.2250738585072014e-308, "2.2250738585072014E-308"}, {9.223372036854776e18, "9.223372036854776E18"},
		{-1e-10, "-1.0E-10"}, {0, "0.0"}, {math.Copysign(0, -1), "-0.0"},
		{math.NaN(), "NaN"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"},
	}
	for _, tc := range cases {
		if got := JavaFloatString(tc.f, 64); got != tc.want {
			t.Errorf("Double.toString(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestJavaFloatString(t *testing.T) {
	cases := []struct {
		f    float32
		want string
	}{
		{1, "1.0"}, {0.1, "0.1"}, {1.5, "1.5"}, {1e10, "1.0E10"}, {16777216, "1.6777216E7"},
		{math.MaxFloat32, "3.4028235E38"}, {math.SmallestNonzeroFloat32, "1.4E-45"},
		{1.17549435e-38, "1.1754944E-38"}, {3.1415927, "3.1415927"}, {0.001, "0.001"}, {1e-4, "1.0E-4"},
	}
	for _, tc := range cases {
		if got := JavaFloatString(float64(tc.f), 32); got != tc.want {
			t.Errorf("Float.toString(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

// Every printed double reads back as itself (the shortest-digits promise).
func TestJavaDoubleStringRoundTrips(t *testing.T) {
	for i := 0; i < 20000; i++ {
		bits := uint64(i)*0x9E3779B97F4A7C15 + 12345
		f := math.Float64frombits(bits)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := JavaFloatString(f, 64)
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != f {
			t.Fatalf("%v printed as %q reads back as %v (%v)", f, s, back, err)
		}
	}
}

// Java's BigDecimal.toString outputs.
func TestJavaBigDecimalString(t *testing.T) {
	cases := []struct {
		unscaled string
		scale    int32
		want     string
	}{
		{"1234", 2, "12.34"}, {"-150", 2, "-1.50"}, {"0", 2, "0.00"}, {"0", 0, "0"}, {"5", -2, "5E+2"},
		{"123", -1, "1.23E+3"}, {"1", 8, "1E-8"}, {"1", 6, "0.000001"}, {"1", 7, "1E-7"},
		{"12", 7, "0.0000012"}, {"12", 8, "1.2E-7"}, {"-1", 0, "-1"}, {"123456789012345678901234567890", 5, "1234567890123456789012345.67890"},
	}
	for _, tc := range cases {
		u, _ := new(big.Int).SetString(tc.unscaled, 10)
		if got := string(AppendJavaDecimal(nil, Decimal{Unscaled: u, Scale: tc.scale})); got != tc.want {
			t.Errorf("BigDecimal(%s, %d) = %q, want %q", tc.unscaled, tc.scale, got, tc.want)
		}
	}
}

// java.util.Date.toString in UTC: the Julian calendar before the Gregorian
// cutover (1582-10-15), and the year unpadded (its era year before year 1).
func TestJavaDate(t *testing.T) {
	const cutover = -12219292800000
	for _, c := range []struct {
		ms   int64
		want string
	}{
		{0, "Thu Jan 01 00:00:00 UTC 1970"},
		{1_700_000_000_123, "Tue Nov 14 22:13:20 UTC 2023"},
		{-1, "Wed Dec 31 23:59:59 UTC 1969"},
		{cutover, "Fri Oct 15 00:00:00 UTC 1582"},
		{cutover - 1000, "Thu Oct 04 23:59:59 UTC 1582"},
		// Gregorian 0001-01-01, Julian 0001-01-03.
		{-62135596800000, "Mon Jan 03 00:00:00 UTC 1"},
		// Julian 1000-01-01 and the day before.
		{-30609792000000, "Mon Jan 01 00:00:00 UTC 1000"},
		{-30609878400000, "Sun Dec 31 00:00:00 UTC 999"},
		// Julian 0001-01-01 and the day before, 1 BC.
		{-62135769600000, "Sat Jan 01 00:00:00 UTC 1"},
		{-62135856000000, "Fri Dec 31 00:00:00 UTC 1"},
		{253402300800000, "Sat Jan 01 00:00:00 UTC 10000"},
		// Julian -4800-03-01 (4801 BC, Julian day number -32082), and 4
		// years before it.
		{(-32082 - 2440588) * 86400000, "Sun Mar 01 00:00:00 UTC 4801"},
		{(-32082 - 1461 - 2440588) * 86400000, "Tue Mar 01 00:00:00 UTC 4805"},
	} {
		if got := JavaDate(time.UnixMilli(c.ms)); got != c.want {
			t.Errorf("%d: %q, want %q", c.ms, got, c.want)
		}
	}
	if got := FormatValue([]any{time.UnixMilli(-62135596800000)}); got != "[Mon Jan 03 00:00:00 UTC 1]" {
		t.Errorf("in a list: %q", got)
	}
}

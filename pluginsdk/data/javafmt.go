package data

import (
	"math"
	"math/big"
	"strconv"
	"time"
)

// Java's text forms of the values Kafka Connect holds, for what prints them
// as Kafka Connect does: converters (JsonConverter's numbers,
// StringConverter), transformations (Cast to STRING), FileStreamSink's lines
// and FormatValue.

// AppendJavaFloat appends f as Java's Double.toString (bitSize 64) or
// Float.toString (bitSize 32) prints it, which is also what Jackson writes
// for a double or float node: the shortest decimal that reads back as f, in
// plain notation when 10^-3 <= |f| < 10^7 ("100.0", "0.001") and in
// computerized scientific notation otherwise ("1.0E7", "1.0E-4"), always with
// at least one digit after the point.
//
// Java 19 and later choose digits by the rule below; Java 17's
// FloatingDecimal can print one more digit than needed for a few values, so
// output for those values matches a Kafka Connect worker running on Java 19+.
func AppendJavaFloat(b []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	var tmp [40]byte
	digits, exp := shortestDigits(tmp[:0], f, bitSize)
	if len(digits) == 1 {
		// Java's rule: when one digit is enough, pick the closest decimal of
		// one or two digits that still reads back as f (Double.MIN_VALUE
		// prints "4.9E-324", not "5.0E-324").
		var tmp2 [40]byte
		two := strconv.AppendFloat(tmp2[:0], f, 'e', 1, bitSize)
		if back, err := strconv.ParseFloat(string(two), bitSize); err == nil && back == f {
			d2, e2 := splitExp(two)
			if len(d2) == 2 && d2[1] != '0' {
				digits, exp = append(tmp[:0], d2...), e2
			}
		}
	}
	if f < 0 {
		b = append(b, '-')
	}
	if exp >= -3 && exp < 7 {
		if exp >= 0 {
			if len(digits) > exp+1 {
				b = append(b, digits[:exp+1]...)
				b = append(b, '.')
				return append(b, digits[exp+1:]...)
			}
			b = append(b, digits...)
			for i := len(digits); i <= exp; i++ {
				b = append(b, '0')
			}
			return append(b, ".0"...)
		}
		b = append(b, "0."...)
		for i := -1; i > exp; i-- {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	b = append(b, digits[0], '.')
	if len(digits) > 1 {
		b = append(b, digits[1:]...)
	} else {
		b = append(b, '0')
	}
	b = append(b, 'E')
	return strconv.AppendInt(b, int64(exp), 10)
}

// shortestDigits returns the shortest significant digits of |f| and the
// decimal exponent of the first digit.
func shortestDigits(dst []byte, f float64, bitSize int) ([]byte, int) {
	s := strconv.AppendFloat(dst, math.Abs(f), 'e', -1, bitSize)
	return splitExp(s)
}

// splitExp splits strconv's 'e' format ("1.2345e+06") into digits
// ("12345") and exponent (6), reusing s's storage.
func splitExp(s []byte) ([]byte, int) {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	e := len(s) - 1
	for e >= 0 && s[e] != 'e' {
		e--
	}
	exp, _ := strconv.Atoi(string(s[e+1:]))
	mant := s[:e]
	out := mant[:0]
	for _, c := range mant {
		if c != '.' {
			out = append(out, c)
		}
	}
	return out, exp
}

// JavaFloatString is AppendJavaFloat as a string.
func JavaFloatString(f float64, bitSize int) string {
	var tmp [40]byte
	return string(AppendJavaFloat(tmp[:0], f, bitSize))
}

// AppendJavaDecimal appends d as Java's BigDecimal.toString prints it:
// plain when the scale is not negative and the adjusted exponent is at least
// -6 ("12.34", "0.000001"), scientific otherwise ("1.2E+3", "1E-7"). Jackson
// writes NUMERIC decimals this way.
func AppendJavaDecimal(b []byte, d Decimal) []byte {
	u := d.Unscaled
	if u == nil {
		u = new(big.Int)
	}
	if u.Sign() < 0 {
		b = append(b, '-')
	}
	coeff := new(big.Int).Abs(u).String()
	scale := int64(d.Scale)
	adjusted := -scale + int64(len(coeff)-1)
	if scale >= 0 && adjusted >= -6 {
		if scale == 0 {
			return append(b, coeff...)
		}
		if int64(len(coeff)) > scale {
			point := int64(len(coeff)) - scale
			b = append(b, coeff[:point]...)
			b = append(b, '.')
			return append(b, coeff[point:]...)
		}
		b = append(b, "0."...)
		for i := int64(len(coeff)); i < scale; i++ {
			b = append(b, '0')
		}
		return append(b, coeff...)
	}
	b = append(b, coeff[0])
	if len(coeff) > 1 {
		b = append(b, '.')
		b = append(b, coeff[1:]...)
	}
	b = append(b, 'E')
	if adjusted > 0 {
		b = append(b, '+')
	}
	return strconv.AppendInt(b, adjusted, 10)
}

// JavaDate formats a time as java.util.Date.toString does in a JVM whose
// default time zone is UTC ("Thu Jan 01 00:00:00 UTC 1970"): Julian
// calendar dates before the Gregorian cutover, as Date's calendar has them
// (the proleptic Gregorian 0001-01-01 is "Mon Jan 03 00:00:00 UTC 1"), and
// the year without padding, as the era's year before year 1.
func JavaDate(t time.Time) string {
	u := t.UTC()
	year, month, day := JavaCalendarDate(u)
	if year < 1 {
		year = 1 - year // the year of the era before Christ
	}
	var b []byte
	b = append(b, u.Weekday().String()[:3]...)
	b = append(b, ' ')
	b = append(b, month.String()[:3]...)
	b = append(b, ' ')
	b = append2(b, day)
	b = append(b, ' ')
	b = append2(b, u.Hour())
	b = append(b, ':')
	b = append2(b, u.Minute())
	b = append(b, ':')
	b = append2(b, u.Second())
	b = append(b, " UTC "...)
	return string(strconv.AppendInt(b, int64(year), 10))
}

func append2(b []byte, n int) []byte {
	return append(b, byte('0'+n/10), byte('0'+n%10))
}

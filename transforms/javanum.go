package transforms

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Java's number parsing and printing, for the transformations that turn
// text into numbers and back the way Kafka Connect's do.

var errNumberFormat = errors.New("number format")

// javaParseFloat is Float.parseFloat (bits 32) or Double.parseDouble (64):
// surrounding whitespace is ignored, "NaN" and "Infinity" are accepted in
// Java's spelling only, an f/F/d/D suffix is allowed, and overflow gives
// an infinity rather than an error.
func javaParseFloat(s string, bits int) (float64, error) {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, errNumberFormat
	}
	neg := strings.HasPrefix(s, "-")
	switch body {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	}
	if n := len(s); n > 1 && strings.ContainsRune("fFdD", rune(s[n-1])) && !strings.HasPrefix(strings.ToLower(body), "0x") {
		s = s[:n-1]
	}
	lower := strings.ToLower(strings.TrimLeft(s, "+-"))
	if strings.HasPrefix(lower, "0x") {
		if !strings.Contains(lower, "p") {
			return 0, errNumberFormat
		}
	} else {
		for _, c := range lower {
			if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == '+' || c == '-') {
				return 0, errNumberFormat
			}
		}
	}
	f, err := strconv.ParseFloat(s, bits)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, errNumberFormat
	}
	return f, nil
}

// javaFloatString is Float.toString (bits 32) or Double.toString (64).
func javaFloatString(f float64, bits int) string { return data.JavaFloatString(f, bits) }

// javaDecimalString is BigDecimal.toString.
func javaDecimalString(d data.Decimal) string { return string(data.AppendJavaDecimal(nil, d)) }

// decimalFloat is BigDecimal.doubleValue.
func decimalFloat(d data.Decimal) float64 {
	// A text's exponent can be far beyond a double's range; the power of
	// ten is not computed then (it could take minutes and gigabytes).
	switch m := decimalMagnitude(d); {
	case m > 400:
		return math.Copysign(math.Inf(1), float64(d.Unscaled.Sign()))
	case m < -400:
		return math.Copysign(0, float64(d.Unscaled.Sign()))
	}
	f, _ := decimalRat(d).Float64()
	return f
}

// decimalFloat32 is BigDecimal.floatValue.
func decimalFloat32(d data.Decimal) float32 {
	switch m := decimalMagnitude(d); {
	case m == math.MinInt64:
		return 0
	case m > 60:
		return float32(math.Copysign(math.Inf(1), float64(d.Unscaled.Sign())))
	case m < -60:
		return float32(math.Copysign(0, float64(d.Unscaled.Sign())))
	}
	f, _ := decimalRat(d).Float32()
	return f
}

// decimalMagnitude is the number of digits before the decimal point
// (negative for leading zeros after it): |d| < 10^magnitude, and
// |d| >= 10^(magnitude-1) unless d is zero.
func decimalMagnitude(d data.Decimal) int64 {
	if d.Unscaled == nil || d.Unscaled.Sign() == 0 {
		return math.MinInt64
	}
	return int64(len(new(big.Int).Abs(d.Unscaled).String())) - int64(d.Scale)
}

func decimalRat(d data.Decimal) *big.Rat {
	u := d.Unscaled
	if u == nil {
		u = new(big.Int)
	}
	r := new(big.Rat).SetInt(u)
	if d.Scale > 0 {
		return r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil)))
	}
	if d.Scale < 0 {
		return r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(-int64(d.Scale)), nil)))
	}
	return r
}

// decimalLong is BigDecimal.longValue: the integer part, truncated toward
// zero, in its low 64 bits.
func decimalLong(d data.Decimal) int64 {
	switch m := decimalMagnitude(d); {
	case m <= 0:
		return 0
	case d.Scale <= -64:
		// A multiple of 10^64, so of 2^64: its low 64 bits are zero.
		return 0
	}
	r := decimalRat(d)
	q := new(big.Int).Quo(r.Num(), r.Denom())
	// Low 64 bits in two's complement, as Java's narrowing does.
	m := new(big.Int).And(q, new(big.Int).SetUint64(math.MaxUint64))
	return int64(m.Uint64())
}

// javaD2L is Java's (long) conversion of a double: saturating, NaN is 0.
func javaD2L(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// javaD2I is Java's (int) conversion of a double: saturating, NaN is 0.
func javaD2I(f float64) int32 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(f)
}

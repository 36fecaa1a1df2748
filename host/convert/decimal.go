package convert

import (
	"math"
	"math/big"
	"strconv"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// maxDecimalDigits bounds the digits parseDecimal accepts, so that hostile
// input cannot make big-number arithmetic slow.
const maxDecimalDigits = 1000

// decimalScale reads a Decimal schema's scale parameter, failing with
// Kafka's messages (Decimal.scale) when it is missing or not an integer.
func decimalScale(s *data.Schema) (int32, error) {
	v, ok := s.Parameters[data.DecimalScaleParam]
	if !ok {
		return 0, dataErr("Invalid Decimal schema: scale parameter not found.")
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, dataErr("Invalid scale parameter found in Decimal schema: %q is not an integer", v)
	}
	return int32(n), nil
}

// parseDecimal parses a number the way Java's new BigDecimal(String) does:
// an optional sign, digits with an optional point (".5" and "5." are
// valid), an optional exponent. The scale is the number of fraction digits
// minus the exponent, so "1.50" has scale 2 and "1E+3" scale -3.
func parseDecimal(s string) (data.Decimal, bool) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	digits := make([]byte, 0, len(s))
	frac := 0
	seenPoint := false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
			if seenPoint {
				frac++
			}
			continue
		case c == '.' && !seenPoint:
			seenPoint = true
			continue
		}
		break
	}
	if len(digits) == 0 || len(digits) > maxDecimalDigits {
		return data.Decimal{}, false
	}
	exp := int64(0)
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		if i == len(s) {
			return data.Decimal{}, false
		}
		for ; i < len(s); i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return data.Decimal{}, false
			}
			exp = exp*10 + int64(c-'0')
			if exp > math.MaxInt32 {
				return data.Decimal{}, false
			}
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return data.Decimal{}, false
	}
	scale := int64(frac) - exp
	if scale > math.MaxInt32 || scale < math.MinInt32 {
		return data.Decimal{}, false
	}
	u, ok := new(big.Int).SetString(string(digits), 10)
	if !ok {
		return data.Decimal{}, false
	}
	if neg {
		u.Neg(u)
	}
	return data.Decimal{Unscaled: u, Scale: int32(scale)}, true
}

// decimalInt64 returns d as an int64 when d is an integer (any fraction
// digits are zero) that fits; integral reports whether d has no fraction.
func decimalInt64(d data.Decimal) (v int64, integral, fits bool) {
	u := d.Unscaled
	if u.Sign() == 0 {
		return 0, true, true
	}
	switch {
	case d.Scale > 0:
		if int(d.Scale) > len(u.String()) {
			return 0, false, false // 0 < |d| < 1
		}
		q, r := new(big.Int).QuoRem(u, pow10(int64(d.Scale)), new(big.Int))
		if r.Sign() != 0 {
			return 0, false, false
		}
		u = q
	case d.Scale < 0:
		if d.Scale < -19 {
			return 0, true, false
		}
		u = new(big.Int).Mul(u, pow10(int64(-d.Scale)))
	}
	if !u.IsInt64() {
		return 0, true, false
	}
	return u.Int64(), true, true
}

// rescale returns d with the given scale when that loses nothing.
func rescale(d data.Decimal, scale int32) (data.Decimal, bool) {
	diff := int64(scale) - int64(d.Scale)
	switch {
	case diff == 0:
		return d, true
	case diff > 0 && diff <= maxDecimalDigits:
		return data.Decimal{Unscaled: new(big.Int).Mul(d.Unscaled, pow10(diff)), Scale: scale}, true
	case diff < 0 && -diff <= maxDecimalDigits:
		q, r := new(big.Int).QuoRem(d.Unscaled, pow10(-diff), new(big.Int))
		if r.Sign() == 0 {
			return data.Decimal{Unscaled: q, Scale: scale}, true
		}
	}
	return d, false
}

func pow10(n int64) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil)
}

package data

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"
)

// Names of Kafka Connect's logical types.
const (
	DecimalName   = "org.apache.kafka.connect.data.Decimal"
	DateName      = "org.apache.kafka.connect.data.Date"
	TimeName      = "org.apache.kafka.connect.data.Time"
	TimestampName = "org.apache.kafka.connect.data.Timestamp"
	// DecimalScaleParam is the Decimal schema parameter holding the scale.
	DecimalScaleParam = "scale"
)

// versionOne returns a fresh pointer so that no two schemas share (and can
// corrupt) one version variable.
func versionOne() *int32 {
	v := int32(1)
	return &v
}

func bigOrZero(n *big.Int) *big.Int {
	if n == nil {
		return new(big.Int)
	}
	return n
}

// Decimal is a value of the Decimal logical type: Unscaled × 10^-Scale.
type Decimal struct {
	Unscaled *big.Int
	Scale    int32
}

// String formats the decimal in plain notation ("12.34").
func (d Decimal) String() string {
	u := bigOrZero(d.Unscaled)
	if d.Scale <= 0 {
		// A negative scale multiplies: 12 with scale -2 is 1200.
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(-int64(d.Scale)), nil)
		return p.Mul(p, u).String()
	}
	r := new(big.Rat).SetFrac(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))
	return r.FloatString(int(d.Scale))
}

// DecimalSchema returns a Decimal schema of the scale.
func DecimalSchema(scale int32, optional bool) *Schema {
	return &Schema{Type: Bytes, Optional: optional, Name: DecimalName, Version: versionOne(),
		Parameters: map[string]string{DecimalScaleParam: strconv.Itoa(int(scale))}}
}

// DecimalScale returns the scale of a Decimal schema.
func DecimalScale(s *Schema) (int32, error) {
	v, ok := s.Parameters[DecimalScaleParam]
	if !ok {
		return 0, fmt.Errorf("invalid Decimal schema: scale parameter not found")
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("invalid Decimal schema: scale %q: %w", v, err)
	}
	return int32(n), nil
}

// DateSchema, TimeSchema and TimestampSchema return the logical type schemas.
func DateSchema(optional bool) *Schema {
	return &Schema{Type: Int32, Optional: optional, Name: DateName, Version: versionOne()}
}

// TimeSchema returns a Time schema.
func TimeSchema(optional bool) *Schema {
	return &Schema{Type: Int32, Optional: optional, Name: TimeName, Version: versionOne()}
}

// TimestampSchema returns a Timestamp schema.
func TimestampSchema(optional bool) *Schema {
	return &Schema{Type: Int64, Optional: optional, Name: TimestampName, Version: versionOne()}
}

// IsLogical reports whether the schema is one of the four logical types.
func IsLogical(s *Schema) bool {
	if s == nil {
		return false
	}
	switch s.Name {
	case DecimalName, DateName, TimeName, TimestampName:
		return true
	}
	return false
}

const msPerDay = 24 * 60 * 60 * 1000

// ToPhysical turns a logical value into its physical representation:
// Decimal → []byte (big-endian two's complement of the unscaled value),
// Date → int32 days, Time → int32 ms of day, Timestamp → int64 ms. Other
// values are returned unchanged.
func ToPhysical(s *Schema, v any) (any, error) {
	if v == nil || s == nil {
		return v, nil
	}
	switch s.Name {
	case DecimalName:
		d, ok := v.(Decimal)
		if !ok {
			return nil, fmt.Errorf("Decimal value must be data.Decimal, got %T", v)
		}
		scale, err := DecimalScale(s)
		if err != nil {
			return nil, err
		}
		if d.Scale != scale {
			return nil, fmt.Errorf("Decimal value has mismatching scale %d (schema scale %d)", d.Scale, scale)
		}
		return TwosComplement(d.Unscaled), nil
	case DateName:
		t, ok := v.(time.Time)
		if !ok {
			return nil, fmt.Errorf("Date value must be time.Time, got %T", v)
		}
		ms := t.UnixMilli()
		if ms%msPerDay != 0 {
			return nil, errors.New("Kafka Connect Date type should not have any time fields set to non-zero values.")
		}
		return int32(ms / msPerDay), nil
	case TimeName:
		t, ok := v.(time.Time)
		if !ok {
			return nil, fmt.Errorf("Time value must be time.Time, got %T", v)
		}
		// Kafka's bound is inclusive: 86400000 (midnight at the end of
		// the day) is a Time, both ways.
		ms := t.UnixMilli()
		if ms < 0 || ms > msPerDay {
			return nil, errors.New("Kafka Connect Time type should not have any date fields set to non-zero values.")
		}
		return int32(ms), nil
	case TimestampName:
		t, ok := v.(time.Time)
		if !ok {
			return nil, fmt.Errorf("Timestamp value must be time.Time, got %T", v)
		}
		return t.UnixMilli(), nil
	}
	return v, nil
}

// FromPhysical is the inverse of ToPhysical.
func FromPhysical(s *Schema, v any) (any, error) {
	if v == nil || s == nil {
		return v, nil
	}
	switch s.Name {
	case DecimalName:
		b, ok := v.([]byte)
		if !ok {
			return nil, fmt.Errorf("Decimal physical value must be bytes, got %T", v)
		}
		scale, err := DecimalScale(s)
		if err != nil {
			return nil, err
		}
		return Decimal{Unscaled: FromTwosComplement(b), Scale: scale}, nil
	case DateName:
		n, ok := v.(int32)
		if !ok {
			return nil, fmt.Errorf("Date physical value must be int32, got %T", v)
		}
		return time.UnixMilli(int64(n) * msPerDay).UTC(), nil
	case TimeName:
		n, ok := v.(int32)
		if !ok {
			return nil, fmt.Errorf("Time physical value must be int32, got %T", v)
		}
		return time.UnixMilli(int64(n)).UTC(), nil
	case TimestampName:
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("Timestamp physical value must be int64, got %T", v)
		}
		return time.UnixMilli(n).UTC(), nil
	}
	return v, nil
}

// TwosComplement encodes n as minimal big-endian two's complement (Java's
// BigInteger.toByteArray).
func TwosComplement(n *big.Int) []byte {
	if n == nil || n.Sign() == 0 {
		return []byte{0}
	}
	if n.Sign() > 0 {
		b := n.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// Negative: 2^(8k) + n for the smallest k that keeps the sign bit set.
	l := (n.BitLen() + 8) / 8
	m := new(big.Int).Lsh(big.NewInt(1), uint(l*8))
	m.Add(m, n)
	b := m.Bytes()
	for len(b) < l {
		b = append([]byte{0xff}, b...)
	}
	if b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	// Trim redundant leading 0xff bytes.
	for len(b) > 1 && b[0] == 0xff && b[1]&0x80 != 0 {
		b = b[1:]
	}
	return b
}

// FromTwosComplement decodes big-endian two's complement bytes.
func FromTwosComplement(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	return n
}

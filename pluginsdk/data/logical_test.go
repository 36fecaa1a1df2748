package data

import (
	"encoding/hex"
	"math/big"
	"strings"
	"testing"
	"time"
)

// Expected bytes are what Java's BigInteger.toByteArray returns.
func TestTwosComplementMatchesJava(t *testing.T) {
	cases := []struct {
		n   string
		hex string
	}{
		{"0", "00"},
		{"1", "01"},
		{"127", "7f"},
		{"128", "0080"},
		{"255", "00ff"},
		{"256", "0100"},
		{"32767", "7fff"},
		{"32768", "008000"},
		{"-1", "ff"},
		{"-127", "81"},
		{"-128", "80"},
		{"-129", "ff7f"},
		{"-255", "ff01"},
		{"-256", "ff00"},
		{"-257", "feff"},
		{"-32768", "8000"},
		{"-32769", "ff7fff"},
		{"9223372036854775807", "7fffffffffffffff"},
		{"-9223372036854775808", "8000000000000000"},
		{"18446744073709551616", "010000000000000000"},
	}
	for _, c := range cases {
		t.Run(c.n, func(t *testing.T) {
			n, ok := new(big.Int).SetString(c.n, 10)
			if !ok {
				t.Fatalf("bad test number %s", c.n)
			}
			got := hex.EncodeToString(TwosComplement(n))
			if got != c.hex {
				t.Fatalf("TwosComplement(%s) = %s, want %s", c.n, got, c.hex)
			}
			back := FromTwosComplement(TwosComplement(n))
			if back.Cmp(n) != 0 {
				t.Fatalf("FromTwosComplement round trip of %s = %s", c.n, back)
			}
		})
	}
	if got := hex.EncodeToString(TwosComplement(nil)); got != "00" {
		t.Fatalf("TwosComplement(nil) = %s, want 00", got)
	}
}

func TestTwosComplementRoundTripRange(t *testing.T) {
	for i := int64(-70000); i <= 70000; i += 7 {
		n := big.NewInt(i)
		b := TwosComplement(n)
		if got := FromTwosComplement(b); got.Cmp(n) != 0 {
			t.Fatalf("%d -> %x -> %s", i, b, got)
		}
		// Minimal: dropping the first byte must change the value.
		if len(b) > 1 {
			if FromTwosComplement(b[1:]).Cmp(n) == 0 {
				t.Fatalf("%d encoded non-minimally as %x", i, b)
			}
		}
	}
}

func TestLogicalConversions(t *testing.T) {
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	days := int32(day.Unix() / 86400)
	cases := []struct {
		name    string
		schema  *Schema
		logical any
		phys    any
		err     string
	}{
		{"date", DateSchema(false), day, days, ""},
		{"date epoch", DateSchema(false), time.Unix(0, 0).UTC(), int32(0), ""},
		{"date before epoch", DateSchema(false), time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), int32(-1), ""},
		{"date not midnight", DateSchema(false), day.Add(time.Hour), nil, "should not have any time fields"},
		{"date midnight in another zone", DateSchema(false), time.Date(2024, 3, 1, 0, 0, 0, 0, time.FixedZone("x", 3600)), nil, "should not have any time fields"},
		{"date wrong type", DateSchema(false), int32(3), nil, "must be time.Time"},
		{"time", TimeSchema(false), time.UnixMilli(3723004).UTC(), int32(3723004), ""},
		{"time midnight", TimeSchema(false), time.UnixMilli(0).UTC(), int32(0), ""},
		{"time last ms", TimeSchema(false), time.UnixMilli(msPerDay - 1).UTC(), int32(msPerDay - 1), ""},
		{"time end of day", TimeSchema(false), time.UnixMilli(msPerDay).UTC(), int32(msPerDay), ""},
		{"time next day", TimeSchema(false), time.UnixMilli(msPerDay + 1).UTC(), nil, "should not have any date fields"},
		{"time negative", TimeSchema(false), time.UnixMilli(-1).UTC(), nil, "should not have any date fields"},
		{"timestamp", TimestampSchema(false), time.UnixMilli(1700000000123).UTC(), int64(1700000000123), ""},
		{"timestamp before epoch", TimestampSchema(false), time.UnixMilli(-5).UTC(), int64(-5), ""},
		{"decimal", DecimalSchema(2, false), Decimal{big.NewInt(12345), 2}, []byte{0x30, 0x39}, ""},
		{"decimal negative", DecimalSchema(0, false), Decimal{big.NewInt(-129), 0}, []byte{0xff, 0x7f}, ""},
		{"decimal scale mismatch", DecimalSchema(2, false), Decimal{big.NewInt(1), 3}, nil, "mismatching scale"},
		{"decimal wrong type", DecimalSchema(2, false), 1.5, nil, "must be data.Decimal"},
		{"not logical", Int32Schema, int32(7), int32(7), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ToPhysical(c.schema, c.logical)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("ToPhysical error = %v, want containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !ValueEqual(got, c.phys) {
				t.Fatalf("ToPhysical = %#v, want %#v", got, c.phys)
			}
			back, err := FromPhysical(c.schema, got)
			if err != nil {
				t.Fatal(err)
			}
			if !ValueEqual(back, c.logical) {
				t.Fatalf("FromPhysical = %v, want %v", back, c.logical)
			}
			if tm, ok := back.(time.Time); ok && tm.Location() != time.UTC {
				t.Fatalf("FromPhysical time in %v, want UTC", tm.Location())
			}
		})
	}
}

func TestFromPhysicalRejectsWrongTypes(t *testing.T) {
	for _, c := range []struct {
		s *Schema
		v any
	}{
		{DateSchema(false), int64(1)},
		{TimeSchema(false), int64(1)},
		{TimestampSchema(false), int32(1)},
		{DecimalSchema(1, false), "1"},
		{&Schema{Type: Bytes, Name: DecimalName}, []byte{1}}, // no scale parameter
	} {
		if _, err := FromPhysical(c.s, c.v); err == nil {
			t.Errorf("FromPhysical(%s, %T) accepted", c.s, c.v)
		}
	}
}

func TestDecimalString(t *testing.T) {
	for _, c := range []struct {
		d    Decimal
		want string
	}{
		{Decimal{big.NewInt(12345), 2}, "123.45"},
		{Decimal{big.NewInt(-1), 2}, "-0.01"},
		{Decimal{big.NewInt(5), 0}, "5"},
		{Decimal{big.NewInt(12), -2}, "1200"},
		{Decimal{nil, 3}, "0.000"},
	} {
		if got := c.d.String(); got != c.want {
			t.Errorf("%v/%d: String() = %q, want %q", c.d.Unscaled, c.d.Scale, got, c.want)
		}
	}
}

func TestLogicalSchemasDoNotShareVersion(t *testing.T) {
	a, b := DateSchema(false), DateSchema(false)
	*a.Version = 7
	if *b.Version != 1 {
		t.Fatal("logical schemas share one version variable")
	}
}

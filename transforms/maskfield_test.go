package transforms

import (
	"fmt"
	"math"
	"math/big"
	"sync"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// countReplacementParses makes parseReplacement count its calls for the
// rest of the test.
func countReplacementParses(t *testing.T) *int {
	t.Helper()
	n := new(int)
	orig := parseReplacement
	parseReplacement = func(s string) (data.Decimal, bool) {
		*n++
		return orig(s)
	}
	t.Cleanup(func() { parseReplacement = orig })
	return n
}

// The replacement text is read once, when the transformation is
// configured, however many values of however many types it then masks.
func TestMaskFieldReadsReplacementOnce(t *testing.T) {
	parses := countReplacementParses(t)
	tr, err := New("MaskField$Value", props("fields", "b,s,i,l,f,d,str,dec,dec0", "replacement", "-1.5e3"))
	if err != nil {
		t.Fatal(err)
	}
	if *parses != 1 {
		t.Fatalf("configuring read the replacement %d times, want 1", *parses)
	}
	schema := data.StructBuilder().
		Field("l", data.Int64Schema).
		Field("dec", data.DecimalSchema(2, false)).
		Field("dec0", data.DecimalSchema(0, false)).
		MustBuild()
	var prev *big.Int
	for i := 0; i < 50; i++ {
		got, err := tr.Apply(valueRec(nil, map[string]any{"b": int8(1), "s": int16(1), "i": int32(1), "l": int64(1),
			"f": float32(1), "d": float64(1), "str": "secret"}))
		if err != nil {
			t.Fatal(err)
		}
		// The int8 is the low byte of -1500 (0xfa24), as Java's narrowing gives it.
		want := map[string]any{"b": int8(0x24), "s": int16(-1500), "i": int32(-1500), "l": int64(-1500),
			"f": float32(-1500), "d": float64(-1500), "str": "-1.5e3",
			"dec": nil, "dec0": nil} // masked fields the record lacks come out null, as in Kafka
		if !data.ValueEqual(got.Value, want) {
			t.Fatalf("record %d: masked to %s, want %s", i, data.FormatValue(got.Value), data.FormatValue(want))
		}
		one := data.Decimal{Unscaled: big.NewInt(1), Scale: 2}
		got, err = tr.Apply(valueRec(schema, mustStruct(schema, "l", int64(7), "dec", one, "dec0", data.Decimal{Unscaled: big.NewInt(1)})))
		if err != nil {
			t.Fatal(err)
		}
		st := got.Value.(*data.Struct)
		dec := st.Get("dec").(data.Decimal)
		if dec.Scale != 2 || dec.Unscaled.Int64() != -150000 {
			t.Fatalf("record %d: decimal masked to %s, want -1500.00", i, data.FormatValue(dec))
		}
		if d0 := st.Get("dec0").(data.Decimal); d0.Scale != 0 || d0.Unscaled.Int64() != -1500 {
			t.Fatalf("record %d: scale-0 decimal masked to %s, want -1500", i, data.FormatValue(d0))
		}
		// Records do not share the masked decimal's digits.
		if dec.Unscaled == prev {
			t.Fatalf("record %d: masked decimal shares its big.Int with the record before", i)
		}
		prev = dec.Unscaled
	}
	if *parses != 1 {
		t.Fatalf("masking 100 records read the replacement %d times in all, want 1", *parses)
	}
}

// A replacement that is no number fails each numeric value with Kafka's
// messages, every time, while strings still take it.
func TestMaskFieldBadReplacementEveryRecord(t *testing.T) {
	parses := countReplacementParses(t)
	tr, err := New("MaskField$Value", props("fields", "i,dec,str", "replacement", "foo"))
	if err != nil {
		t.Fatalf("a replacement that is no number is refused at configuration: %v (Kafka refuses it when applied)", err)
	}
	dschema := data.StructBuilder().Field("dec", data.DecimalSchema(2, false)).MustBuild()
	for i := 0; i < 3; i++ {
		if _, err := tr.Apply(valueRec(nil, map[string]any{"i": int32(1)})); err == nil ||
			err.Error() != "Unable to convert foo (class java.lang.String) to a number" {
			t.Fatalf("record %d, int: %v", i, err)
		}
		if _, err := tr.Apply(valueRec(dschema, mustStruct(dschema, "dec", data.Decimal{Unscaled: big.NewInt(1), Scale: 2}))); err == nil ||
			err.Error() != "Unable to convert foo (class java.lang.String) to number" {
			t.Fatalf("record %d, decimal: %v", i, err)
		}
		got, err := tr.Apply(valueRec(nil, map[string]any{"str": "x"}))
		if err != nil || !data.ValueEqual(got.Value, map[string]any{"str": "foo", "i": nil, "dec": nil}) {
			t.Fatalf("record %d, string: %v %v", i, err, got)
		}
	}
	if *parses != 1 {
		t.Fatalf("read the replacement %d times, want 1", *parses)
	}
}

// An exponent far beyond any value's range costs nothing per record: the
// numbers narrow as Java's do, and a decimal that cannot take it at its
// scale is refused with MaskField's message.
func TestMaskFieldAbsurdExponent(t *testing.T) {
	dschema := data.StructBuilder().Field("dec", data.DecimalSchema(2, false)).MustBuild()
	decRec := func() *data.Record {
		return valueRec(dschema, mustStruct(dschema, "dec", data.Decimal{Unscaled: big.NewInt(1), Scale: 2}))
	}
	for _, c := range []struct {
		rep    string
		long   int64
		double float64
		dec    string // the masked decimal, or the error
	}{
		// 10^-2000000000 is below every long and double.
		{"1e-2000000000", 0, 0, "Unable to convert 1e-2000000000 (class java.lang.String) to number"},
		// 10^2000000000 is a multiple of 2^64, so its long is 0; its double is infinite.
		{"1e2000000000", 0, math.Inf(1), "Unable to convert 1e2000000000 (class java.lang.String) to number"},
		{"-1e2000000000", 0, math.Inf(-1), "Unable to convert -1e2000000000 (class java.lang.String) to number"},
		// Zero fits any scale.
		{"0e-2000000000", 0, 0, "0.00"},
		{"0e2000000000", 0, 0, "0.00"},
		// Digits the scale cannot hold are refused, whatever the exponent.
		{"1.234", 1, 1.234, "Unable to convert 1.234 (class java.lang.String) to number"},
		{"12345e-2", 123, 123.45, "123.45"},
	} {
		t.Run(c.rep, func(t *testing.T) {
			tr, err := New("MaskField$Value", props("fields", "l,d,dec", "replacement", c.rep))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tr.Apply(valueRec(nil, map[string]any{"l": int64(5), "d": float64(5)}))
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]any{"l": c.long, "d": c.double, "dec": nil}; !data.ValueEqual(got.Value, want) {
				t.Fatalf("masked to %s, want %s", data.FormatValue(got.Value), data.FormatValue(want))
			}
			got, err = tr.Apply(decRec())
			if err != nil {
				if err.Error() != c.dec {
					t.Fatalf("decimal: error %q, want %q", err, c.dec)
				}
				return
			}
			d := got.Value.(*data.Struct).Get("dec").(data.Decimal)
			if s := new(big.Rat).SetFrac(d.Unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil)).FloatString(2); s != c.dec || d.Scale != 2 {
				t.Fatalf("decimal masked to %s (scale %d), want %s", s, d.Scale, c.dec)
			}
		})
	}
}

// Values of many scales, masked from several goroutines, each get the
// replacement at their own scale (the per-scale cache is bounded and
// shared).
func TestMaskFieldDecimalScalesConcurrently(t *testing.T) {
	tr, err := New("MaskField$Value", props("fields", "dec", "replacement", "7.5"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for scale := int32(1); scale <= 40; scale++ {
				s := data.StructBuilder().Field("dec", data.DecimalSchema(scale, false)).MustBuild()
				got, err := tr.Apply(valueRec(s, mustStruct(s, "dec", data.Decimal{Unscaled: big.NewInt(1), Scale: scale})))
				if err != nil {
					errs <- err
					return
				}
				d := got.Value.(*data.Struct).Get("dec").(data.Decimal)
				want := new(big.Int).Mul(big.NewInt(75), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale-1)), nil))
				if d.Scale != scale || d.Unscaled.Cmp(want) != 0 {
					errs <- fmt.Errorf("scale %d: masked to %s scale %d", scale, d.Unscaled, d.Scale)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

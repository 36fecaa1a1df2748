package itest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Values returns the records' values as strings, in order.
func Values(recs []*kgo.Record) []string {
	vs := make([]string, len(recs))
	for i, r := range recs {
		vs[i] = string(r.Value)
	}
	return vs
}

// Diff is the outcome of Compare. Values are compared as multisets, since
// Kafka orders records only within a partition; the ordered comparison is
// reported separately in FirstOrderDiff.
type Diff struct {
	Want, Got int
	// Missing counts wanted values delivered fewer times than wanted.
	Missing int
	// Extra counts delivered values that were not wanted at all.
	Extra int
	// Duplicates counts additional deliveries of wanted values
	// (at-least-once redelivery shows up here, not in Extra).
	Duplicates int
	// First examples of each kind, in want (missing) or got (extra,
	// duplicate) order; "" if none.
	FirstMissing, FirstExtra, FirstDuplicate string
	// FirstOrderDiff is the first index at which want and got differ as
	// sequences, or -1 if they are identical.
	FirstOrderDiff int
}

// Equal reports whether got holds exactly the wanted values, in any order.
func (d Diff) Equal() bool { return d.Missing == 0 && d.Extra == 0 && d.Duplicates == 0 }

// InOrder reports whether got equals want as a sequence.
func (d Diff) InOrder() bool { return d.FirstOrderDiff < 0 }

func (d Diff) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "want %d, got %d: missing %d, extra %d, duplicates %d", d.Want, d.Got, d.Missing, d.Extra, d.Duplicates)
	if d.Missing > 0 {
		fmt.Fprintf(&b, "; first missing %q", short(d.FirstMissing))
	}
	if d.Extra > 0 {
		fmt.Fprintf(&b, "; first extra %q", short(d.FirstExtra))
	}
	if d.Duplicates > 0 {
		fmt.Fprintf(&b, "; first duplicate %q", short(d.FirstDuplicate))
	}
	if d.FirstOrderDiff >= 0 {
		fmt.Fprintf(&b, "; sequences differ from index %d", d.FirstOrderDiff)
	}
	return b.String()
}

func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// Compare compares delivered values with wanted values.
func Compare(want, got []string) Diff {
	d := Diff{Want: len(want), Got: len(got), FirstOrderDiff: -1}
	for i := range max(len(want), len(got)) {
		if i >= len(want) || i >= len(got) || want[i] != got[i] {
			d.FirstOrderDiff = i
			break
		}
	}
	wantN := make(map[string]int, len(want))
	for _, v := range want {
		wantN[v]++
	}
	seen := make(map[string]int, len(got))
	for _, v := range got {
		seen[v]++
		switch w := wantN[v]; {
		case w == 0:
			d.Extra++
			if d.FirstExtra == "" {
				d.FirstExtra = v
			}
		case seen[v] > w:
			d.Duplicates++
			if d.FirstDuplicate == "" {
				d.FirstDuplicate = v
			}
		}
	}
	reported := make(map[string]bool)
	for _, v := range want {
		if miss := wantN[v] - seen[v]; miss > 0 && !reported[v] {
			reported[v] = true
			d.Missing += miss
			if d.FirstMissing == "" {
				d.FirstMissing = v
			}
		}
	}
	return d
}

// RequireValues fails the test unless recs hold exactly the wanted values,
// in any order.
func RequireValues(t testing.TB, want []string, recs []*kgo.Record) {
	t.Helper()
	if d := Compare(want, Values(recs)); !d.Equal() {
		t.Fatalf("record values differ: %s", d)
	}
}

// RequireValuesInOrder fails the test unless recs hold exactly the wanted
// values in order (meaningful for a single partition).
func RequireValuesInOrder(t testing.TB, want []string, recs []*kgo.Record) {
	t.Helper()
	if d := Compare(want, Values(recs)); !d.Equal() || !d.InOrder() {
		t.Fatalf("record values differ: %s", d)
	}
}

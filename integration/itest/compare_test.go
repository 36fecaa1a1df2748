package itest

import (
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	cases := []struct {
		name                       string
		want, got                  []string
		missing, extra, dups, ord  int
		equal                      bool
		firstMiss, firstX, firstDu string
	}{
		{name: "same", want: []string{"a", "b"}, got: []string{"a", "b"}, ord: -1, equal: true},
		{name: "reordered", want: []string{"a", "b"}, got: []string{"b", "a"}, ord: 0, equal: true},
		{name: "missing", want: []string{"a", "b", "c"}, got: []string{"a", "c"}, missing: 1, ord: 1, firstMiss: "b"},
		{name: "extra", want: []string{"a"}, got: []string{"a", "z"}, extra: 1, ord: 1, firstX: "z"},
		{name: "duplicate", want: []string{"a", "b"}, got: []string{"a", "b", "a"}, dups: 1, ord: 2, firstDu: "a"},
		{name: "wanted twice got once", want: []string{"a", "a"}, got: []string{"a"}, missing: 1, ord: 1, firstMiss: "a"},
		{name: "empty got", want: []string{"a", "b"}, got: nil, missing: 2, ord: 0, firstMiss: "a"},
		{name: "all kinds", want: []string{"a", "b", "c"}, got: []string{"c", "c", "x", "a"}, missing: 1, extra: 1, dups: 1, ord: 0, firstMiss: "b", firstX: "x", firstDu: "c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Compare(tc.want, tc.got)
			if d.Missing != tc.missing || d.Extra != tc.extra || d.Duplicates != tc.dups || d.FirstOrderDiff != tc.ord {
				t.Fatalf("Compare = %+v", d)
			}
			if d.Equal() != tc.equal {
				t.Fatalf("Equal = %v, want %v (%s)", d.Equal(), tc.equal, d)
			}
			if d.FirstMissing != tc.firstMiss || d.FirstExtra != tc.firstX || d.FirstDuplicate != tc.firstDu {
				t.Fatalf("first examples = %q %q %q", d.FirstMissing, d.FirstExtra, d.FirstDuplicate)
			}
		})
	}
	s := Compare([]string{"a", "b"}, []string{"a", "a"}).String()
	for _, part := range []string{"want 2, got 2", "missing 1", "duplicates 1", `first missing "b"`, "index 1"} {
		if !strings.Contains(s, part) {
			t.Errorf("String() = %q lacks %q", s, part)
		}
	}
}

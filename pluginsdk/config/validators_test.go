package config

import (
	"errors"
	"strings"
	"testing"
)

func TestValidators(t *testing.T) {
	cases := []struct {
		name  string
		v     Validator
		desc  string
		value any
		err   string // "" = valid
	}{
		{"at least ok", AtLeast(1), "[1,...]", int32(1), ""},
		{"at least low", AtLeast(1), "[1,...]", int32(0), "Invalid value 0 for configuration k: Value must be at least 1"},
		{"at least null", AtLeast(1), "[1,...]", nil, "Invalid value null for configuration k: Value must be non-null"},
		{"at least long", AtLeast(int64(-1)), "[-1,...]", int64(-2), "Value must be at least -1"},
		{"at least double", AtLeast(0.5), "[0.5,...]", 0.25, "Invalid value 0.25 for configuration k: Value must be at least 0.5"},
		{"at least whole double", AtLeast(0.0), "[0.0,...]", -1.0, "Invalid value -1.0 for configuration k: Value must be at least 0.0"},
		{"range ok", Range(1, 10), "[1,...,10]", int16(10), ""},
		{"range high", Range(1, 10), "[1,...,10]", int32(11), "Invalid value 11 for configuration k: Value must be no more than 10"},
		{"range not a number", Range(1, 10), "[1,...,10]", "5", "Value must be a number"},
		{"at most", AtMost(5), "[...,5]", int32(6), "Value must be no more than 5"},
		{"valid string", ValidString("none", "all"), "[none, all]", "all", ""},
		{"valid string is case sensitive", ValidString("none", "all"), "[none, all]", "ALL", "Invalid value ALL for configuration k: String must be one of: none, all"},
		{"valid string null", ValidString("none", "all"), "[none, all]", nil, "Invalid value null for configuration k: String must be one of: none, all"},
		{"ci valid string", CaseInsensitiveValidString("none", "all"), "(case insensitive) [NONE, ALL]", "aLl", ""},
		{"ci valid string bad", CaseInsensitiveValidString("none", "all"), "(case insensitive) [NONE, ALL]", "some", "Invalid value some for configuration k: String must be one of (case insensitive): NONE, ALL"},
		{"valid list", ValidList("a", "b"), "[a, b]", []string{"a", "b", "a"}, ""},
		{"valid list empty", ValidList("a", "b"), "[a, b]", []string{}, ""},
		{"valid list bad element", ValidList("a", "b"), "[a, b]", []string{"a", "c"}, "Invalid value c for configuration k: String must be one of: a, b"},
		{"non-empty string", NonEmptyString(), "non-empty string", "", "Invalid value  for configuration k: String must be non-empty"},
		{"non-empty string null ok", NonEmptyString(), "non-empty string", nil, ""},
		{"non-null", NonNull(), "non-null value", nil, "Value must be non-null"},
		{"non-null-or-empty null", NonNullOrEmpty(), "non-null and non-empty value", nil, "Invalid value null for configuration k: Value must be non-null"},
		{"non-null-or-empty empty list", NonNullOrEmpty(), "non-null and non-empty value", []string{}, "Invalid value [] for configuration k: List must be non-empty"},
		{"non-null-or-empty ok", NonNullOrEmpty(), "non-null and non-empty value", "x", ""},
		{"no control chars", NonEmptyStringWithoutControlChars(), "non-empty string without ISO control characters", "conn\x01ec\ttor", "String may not contain control sequences but had the following ASCII control characters: 1, 9"},
		{"no control chars empty", NonEmptyStringWithoutControlChars(), "non-empty string without ISO control characters", "", "String may not be empty"},
		{"no control chars ok", NonEmptyStringWithoutControlChars(), "non-empty string without ISO control characters", "my-connector", ""},
		{"valid regex", ValidRegex(), "valid regex", "topic-.*", ""},
		{"invalid regex", ValidRegex(), "valid regex", "topic-(", "Invalid value topic-( for configuration k: Invalid regex:"},
		{"matches", Matches(`[a-z]+`), "[a-z]+", "abc", ""},
		{"matches whole string only", Matches(`[a-z]+`), "[a-z]+", "abc1", "Invalid value abc1 for configuration k: String must match the pattern [a-z]+"},
		{"lambda plain error", Lambda(func(string, any) error { return errors.New("odd") }, "even"), "even", int32(3), "Invalid value 3 for configuration k: odd"},
		{"lambda own message", Lambda(func(n string, v any) error { return &Error{Name: n, Message: "custom"} }, "x"), "x", int32(3), "custom"},
		{"all first failure", All(NonEmptyString(), ValidString("a")), "non-empty string, [a]", "", "String must be non-empty"},
		{"all second", All(NonEmptyString(), ValidString("a")), "non-empty string, [a]", "b", "String must be one of: a"},
		{"described accepts anything", Described("[1,...]"), "[1,...]", "garbage", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.v.String(); got != c.desc {
				t.Errorf("String() = %q, want %q", got, c.desc)
			}
			err := c.v.Validate("k", c.value)
			if c.err == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Validate = %v, want %q", err, c.err)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Name != "k" {
				t.Fatalf("error %v is not an *Error naming k", err)
			}
		})
	}
}

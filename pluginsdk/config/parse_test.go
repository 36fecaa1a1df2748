package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseTypes(t *testing.T) {
	cases := []struct {
		typ  Type
		in   string
		want any
		err  string
	}{
		{Boolean, "true", true, ""},
		{Boolean, " FALSE ", false, ""},
		{Boolean, "True", true, ""},
		{Boolean, "yes", nil, "Invalid value yes for configuration k: Expected value to be either true or false"},
		{Boolean, "", nil, "Expected value to be either true or false"},
		{String, "  padded  ", "padded", ""},
		{String, "", "", ""},
		{Class, " com.example.Foo ", "com.example.Foo", ""},
		{Password, " s3cret ", Secret("s3cret"), ""},
		{Int, "42", int32(42), ""},
		{Int, " -7 ", int32(-7), ""},
		{Int, "+7", int32(7), ""},
		{Int, "2147483647", int32(math.MaxInt32), ""},
		{Int, "2147483648", nil, "Invalid value 2147483648 for configuration k: Not a number of type INT"},
		{Int, "abc", nil, "Invalid value abc for configuration k: Not a number of type INT"},
		{Int, "1.0", nil, "Not a number of type INT"},
		{Int, "0x10", nil, "Not a number of type INT"},
		{Int, "1_000", nil, "Not a number of type INT"},
		{Int, "", nil, "Invalid value  for configuration k: Not a number of type INT"},
		{Short, "32767", int16(32767), ""},
		{Short, "32768", nil, "Not a number of type SHORT"},
		{Long, "9223372036854775807", int64(math.MaxInt64), ""},
		{Long, "9223372036854775808", nil, "Not a number of type LONG"},
		{Double, "1.5", 1.5, ""},
		{Double, "1", 1.0, ""},
		{Double, "-2e3", -2000.0, ""},
		{Double, "1.5d", 1.5, ""},
		{Double, "Infinity", math.Inf(1), ""},
		{Double, "inf", nil, "Not a number of type DOUBLE"},
		{Double, "x", nil, "Invalid value x for configuration k: Not a number of type DOUBLE"},
		{List, "a,b,c", []string{"a", "b", "c"}, ""},
		{List, " a , b\t,\nc ", []string{"a", "b", "c"}, ""},
		{List, "", []string{}, ""},
		{List, "   ", []string{}, ""},
		{List, "a", []string{"a"}, ""},
		{List, "a,,b", []string{"a", "", "b"}, ""},
		{List, "a,b,", []string{"a", "b", ""}, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%q", c.typ, c.in), func(t *testing.T) {
			d := NewDef().Define(Key{Name: "k", Type: c.typ, Required: true})
			vals, err := d.Parse(map[string]string{"k": c.in})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Parse error = %v, want containing %q", err, c.err)
				}
				var ce *Error
				if !errors.As(err, &ce) || ce.Name != "k" {
					t.Fatalf("error %v does not carry the key", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := vals.Get("k"); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Get = %#v, want %#v", got, c.want)
			}
		})
	}
}

func TestParseDefaultsRequiredAndUnknown(t *testing.T) {
	d := NewDef().
		Define(Key{Name: "file", Type: String, Required: true, Importance: High}).
		Define(Key{Name: "tasks.max", Type: Int, Default: 1, Validator: AtLeast(1)}).
		Define(Key{Name: "batch", Type: Long, Default: "500"}).
		Define(Key{Name: "ratio", Type: Double, Default: 1}).
		Define(Key{Name: "topics", Type: List, Default: "a, b"}).
		Define(Key{Name: "enabled", Type: Boolean, Default: true}).
		Define(Key{Name: "secret", Type: Password, Default: "pw"}).
		Define(Key{Name: "short", Type: Short, Default: int16(3)}).
		Define(Key{Name: "cls", Type: Class, Default: "x.Y"}).
		Define(Key{Name: "nullable", Type: String})

	vals, err := d.Parse(map[string]string{"file": "/tmp/in", "extra.setting": "kept", "producer.override.acks": "all"})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		got, want any
	}{
		{vals.String("file"), "/tmp/in"},
		{vals.Int("tasks.max"), 1},
		{vals.Long("batch"), int64(500)},
		{vals.Double("ratio"), 1.0},
		{vals.List("topics"), []string{"a", "b"}},
		{vals.Bool("enabled"), true},
		{vals.Password("secret").Value(), "pw"},
		{vals.Short("short"), int16(3)},
		{vals.Class("cls"), "x.Y"},
		{vals.IsNull("nullable"), true},
		{vals.Has("file"), true},
		{vals.Has("tasks.max"), false},
		{vals.Has("extra.setting"), true},
		{vals.Raw("extra.setting"), "kept"},
		{vals.Raw("tasks.max"), "1"},
		{vals.Raw("topics"), "a,b"},
		{vals.Raw("nope"), ""},
		{vals.Unknown(), map[string]string{"extra.setting": "kept", "producer.override.acks": "all"}},
		{vals.WithPrefix("producer.override."), map[string]string{"acks": "all"}},
		{len(vals.Originals()), 3},
	}
	for i, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("check %d: got %#v, want %#v", i, c.got, c.want)
		}
	}

	// Every problem is reported, each naming its key, in definition order.
	_, err = d.Parse(map[string]string{"tasks.max": "0", "batch": "x", "enabled": "maybe"})
	want := []string{
		`Missing required configuration "file" which has no default value.`,
		"Invalid value 0 for configuration tasks.max: Value must be at least 1",
		"Invalid value x for configuration batch: Not a number of type LONG",
		"Invalid value maybe for configuration enabled: Expected value to be either true or false",
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("Parse errors:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	_, err = d.Parse(map[string]string{"file": "f", "tasks.max": "abc"})
	if err == nil || err.Error() != "Invalid value abc for configuration tasks.max: Not a number of type INT" {
		t.Fatalf("Parse error = %v", err)
	}
}

func TestGettersPanicOnMisuse(t *testing.T) {
	d := NewDef().Define(Key{Name: "n", Type: Int, Default: 1})
	vals, err := d.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, fn := range map[string]func(){
		"unknown key": func() { vals.Int("missing") },
		"wrong type":  func() { vals.String("n") },
		"Get unknown": func() { vals.Get("missing") },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			fn()
		})
	}
}

func TestDefineErrors(t *testing.T) {
	cases := []struct {
		name string
		key  Key
		err  string
	}{
		{"no name", Key{Type: Int}, "without a name"},
		{"no type", Key{Name: "a"}, "invalid type"},
		{"required with default", Key{Name: "a", Type: Int, Required: true, Default: 1}, "required key has no default"},
		{"unparsable default", Key{Name: "a", Type: Int, Default: "x"}, "Invalid default value for a: Invalid value x for configuration a: Not a number of type INT"},
		{"default of wrong Go type", Key{Name: "a", Type: Boolean, Default: 1}, "Invalid default value for a"},
		{"default out of range", Key{Name: "a", Type: Short, Default: 70000}, "out of range for SHORT"},
		{"default fails validator", Key{Name: "a", Type: Int, Default: 0, Validator: AtLeast(1)}, "Value must be at least 1"},
		{"null default fails validator", Key{Name: "a", Type: String, Validator: ValidString("x")}, "Invalid value null for configuration a: String must be one of: x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := NewDef().Add(c.key)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Add error = %v, want containing %q", err, c.err)
			}
		})
	}
	d := NewDef().Define(Key{Name: "a", Type: Int, Default: 1})
	if err := d.Add(Key{Name: "a", Type: Int, Default: 1}); err == nil || err.Error() != "Configuration a is defined twice." {
		t.Fatalf("duplicate: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Define of a bad key did not panic")
		}
	}()
	d.Define(Key{Name: "a", Type: Int})
}

func TestDefineNormalizesKeys(t *testing.T) {
	d := NewDef().
		Define(Key{Name: "a", Type: Int, Default: 1}).
		Define(Key{Name: "b", Type: Int, Default: 1, Group: "G", OrderInGroup: 0, DisplayName: "Bee", Importance: High})
	a, _ := d.Key("a")
	if a.Importance != Low || a.OrderInGroup != -1 || a.DisplayName != "a" || a.Default != int32(1) {
		t.Fatalf("a = %+v", a)
	}
	b, _ := d.Key("b")
	if b.Importance != High || b.OrderInGroup != 0 || b.DisplayName != "Bee" {
		t.Fatalf("b = %+v", b)
	}
	if _, ok := d.Key("c"); ok {
		t.Fatal("Key of an undefined name")
	}
	if got := d.Names(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("Names = %v", got)
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := Secret("hunter2")
	for _, f := range []string{"%v", "%s", "%+v", "%#v", "%q"} {
		if out := fmt.Sprintf(f, s); strings.Contains(out, "hunter2") {
			t.Errorf("%s printed the secret: %s", f, out)
		}
	}
	if out := fmt.Sprintf("%v", struct{ P Secret }{s}); strings.Contains(out, "hunter2") {
		t.Errorf("secret inside a struct printed: %s", out)
	}
	if s.Value() != "hunter2" {
		t.Fatal("Value lost the secret")
	}
	d := NewDef().Define(Key{Name: "pw", Type: Password, Required: true, Validator: Lambda(func(string, any) error { return errors.New("too weak") }, "strong")})
	_, err := d.Parse(map[string]string{"pw": "hunter2"})
	if err == nil || err.Error() != "Invalid value [hidden] for configuration pw: too weak" {
		t.Fatalf("error = %v", err)
	}
}

func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0", 1: "1.0", -1.5: "-1.5", 0.001: "0.001", 0.0001: "1.0E-4", 1234567: "1234567.0",
		1e7: "1.0E7", 1.5e10: "1.5E10", math.Inf(-1): "-Infinity", 0.1: "0.1",
	} {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %s, want %s", f, got, want)
		}
	}
}

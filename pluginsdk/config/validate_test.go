package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

func fileDef() *Def {
	return NewDef().
		Define(Key{Name: "file", Type: String, Required: true, Importance: High, Doc: "Source file."}).
		Define(Key{Name: "tasks.max", Type: Int, Default: 1, Validator: AtLeast(1), Importance: High}).
		Define(Key{Name: "mode", Type: String, Default: "none", Validator: ValidString("none", "all"), Recommended: []string{"none", "all"}, Dependents: []string{"mode.detail", "ghost"}}).
		Define(Key{Name: "mode.detail", Type: String, Default: "", Recommender: modeRecommender{}}).
		Define(Key{Name: "password", Type: Password, Default: "pw"}).
		Define(Key{Name: "topics", Type: List, Default: []string{"a", "b"}})
}

// modeRecommender shows mode.detail only when mode is "all".
type modeRecommender struct{}

func (modeRecommender) ValidValues(string, map[string]any) ([]string, error) {
	return []string{"x", "y"}, nil
}

func (modeRecommender) Visible(_ string, parsed map[string]any) (bool, error) {
	return parsed["mode"] == "all", nil
}

func TestValidateKafkaSemantics(t *testing.T) {
	got := fileDef().Validate(map[string]string{"tasks.max": "abc", "mode": "some", "unknown": "ignored"})
	want := []ConfigValue{
		{Name: "file", Errors: []string{`Missing required configuration "file" which has no default value.`}, Visible: true, Recommended: []string{}},
		// A value that does not parse is null, and the validator still runs on it.
		{Name: "tasks.max", Errors: []string{
			"Invalid value abc for configuration tasks.max: Not a number of type INT",
			"Invalid value null for configuration tasks.max: Value must be non-null",
		}, Visible: true, Recommended: []string{}},
		{Name: "mode", Value: "some", Errors: []string{"Invalid value some for configuration mode: String must be one of: none, all"},
			Visible: true, Recommended: []string{"none", "all"}},
		{Name: "mode.detail", Value: "", Visible: false, Recommended: []string{"x", "y"}},
		{Name: "password", Value: Secret("pw"), Visible: true, Recommended: []string{}},
		{Name: "topics", Value: []string{"a", "b"}, Visible: true, Recommended: []string{}},
		{Name: "ghost", Errors: []string{"ghost is referred in the dependents, but not defined."}, Visible: false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Validate:\n%#v\nwant\n%#v", got, want)
	}
	if n := ErrorCount(got); n != 5 {
		t.Fatalf("ErrorCount = %d, want 5", n)
	}

	ok := fileDef().Validate(map[string]string{"file": "/f", "mode": "all"})
	for _, v := range ok {
		if v.Name != "ghost" && len(v.Errors) > 0 {
			t.Fatalf("%s: unexpected errors %v", v.Name, v.Errors)
		}
	}
	if !ok[3].Visible {
		t.Fatal("recommender did not see the parsed mode")
	}
}

func TestConfigValuesProto(t *testing.T) {
	vs := fileDef().Validate(map[string]string{"file": "/f", "password": "hunter2", "tasks.max": "3"})
	ps := ConfigValuesProto(vs)
	byName := map[string]*pluginv1.ConfigValue{}
	for _, p := range ps {
		byName[p.Name] = p
	}
	if byName["password"].GetValue() != "[hidden]" {
		t.Fatalf("password travels as %q", byName["password"].GetValue())
	}
	if byName["topics"].GetValue() != "a,b" || byName["tasks.max"].GetValue() != "3" || byName["file"].GetValue() != "/f" {
		t.Fatalf("values %v", ps)
	}
	if byName["ghost"].Value != nil || byName["ghost"].Visible {
		t.Fatal("null value or visibility lost")
	}
	back := ConfigValuesFromProto(ps)
	if len(back) != len(vs) || back[1].Value != "3" || back[0].Value != "/f" || !reflect.DeepEqual(back[6].Errors, vs[6].Errors) || back[6].Value != nil {
		t.Fatalf("round trip %#v", back)
	}
}

func TestDefProtoRoundTrip(t *testing.T) {
	d := fileDef().
		Define(Key{Name: "ratio", Type: Double, Default: 2, Group: "Tuning", OrderInGroup: 1, Width: WidthShort, DisplayName: "Ratio", Importance: Medium}).
		Define(Key{Name: "cls", Type: Class, Default: "a.B", Group: "Tuning", OrderInGroup: 2}).
		Define(Key{Name: "on", Type: Boolean, Default: false}).
		Define(Key{Name: "n", Type: Short, Default: 7}).
		Define(Key{Name: "big", Type: Long}).
		Define(Key{Name: "empty.list", Type: List, Default: ""})
	p := d.Proto()
	b, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var p2 pluginv1.ConfigDef
	if err := proto.Unmarshal(b, &p2); err != nil {
		t.Fatal(err)
	}
	byName := map[string]*pluginv1.ConfigKey{}
	for _, k := range p2.Keys {
		byName[k.Name] = k
	}
	checks := []struct {
		got, want any
	}{
		{byName["file"].Required, true},
		{byName["file"].DefaultValue == nil, true},
		{byName["big"].Required, false},
		{byName["big"].DefaultValue == nil, true},
		{byName["tasks.max"].GetDefaultValue(), "1"},
		{byName["tasks.max"].Validator, "[1,...]"},
		{byName["mode"].Validator, "[none, all]"},
		{byName["mode"].RecommendedValues, []string{"none", "all"}},
		{byName["mode"].Dependents, []string{"mode.detail", "ghost"}},
		{byName["password"].GetDefaultValue(), "[hidden]"},
		{byName["topics"].GetDefaultValue(), "a,b"},
		{byName["ratio"].GetDefaultValue(), "2.0"},
		{byName["ratio"].Group, "Tuning"},
		{byName["ratio"].OrderInGroup, int32(1)},
		{byName["ratio"].Width, pluginv1.Width_WIDTH_SHORT},
		{byName["ratio"].DisplayName, "Ratio"},
		{byName["ratio"].Importance, pluginv1.Importance_IMPORTANCE_MEDIUM},
		{byName["on"].GetDefaultValue(), "false"},
		{byName["on"].OrderInGroup, int32(-1)},
		{byName["on"].Importance, pluginv1.Importance_IMPORTANCE_LOW},
		{byName["file"].Type, pluginv1.ConfigType_CONFIG_TYPE_STRING},
		{byName["empty.list"].GetDefaultValue(), ""},
		{byName["empty.list"].DefaultValue != nil, true},
	}
	for i, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("check %d: got %#v, want %#v", i, c.got, c.want)
		}
	}

	d2, err := DefFromProto(&p2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d2.Names(), d.Names()) {
		t.Fatalf("names %v, want %v", d2.Names(), d.Names())
	}
	for _, k := range d.Keys() {
		k2, _ := d2.Key(k.Name)
		if k2.Type != k.Type || k2.Required != k.Required || k2.Importance != k.Importance || k2.Group != k.Group ||
			k2.OrderInGroup != k.OrderInGroup || k2.Width != k.Width || k2.DisplayName != k.DisplayName || k2.Doc != k.Doc {
			t.Errorf("%s: %+v, want %+v", k.Name, k2, k)
		}
		s1, ok1 := k.DefaultString()
		s2, ok2 := k2.DefaultString()
		if s1 != s2 || ok1 != ok2 {
			t.Errorf("%s: default %q/%v, want %q/%v", k.Name, s2, ok2, s1, ok1)
		}
		if (k.Validator == nil) != (k2.Validator == nil) || (k.Validator != nil && k.Validator.String() != k2.Validator.String()) {
			t.Errorf("%s: validator %v, want %v", k.Name, k2.Validator, k.Validator)
		}
	}
	// Host side: defaults parse to typed values, validators only describe.
	vals, err := d2.Parse(map[string]string{"file": "x", "mode": "invalid-but-unchecked"})
	if err != nil {
		t.Fatal(err)
	}
	if vals.Int("tasks.max") != 1 || vals.Double("ratio") != 2 || vals.Short("n") != 7 || len(vals.List("empty.list")) != 0 {
		t.Fatal("defaults lost across the wire")
	}

	if _, err := DefFromProto(&pluginv1.ConfigDef{Keys: []*pluginv1.ConfigKey{{Name: "x"}}}); err == nil {
		t.Fatal("key without a type accepted")
	}
	bad := "abc"
	if _, err := DefFromProto(&pluginv1.ConfigDef{Keys: []*pluginv1.ConfigKey{{Name: "x", Type: pluginv1.ConfigType_CONFIG_TYPE_INT, DefaultValue: &bad}}}); err == nil {
		t.Fatal("unparsable default accepted")
	}
}

func TestMergeSortedGroupsEmbed(t *testing.T) {
	common := NewDef().
		Define(Key{Name: "name", Type: String, Required: true, Group: "Common", OrderInGroup: 1, Importance: High, Validator: NonEmptyStringWithoutControlChars()}).
		Define(Key{Name: "connector.class", Type: String, Required: true, Group: "Common", OrderInGroup: 2, Importance: High}).
		Define(Key{Name: "tasks.max", Type: Int, Default: 1, Group: "Common", OrderInGroup: 3, Validator: AtLeast(1), Importance: High})
	own := NewDef().
		Define(Key{Name: "tasks.max", Type: Int, Default: 5}). // shadowed by common
		Define(Key{Name: "file", Type: String, Required: true, Importance: High}).
		Define(Key{Name: "b", Type: String, Default: "", Group: "Own", OrderInGroup: 1, Importance: Low}).
		Define(Key{Name: "a", Type: String, Default: "", Group: "Own", OrderInGroup: 1, Importance: Low}).
		Define(Key{Name: "c", Type: String, Required: true, Group: "Own", OrderInGroup: 1, Importance: Low}).
		Define(Key{Name: "d", Type: String, Default: "", Group: "Own", OrderInGroup: 1, Importance: High})
	m := common.Merge(own, nil)
	if got := m.Names(); !reflect.DeepEqual(got, []string{"name", "connector.class", "tasks.max", "file", "b", "a", "c", "d"}) {
		t.Fatalf("Merge names %v", got)
	}
	if k, _ := m.Key("tasks.max"); k.Group != "Common" {
		t.Fatal("Merge: the first definition should win")
	}
	if common.Len() != 3 {
		t.Fatal("Merge changed its receiver")
	}
	if got := m.Groups(); !reflect.DeepEqual(got, []string{"Common", "Own"}) {
		t.Fatalf("Groups %v", got)
	}
	var sorted []string
	for _, k := range m.Sorted() {
		sorted = append(sorted, k.Name)
	}
	// Ungrouped first; in "Own": required before defaulted, then importance, then name.
	if want := []string{"file", "name", "connector.class", "tasks.max", "c", "d", "a", "b"}; !reflect.DeepEqual(sorted, want) {
		t.Fatalf("Sorted %v, want %v", sorted, want)
	}

	transform := NewDef().
		Define(Key{Name: "regex", Type: String, Required: true, Validator: ValidRegex(), Importance: High}).
		Define(Key{Name: "replacement", Type: String, Required: true, Importance: High, Dependents: []string{"regex"}})
	if err := m.Embed("transforms.route.", "Transforms: route", 0, transform); err != nil {
		t.Fatal(err)
	}
	k, ok := m.Key("transforms.route.regex")
	if !ok || k.Group != "Transforms: route" || k.OrderInGroup != 0 {
		t.Fatalf("embedded key %+v", k)
	}
	if k2, _ := m.Key("transforms.route.replacement"); k2.OrderInGroup != 1 || !reflect.DeepEqual(k2.Dependents, []string{"transforms.route.regex"}) {
		t.Fatalf("embedded key %+v", k2)
	}
	// The validator names the child's own key, as Kafka's embedded validators do.
	_, err := m.Parse(map[string]string{"name": "c", "connector.class": "X", "file": "f", "c": "c",
		"transforms.route.regex": "(", "transforms.route.replacement": "x"})
	if err == nil || !strings.Contains(err.Error(), "Invalid value ( for configuration regex: Invalid regex") {
		t.Fatalf("embedded validator error %v", err)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatal("not an *Error")
	}
	if err := m.Embed("transforms.route.", "x", 0, transform); err == nil {
		t.Fatal("embedding twice succeeded")
	}
}

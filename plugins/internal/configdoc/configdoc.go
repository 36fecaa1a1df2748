// Package configdoc renders a connector's config.Def as the Markdown
// settings table plugins/README.md shows, so the README is generated from
// the one declaration the connector validates with; each plugin's tests check
// that the README holds its current tables.
package configdoc

import (
	"os"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/config"
)

// Table returns the settings of def, in definition order, as a Markdown
// table: name, type, default ("required" when there is none, "null" for a
// null default), valid values, importance and description.
func Table(def *config.Def) string {
	var b strings.Builder
	b.WriteString("| Setting | Type | Default | Valid values | Importance | Description |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, k := range def.Keys() {
		def := "null"
		if k.Required {
			def = "required"
		} else if s, ok := k.DefaultString(); ok {
			def = "`" + s + "`"
			if s == "" {
				def = `""`
			}
		}
		valid := ""
		if k.Validator != nil {
			valid = k.Validator.String()
		}
		cells := []string{"`" + k.Name + "`", k.Type.String(), def, valid, strings.ToLower(k.Importance.String()), k.Doc}
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Section markers delimit a generated table in the README:
//
//	<!-- settings: NAME -->
//	...table...
//	<!-- /settings -->
func begin(name string) string { return "<!-- settings: " + name + " -->\n" }

const end = "<!-- /settings -->"

// Check reports whether the README text holds table under the section name.
func Check(readme, name, table string) bool {
	return strings.Contains(readme, begin(name)+table+end)
}

// Replace returns readme with section name's content replaced by table; ok
// is false when the section is missing.
func Replace(readme, name, table string) (string, bool) {
	i := strings.Index(readme, begin(name))
	if i < 0 {
		return readme, false
	}
	j := strings.Index(readme[i:], end)
	if j < 0 {
		return readme, false
	}
	return readme[:i] + begin(name) + table + readme[i+j:], true
}

// CheckREADME fails t unless the README at path shows, for every named
// section, the current settings table of its definition; with update it
// rewrites those sections instead. Each plugin's README test calls it.
func CheckREADME(t testing.TB, path string, update bool, tables map[string]*config.Def) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for name, def := range tables {
		table := Table(def)
		if update {
			var ok bool
			if readme, ok = Replace(readme, name, table); !ok {
				t.Fatalf("README has no section %q", name)
			}
			continue
		}
		if !Check(readme, name, table) {
			t.Errorf("README section %q is not the current settings table (run go test -run README -update); want:\n%s", name, table)
		}
	}
	if update {
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

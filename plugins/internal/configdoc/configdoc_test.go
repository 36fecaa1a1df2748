package configdoc

import (
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/config"
)

func TestTable(t *testing.T) {
	def := config.NewDef().
		Define(config.Key{Name: "topic", Type: config.String, Required: true, Importance: config.High, Validator: config.NonEmptyString(), Doc: "Where to."}).
		Define(config.Key{Name: "batch.size", Type: config.Int, Default: 5, Validator: config.AtLeast(1), Doc: "How many a|b."}).
		Define(config.Key{Name: "file", Type: config.String, Doc: "Optional."}).
		Define(config.Key{Name: "field", Type: config.String, Default: "", Importance: config.Medium})
	want := "| Setting | Type | Default | Valid values | Importance | Description |\n" +
		"| --- | --- | --- | --- | --- | --- |\n" +
		"| `topic` | STRING | required | non-empty string | high | Where to. |\n" +
		"| `batch.size` | INT | `5` | [1,...] | low | How many a\\|b. |\n" +
		"| `file` | STRING | null |  | low | Optional. |\n" +
		"| `field` | STRING | \"\" |  | medium |  |\n"
	if got := Table(def); got != want {
		t.Fatalf("Table:\n%s\nwant:\n%s", got, want)
	}
}

func TestCheckAndReplace(t *testing.T) {
	readme := "intro\n<!-- settings: A -->\nold\n<!-- /settings -->\nmiddle\n<!-- settings: B -->\n<!-- /settings -->\n"
	got, ok := Replace(readme, "B", "| b |\n")
	if !ok || got != "intro\n<!-- settings: A -->\nold\n<!-- /settings -->\nmiddle\n<!-- settings: B -->\n| b |\n<!-- /settings -->\n" {
		t.Fatalf("Replace B: %v %q", ok, got)
	}
	if !Check(got, "B", "| b |\n") || Check(got, "A", "| b |\n") || !Check(got, "A", "old\n") {
		t.Fatal("Check disagrees with the text")
	}
	if _, ok := Replace(readme, "C", "x"); ok {
		t.Fatal("Replace of a missing section succeeded")
	}
}

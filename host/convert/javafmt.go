package convert

import (
	"slices"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// javaString renders v as Java's toString would for the Java object Kafka
// Connect holds for it (data.FormatValue).
func javaString(v any) string { return data.FormatValue(v) }

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

package rest

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/sluice-io/sluice/host/herder"
)

func (s *Server) listPlugins(c echo.Context) error {
	connectorsOnly := queryBool(c, "connectorsOnly", true)
	plugins, err := call(s, c, func(ctx context.Context) ([]herder.PluginInfo, error) {
		return s.h.Plugins(ctx, connectorsOnly)
	})
	if err != nil {
		return err
	}
	if plugins == nil {
		plugins = []herder.PluginInfo{}
	}
	slices.SortStableFunc(plugins, func(a, b herder.PluginInfo) int {
		return cmp.Compare(kindRank(a.Type), kindRank(b.Type))
	})
	return writeJSON(c, http.StatusOK, plugins)
}

// kindRank orders GET /connector-plugins as Kafka's ConnectorPluginsResource
// does, whatever order the herder's catalogs give: sinks, sources,
// transformations, predicates, converters, header converters; unknown
// kinds last.
func kindRank(typ string) int {
	switch typ {
	case "sink":
		return 0
	case "source":
		return 1
	case "transformation":
		return 2
	case "predicate":
		return 3
	case "converter":
		return 4
	case "header_converter":
		return 5
	}
	return 6
}

func (s *Server) pluginConfig(c echo.Context) error {
	plugin, err := param(c, "plugin")
	if err != nil {
		return err
	}
	defs, err := call(s, c, func(ctx context.Context) ([]herder.ConfigKeyInfo, error) {
		return s.h.PluginConfig(ctx, plugin)
	})
	if err != nil {
		return err
	}
	if defs == nil {
		defs = []herder.ConfigKeyInfo{}
	}
	return writeJSON(c, http.StatusOK, defs)
}

// validateConfig answers PUT /connector-plugins/{p}/config/validate: 200
// with the validation result, errors or not.
func (s *Server) validateConfig(c echo.Context) error {
	plugin, err := param(c, "plugin")
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	cfg, nulls, err := decodeConfig(body)
	if err != nil {
		return err
	}
	class, ok := cfg["connector.class"]
	if !ok {
		return badRequest("Connector config %s contains no connector type", javaMap(cfg))
	}
	if !strings.HasSuffix(simplePluginName(class), simplePluginName(plugin)) {
		return badRequest("Included connector type %s does not match request type %s", class, plugin)
	}
	infos, err := s.validate(c, cfg, nulls)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, infos)
}

// simplePluginName drops a trailing "Connector", as Kafka compares the
// class in the body with the plugin in the path.
func simplePluginName(name string) string {
	if n, ok := strings.CutSuffix(name, "Connector"); ok && n != "" {
		return n
	}
	return name
}

// javaMap writes a config as Java's Map.toString does ({k=v, k2=v2}),
// keys sorted, for Kafka's messages that quote a whole config.
func javaMap(m map[string]string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(m[k])
	}
	b.WriteByte('}')
	return b.String()
}

package rest

import (
	"context"
	"net/http"
	"testing"

	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/rest/resttest"
)

// shuffledPlugins is a herder whose plugin list comes in no particular
// order of kinds, as a herder assembling it from several catalogs may give.
type shuffledPlugins struct{ *resttest.Herder }

func (shuffledPlugins) Plugins(context.Context, bool) ([]herder.PluginInfo, error) {
	return []herder.PluginInfo{
		{Class: "a.BooleanConverter", Type: "converter"},
		{Class: "a.BooleanConverter", Type: "header_converter"},
		{Class: "b.JsonConverter", Type: "converter"},
		{Class: "b.JsonConverter", Type: "header_converter"},
		{Class: "x.Source", Type: "source", Version: "1"},
		{Class: "t.Cast$Key", Type: "transformation", Version: "4.0.0"},
		{Class: "t.Cast$Value", Type: "transformation", Version: "4.0.0"},
		{Class: "p.HasHeaderKey", Type: "predicate", Version: "4.0.0"},
		{Class: "z.Sink", Type: "sink", Version: "1"},
		{Class: "y.Sink", Type: "sink", Version: "1"},
	}, nil
}

// GET /connector-plugins?connectorsOnly=false lists the kinds in Kafka's
// order (sinks, sources, transformations, predicates, converters, header
// converters), keeping the herder's order within a kind.
func TestPluginsListedInKafkasKindOrder(t *testing.T) {
	srv := startServer(t, shuffledPlugins{resttest.New()}, mustRegistry(t), Options{})
	r := doURL(t, http.DefaultClient, "GET", srv.Addrs()[0]+"/connector-plugins?connectorsOnly=false", "", nil)
	r.expect(t, http.StatusOK, `[
		{"class":"z.Sink","type":"sink","version":"1"},
		{"class":"y.Sink","type":"sink","version":"1"},
		{"class":"x.Source","type":"source","version":"1"},
		{"class":"t.Cast$Key","type":"transformation","version":"4.0.0"},
		{"class":"t.Cast$Value","type":"transformation","version":"4.0.0"},
		{"class":"p.HasHeaderKey","type":"predicate","version":"4.0.0"},
		{"class":"a.BooleanConverter","type":"converter"},
		{"class":"b.JsonConverter","type":"converter"},
		{"class":"a.BooleanConverter","type":"header_converter"},
		{"class":"b.JsonConverter","type":"header_converter"}]`)
}

// connectorsOnly is a primitive boolean to Jersey: a value that is blank
// once trimmed (as Java trims) takes the default, true; any other value is
// true only when it is "true" in any case, untrimmed.
func TestConnectorsOnlyBlankIsDefault(t *testing.T) {
	e := newEnv(t, Options{})
	for q, want := range map[string]int{
		"":                        2,
		"?connectorsOnly":         2,
		"?connectorsOnly=":        2,
		"?connectorsOnly=%20%09":  2,
		"?connectorsOnly=TRUE":    2,
		"?connectorsOnly=%20true": 7, // Boolean.valueOf(" true") is false
		"?connectorsOnly=false":   7,
		"?connectorsOnly=0":       7,
		"?connectorsOnly=1":       7,
		"?connectorsOnly=yes":     7,
	} {
		var all []map[string]string
		r := e.do("GET", "/connector-plugins"+q, "")
		r.expect(t, http.StatusOK, "")
		r.decode(t, &all)
		if len(all) != want {
			t.Errorf("GET /connector-plugins%s: %d plugins, want %d", q, len(all), want)
		}
	}
}

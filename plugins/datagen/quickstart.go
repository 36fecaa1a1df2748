package main

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// quickstart is one made-up data set: a value schema and how to fill it.
type quickstart struct {
	name   string
	schema *data.Schema
	// fill sets every field of s (a struct of schema, possibly holding the
	// previous record's values) from g's random source; seq is the record's
	// sequence number within its task.
	fill func(g *generator, s *data.Struct, seq int64)
}

// keyFields lists the fields key.field may name.
func (q *quickstart) keyFields() []string {
	var out []string
	for _, f := range q.schema.Fields {
		if keyable(f.Schema) {
			out = append(out, f.Name)
		}
	}
	return out
}

var quickstarts = map[string]*quickstart{
	"users":     usersQuickstart(),
	"orders":    ordersQuickstart(),
	"pageviews": pageviewsQuickstart(),
}

func quickstartNames() []string {
	names := make([]string, 0, len(quickstarts))
	for n := range quickstarts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Value pools. Small, fixed cardinalities give joins and aggregations in
// demos something to find.
var (
	regions   = numbered("Region_", 9)
	genders   = []string{"FEMALE", "MALE", "OTHER"}
	interests = []string{"Games", "Sports", "Travel", "Music", "News", "Movies", "Cooking", "Books", "Fashion", "Science"}
	cities    = []string{"Lisbon", "Osaka", "Austin", "Nairobi", "Tallinn", "Recife", "Perth", "Leeds", "Pune", "Quebec"}
	states    = []string{"AK", "CA", "NY", "TX", "WA", "OR", "IL", "FL", "GA", "MA"}
	referrers = []string{"https://www.example.com/", "https://search.example.org/?q=sluice", "https://news.example.net/tech", "https://social.example.io/feed"}
)

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i+1)
	}
	return out
}

// Identifier pools are built on demand from a number: "User_" + n.
func userID(g *generator) string { return "User_" + strconv.Itoa(1+g.rng.IntN(1000)) }

func usersQuickstart() *quickstart {
	s := data.StructBuilder().Name("io.sluice.connect.datagen.users").
		Field("registertime", data.TimestampSchema(false)).
		Field("userid", data.StringSchema).
		Field("regionid", data.StringSchema).
		Field("gender", data.StringSchema).
		Field("age", data.Int32Schema).
		Field("interests", data.ArrayOf(data.StringSchema)).
		MustBuild()
	return &quickstart{name: "users", schema: s, fill: func(g *generator, v *data.Struct, seq int64) {
		v.SetIndex(0, g.timestamp(seq))
		v.SetIndex(1, userID(g))
		v.SetIndex(2, regions[g.rng.IntN(len(regions))])
		v.SetIndex(3, genders[g.rng.IntN(len(genders))])
		v.SetIndex(4, int32(16+g.rng.IntN(70)))
		n := g.rng.IntN(4)
		ints := make([]any, n)
		for i := range ints {
			ints[i] = interests[g.rng.IntN(len(interests))]
		}
		v.SetIndex(5, ints)
	}}
}

func ordersQuickstart() *quickstart {
	address := data.StructBuilder().Name("io.sluice.connect.datagen.address").
		Field("city", data.StringSchema).
		Field("state", data.StringSchema).
		Field("zipcode", data.Int32Schema).
		MustBuild()
	s := data.StructBuilder().Name("io.sluice.connect.datagen.orders").
		Field("ordertime", data.TimestampSchema(false)).
		Field("orderid", data.Int64Schema).
		Field("itemid", data.StringSchema).
		Field("orderunits", data.Float64Schema).
		Field("address", address).
		MustBuild()
	return &quickstart{name: "orders", schema: s, fill: func(g *generator, v *data.Struct, seq int64) {
		v.SetIndex(0, g.timestamp(seq))
		// Unique across the connector's tasks.
		v.SetIndex(1, seq*int64(g.taskCount)+int64(g.task))
		v.SetIndex(2, "Item_"+strconv.Itoa(1+g.rng.IntN(500)))
		v.SetIndex(3, math.Round((0.5+g.rng.Float64()*9.5)*100)/100)
		a := data.NewStruct(address)
		a.SetIndex(0, cities[g.rng.IntN(len(cities))])
		a.SetIndex(1, states[g.rng.IntN(len(states))])
		a.SetIndex(2, int32(10000+g.rng.IntN(90000)))
		v.SetIndex(4, a)
	}}
}

func pageviewsQuickstart() *quickstart {
	s := data.StructBuilder().Name("io.sluice.connect.datagen.pageviews").
		Field("viewtime", data.TimestampSchema(false)).
		Field("userid", data.StringSchema).
		Field("pageid", data.StringSchema).
		Field("referrer", data.OptionalStringSchema).
		Field("duration_ms", data.Int64Schema).
		MustBuild()
	return &quickstart{name: "pageviews", schema: s, fill: func(g *generator, v *data.Struct, seq int64) {
		v.SetIndex(0, g.timestamp(seq))
		v.SetIndex(1, userID(g))
		v.SetIndex(2, "Page_"+strconv.Itoa(1+g.rng.IntN(100)))
		if r := g.rng.IntN(len(referrers) + 2); r < len(referrers) {
			v.SetIndex(3, referrers[r])
		} else {
			v.SetIndex(3, nil) // a direct visit
		}
		v.SetIndex(4, int64(200+g.rng.IntN(120_000)))
	}}
}

// seededEpoch is where timestamps of a seeded run start, so a seeded run is
// reproducible to the byte.
var seededEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

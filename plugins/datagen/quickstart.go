package main

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// quickstart is one made-up data set: a value schema and how to make its
// records.
type quickstart struct {
	name   string
	schema *data.Schema
	// gen draws the values of record seq (sequence number within its task)
	// from g.rng, in a fixed order, then sets them into v and appends them
	// to w, whichever is not nil. One draw serves both, so a raw record and
	// a struct record of the same seed agree, and a struct payload can be
	// sized from the JSON without a second encoder.
	gen func(g *generator, seq int64, v *data.Struct, w *jsonRecord)
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

// choices is a pool of string values in the two forms a record takes them
// in, made once: boxed for a struct field (a string stored in an interface
// otherwise costs an allocation per record) and as a JSON string.
type choices struct {
	value []any
	json  []string
}

func newChoices(vals ...string) choices {
	c := choices{value: make([]any, len(vals)), json: make([]string, len(vals))}
	for i, v := range vals {
		c.value[i] = v
		c.json[i] = string(appendJSONString(nil, v))
	}
	return c
}

func (c choices) len() int { return len(c.value) }

// numbered is prefix1 to prefixN.
func numbered(prefix string, n int) choices {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = prefix + strconv.Itoa(i+1)
	}
	return newChoices(vals...)
}

// Value pools. Small, fixed cardinalities give joins and aggregations in
// demos something to find.
var (
	regions   = numbered("Region_", 9)
	genders   = newChoices("FEMALE", "MALE", "OTHER")
	interests = newChoices("Games", "Sports", "Travel", "Music", "News", "Movies", "Cooking", "Books", "Fashion", "Science")
	cities    = newChoices("Lisbon", "Osaka", "Austin", "Nairobi", "Tallinn", "Recife", "Perth", "Leeds", "Pune", "Quebec")
	states    = newChoices("AK", "CA", "NY", "TX", "WA", "OR", "IL", "FL", "GA", "MA")
	referrers = newChoices("https://www.example.com/", "https://search.example.org/?q=sluice", "https://news.example.net/tech", "https://social.example.io/feed")
	userIDs   = numbered("User_", 1000)
	itemIDs   = numbered("Item_", 500)
	pageIDs   = numbered("Page_", 100)
)

func usersQuickstart() *quickstart {
	s := data.StructBuilder().Name("io.sluice.connect.datagen.users").
		Field("registertime", data.TimestampSchema(false)).
		Field("userid", data.StringSchema).
		Field("regionid", data.StringSchema).
		Field("gender", data.StringSchema).
		Field("age", data.Int32Schema).
		Field("interests", data.ArrayOf(data.StringSchema)).
		MustBuild()
	return &quickstart{name: "users", schema: s, gen: func(g *generator, seq int64, v *data.Struct, w *jsonRecord) {
		ts := g.timestamp(seq)
		user := g.rng.IntN(userIDs.len())
		region := g.rng.IntN(regions.len())
		gender := g.rng.IntN(genders.len())
		age := int32(16 + g.rng.IntN(70))
		var picked [3]int
		n := g.rng.IntN(len(picked) + 1)
		for i := range n {
			picked[i] = g.rng.IntN(interests.len())
		}
		if v != nil {
			v.SetIndex(0, timestampValue(ts))
			v.SetIndex(1, userIDs.value[user])
			v.SetIndex(2, regions.value[region])
			v.SetIndex(3, genders.value[gender])
			v.SetIndex(4, age)
			ints := make([]any, n)
			for i := range ints {
				ints[i] = interests.value[picked[i]]
			}
			v.SetIndex(5, ints)
		}
		if w != nil {
			w.int(0, ts)
			w.text(1, userIDs.json[user])
			w.text(2, regions.json[region])
			w.text(3, genders.json[gender])
			w.int(4, int64(age))
			w.field(5)
			w.b = append(w.b, '[')
			for i := range n {
				if i > 0 {
					w.b = append(w.b, ',')
				}
				w.b = append(w.b, interests.json[picked[i]]...)
			}
			w.b = append(w.b, ']')
		}
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
	addressNames := fieldPrefixes(address)
	return &quickstart{name: "orders", schema: s, gen: func(g *generator, seq int64, v *data.Struct, w *jsonRecord) {
		ts := g.timestamp(seq)
		// Unique across the connector's tasks.
		orderID := seq*int64(g.taskCount) + int64(g.task)
		item := g.rng.IntN(itemIDs.len())
		// Whole cents from 0.50 to 10.00.
		cents := int(math.Round((0.5 + g.rng.Float64()*9.5) * 100))
		city := g.rng.IntN(cities.len())
		state := g.rng.IntN(states.len())
		zip := int32(10000 + g.rng.IntN(90000))
		if v != nil {
			v.SetIndex(0, timestampValue(ts))
			v.SetIndex(1, orderID)
			v.SetIndex(2, itemIDs.value[item])
			v.SetIndex(3, float64(cents)/100)
			a := data.NewStruct(address)
			a.SetIndex(0, cities.value[city])
			a.SetIndex(1, states.value[state])
			a.SetIndex(2, zip)
			v.SetIndex(4, a)
		}
		if w != nil {
			w.int(0, ts)
			w.int(1, orderID)
			w.text(2, itemIDs.json[item])
			w.field(3)
			w.b = appendCents(w.b, cents)
			w.field(4)
			w.b = append(w.b, addressNames[0]...)
			w.b = append(w.b, cities.json[city]...)
			w.b = append(w.b, addressNames[1]...)
			w.b = append(w.b, states.json[state]...)
			w.b = append(w.b, addressNames[2]...)
			w.b = strconv.AppendInt(w.b, int64(zip), 10)
			w.b = append(w.b, '}')
		}
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
	return &quickstart{name: "pageviews", schema: s, gen: func(g *generator, seq int64, v *data.Struct, w *jsonRecord) {
		ts := g.timestamp(seq)
		user := g.rng.IntN(userIDs.len())
		page := g.rng.IntN(pageIDs.len())
		// Two chances in len+2 of a direct visit (no referrer).
		ref := g.rng.IntN(referrers.len() + 2)
		duration := int64(200 + g.rng.IntN(120_000))
		if v != nil {
			v.SetIndex(0, timestampValue(ts))
			v.SetIndex(1, userIDs.value[user])
			v.SetIndex(2, pageIDs.value[page])
			if ref < referrers.len() {
				v.SetIndex(3, referrers.value[ref])
			} else {
				v.SetIndex(3, nil)
			}
			v.SetIndex(4, duration)
		}
		if w != nil {
			w.int(0, ts)
			w.text(1, userIDs.json[user])
			w.text(2, pageIDs.json[page])
			if ref < referrers.len() {
				w.text(3, referrers.json[ref])
			} else {
				w.text(3, "null")
			}
			w.int(4, duration)
		}
	}}
}

// seededEpoch is where timestamps of a seeded run start, so a seeded run is
// reproducible to the byte.
var seededEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// timestampValue is a Timestamp field's value: epoch milliseconds as a
// time.Time in UTC.
func timestampValue(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// fakeSourceContext answers Offset from a map keyed by task number.
type fakeSourceContext struct {
	mu      sync.Mutex
	offsets map[int64]map[string]any
	asked   []map[string]any
}

func (f *fakeSourceContext) Configs() map[string]string { return nil }

func (f *fakeSourceContext) Offset(_ context.Context, p map[string]any) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, p)
	n, _ := p[taskField].(int64)
	return f.offsets[n], nil
}

func (f *fakeSourceContext) Offsets(ctx context.Context, ps []map[string]any) ([]map[string]any, error) {
	out := make([]map[string]any, len(ps))
	for i, p := range ps {
		out[i], _ = f.Offset(ctx, p)
	}
	return out, nil
}

func mustSettings(t testing.TB, props map[string]string) *settings {
	t.Helper()
	s, err := parseSettings(props)
	if err != nil {
		t.Fatalf("parseSettings(%v): %v", props, err)
	}
	return s
}

func startTask(t testing.TB, tc pluginsdk.SourceTaskContext, props map[string]string) *DatagenTask {
	t.Helper()
	if tc == nil {
		tc = &fakeSourceContext{}
	}
	task := (&DatagenConnector{}).NewTask().(*DatagenTask)
	if err := task.Start(context.Background(), tc, props); err != nil {
		t.Fatalf("Start(%v): %v", props, err)
	}
	return task
}

func pollCtx(t testing.TB, task *DatagenTask, wait time.Duration) []*data.SourceRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	recs, err := task.Poll(ctx)
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	return recs
}

// plain turns a generated value into what encoding/json writes, with
// timestamps as epoch milliseconds as JsonConverter writes them.
func plain(v any) any {
	switch x := v.(type) {
	case *data.Struct:
		m := map[string]any{}
		for _, f := range x.Schema().Fields {
			m[f.Name] = plain(x.GetIndex(f.Index))
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case time.Time:
		return x.UnixMilli()
	}
	return v
}

func jsonSize(t testing.TB, v any) int {
	b, err := json.Marshal(plain(v))
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

func TestQuickstartRecordsMatchTheirSchemas(t *testing.T) {
	for _, name := range quickstartNames() {
		for _, size := range []string{"0", "1024"} {
			t.Run(name+"/record.size="+size, func(t *testing.T) {
				props := map[string]string{topicKey: "t", quickstartKey: name, recordSizeKey: size, seedKey: "11",
					keyFieldKey: quickstarts[name].keyFields()[0]}
				g := newGenerator(mustSettings(t, props))
				hasTimestamp := false
				for _, f := range g.schema.Fields {
					hasTimestamp = hasTimestamp || f.Schema.Name == data.TimestampName
				}
				if !hasTimestamp {
					t.Errorf("schema %v has no Timestamp field", g.schema)
				}
				if g.schema.Name == "" {
					t.Errorf("value schema has no name")
				}
				var names []string
				for _, f := range g.schema.Fields {
					names = append(names, f.Name)
				}
				// The raw generator with the same seed writes the same records.
				props[formatKey] = formatRaw
				raw := newGenerator(mustSettings(t, props))
				seenNull := false
				for seq := range int64(5000) {
					_, k, vs, v := g.record(seq)
					if vs != g.schema {
						t.Fatalf("record %d: value schema %v, want %v", seq, vs, g.schema)
					}
					st := v.(*data.Struct)
					if err := st.Validate(); err != nil {
						t.Fatalf("record %d: %v: %v", seq, st, err)
					}
					if err := data.Validate(vs, v); err != nil {
						t.Fatalf("record %d: %v", seq, err)
					}
					for i := range vs.Fields {
						seenNull = seenNull || st.GetIndex(i) == nil
					}
					// The raw value is valid JSON, says what encoding/json
					// says of the struct, and has the fields in schema order.
					_, rk, _, rv := raw.record(seq)
					got := []byte(rv.(data.Raw))
					var back, want any
					if err := json.Unmarshal(got, &back); err != nil {
						t.Fatalf("record %d: invalid JSON %s: %v", seq, got, err)
					}
					wb, _ := json.Marshal(plain(v))
					_ = json.Unmarshal(wb, &want)
					if gb, _ := json.Marshal(back); !bytes.Equal(gb, wb) {
						t.Fatalf("record %d: raw %s, encoding/json %s", seq, got, wb)
					}
					if keys := objectKeys(t, got); !slices.Equal(keys, names) {
						t.Fatalf("record %d: raw fields %v, want %v", seq, keys, names)
					}
					if string(rk.(data.Raw)) != keyText(k) {
						t.Fatalf("record %d: raw key %q, want %q", seq, rk, keyText(k))
					}
				}
				if name == "pageviews" && !seenNull {
					t.Errorf("no record left the optional referrer null")
				}
			})
		}
	}
}

// objectKeys returns the names of a JSON object's fields, in order.
func objectKeys(t testing.TB, js []byte) []string {
	t.Helper()
	var names []string
	d := json.NewDecoder(bytes.NewReader(js))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s is not an object", js)
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		names = append(names, tok.(string))
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%s: %v", js, err)
		}
	}
	return names
}

func TestAppendCents(t *testing.T) {
	for c := range 1_000_001 {
		got := appendCents(nil, c)
		if want := strconv.AppendFloat(nil, float64(c)/100, 'g', -1, 64); !bytes.Equal(got, want) {
			t.Fatalf("appendCents(%d) = %s, want %s", c, got, want)
		}
	}
}

// rng draws what rand.Rand over the same PCG draws, so seeds keep making
// the records they made.
func TestRNGMatchesRand(t *testing.T) {
	ns := []int{1, 2, 3, 4, 6, 9, 10, 70, 100, 500, 1000, 1024, 90000, 120_000, 1 << 40, 1<<62 + 12345}
	for seed := range uint64(200) {
		var r rng
		r.Seed(splitmix(seed), seed)
		ref := mrand.New(mrand.NewPCG(splitmix(seed), seed))
		for i := range 500 {
			switch i % 3 {
			case 0:
				n := ns[i/3%len(ns)]
				if got, want := r.IntN(n), ref.IntN(n); got != want {
					t.Fatalf("seed %d draw %d: IntN(%d) = %d, rand.Rand says %d", seed, i, n, got, want)
				}
			case 1:
				if got, want := r.Float64(), ref.Float64(); got != want {
					t.Fatalf("seed %d draw %d: Float64 = %v, rand.Rand says %v", seed, i, got, want)
				}
			default:
				if got, want := r.Uint64(), ref.Uint64(); got != want {
					t.Fatalf("seed %d draw %d: Uint64 = %d, rand.Rand says %d", seed, i, got, want)
				}
			}
		}
	}
}

func TestTimestampsHaveMillisecondPrecision(t *testing.T) {
	s := mustSettings(t, map[string]string{topicKey: "t", quickstartKey: "orders"})
	g := newGenerator(s)
	g.setClock(time.Date(2025, 3, 4, 5, 6, 7, 891234567, time.UTC))
	_, _, _, v := g.record(1)
	ts := v.(*data.Struct).Get("ordertime").(time.Time)
	if want := time.Date(2025, 3, 4, 5, 6, 7, 891000000, time.UTC); !ts.Equal(want) || ts.Location() != time.UTC {
		t.Fatalf("ordertime %v, want %v in UTC", ts, want)
	}
}

func TestSeedMakesRecordsReproducible(t *testing.T) {
	for _, format := range []string{formatStruct, formatRaw} {
		t.Run(format, func(t *testing.T) {
			props := map[string]string{topicKey: "t", quickstartKey: "orders", seedKey: "42", formatKey: format, recordSizeKey: "200", keyFieldKey: "orderid"}
			a := newGenerator(mustSettings(t, props))
			b := newGenerator(mustSettings(t, props))
			// b starts in the middle, as a resumed task does.
			for seq := range int64(3000) {
				a.record(seq)
			}
			for seq := int64(3000); seq < 3100; seq++ {
				_, k1, _, v1 := a.record(seq)
				_, k2, _, v2 := b.record(seq)
				if !data.ValueEqual(k1, k2) || !data.ValueEqual(v1, v2) {
					t.Fatalf("seq %d differs between two generators seeded alike:\n%v %v\n%v %v", seq, k1, v1, k2, v2)
				}
			}
			other := maps.Clone(props)
			other[seedKey] = "43"
			c := newGenerator(mustSettings(t, other))
			_, _, _, v1 := a.record(7)
			_, _, _, v2 := c.record(7)
			if data.ValueEqual(v1, v2) {
				t.Fatalf("seeds 42 and 43 made the same record: %v", v1)
			}
			// Tasks of one connector make different records.
			cfgs := taskConfigs(props, 2)
			t0, t1 := newGenerator(mustSettings(t, cfgs[0])), newGenerator(mustSettings(t, cfgs[1]))
			_, _, _, v1 = t0.record(7)
			_, _, _, v2 = t1.record(7)
			if data.ValueEqual(v1, v2) {
				t.Fatalf("tasks 0 and 1 made the same record: %v", v1)
			}
		})
	}
}

func TestUnseededRunsDiffer(t *testing.T) {
	props := map[string]string{topicKey: "t", quickstartKey: "pageviews", recordSizeKey: "512"}
	_, _, _, v1 := newGenerator(mustSettings(t, props)).record(0)
	_, _, _, v2 := newGenerator(mustSettings(t, props)).record(0)
	if data.ValueEqual(v1, v2) {
		t.Fatalf("two unseeded generators made the same record")
	}
}

// Values differ from record to record and do not compress like repeated
// bytes.
func TestContentVaries(t *testing.T) {
	g := newGenerator(mustSettings(t, map[string]string{topicKey: "t", formatKey: formatRaw, recordSizeKey: "1024", seedKey: "1"}))
	seen := map[string]bool{}
	var all bytes.Buffer
	for seq := range int64(1000) {
		_, _, _, v := g.record(seq)
		raw := v.(data.Raw)
		seen[string(raw)] = true
		all.Write(raw)
	}
	if len(seen) != 1000 {
		t.Fatalf("%d distinct values in 1000", len(seen))
	}
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	_, _ = w.Write(all.Bytes())
	_ = w.Close()
	ratio := float64(all.Len()) / float64(z.Len())
	t.Logf("gzip ratio of 1000 raw 1 KiB values: %.2f", ratio)
	if ratio > 6 || ratio < 1.5 {
		t.Fatalf("gzip ratio %.2f; want text-like data (between 1.5 and 6)", ratio)
	}
}

func TestRecordSize(t *testing.T) {
	for _, name := range quickstartNames() {
		// 20000: values above maxArenaValue are allocated on their own.
		for _, size := range []int{300, 1024, 4096, 20000} {
			for _, format := range []string{formatStruct, formatRaw} {
				props := map[string]string{topicKey: "t", quickstartKey: name, formatKey: format, recordSizeKey: strconv.Itoa(size)}
				g := newGenerator(mustSettings(t, props))
				for seq := range int64(500) {
					_, _, _, v := g.record(seq)
					var n int
					if raw, ok := v.(data.Raw); ok {
						n = len(raw)
						if !json.Valid(raw) {
							t.Fatalf("%s raw %d: invalid JSON %s", name, seq, raw)
						}
						if n != size {
							t.Fatalf("%s raw record.size=%d: value of %d bytes", name, size, n)
						}
					} else {
						n = jsonSize(t, v)
					}
					if n < size*9/10 || n > size*11/10 {
						t.Fatalf("%s %s record.size=%d: value of %d bytes as JSON", name, format, size, n)
					}
				}
			}
		}
	}
}

// The worker owns what Poll returned: later records must not write over
// the keys and values of earlier ones (they share arena chunks).
func TestReturnedRecordsAreNotWrittenAgain(t *testing.T) {
	for _, size := range []string{"0", "1024", "20000"} {
		t.Run("record.size="+size, func(t *testing.T) {
			task := startTask(t, nil, map[string]string{topicKey: "t", formatKey: formatRaw, quickstartKey: "pageviews",
				keyFieldKey: "pageid", recordSizeKey: size, batchSizeKey: "100"})
			first := pollCtx(t, task, time.Second)
			var keys, values []string
			for _, r := range first {
				keys = append(keys, string(r.Key.(data.Raw)))
				values = append(values, string(r.Value.(data.Raw)))
			}
			for range 50 {
				pollCtx(t, task, time.Second)
			}
			for i, r := range first {
				if string(r.Key.(data.Raw)) != keys[i] || string(r.Value.(data.Raw)) != values[i] {
					t.Fatalf("record %d changed after later polls:\n%s %s\nwas\n%s %s", i, r.Key, r.Value, keys[i], values[i])
				}
			}
		})
	}
}

func TestKeyField(t *testing.T) {
	tests := []struct {
		quickstart, field, format string
		schema                    *data.Schema
	}{
		{"users", "userid", formatStruct, data.StringSchema},
		{"orders", "orderid", formatStruct, data.Int64Schema},
		{"users", "age", formatStruct, data.Int32Schema},
		{"pageviews", "pageid", formatRaw, nil},
		{"orders", "orderid", formatRaw, nil},
	}
	for _, tt := range tests {
		t.Run(tt.quickstart+"/"+tt.field+"/"+tt.format, func(t *testing.T) {
			task := startTask(t, nil, map[string]string{topicKey: "t", quickstartKey: tt.quickstart, keyFieldKey: tt.field, formatKey: tt.format, seedKey: "5"})
			recs := pollCtx(t, task, time.Second)
			if len(recs) == 0 {
				t.Fatal("no records")
			}
			// The struct generator with the same seed tells what the field holds.
			ref := newGenerator(mustSettings(t, map[string]string{topicKey: "t", quickstartKey: tt.quickstart, seedKey: "5"}))
			for i, r := range recs[:50] {
				_, _, _, v := ref.record(int64(i))
				want := v.(*data.Struct).Get(tt.field)
				if tt.schema != nil {
					if r.KeySchema != tt.schema || !data.ValueEqual(r.Key, want) {
						t.Fatalf("record %d: key %v (%v), want %v (%v)", i, r.Key, r.KeySchema, want, tt.schema)
					}
					continue
				}
				raw, ok := r.Key.(data.Raw)
				if !ok || r.KeySchema != nil || string(raw) != keyText(want) {
					t.Fatalf("record %d: key %T %v, want raw %q", i, r.Key, r.Key, keyText(want))
				}
			}
		})
	}
	task := startTask(t, nil, map[string]string{topicKey: "t"})
	if r := pollCtx(t, task, time.Second)[0]; r.Key != nil || r.KeySchema != nil {
		t.Fatalf("key %v without key.field", r.Key)
	}
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		bad   map[string]string // key -> part of the message
	}{
		{"minimal", map[string]string{topicKey: "t"}, nil},
		{"everything", map[string]string{topicKey: "t", quickstartKey: "Orders", formatKey: "RAW", keyFieldKey: "itemid", recordSizeKey: "1024",
			intervalKey: "10", rateKey: "100.5", maxRecordsKey: "10", iterationsKey: "10", seedKey: "-3", batchSizeKey: "10"}, nil},
		{"no topic", map[string]string{}, map[string]string{topicKey: "Missing required configuration"}},
		{"unknown quickstart", map[string]string{topicKey: "t", quickstartKey: "stocks"}, map[string]string{quickstartKey: "stocks"}},
		{"unknown format", map[string]string{topicKey: "t", formatKey: "avro"}, map[string]string{formatKey: "avro"}},
		{"unknown key field", map[string]string{topicKey: "t", keyFieldKey: "orderid"}, map[string]string{keyFieldKey: "has no field orderid"}},
		{"struct key field", map[string]string{topicKey: "t", quickstartKey: "orders", keyFieldKey: "address"}, map[string]string{keyFieldKey: "not a string or integer"}},
		{"timestamp key field", map[string]string{topicKey: "t", keyFieldKey: "registertime"}, map[string]string{keyFieldKey: "not a string or integer"}},
		{"synonyms disagree", map[string]string{topicKey: "t", maxRecordsKey: "5", iterationsKey: "6"}, map[string]string{maxRecordsKey: "synonyms", iterationsKey: "synonyms"}},
		{"negative rate", map[string]string{topicKey: "t", rateKey: "-1"}, map[string]string{rateKey: "at least 0"}},
		{"huge record", map[string]string{topicKey: "t", recordSizeKey: "100000000"}, map[string]string{recordSizeKey: "no more than"}},
		{"zero batch", map[string]string{topicKey: "t", batchSizeKey: "0"}, map[string]string{batchSizeKey: "at least 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals, err := (&DatagenConnector{}).Validate(context.Background(), tt.props)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, v := range vals {
				if len(v.Errors) > 0 {
					got[v.Name] = strings.Join(v.Errors, "; ")
				}
			}
			if len(got) != len(tt.bad) {
				t.Fatalf("errors %v, want on %v", got, tt.bad)
			}
			for k, msg := range tt.bad {
				if !strings.Contains(got[k], msg) {
					t.Errorf("%s: %q does not contain %q", k, got[k], msg)
				}
			}
			// Start agrees with Validate.
			err = (&DatagenConnector{}).Start(context.Background(), nil, tt.props)
			if (err == nil) != (len(tt.bad) == 0) {
				t.Errorf("Start: %v", err)
			}
		})
	}
}

func TestMaxRecords(t *testing.T) {
	for _, key := range []string{maxRecordsKey, iterationsKey} {
		t.Run(key, func(t *testing.T) {
			props := map[string]string{topicKey: "t", key: "2500"}
			task := startTask(t, nil, props)
			var sizes []int
			for range 3 {
				sizes = append(sizes, len(pollCtx(t, task, time.Second)))
			}
			if sizes[0] != 1000 || sizes[1] != 1000 || sizes[2] != 500 {
				t.Fatalf("poll sizes %v, want [1000 1000 500]", sizes)
			}
			start := time.Now()
			if recs := pollCtx(t, task, 100*time.Millisecond); len(recs) != 0 {
				t.Fatalf("%d records past max.records", len(recs))
			}
			if time.Since(start) < 90*time.Millisecond {
				t.Fatalf("Poll past max.records returned at once; it should wait for its deadline")
			}
			// The limit counts across restarts: a task resuming at seq 2400
			// has 100 records left.
			tc := &fakeSourceContext{offsets: map[int64]map[string]any{0: {seqField: int64(2399)}}}
			resumed := startTask(t, tc, props)
			recs := pollCtx(t, resumed, time.Second)
			if len(recs) != 100 || recs[0].SourceOffset[seqField] != int64(2400) {
				t.Fatalf("resumed task: %d records from seq %v; want 100 from 2400", len(recs), recs[0].SourceOffset)
			}
		})
	}
}

func TestResumeAfterStoredOffset(t *testing.T) {
	props := taskConfigs(map[string]string{topicKey: "t", seedKey: "9", batchSizeKey: "10"}, 3)[2]
	tc := &fakeSourceContext{offsets: map[int64]map[string]any{2: {seqField: int64(41)}}}
	task := startTask(t, tc, props)
	recs := pollCtx(t, task, time.Second)
	if len(tc.asked) != 1 || tc.asked[0][taskField] != int64(2) {
		t.Fatalf("offsets asked for %v; want partition {task: 2}", tc.asked)
	}
	for i, r := range recs {
		if r.SourcePartition[taskField] != int64(2) || r.SourceOffset[seqField] != int64(42+i) {
			t.Fatalf("record %d: partition %v offset %v", i, r.SourcePartition, r.SourceOffset)
		}
		if r.Topic != "t" || r.Partition != data.NoPartition {
			t.Fatalf("record %d: topic %q partition %d", i, r.Topic, r.Partition)
		}
	}
	// Same content as an uninterrupted run.
	ref := newGenerator(mustSettings(t, props))
	_, _, _, want := ref.record(42)
	if !data.ValueEqual(recs[0].Value, want) {
		t.Fatalf("resumed record 42 is %v, want %v", recs[0].Value, want)
	}
}

func TestRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for a second")
	}
	tests := []struct {
		name   string
		props  map[string]string
		perSec float64
	}{
		// 2000/s across 2 tasks: 1000/s for this one.
		{"records.per.second", taskConfigs(map[string]string{topicKey: "t", rateKey: "2000"}, 2)[0], 1000},
		{"max.interval", map[string]string{topicKey: "t", intervalKey: "20"}, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := startTask(t, nil, tt.props)
			const window = time.Second
			start := time.Now()
			n := 0
			for time.Since(start) < window {
				n += len(pollCtx(t, task, 50*time.Millisecond))
			}
			rate := float64(n) / time.Since(start).Seconds()
			t.Logf("%d records in %v: %.0f/s, want %.0f/s", n, time.Since(start).Round(time.Millisecond), rate, tt.perSec)
			if rate < tt.perSec*0.7 || rate > tt.perSec*1.3 {
				t.Fatalf("rate %.0f/s, want about %.0f/s", rate, tt.perSec)
			}
		})
	}
}

// A paced task that was not polled for a while does not catch up in a burst.
func TestRateLimitForgetsBacklog(t *testing.T) {
	now := time.Unix(1000, 0)
	task := startTask(t, nil, map[string]string{topicKey: "t", rateKey: "100"})
	task.now = func() time.Time { return now }
	if n := len(pollCtx(t, task, time.Second)); n != 1 {
		t.Fatalf("first poll: %d records, want 1", n)
	}
	now = now.Add(500 * time.Millisecond)
	if n := len(pollCtx(t, task, time.Second)); n != 50 {
		t.Fatalf("after 500 ms: %d records, want 50", n)
	}
	now = now.Add(time.Hour)
	if n := len(pollCtx(t, task, time.Second)); n != 1 {
		t.Fatalf("after an hour unpolled: %d records, want 1 (no burst)", n)
	}
}

func TestTaskConfigsAndOffsets(t *testing.T) {
	c := &DatagenConnector{}
	if err := c.Start(context.Background(), nil, map[string]string{topicKey: "t", "name": "gen"}); err != nil {
		t.Fatal(err)
	}
	cfgs, err := c.TaskConfigs(context.Background(), 3)
	if err != nil || len(cfgs) != 3 {
		t.Fatalf("TaskConfigs(3) = %v, %v", cfgs, err)
	}
	for i, cfg := range cfgs {
		s := mustSettings(t, cfg)
		if s.taskIndex != i || s.taskCount != 3 || cfg["name"] != "gen" {
			t.Errorf("task %d config %v", i, cfg)
		}
	}
	ok, err := c.AlterOffsets(context.Background(), nil, []pluginsdk.OffsetChange{
		{Partition: map[string]any{taskField: int64(0)}, Offset: map[string]any{seqField: int64(10)}},
		{Partition: map[string]any{"x": "y"}},
	})
	if !ok || err != nil {
		t.Errorf("AlterOffsets(valid) = %v, %v", ok, err)
	}
	for _, bad := range []pluginsdk.OffsetChange{
		{Partition: map[string]any{taskField: "0"}, Offset: map[string]any{seqField: int64(1)}},
		{Partition: map[string]any{taskField: int64(0)}, Offset: map[string]any{seqField: int64(-2)}},
		{Partition: map[string]any{taskField: int64(0)}, Offset: map[string]any{"position": int64(1)}},
	} {
		if ok, err := c.AlterOffsets(context.Background(), nil, []pluginsdk.OffsetChange{bad}); ok || wire.KindOf(err) != wire.KindInvalid {
			t.Errorf("AlterOffsets(%v) = %v, %v; want an INVALID veto", bad, ok, err)
		}
	}
	if eo, _ := c.ExactlyOnceSupport(context.Background(), nil); eo != pluginsdk.ExactlyOnceSupported {
		t.Errorf("ExactlyOnceSupport = %v", eo)
	}
}

// The SDK encodes what Poll returns; a batch must survive the trip to the
// worker (schemas, the Timestamp logical type, raw bytes).
func TestRecordsEncode(t *testing.T) {
	for _, format := range []string{formatStruct, formatRaw} {
		for _, name := range quickstartNames() {
			t.Run(format+"/"+name, func(t *testing.T) {
				props := map[string]string{topicKey: "t", quickstartKey: name, formatKey: format,
					keyFieldKey: quickstarts[name].keyFields()[0], recordSizeKey: "256"}
				recs := pollCtx(t, startTask(t, nil, props), time.Second)
				schemas, encoded, err := wire.EncodeSourceRecords(recs)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				back, err := wire.DecodeSourceRecords(schemas, encoded)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				for i := range recs {
					if !data.ValueEqual(recs[i].Key, back[i].Key) || !data.ValueEqual(recs[i].Value, back[i].Value) {
						t.Fatalf("record %d changed on the wire:\n%v\n%v", i, recs[i].Value, back[i].Value)
					}
					if !data.SchemaEqual(recs[i].ValueSchema, back[i].ValueSchema) {
						t.Fatalf("record %d: schema %v came back as %v", i, recs[i].ValueSchema, back[i].ValueSchema)
					}
				}
			})
		}
	}
}

// Payloads are windows into a text pool; no two records of a batch may share
// text, or compression would look better than it is.
func TestPayloadsDoNotShareText(t *testing.T) {
	for _, format := range []string{formatRaw, formatStruct} {
		g := newGenerator(mustSettings(t, map[string]string{topicKey: "t", formatKey: format, recordSizeKey: "1024", seedKey: "3", quickstartKey: "pageviews"}))
		const chunk = 32
		owner := map[string]int64{}
		var payloads []string
		for seq := range int64(3000) {
			_, _, _, v := g.record(seq)
			var p string
			if raw, ok := v.(data.Raw); ok {
				s := string(raw)
				p = s[strings.LastIndex(s, `"payload":"`)+len(`"payload":"`) : len(s)-2]
			} else {
				p = v.(*data.Struct).Get(payloadField).(string)
			}
			payloads = append(payloads, p)
			for i := 0; i+chunk <= len(p); i += chunk {
				owner[p[i:i+chunk]] = seq
			}
		}
		for seq, p := range payloads {
			for i := 0; i+chunk <= len(p); i++ {
				if o, ok := owner[p[i:i+chunk]]; ok && o != int64(seq) {
					t.Fatalf("%s: records %d and %d share the text %q", format, seq, o, p[i:i+chunk])
				}
			}
		}
	}
}

// keyText is the text of a key field's value, as a raw key carries it.
func keyText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return data.FormatValue(v)
}

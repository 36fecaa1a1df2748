package main

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// payloadField is the field record.size adds.
const payloadField = "payload"

// generator makes the records of one task. Record seq is a pure function of
// (seed, task, seq): the random source is reseeded for every record, so a
// seeded task that resumes at seq 5000 makes the same record 5000 as a run
// that never stopped, and two runs with one seed agree record for record.
type generator struct {
	q          *quickstart
	schema     *data.Schema // q.schema, plus payload when record.size is set
	payloadIdx int          // -1: no payload
	recordSize int
	raw        bool
	keyIdx     int // -1: no key
	keySchema  *data.Schema

	seed      uint64
	seeded    bool
	task      int
	taskCount int
	clock     time.Time // timestamp of unseeded records, set per batch

	pcg *mrand.PCG
	rng *mrand.Rand
	// scratch is the struct raw records are filled into before encoding:
	// they never leave the generator, so one serves every record.
	scratch *data.Struct
	buf     []byte // scratch for sizing struct payloads
}

func newGenerator(s *settings) *generator {
	g := &generator{
		q: s.quickstart, schema: s.quickstart.schema, payloadIdx: -1, keyIdx: -1,
		recordSize: s.recordSize, raw: s.raw,
		seeded: s.seeded, task: s.taskIndex, taskCount: s.taskCount,
		pcg: mrand.NewPCG(0, 0),
	}
	g.rng = mrand.New(g.pcg)
	if s.seeded {
		g.seed = uint64(s.seed)
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail on Linux
		g.seed = binary.LittleEndian.Uint64(b[:])
	}
	// Tasks of one connector draw from unrelated streams.
	g.seed = splitmix(g.seed ^ splitmix(uint64(s.taskIndex)+0x5155))
	if s.recordSize > 0 {
		b := data.BuilderFrom(g.schema).Field(payloadField, data.StringSchema)
		g.schema = b.MustBuild()
		g.payloadIdx = len(g.schema.Fields) - 1
	}
	if s.keyField != "" {
		f := g.schema.Field(s.keyField)
		g.keyIdx, g.keySchema = f.Index, f.Schema
	}
	if g.raw {
		g.scratch = data.NewStruct(g.schema)
	}
	g.clock = time.Now()
	return g
}

// splitmix is SplitMix64's finalizer: it spreads nearby inputs (consecutive
// sequence numbers) over unrelated seeds.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// setClock sets the timestamp unseeded records carry (one per batch: a
// clock read per record would cost more than the record).
func (g *generator) setClock(now time.Time) { g.clock = now }

func (g *generator) timestamp(seq int64) time.Time {
	if g.seeded {
		return seededEpoch.Add(time.Duration(seq)*time.Second + time.Duration(g.rng.IntN(1000))*time.Millisecond)
	}
	// Timestamp values have millisecond precision.
	return time.UnixMilli(g.clock.UnixMilli()).UTC()
}

// record returns the key and value of record seq, with their schemas (nil
// schemas for raw bytes).
func (g *generator) record(seq int64) (keySchema *data.Schema, key any, valueSchema *data.Schema, value any) {
	h := splitmix(g.seed ^ uint64(seq))
	g.pcg.Seed(h, splitmix(h))
	v := g.scratch
	if v == nil {
		v = data.NewStruct(g.schema)
	}
	g.q.fill(g, v, seq)

	if g.keyIdx >= 0 {
		key, keySchema = v.GetIndex(g.keyIdx), g.keySchema
		if g.raw {
			key, keySchema = data.Raw(keyText(key)), nil
		}
	}
	if g.payloadIdx < 0 {
		if g.raw {
			return keySchema, key, nil, data.Raw(appendJSON(nil, v))
		}
		return keySchema, key, g.schema, v
	}
	// Size the payload: encode with an empty one, then fill the difference.
	// The payload is the last field, so the encoding ends with `""}`.
	v.SetIndex(g.payloadIdx, "")
	if g.raw {
		// The bytes become the value: a fresh buffer, sized for the record.
		b := appendJSON(make([]byte, 0, max(g.recordSize, 256)+8), v)
		n := max(g.recordSize-len(b), 0)
		b = g.appendText(b[:len(b)-2], n)
		b = append(b, '"', '}')
		return keySchema, key, nil, data.Raw(b)
	}
	// Only the length matters here, and the text is copied into a string:
	// one scratch buffer serves both.
	g.buf = appendJSON(g.buf[:0], v)
	n := max(g.recordSize-len(g.buf), 0)
	g.buf = g.appendText(g.buf[:0], n)
	v.SetIndex(g.payloadIdx, string(g.buf))
	return keySchema, key, g.schema, v
}

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

// word is a vocabulary entry packed for appendText: its letters and a
// trailing space, little-endian in bits, n bytes long (at most 8).
type word struct {
	bits uint64
	n    int
}

// vocabulary holds 256 made-up words of 1 to 3 syllables: payload text reads
// like text to a compressor (a few bits per character) without being
// repetitive.
var vocabulary = func() [256]word {
	const consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
	r := mrand.New(mrand.NewPCG(20240101, 7))
	var words [256]word
	for i := range words {
		var w [8]byte
		n := 0
		for range 1 + r.IntN(3) {
			w[n], w[n+1] = consonants[r.IntN(len(consonants))], vowels[r.IntN(len(vowels))]
			n += 2
		}
		w[n] = ' '
		words[i] = word{bits: binary.LittleEndian.Uint64(w[:]), n: n + 1}
	}
	return words
}()

// appendText appends exactly n bytes of words and spaces: JSON-safe text
// (lower-case letters and spaces only). Each word is one 8-byte store, which
// is what makes a 1 KiB payload cost a few hundred nanoseconds.
func (g *generator) appendText(b []byte, n int) []byte {
	p, end := len(b), len(b)+n
	// 8 bytes of slack: a store near the end may spill past it.
	b = slices.Grow(b, n+8)[:end+8]
	for p < end {
		r := g.rng.Uint64()
		for i := 0; i < 8 && p < end; i++ {
			w := &vocabulary[byte(r)]
			binary.LittleEndian.PutUint64(b[p:], w.bits)
			p += w.n
			r >>= 8
		}
	}
	return b[:end]
}

package main

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"time"
	"unsafe"

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
	// text is the payload pool (see newTextPool); payloads are windows
	// into it. Never written after it is made, so struct payloads are
	// strings over it without a copy.
	text []byte
	// arena is where raw keys and short raw values are carved from: one
	// allocation for many records instead of one per record.
	arena []byte
}

// Payload pool geometry: the pool holds poolRecords payloads' worth of text
// (within [minPool, maxPool]), far more than one producer batch (1 MB)
// takes, so a compressor finds no more repetition than the text itself has.
const (
	poolRecords = 8192
	minPool     = 1 << 20
	maxPool     = 16 << 20
	// arenaChunk stays a small-object size: large ones are zeroed and
	// faulted in afresh every time.
	arenaChunk = 16 << 10
)

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
	if s.recordSize > 0 {
		g.text = newTextPool(g.seed, min(max(s.recordSize*poolRecords, minPool), maxPool+s.recordSize))
	}
	g.clock = time.Now()
	return g
}

// newTextPool makes n bytes of vocabulary text from seed. Making it once
// per task (a few milliseconds) is what lets a payload cost a copy, or
// nothing, instead of drawing every word of every record.
func newTextPool(seed uint64, n int) []byte {
	g := &generator{pcg: mrand.NewPCG(splitmix(seed^0x7e47), seed)}
	g.rng = mrand.New(g.pcg)
	return g.appendText(make([]byte, 0, n+8), n)
}

// payload returns n bytes of text at a random offset into the pool.
//
// Consecutive records take consecutive windows (with a little jitter), so
// the pool is read as a stream rather than at random, and the windows of a
// producer batch never overlap: the text repeats only every pool's length,
// farther apart than a compressor looks. The offset is a function of seq,
// so a resumed task makes the same payloads.
func (g *generator) payload(seq int64, n int) []byte {
	// Record seq owns [seq*recordSize, (seq+1)*recordSize) of an endless
	// repetition of the pool; n is at most recordSize.
	stride := uint64(g.recordSize)
	o := (uint64(seq)*stride + uint64(g.rng.IntN(g.recordSize-n+1))) % uint64(len(g.text))
	if o+uint64(n) > uint64(len(g.text)) {
		// The window would wrap: take it from the pool's start instead.
		o = uint64(g.rng.IntN(g.recordSize - n + 1))
	}
	return g.text[o : o+uint64(n) : o+uint64(n)]
}

// alloc returns n bytes of the arena.
func (g *generator) alloc(n int) []byte {
	if cap(g.arena)-len(g.arena) < n {
		g.arena = make([]byte, 0, max(arenaChunk, n))
	}
	b := g.arena[len(g.arena) : len(g.arena)+n : len(g.arena)+n]
	g.arena = g.arena[:len(g.arena)+n]
	return b
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
			key, keySchema = g.rawKey(key), nil
		}
	}
	if g.payloadIdx < 0 {
		if g.raw {
			g.buf = appendJSON(g.buf[:0], v)
			return keySchema, key, nil, data.Raw(g.copyOut(g.buf))
		}
		return keySchema, key, g.schema, v
	}
	// Size the payload: encode with an empty one, then fill the difference.
	// The payload is the last field, so the encoding ends with `""}`.
	v.SetIndex(g.payloadIdx, "")
	g.buf = appendJSON(g.buf[:0], v)
	n := max(g.recordSize-len(g.buf), 0)
	text := g.payload(seq, n)
	if g.raw {
		// Appending to a full slice allocates without zeroing what the
		// append fills: cheaper than a zeroed buffer filled by copy.
		head := g.buf[:len(g.buf)-2]
		b := append(head[:len(head):len(head)], text...)
		b = append(b, '"', '}')
		return keySchema, key, nil, data.Raw(b)
	}
	// The pool is never written, so the string can share its memory.
	if n == 0 {
		v.SetIndex(g.payloadIdx, "")
	} else {
		v.SetIndex(g.payloadIdx, unsafe.String(unsafe.SliceData(text), n))
	}
	return keySchema, key, g.schema, v
}

// copyOut copies b into the arena.
func (g *generator) copyOut(b []byte) []byte {
	out := g.alloc(len(b))
	copy(out, b)
	return out
}

// rawKey is keyText as bytes in the arena.
func (g *generator) rawKey(v any) data.Raw {
	switch x := v.(type) {
	case string:
		out := g.alloc(len(x))
		copy(out, x)
		return out
	case int32:
		g.buf = strconv.AppendInt(g.buf[:0], int64(x), 10)
	case int64:
		g.buf = strconv.AppendInt(g.buf[:0], x, 10)
	default:
		return data.Raw(keyText(v))
	}
	return g.copyOut(g.buf)
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

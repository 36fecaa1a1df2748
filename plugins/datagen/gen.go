package main

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	mrand "math/rand/v2"
	"slices"
	"strings"
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
	clockMs   int64 // timestamp of unseeded records, set per batch

	rng rng
	// w is where records are written as JSON: every raw record, and
	// struct records whose payload is sized from their JSON.
	w *jsonRecord
	// text is the payload pool (see newTextPool); payloads are windows
	// into it. Never written after it is made, so struct payloads are
	// strings over it without a copy.
	text []byte
	// arena is where raw keys and values are carved from: one allocation
	// for many records instead of one per record (see arenaChunk). Poll's
	// records keep theirs and fill it again when they come back (see
	// polled).
	arena []byte
	// raws boxes raw keys and values (see rawBoxer).
	raws rawBoxer
}

// Payload pool geometry: the pool holds poolRecords payloads' worth of text
// (within [minPool, maxPool]), far more than one producer batch (1 MB)
// takes, so a compressor finds no more repetition than the text itself has.
const (
	poolRecords = 8192
	minPool     = 1 << 20
	maxPool     = 16 << 20
)

// Arena geometry. A chunk lives until the last record carved from it is
// dropped; the records of a batch are dropped together, so that holds at
// most a chunk beyond the batches in flight. Measured with 1 KiB values,
// 64 KiB chunks cost less per record than a small-object allocation per
// value (which the garbage collector then sweeps one by one) and than 16
// or 32 KiB chunks; since chunks are no longer zeroed (noZero), 256 KiB
// ones cost the same as 64 KiB. Values above
// maxArenaValue get an allocation of their own, so that the chunk tail left
// unused when one does not fit stays small.
const (
	arenaChunk    = 64 << 10
	maxArenaValue = arenaChunk / 16
)

func newGenerator(s *settings) *generator {
	g := &generator{
		q: s.quickstart, schema: s.quickstart.schema, payloadIdx: -1, keyIdx: -1,
		recordSize: s.recordSize, raw: s.raw,
		seeded: s.seeded, task: s.taskIndex, taskCount: s.taskCount,
		raws: rawBoxer{per: rawBoxes},
	}
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
	g.w = newJSONRecord(g.schema, g.keyIdx)
	if s.recordSize > 0 {
		g.text = newTextPool(g.seed, min(max(s.recordSize*poolRecords, minPool), maxPool+s.recordSize))
	}
	g.setClock(time.Now())
	return g
}

// newTextPool makes n bytes of vocabulary text from seed. Making it once
// per task (a few milliseconds) is what lets a payload cost a copy, or
// nothing, instead of drawing every word of every record.
func newTextPool(seed uint64, n int) []byte {
	var r rng
	r.Seed(splitmix(seed^0x7e47), seed)
	return r.appendText(make([]byte, 0, n+8), n)
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

// rawBoxes is how many raw keys and values share one block of boxes: a
// few batches' worth of small records, a few KiB.
const rawBoxes = 256

// alloc returns n bytes of the arena, not zeroed: the caller writes them
// all.
func (g *generator) alloc(n int) []byte {
	if cap(g.arena)-len(g.arena) < n {
		g.arena = noZero(max(arenaChunk, n))
	}
	b := g.arena[len(g.arena) : len(g.arena)+n : len(g.arena)+n]
	g.arena = g.arena[:len(g.arena)+n]
	return b
}

// noZero returns an empty slice with room for n bytes that were not zeroed
// when they were allocated, as make would: every byte of the arena is
// written before it is handed out, and zeroing the chunks was a tenth of
// what a raw record cost. strings.Builder.Grow is how the standard library
// hands out such memory; the builder is dropped at once, and the one byte
// it wrote (to have a pointer to its buffer) is overwritten like the rest.
func noZero(n int) []byte {
	var sb strings.Builder
	sb.Grow(n)
	sb.WriteByte(0)
	s := sb.String()
	return unsafe.Slice(unsafe.StringData(s), n)[:0]
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
func (g *generator) setClock(now time.Time) { g.clockMs = now.UnixMilli() }

// timestamp returns record seq's timestamp in epoch milliseconds (the
// precision of Timestamp values): a seeded run's record seq falls within
// second seq after seededEpoch.
func (g *generator) timestamp(seq int64) int64 {
	if g.seeded {
		return seededEpoch.UnixMilli() + seq*1000 + int64(g.rng.IntN(1000))
	}
	return g.clockMs
}

// record returns the key and value of record seq, with their schemas (nil
// schemas for raw bytes).
func (g *generator) record(seq int64) (keySchema *data.Schema, key any, valueSchema *data.Schema, value any) {
	g.seedFor(seq)
	if g.raw {
		k, v := g.rawRecord(seq)
		if k != nil {
			key = g.raws.box(k)
		}
		return nil, key, nil, g.raws.box(v)
	}
	v := data.NewStruct(g.schema)
	if g.payloadIdx < 0 {
		g.q.gen(g, seq, v, nil)
	} else {
		// Size the payload as rawRecord does: what the JSON with an empty
		// one leaves of record.size.
		g.w.reset()
		g.q.gen(g, seq, v, g.w)
		g.w.field(g.payloadIdx)
		n := max(g.recordSize-len(g.w.b)-len(`""}`), 0)
		if n == 0 {
			v.SetIndex(g.payloadIdx, "")
		} else {
			// The pool is never written, so the string can share its memory.
			text := g.payload(seq, n)
			v.SetIndex(g.payloadIdx, unsafe.String(unsafe.SliceData(text), n))
		}
	}
	if g.keyIdx >= 0 {
		key, keySchema = v.GetIndex(g.keyIdx), g.keySchema
	}
	return keySchema, key, g.schema, v
}

// seedFor starts record seq's random draws.
func (g *generator) seedFor(seq int64) {
	h := splitmix(g.seed ^ uint64(seq))
	g.rng.Seed(h, splitmix(h))
}

// rawInto is record for the raw format, writing the key and value into
// buf (from its start) rather than the arena, or, when buf is too small,
// into a new buffer with some room to spare, which it returns for the
// next record.
func (g *generator) rawInto(seq int64, buf []byte) (key, value, out []byte) {
	g.seedFor(seq)
	r := g.rawParts(seq)
	n := r.len()
	if cap(buf) < n {
		// Keys and JSON without a payload vary in length from record
		// to record.
		if m := n + n/16 + 16; m <= maxArenaValue {
			buf = g.alloc(m)
		} else {
			buf = noZero(m)
		}
	}
	key, value = r.copyTo(buf[:n])
	return key, value, buf
}

// rawRecord writes record seq as JSON. The key, if any, and the value are
// slices of the arena or, for a long value, an allocation of their own,
// which nothing writes again.
func (g *generator) rawRecord(seq int64) (key, value data.Raw) {
	r := g.rawParts(seq)
	var out []byte
	if n := r.len(); n <= maxArenaValue {
		out = g.alloc(n)
	} else {
		out = noZero(n)[:n]
	}
	return r.copyTo(out)
}

// rawParts is what record seq's raw key and value are made of: the JSON
// the writer holds (g.w), a window of the text pool, a closing tail, and
// the key, a slice of the writer's JSON. Valid until the next record.
type rawParts struct {
	head, text []byte
	tail       string
	key        []byte
	keyed      bool
}

func (g *generator) rawParts(seq int64) rawParts {
	w := g.w
	w.reset()
	g.q.gen(g, seq, nil, w)
	var r rawParts
	if g.payloadIdx < 0 {
		w.end()
	} else {
		w.field(g.payloadIdx)
		w.b = append(w.b, '"')
		// The payload fills what the rest leaves of record.size.
		n := max(g.recordSize-len(w.b)-len(`"}`), 0)
		r.text, r.tail = g.payload(seq, n), `"}`
	}
	r.head = w.b
	if g.keyIdx >= 0 {
		r.key, r.keyed = w.key(g.keySchema.Type == data.String), true
	}
	return r
}

// len is how many bytes the value and the key take together.
func (r *rawParts) len() int { return len(r.head) + len(r.text) + len(r.tail) + len(r.key) }

// copyTo writes the value and then the key into out, r.len() bytes, and
// returns them (key nil without a key field).
func (r *rawParts) copyTo(out []byte) (key, value []byte) {
	p := copy(out, r.head)
	p += copy(out[p:], r.text)
	p += copy(out[p:], r.tail)
	value = out[:p:p]
	if r.keyed {
		copy(out[p:], r.key)
		key = out[p:len(out):len(out)]
	}
	return key, value
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
func (r *rng) appendText(b []byte, n int) []byte {
	p, end := len(b), len(b)+n
	// 8 bytes of slack: a store near the end may spill past it.
	b = slices.Grow(b, n+8)[:end+8]
	for p < end {
		x := r.Uint64()
		for i := 0; i < 8 && p < end; i++ {
			w := &vocabulary[byte(x)]
			binary.LittleEndian.PutUint64(b[p:], w.bits)
			p += w.n
			x >>= 8
		}
	}
	return b[:end]
}

// rng is the generator's random source: math/rand/v2's PCG, with IntN and
// Float64 computed as rand.Rand computes them on 64-bit platforms, so that
// a seed makes the records it always made. Calling the PCG directly, not
// through rand.Rand's Source interface, lets the compiler inline the draws.
type rng struct{ mrand.PCG }

// IntN returns a uniform int in [0, n), n > 0, as rand.Rand.IntN does:
// Lemire's multiply-and-reject, masking for powers of two.
func (r *rng) IntN(n int) int {
	u := uint64(n)
	if u&(u-1) == 0 {
		return int(r.Uint64() & (u - 1))
	}
	hi, lo := bits.Mul64(r.Uint64(), u)
	if lo < u {
		thresh := -u % u
		for lo < thresh {
			hi, lo = bits.Mul64(r.Uint64(), u)
		}
	}
	return int(hi)
}

// Float64 returns a uniform float64 in [0, 1), as rand.Rand.Float64 does.
func (r *rng) Float64() float64 {
	return float64(r.Uint64()<<11>>11) / (1 << 53)
}

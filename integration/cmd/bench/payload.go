//go:build integration

package main

import (
	"math/rand/v2"
	"strconv"
)

// Payload hands out benchmark records: a 14-byte key and a 1 KiB value per
// record. Values are windows into a random pool at pseudo-random offsets,
// so no two records in a batch share content and compression cannot
// inflate the figures (identical values compress to almost nothing), while
// generating them costs nothing during the measurement.
type Payload struct {
	pool      []byte
	keys      []byte
	offsets   []int32
	ValueSize int
	KeySize   int
}

const (
	poolSize  = 16 << 20 // larger than a producer batch (1 MB) by far
	valueSize = 1024
	keySize   = 14 // "key-" + 10 digits
)

// NewPayload prepares keys and value offsets for n records; seed fixes the
// content so runs are comparable.
func NewPayload(n int, seed uint64) *Payload {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := &Payload{
		pool:      make([]byte, poolSize),
		keys:      make([]byte, 0, n*keySize),
		offsets:   make([]int32, n),
		ValueSize: valueSize,
		KeySize:   keySize,
	}
	for i := 0; i < len(p.pool); i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < len(p.pool); j++ {
			p.pool[i+j] = byte(v >> (8 * j))
		}
	}
	for i := range n {
		p.keys = append(p.keys, "key-"...)
		p.keys = append(p.keys, zeroPad(strconv.Itoa(i), 10)...)
		p.offsets[i] = int32(rng.IntN(poolSize - valueSize))
	}
	return p
}

func zeroPad(s string, n int) string {
	for len(s) < n {
		s = "0" + s
	}
	return s
}

// Len is the number of records prepared.
func (p *Payload) Len() int { return len(p.offsets) }

// Key returns record i's key (shared memory; do not modify).
func (p *Payload) Key(i int) []byte { return p.keys[i*keySize : (i+1)*keySize : (i+1)*keySize] }

// Value returns record i's value (shared memory; do not modify).
func (p *Payload) Value(i int) []byte {
	o := int(p.offsets[i])
	return p.pool[o : o+valueSize : o+valueSize]
}

// RecordBytes is the key+value size of one record.
func (p *Payload) RecordBytes() int64 { return int64(keySize + valueSize) }

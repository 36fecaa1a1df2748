package main

import "github.com/sluice-io/sluice/pluginsdk/data"

// Converting a raw key or value to any allocates a copy of its slice
// header for the interface to point at: two small allocations per record,
// which the garbage collector then tracks one by one. A rawBoxer hands out
// interface values that point into blocks of many headers instead
// (data.RawAt): one allocation per block. A slot is written once, before
// its interface is handed out; a full block is left to the garbage
// collector, which frees it once no record points into it. Records kept
// for reuse (polled) box into slots of their own instead.
type rawBoxer struct {
	per   int        // slots per block
	block []data.Raw // the current block's unused slots
}

// box returns x as an interface value, as any(x) does.
func (b *rawBoxer) box(x data.Raw) any {
	if len(b.block) == 0 {
		b.block = make([]data.Raw, b.per)
	}
	p := &b.block[0]
	*p = x
	b.block = b.block[1:]
	return data.RawAt(p)
}

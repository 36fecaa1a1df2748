package main

import (
	"unsafe"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Storing a data.Raw in an interface (a record's Key or Value) copies its
// slice header to a fresh 24-byte allocation: two per raw record, about an
// eighth of what generating a 1 KiB record costs. rawBoxes stores the
// headers in a slab instead, many records to an allocation, and makes each
// interface point at its slot, as the compiler's own conversion points at
// its copy. Sound because an interface value is an (itab or type, data)
// pair whatever the Go version (reflect and the runtime depend on it), a
// slot is written once before its interface is made and never after, and
// the garbage collector keeps the slab, and through it the bytes, alive
// while any interface points into it.
type rawBoxes struct {
	slab []data.Raw
}

// rawBoxChunk is how many headers a slab holds: 6 KiB, a small object.
const rawBoxChunk = 256

// eface is the layout of an interface value without methods.
type eface struct {
	typ, data unsafe.Pointer
}

// rawType is the type word of an interface holding a data.Raw.
var rawType = func() unsafe.Pointer {
	var v any = data.Raw{}
	return (*eface)(unsafe.Pointer(&v)).typ
}()

// box returns b as an interface holding data.Raw(b): what any(data.Raw(b))
// returns, without an allocation of its own.
func (r *rawBoxes) box(b []byte) any {
	if len(r.slab) == cap(r.slab) {
		r.slab = make([]data.Raw, 0, rawBoxChunk)
	}
	r.slab = append(r.slab, b)
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = rawType, unsafe.Pointer(&r.slab[len(r.slab)-1])
	return v
}

package data

import "unsafe"

// Converting a []byte, a Raw or an int64 to an interface allocates a copy
// of the value for the interface to point at. For the keys, values and
// offsets of records by the million, those small allocations, each then
// tracked by the garbage collector, cost more than the rest of making a
// record. BytesAt, RawAt and Int64At make the interface value point at a
// slot the caller owns instead, typically an entry of a block of many, so
// that one allocation serves many values, or a field of a record kept for
// reuse.
//
// The result is an ordinary interface value: type assertions, type
// switches, reflection, ==, map keys and fmt see a []byte, Raw or int64
// holding *p. It relies on how Go lays out an interface holding a value
// that is not pointer-shaped (slices and int64 are not): a type word, then
// a pointer to the value, which the runtime only ever reads through. What
// a reader gets out of it (v.([]byte), say) is a copy of the slot; an
// append to that copy writes into the bytes the slice points at, never
// into the slot, nor into the slot next to it.
//
// What an interface holds must not change while anyone may be reading it
// (a value in an interface is immutable to every Go reader, which may hash
// it, compare it, or have copied it out already), and only the caller can
// see to that: write *p only while nobody else holds the interface. A slot
// is filled before its interface is handed out, and filled again, if ever,
// only once the value came back (a record given back for reuse, a batch
// its reader is done with).
//
// The interface is a pointer to *p as far as the garbage collector and
// the compiler are concerned: it keeps alive the object *p lies in (an
// entry keeps its whole block), and escape analysis sees p flow into the
// result, so a local variable whose interface outlives its function is
// moved to the heap as it would be for &x. Sluice's own callers box into
// blocks, or into fields of heap objects kept for reuse.
//
// p must not be nil: as *p would, each of them then panics.

// eface is the layout of an interface value without methods (the runtime's
// internal/abi.EmptyInterface).
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// typeWord returns the type word of v's dynamic type.
func typeWord(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

// The type words of the types boxed here, taken once: the hot path reads a
// variable rather than building an interface or asking reflect.
var (
	bytesType = typeWord([]byte(nil))
	rawType   = typeWord(Raw(nil))
	int64Type = typeWord(int64(0))
)

// at returns the interface value of the type typ names whose data word is
// p.
func at(typ, p unsafe.Pointer) any {
	e := eface{typ: typ, data: p}
	return *(*any)(unsafe.Pointer(&e))
}

// BytesAt returns the interface value any(*p) is, a []byte (a nil slice
// gives a []byte that is nil, not the nil interface), pointing at *p
// rather than at a copy of it: no allocation. *p must not be written while
// anyone else may hold the interface (see above).
func BytesAt(p *[]byte) any {
	_ = *p // a nil p panics here, not when the interface is read
	return at(bytesType, unsafe.Pointer(p))
}

// RawAt is BytesAt for a Raw: the interface holds a Raw.
func RawAt(p *Raw) any {
	_ = *p
	return at(rawType, unsafe.Pointer(p))
}

// Int64At is BytesAt for an int64: the interface holds an int64.
func Int64At(p *int64) any {
	_ = *p
	return at(int64Type, unsafe.Pointer(p))
}

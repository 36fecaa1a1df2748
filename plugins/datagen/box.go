package main

import (
	"reflect"
	"unsafe"
)

// Converting a slice or an int64 to any allocates a copy of it for the
// interface to point at: two raw byte slices and a sequence number per
// record, three small allocations the garbage collector then tracks one
// by one. A boxer hands out interface values that point into blocks of
// many values instead: one allocation per block. The result is an
// ordinary interface value (type assertions, reflection, comparison,
// printing all see a T), whose data word points at a slot nobody writes
// again.
//
// This relies on how Go lays out an interface holding a value that is not
// pointer-shaped: a type word and a pointer to the value, which the
// runtime never writes through. newBoxer refuses pointer-shaped types,
// whose interface holds the value itself.

// eface is the layout of an empty interface value.
type eface struct {
	typ, data unsafe.Pointer
}

// boxer hands out interface values of T from blocks of per values (box),
// or pointing at a T of the caller's (at; per may then be 0).
type boxer[T any] struct {
	typ   unsafe.Pointer // T's type word
	per   int
	block []T // the current block's unused slots
}

func newBoxer[T any](per int) *boxer[T] {
	var zero T
	if pointerShaped(reflect.TypeFor[T]()) {
		panic("boxer of a pointer-shaped type " + reflect.TypeFor[T]().String())
	}
	v := any(zero)
	return &boxer[T]{typ: (*eface)(unsafe.Pointer(&v)).typ, per: per}
}

// box returns x as an interface value, as any(x) does.
func (b *boxer[T]) box(x T) any {
	if len(b.block) == 0 {
		b.block = make([]T, b.per)
	}
	p := &b.block[0]
	*p = x
	b.block = b.block[1:len(b.block):len(b.block)]
	return b.at(p)
}

// at returns an interface value of T whose data word points at *p: what
// it holds changes when *p is written. p must stay valid while the
// interface is in use (a field of a heap object that holds it).
func (b *boxer[T]) at(p *T) any {
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = b.typ, unsafe.Pointer(p)
	return v
}

// pointerShaped reports whether an interface holds a t itself rather than
// a pointer to it.
func pointerShaped(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Struct:
		// A struct of one pointer-shaped field (and zero-sized others)
		// is pointer-shaped; any struct of a single field is refused,
		// to be safe.
		return t.NumField() == 1 || t.Size() == 0
	case reflect.Array:
		return t.Len() == 1 || t.Size() == 0
	}
	return t.Size() == 0
}

package wire

import (
	"fmt"

	"github.com/sluice-io/sluice/pluginsdk/data"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// SchemaEncoder builds a batch's schema table: every distinct schema is
// encoded once and records refer to it by 1-based index (Data.schema).
//
// Connectors commonly reuse one *data.Schema for every record, so the pointer
// is looked up first; connectors that build a fresh but equal schema per
// record still share one table entry through a content fingerprint checked
// with data.SchemaEqual. An encoder is not safe for concurrent use.
type SchemaEncoder struct {
	byPtr   map[*data.Schema]uint32
	byPrint map[uint64][]uint32
	known   []*data.Schema
	table   []*pluginv1.Schema
	// last and lastRef are the schema Ref answered last: records of one
	// batch mostly share their key and value schemas, and this spares
	// them the map lookup.
	last    *data.Schema
	lastRef uint32
}

// Ref returns the table index of s, adding it if new; nil has index 0.
func (e *SchemaEncoder) Ref(s *data.Schema) (uint32, error) {
	if s == nil {
		return 0, nil
	}
	if s == e.last {
		return e.lastRef, nil
	}
	if ref, ok := e.byPtr[s]; ok {
		e.last, e.lastRef = s, ref
		return ref, nil
	}
	if e.byPtr == nil {
		e.byPtr = make(map[*data.Schema]uint32)
		e.byPrint = make(map[uint64][]uint32)
	}
	fp := fingerprint(s)
	for _, ref := range e.byPrint[fp] {
		if data.SchemaEqual(e.known[ref-1], s) {
			e.byPtr[s] = ref
			e.last, e.lastRef = s, ref
			return ref, nil
		}
	}
	p, err := EncodeSchema(s)
	if err != nil {
		return 0, err
	}
	e.known = append(e.known, s)
	e.table = append(e.table, p)
	ref := uint32(len(e.table))
	e.byPtr[s] = ref
	e.byPrint[fp] = append(e.byPrint[fp], ref)
	e.last, e.lastRef = s, ref
	return ref, nil
}

// Schemas returns the table, index i holding ref i+1. The slice is the
// encoder's own until Reset.
func (e *SchemaEncoder) Schemas() []*pluginv1.Schema { return e.table }

// Reset empties the table for the next batch, keeping allocated memory.
func (e *SchemaEncoder) Reset() {
	clear(e.byPtr)
	clear(e.byPrint)
	clear(e.known)
	e.known = e.known[:0]
	e.last, e.lastRef = nil, 0
	// The table slice was handed out by Schemas; start a new one rather than
	// overwrite what a caller may still hold.
	e.table = nil
}

// truncate drops the table entries after the first n, and what maps to
// them, as if the schemas that brought them had never been referenced.
func (e *SchemaEncoder) truncate(n int) {
	if len(e.table) <= n {
		return
	}
	if int(e.lastRef) > n {
		e.last, e.lastRef = nil, 0
	}
	for s, ref := range e.byPtr {
		if int(ref) > n {
			delete(e.byPtr, s)
		}
	}
	for fp, refs := range e.byPrint {
		kept := refs[:0]
		for _, ref := range refs {
			if int(ref) <= n {
				kept = append(kept, ref)
			}
		}
		if len(kept) == 0 {
			delete(e.byPrint, fp)
		} else {
			e.byPrint[fp] = kept
		}
	}
	clear(e.known[n:])
	e.known = e.known[:n]
	clear(e.table[n:])
	e.table = e.table[:n]
}

// fingerprint hashes the structural parts of a schema (FNV-1a). Defaults and
// parameters are left out: collisions are resolved by data.SchemaEqual.
func fingerprint(s *data.Schema) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	var walk func(s *data.Schema)
	mix := func(b byte) { h = (h ^ uint64(b)) * prime }
	str := func(x string) {
		for i := 0; i < len(x); i++ {
			mix(x[i])
		}
		mix(0xff)
	}
	walk = func(s *data.Schema) {
		if s == nil {
			mix(0xfe)
			return
		}
		mix(byte(s.Type))
		if s.Optional {
			mix(1)
		}
		str(s.Name)
		for _, f := range s.Fields {
			str(f.Name)
			walk(f.Schema)
		}
		if s.Type == data.MapType {
			walk(s.KeySchema)
		}
		if s.Type == data.MapType || s.Type == data.Array {
			walk(s.ValueSchema)
		}
	}
	walk(s)
	return h
}

// SchemaDecoder resolves a batch's schema references. Every schema of the
// table is decoded once, when the decoder is made, so all records of the
// batch that refer to one table entry share one *data.Schema.
type SchemaDecoder struct {
	schemas []*data.Schema
}

// NewSchemaDecoder decodes a batch's schema table.
func NewSchemaDecoder(ps []*pluginv1.Schema) (*SchemaDecoder, error) {
	d := &SchemaDecoder{schemas: make([]*data.Schema, len(ps))}
	for i, p := range ps {
		if p == nil {
			return nil, fmt.Errorf("schema table entry %d is empty", i+1)
		}
		s, err := DecodeSchema(p)
		if err != nil {
			return nil, fmt.Errorf("schema table entry %d: %w", i+1, err)
		}
		d.schemas[i] = s
	}
	return d, nil
}

// Schema returns the schema of a reference; 0 is nil (schemaless).
func (d *SchemaDecoder) Schema(ref uint32) (*data.Schema, error) {
	if ref == 0 {
		return nil, nil
	}
	if int(ref) > len(d.schemas) {
		return nil, fmt.Errorf("schema reference %d outside the batch's table of %d", ref, len(d.schemas))
	}
	return d.schemas[ref-1], nil
}

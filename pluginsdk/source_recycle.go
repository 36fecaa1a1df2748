package pluginsdk

import (
	"fmt"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// RecordRecycler is implemented by source tasks that reuse the memory of
// the records Poll returned (the records themselves, their maps, the
// bytes of their keys and values) once the SDK is done with them, instead
// of allocating every record anew and leaving the old ones to the garbage
// collector: for a task that makes many small records, that allocation and
// collection is much of what a record costs.
//
// The SDK calls RecycleRecords with records Poll returned once it reads
// nothing of them again: after it wrote them into the memory the worker
// shares with the plugin, from which the worker reads its copy. Records
// that go to the worker otherwise (inline in the gRPC answer, which is
// written after the SDK's call returns) are never handed back, and
// neither are any records of a task that also implements RecordCommitter
// (CommitRecord gets them later): their memory is the garbage collector's,
// as for a task without RecycleRecords. A task must therefore work
// whether or not its records come back.
//
// RecycleRecords is never called while Poll runs. Records come back in
// the order Poll returned them, each at most once, and only records of
// this task; a batch Poll returned may come back in parts, over several
// calls. recs is the SDK's: the task keeps the records, not the slice.
//
// A RecycleRecords that panics does not fail the task: the records were
// already answered. The SDK logs the panic and gives no records back to
// that task again.
type RecordRecycler interface {
	RecycleRecords(recs []*data.SourceRecord)
}

// recycle hands recs back to the task. A panic in RecycleRecords turns
// recycling off for the task instance: it is logged, with its stack, once
// (there is no later call), and the Poll answer, already written where the
// worker reads it, goes out as usual; from then on the task's records are
// the garbage collector's, as for a task without RecycleRecords, whatever
// the panic left half-recycled. Called by the holder of pollSem.
func (inst *sourceInstance) recycle(log hclog.Logger, recs []*data.SourceRecord) {
	defer func() {
		if v := recover(); v != nil {
			inst.recycler = nil
			log.Error("connector code panicked; records are no longer given back to the task", "call", "recycle records",
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	inst.recycler.RecycleRecords(recs)
}

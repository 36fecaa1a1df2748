package plugin

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// sharedFD is the descriptor number the shared memory file has in the
// plugin process: the first of exec's ExtraFiles, after stdin, stdout and
// stderr.
const sharedFD = 3

// newShared creates a task's shared memory region: an anonymous memory file
// (memfd, never on a disk, freed by the kernel once both processes are
// done with it, however they end) of size bytes, mapped into the worker.
// The file is handed to the plugin process at launch; pages are only
// allocated as batches touch them.
func newShared(name string, size int64) (*os.File, *wire.SharedRegion, error) {
	fd, err := unix.MemfdCreate("sluice-"+name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("create shared memory: %w", err)
	}
	f := os.NewFile(uintptr(fd), "sluice-shared-"+name)
	if err := f.Truncate(size); err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("size shared memory to %d bytes: %w", size, err)
	}
	r, err := wire.MapShared(int(f.Fd()), size)
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, r, nil
}

// SharedMemory is the offer to put in the task's Start request, or nil when
// the instance has no shared region (Spec.SharedMemoryBytes was 0, or the
// system refused one).
func (in *Instance) SharedMemory() *pluginv1.SharedMemory {
	if in.shared == nil {
		return nil
	}
	return &pluginv1.SharedMemory{Fd: sharedFD, Size: uint64(in.shared.Size())}
}

// Shared is the worker's mapping of the instance's shared region, or nil.
// Use it only once the plugin has accepted the offer in its Start answer.
func (in *Instance) Shared() *wire.SharedRegion { return in.shared }

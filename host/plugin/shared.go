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
//
// Its size is sealed before the plugin gets it. The plugin holds a
// writable descriptor of the same file, and a file shrunk under the
// worker's mapping makes the worker's next read of the lost pages a
// SIGBUS, which no recover catches: a plugin could take the worker down.
// With F_SEAL_SHRINK and F_SEAL_GROW every ftruncate fails, and
// F_SEAL_SEAL keeps the seals from being changed. Writing stays allowed:
// that is what the region is for, and bad bytes in it are the decoder's
// business, which checks every length against the region.
func newShared(name string, size int64) (*os.File, *wire.SharedRegion, error) {
	fd, err := unix.MemfdCreate("sluice-"+name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, nil, fmt.Errorf("create shared memory: %w", err)
	}
	f := os.NewFile(uintptr(fd), "sluice-shared-"+name)
	if err := f.Truncate(size); err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("size shared memory to %d bytes: %w", size, err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("seal the size of shared memory: %w", err)
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

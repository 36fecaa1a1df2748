//go:build unix

package wire

import (
	"fmt"
	"syscall"
)

// MapShared maps size bytes of the shared memory file open as fd, shared
// and read-write, as the contract's SharedMemory describes.
func MapShared(fd int, size int64) (*SharedRegion, error) {
	if size <= 0 || size > 1<<40 {
		return nil, fmt.Errorf("map shared memory fd %d: size %d out of range", fd, size)
	}
	mem, err := syscall.Mmap(fd, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map shared memory fd %d (%d bytes): %w", fd, size, err)
	}
	return NewSharedRegion(mem, syscall.Munmap), nil
}

//go:build !unix

package wire

import "fmt"

// MapShared is not available on this system; plugins answer inline.
func MapShared(fd int, size int64) (*SharedRegion, error) {
	return nil, fmt.Errorf("map shared memory fd %d: not supported on this system", fd)
}

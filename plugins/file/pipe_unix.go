//go:build unix

package main

import (
	"errors"
	"syscall"
)

// openNonblock opens a named pipe for reading without waiting for a writer.
const openNonblock = syscall.O_NONBLOCK

// wouldBlock tells a non-blocking read that found no data.
func wouldBlock(err error) bool { return errors.Is(err, syscall.EAGAIN) }

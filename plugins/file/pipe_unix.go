//go:build unix

package main

import "syscall"

// openNonblock opens a named pipe for reading without waiting for a writer.
const openNonblock = syscall.O_NONBLOCK

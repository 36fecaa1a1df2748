//go:build !unix

package main

// openNonblock is 0 where named pipes are not files one opens by path.
const openNonblock = 0

// wouldBlock is false: without openNonblock no read is non-blocking.
func wouldBlock(error) bool { return false }

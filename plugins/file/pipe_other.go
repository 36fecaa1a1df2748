//go:build !unix

package main

// openNonblock is 0 where named pipes are not files one opens by path.
const openNonblock = 0

//go:build unix

package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// On macOS a named pipe cannot join Go's poller (kqueue misreports FIFOs):
// the file takes no read deadline and, opened non-blocking, a read without
// data fails with EAGAIN. Neither may fail the task. A pipe made here outside
// the poller, then switched to non-blocking, behaves the same way on Linux.
func TestPipeInputOutsideThePoller(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r := os.NewFile(uintptr(fds[0]), "in.fifo") // blocking now: not polled
	w := os.NewFile(uintptr(fds[1]), "writer")
	defer w.Close()
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	in := &pipeInput{f: r, buf: make([]byte, readChunk)}
	defer in.close()
	if err := r.SetReadDeadline(time.Now().Add(time.Hour)); err == nil {
		t.Skip("this pipe takes deadlines; nothing to test")
	}
	// A writer, no data yet.
	if b, err := in.read(); err != nil || len(b) != 0 {
		t.Fatalf("read of an empty pipe = %q, %v; want nothing yet", b, err)
	}
	if _, err := w.WriteString("a\n"); err != nil {
		t.Fatal(err)
	}
	if b, err := in.read(); err != nil || string(b) != "a\n" {
		t.Fatalf("read = %q, %v; want \"a\\n\"", b, err)
	}
	// No writer: nothing more for now, not an error.
	w.Close()
	if b, err := in.read(); err != nil || len(b) != 0 {
		t.Fatalf("read of a pipe without writer = %q, %v; want nothing", b, err)
	}
}

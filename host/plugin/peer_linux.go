//go:build linux

package plugin

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
)

// peerPid is the process id at the other end of a unix socket connection,
// as the kernel recorded it when the peer connected (SO_PEERCRED).
func peerPid(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("not a unix socket connection (%T)", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, credErr
	}
	return int(cred.Pid), nil
}

// maxAncestry bounds the walk up from a peer to the plugin process: a
// plugin's helper processes are its children or grandchildren, not
// thirty-two generations down.
const maxAncestry = 32

// descendsFrom reports whether pid is root or one of root's descendants,
// walking parent ids in /proc.
func descendsFrom(pid, root int) bool {
	for range maxAncestry {
		if pid == root {
			return true
		}
		if pid <= 1 {
			return false
		}
		ppid, err := parentPid(pid)
		if err != nil {
			return false
		}
		pid = ppid
	}
	return false
}

// parentPid reads the parent process id from /proc/<pid>/stat: the fourth
// field, counted after the command name, which is in parentheses and may
// itself hold spaces and parentheses.
func parentPid(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	return strconv.Atoi(string(f[1]))
}

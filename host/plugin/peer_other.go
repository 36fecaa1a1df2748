//go:build !linux

package plugin

import "net"

func peerPid(net.Conn) (int, error) { return 0, errNoPeerCredentials }

func descendsFrom(pid, root int) bool { return pid == root }

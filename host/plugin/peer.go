package plugin

import (
	"errors"
	"net"
)

// peerListener accepts only connections that allow approves; it closes the
// others and keeps accepting. The Worker callback service of a task listens
// on a unix socket in the worker's private socket directory, and any
// process of the worker's user could otherwise connect to it and act as the
// task (report errors, pause partitions, read offsets). allow checks that
// the peer is the task's own plugin process, or a process it started.
//
// This stops mistakes, such as a plugin given another task's target; it is
// not a defence against hostile code running as the worker's user, which
// can trace the plugin process anyway.
type peerListener struct {
	net.Listener
	allow  func(c net.Conn) (ok bool, why string)
	refuse func(why string)
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ok, why := l.allow(c)
		if ok {
			return c, nil
		}
		_ = c.Close()
		if l.refuse != nil {
			l.refuse(why)
		}
	}
}

// errNoPeerCredentials is returned where the platform does not say who is
// at the other end of a unix socket; such connections are accepted.
var errNoPeerCredentials = errors.New("peer credentials are not available on this platform")

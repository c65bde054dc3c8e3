//go:build linux

package fakemeta

import (
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"syscall"
)

// stampListener makes the connections it accepts report the kernel's
// receive time of what they read (SO_TIMESTAMPNS). The option is set on
// the listening socket too: the kernel turns receive stamps on for the
// whole stack a little after the first socket asks and off a little after
// the last one closes, so a listener that asks from the start keeps them
// on for every connection it accepts. A read the kernel did not stamp
// leaves the request to be stamped when its body has been read.
func stampListener(ln net.Listener) net.Listener {
	if tl, ok := ln.(*net.TCPListener); ok {
		if rc, err := tl.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) {
				_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
			})
		}
	}
	return stampingListener{ln}
}

type stampingListener struct{ net.Listener }

func (l stampingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c, nil // stamped when read instead
	}
	return &stampConn{TCPConn: tc, rc: rc}, nil
}

// stampConn reads with recvmsg, keeping the receive time the kernel
// attaches to the data.
type stampConn struct {
	*net.TCPConn
	rc   syscall.RawConn
	oob  []byte
	last atomic.Int64
}

func (c *stampConn) lastArrival() int64 { return c.last.Load() }

func (c *stampConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.oob == nil {
		c.oob = make([]byte, syscall.CmsgSpace(16))
	}
	var (
		n, oobn int
		rerr    error
	)
	err := c.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, c.oob, 0)
		return rerr != syscall.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if n == 0 {
		return 0, io.EOF
	}
	stampAt(&c.last, receiveTime(c.oob[:oobn]))
	return n, nil
}

// receiveTime parses an SCM_TIMESTAMPNS control message (0 when there is
// none).
func receiveTime(oob []byte) int64 {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level != syscall.SOL_SOCKET || m.Header.Type != syscall.SCM_TIMESTAMPNS {
			continue
		}
		switch len(m.Data) {
		case 16: // struct timespec of 64-bit fields
			sec, nsec := int64(binary.NativeEndian.Uint64(m.Data)), int64(binary.NativeEndian.Uint64(m.Data[8:]))
			return sec*1e9 + nsec
		case 8: // 32-bit fields
			sec, nsec := int64(int32(binary.NativeEndian.Uint32(m.Data))), int64(int32(binary.NativeEndian.Uint32(m.Data[4:])))
			return sec*1e9 + nsec
		}
	}
	return 0
}

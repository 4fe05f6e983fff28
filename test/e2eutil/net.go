package e2eutil

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Poll is how often the helpers here retry a condition.
const Poll = 250 * time.Millisecond

// WaitTCP waits until addr (host:port) accepts TCP connections, at most
// timeout.
func WaitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, Poll, timeout, true, func(context.Context) (bool, error) {
		return Listening(addr), nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s to accept connections: %w", addr, err)
	}
	return nil
}

// Listening reports whether addr (host:port) accepts a TCP connection now.
func Listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago (the
// kernel chose it for a listener that is closed again). Something else may
// take it before the caller binds it, so a caller that starts a server on it
// must still check that its own server is the one listening.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	return strconv.Atoi(port)
}

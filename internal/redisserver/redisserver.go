// Package redisserver starts a throwaway redis-server for tests and
// examples: found on PATH, listening on a free loopback port, keeping
// nothing on disk.
package redisserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNotFound is returned by Start when no redis-server is on PATH.
var ErrNotFound = errors.New("redisserver: redis-server not found on PATH")

// Server is a running redis-server started by Start.
type Server struct {
	// URL is the server's address as a redis:// URL, database 0.
	URL string
	// Addr is host:port on the loopback interface.
	Addr string

	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
	err  error
}

// Start starts redis-server from PATH on 127.0.0.1 on a free port, without
// persistence, and returns once it answers PING (or fails within ctx).
func Start(ctx context.Context) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNotFound
	}
	var last error
	for range 5 { // a free port may be taken between probing and binding
		s, err := start(ctx, bin)
		if err == nil {
			return s, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

func start(ctx context.Context, bin string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return startOn(ctx, bin, port)
}

func startOn(ctx context.Context, bin string, port int) (*Server, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes",
		"--daemonize", "no", "--loglevel", "warning", "--logfile", "")
	cmd.Stdout, cmd.Stderr = nil, nil // its log goes nowhere: tests report what matters
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redisserver: %w", err)
	}
	s := &Server{URL: "redis://" + addr + "/0", Addr: addr, cmd: cmd, done: make(chan struct{})}
	go func() { s.err = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The port was free when probed, not necessarily when our server
		// bound it: the server that answers must be ours, or a test could
		// use (and kill) another test's Redis while ours exited.
		if err := ping(addr, cmd.Process.Pid); err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("redisserver: redis-server exited: %v", s.err)
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, errors.New("redisserver: redis-server did not answer PING within 10s")
		}
	}
}

// Stop kills the server and waits for it to exit. It may be called more
// than once.
func (s *Server) Stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
	})
}

// Kill is Stop: the server dies at once, as in a crash.
func (s *Server) Kill() { s.Stop() }

// Restart kills the server, as in a crash, and starts a new one on the
// same port, again without persistence: it comes back empty, as a server
// without persistence does after a restart. It returns once the new server
// answers PING (or fails within ctx); the Server then stands for the new
// one.
func (s *Server) Restart(ctx context.Context) error {
	s.Stop()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return ErrNotFound
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	p, _ := strconv.Atoi(port)
	var n *Server
	for {
		n, err = startOn(ctx, bin, p)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond) // the port may linger a moment
	}
	s.cmd, s.done, s.once, s.err = n.cmd, n.done, sync.Once{}, nil
	return nil
}

// freePort returns a TCP port free on 127.0.0.1 when asked (a variable
// for tests).
var freePort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping asks the server at addr for its process ID (INFO server) and
// expects pid: a server that answers is up, and it is ours.
func ping(addr string, pid int) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil || n < 0 || n > 1<<20 {
		return fmt.Errorf("redisserver: unexpected answer to INFO: %q", head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			if v != strconv.Itoa(pid) {
				return fmt.Errorf("redisserver: %s is another redis-server (pid %s, not %d)", addr, v, pid)
			}
			return nil
		}
	}
	return fmt.Errorf("redisserver: %s: INFO names no process_id", addr)
}

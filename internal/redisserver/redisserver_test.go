package redisserver

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"
)

func startT(t *testing.T) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Start(ctx)
	if errors.Is(err, ErrNotFound) {
		if os.Getenv("WAPACE_REQUIRE_SERVICES") == "1" {
			t.Fatal("WAPACE_REQUIRE_SERVICES=1 but no redis-server on PATH")
		}
		t.Skip("no redis-server on PATH")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// A port found free can be taken by another redis-server (another test's)
// before ours binds it: ours then exits, and Start must not hand out the
// other server (it used to, as soon as that one answered PING).
func TestStartNeverReturnsAnotherServer(t *testing.T) {
	other := startT(t)
	taken := other.cmd.Process.Pid
	real := freePort
	defer func() { freePort = real }()
	calls := 0
	freePort = func() (int, error) {
		calls++
		if calls == 1 {
			return portOf(t, other.Addr), nil
		}
		return real()
	}
	s := startT(t)
	if s.Addr == other.Addr || s.cmd.Process.Pid == taken {
		t.Fatalf("Start returned the server already on %s", other.Addr)
	}
	if calls < 2 {
		t.Fatalf("Start asked for %d ports; want a second after the first was taken", calls)
	}
	if err := ping(s.Addr, s.cmd.Process.Pid); err != nil {
		t.Fatalf("the server returned does not answer as ours: %v", err)
	}
	// Killing ours leaves the other one running.
	s.Kill()
	if err := ping(other.Addr, taken); err != nil {
		t.Fatalf("the other server: %v", err)
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

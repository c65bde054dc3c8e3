package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/wapace/wapace/outbox/outboxweb"
)

func runConsole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("console", "console -db DSN [-addr 127.0.0.1:8080] [-token-file PATH] [-allow-remote] [-show-numbers]\n\n"+
		"Serves the outbox's web console. Every request needs the access token: read from\n"+
		"-token-file (or $WAPACE_CONSOLE_TOKEN), or made up and written to -token-file if that\n"+
		"file does not exist. The token is never printed; open the URL printed with ?token=...\n"+
		"appended once, and the console keeps it in a cookie.", stderr)
	db := dbFlag(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (loopback unless -allow-remote)")
	tokenFile := fs.String("token-file", "", "file holding the access token (created, mode 0600, if missing)")
	remote := fs.Bool("allow-remote", false, "allow a non-loopback -addr (put TLS in front of it)")
	show := fs.Bool("show-numbers", false, "show recipients' phone numbers unmasked")
	if err := parseNoArgs(fs, args, "console"); err != nil {
		return err
	}
	token, err := consoleToken(*tokenFile)
	if err != nil {
		return err
	}
	o, err := open(ctx, *db)
	if err != nil {
		return err
	}
	defer o.Close()
	opts := []outboxweb.Option{outboxweb.WithToken(token)}
	if *show {
		opts = append(opts, outboxweb.WithNumbersShown())
	}
	h := outboxweb.Handler(o, opts...)
	ln, err := listen(*addr, *remote)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "wapace console on http://%s/ (token from %s)\n", ln.Addr(), tokenSource(*tokenFile))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}

// listen listens on addr, refusing a non-loopback address unless remote.
func listen(addr string, remote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageErr("-addr %q: %v", addr, err)
	}
	if !remote {
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, usageErr("-addr %q is not a loopback address: give -allow-remote to serve it", addr)
		}
	}
	return net.Listen("tcp", addr)
}

func tokenSource(path string) string {
	if path != "" {
		return path
	}
	return "$WAPACE_CONSOLE_TOKEN"
}

// consoleToken reads the access token from path, or makes one up and
// writes it there, or reads $WAPACE_CONSOLE_TOKEN.
func consoleToken(path string) (string, error) {
	if path == "" {
		t := strings.TrimSpace(os.Getenv("WAPACE_CONSOLE_TOKEN"))
		if t == "" {
			return "", usageErr("give -token-file or set WAPACE_CONSOLE_TOKEN")
		}
		return t, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		raw := make([]byte, 24)
		if _, err := rand.Read(raw); err != nil {
			return "", err
		}
		t := hex.EncodeToString(raw)
		if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
			return "", err
		}
		return t, nil
	}
	if err != nil {
		return "", err
	}
	t := strings.TrimSpace(string(b))
	if len(t) < 16 {
		return "", fmt.Errorf("the token in %s is shorter than 16 characters", path)
	}
	return t, nil
}

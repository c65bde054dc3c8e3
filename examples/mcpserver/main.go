// Command mcpserver is a Model Context Protocol server on stdio that lets an
// AI agent send WhatsApp messages through wapace: the tools
// send_whatsapp_message and get_message_status (package mcptool), on the
// durable outbox (SQLite by default), dispatched in the same process.
//
//	WHATSAPP_TOKEN=... mcpserver -from 106540352242922 [-base-url URL] [-outbox DSN]
//
// -base-url is the Graph API base URL (Meta's by default; point it at a fake
// such as wapace-fakemeta for demos), -from the business phone number ID(s)
// the agent may send from (comma-separated, the first is the default), and
// -outbox an outbox DSN ("sqlite:PATH" or a postgres:// URL); -sync-wait and
// -accept-wait tune mcptool.Config's SyncWait and AcceptWait. The access
// token is read from WHATSAPP_TOKEN and never printed or logged. Stdout
// carries the protocol; diagnostics go to stderr.
//
// With -webhook host:port the server also serves Meta's webhook there
// (signed with the app secret in WHATSAPP_APP_SECRET; the verification
// token, if any, in WHATSAPP_VERIFY_TOKEN) and feeds every notification to
// the outbox: statuses move messages to delivered, read or failed and
// settle unknown outcomes, and inbound messages open the 24-hour service
// window, which -service-window then enforces before anything is spent. It
// prints "webhook listening on http://ADDR" to stderr once it listens.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/mcptool"
	"github.com/wapace/wapace/outbox"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("mcpserver", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	baseURL := flag.String("base-url", cloudapi.DefaultBaseURL, "Graph API base URL")
	from := flag.String("from", "", "business phone number ID(s) to send from, comma-separated (required)")
	dsn := flag.String("outbox", "sqlite:wapace-outbox.db", "outbox DSN: sqlite:PATH or a postgres:// URL")
	syncWait := flag.Duration("sync-wait", mcptool.DefaultSyncWait, "longest wait of a delivery sync call for Meta's answer")
	acceptWait := flag.Duration("accept-wait", mcptool.DefaultAcceptWait, "how long a delivery async call waits for a message that can go now")
	webhookAddr := flag.String("webhook", "", "serve Meta's webhook on this host:port (off by default)")
	window := flag.Bool("service-window", false, "refuse free-form messages to users who have not written in 24 h (needs -webhook)")
	flag.Parse()

	if *window && *webhookAddr == "" {
		return errors.New("-service-window needs -webhook: the window is learnt from inbound messages")
	}
	appSecret := os.Getenv("WHATSAPP_APP_SECRET")
	if *webhookAddr != "" && appSecret == "" {
		return errors.New("-webhook needs WHATSAPP_APP_SECRET")
	}

	if *from == "" {
		return errors.New("-from is required")
	}
	token := os.Getenv("WHATSAPP_TOKEN")
	if token == "" {
		return errors.New("WHATSAPP_TOKEN is not set")
	}
	// The Client owns every limit: it paces the sends, tells the outbox's
	// Run which lanes must wait, and tells the tools what a recipient
	// already owes.
	client, err := cloudapi.New(token, cloudapi.WithBaseURL(*baseURL), cloudapi.WithLogger(log))
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	wk := new(mcptool.Waker) // wakes waiting calls at each transition
	opts := []outbox.Option{outbox.WithClient(client), outbox.WithObserver(wk.Observe)}
	if *window {
		opts = append(opts, outbox.WithServiceWindow(outbox.DefaultServiceWindow))
	}
	ob, err := outbox.Open(ctx, *dsn, opts...)
	if err != nil {
		return err
	}
	defer ob.Close()

	if *webhookAddr != "" {
		stopHooks, err := serveWebhook(log, *webhookAddr, appSecret, ob)
		if err != nil {
			return err
		}
		defer stopHooks()
	}

	server := mcp.NewServer(&mcp.Implementation{Name: "wapace", Title: "WhatsApp via wapace", Version: "v0.1.0"}, nil)
	if err := mcptool.Register(server, mcptool.Config{
		Outbox:     ob,
		Client:     client,
		Waker:      wk,
		From:       strings.Split(*from, ","),
		SyncWait:   *syncWait,
		AcceptWait: *acceptWait,
	}); err != nil {
		return err
	}

	// The outbox dispatches while the session lasts, then finishes what is
	// in flight.
	dispatch, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ob.Run(dispatch, client) }()
	err = server.Run(ctx, &mcp.StdioTransport{})
	cancel()
	if rerr := <-done; rerr != nil && !errors.Is(rerr, context.Canceled) {
		log.Error("outbox", "err", rerr)
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, mcp.ErrConnectionClosed) {
		return fmt.Errorf("session: %w", err)
	}
	return nil
}

// serveWebhook serves Meta's webhook on addr, feeding the outbox, and
// returns a function that stops it.
func serveWebhook(log *slog.Logger, addr, appSecret string, ob *outbox.Outbox) (func(), error) {
	h, err := webhook.NewHandler(appSecret,
		webhook.WithVerifyToken(os.Getenv("WHATSAPP_VERIFY_TOKEN")),
		webhook.OnNotification(ob.Reconcile))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := webhookServer(h)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("webhook", "err", err)
		}
	}()
	fmt.Fprintf(os.Stderr, "webhook listening on http://%s\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}

// webhookServer is the HTTP server in front of the webhook handler, with
// the limits package webhook's documentation asks for: a client that
// trickles its headers or body is cut off (Meta posts at most 3 MB at data
// centre speed), a stalled response too, idle keep-alive connections are
// closed, and headers are capped.
func webhookServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       20 * time.Second,
		WriteTimeout:      40 * time.Second, // the callbacks run within it
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

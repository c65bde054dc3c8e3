package mcptool_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/mcptool"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// benchWorld is newWorld on the real clock, for benchmarks.
func benchWorld(b *testing.B) *mcp.ClientSession {
	b.Helper()
	meta := cloudapitest.NewServer(b)
	pairs := pairlimit.New(pairlimit.Meta)
	ob, err := outbox.Open(b.Context(), "sqlite:"+filepath.Join(b.TempDir(), "outbox.db"), outbox.WithPairLimiter(pairs))
	if err != nil {
		b.Fatal(err)
	}
	c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL), cloudapi.WithPairLimiter(pairs))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- ob.Run(ctx, c) }()
	s := mcp.NewServer(&mcp.Implementation{Name: "wapace", Version: "v0"}, nil)
	if err := mcptool.Register(s, mcptool.Config{Outbox: ob, Pairs: pairs, From: []string{from}}); err != nil {
		b.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		ss.Wait()
		cancel()
		<-done
		ob.Close()
	})
	return cs
}

// BenchmarkSend measures one send_whatsapp_message call end to end through
// the SDK's client, the tools, the SQLite outbox and (when accepted) Run
// and the in-memory fake: "accepted" sends each call to a new recipient
// (the call waits for Meta's answer), "queued" sends every call to one
// recipient after the first (the call returns once the message is stored).
func BenchmarkSend(b *testing.B) {
	for _, mode := range []string{"accepted", "queued"} {
		b.Run(mode, func(b *testing.B) {
			cs := benchWorld(b)
			i := 0
			for b.Loop() {
				i++
				to := user
				if mode == "accepted" {
					to = fmt.Sprintf("+23769%07d", i)
				}
				res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: mcptool.SendToolName, Arguments: map[string]any{
					"to": to, "text": "hi", "idempotency_key": fmt.Sprintf("%s-%d", mode, i), "max_delay_ms": 86_400_000,
				}})
				if err != nil || res.IsError {
					b.Fatalf("call %d: %v %+v", i, err, res)
				}
			}
		})
	}
}

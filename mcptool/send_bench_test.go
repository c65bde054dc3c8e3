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
)

// benchWorld is newWorld on the real clock, for benchmarks.
func benchWorld(b *testing.B, waker bool) *mcp.ClientSession {
	b.Helper()
	meta := cloudapitest.NewServer(b)
	c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		b.Fatal(err)
	}
	var wk *mcptool.Waker
	opts := []outbox.Option{outbox.WithClient(c)}
	if waker {
		wk = new(mcptool.Waker)
		opts = append(opts, outbox.WithObserver(wk.Observe))
	}
	ob, err := outbox.Open(b.Context(), "sqlite:"+filepath.Join(b.TempDir(), "outbox.db"), opts...)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- ob.Run(ctx, c) }()
	s := mcp.NewServer(&mcp.Implementation{Name: "wapace", Version: "v0"}, nil)
	if err := mcptool.Register(s, mcptool.Config{Outbox: ob, Client: c, Waker: wk, From: []string{from}}); err != nil {
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
// and the in-memory fake. "accepted" sends each call to a new recipient
// (the call waits for Meta's answer), reading the outbox every
// PollInterval ("poll") or woken by a Waker ("waker"); "queued" sends every
// call to one recipient after the first (the call returns once the message
// is stored). With -count, the variants alternate in one process.
func BenchmarkSend(b *testing.B) {
	for _, v := range []struct {
		name   string
		waker  bool
		queued bool
	}{{"accepted/poll", false, false}, {"accepted/waker", true, false}, {"queued", true, true}} {
		b.Run(v.name, func(b *testing.B) {
			cs := benchWorld(b, v.waker)
			i := 0
			for b.Loop() {
				i++
				to := user
				if !v.queued {
					to = fmt.Sprintf("+23769%07d", i)
				}
				res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: mcptool.SendToolName, Arguments: map[string]any{
					"to": to, "text": "hi", "idempotency_key": fmt.Sprintf("k-%d", i), "max_delay_ms": 86_400_000,
				}})
				if err != nil || res.IsError {
					b.Fatalf("call %d: %v %+v", i, err, res)
				}
			}
		})
	}
}

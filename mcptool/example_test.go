package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/mcptool"
	"github.com/wapace/wapace/outbox"
)

// Embed the tools in an MCP server: an outbox to queue in, a Client for
// its Run to send with, and the numbers the agent may use. Here an agent
// (the SDK's client, connected in memory) sends two messages to one user:
// the first is accepted, the second waits for the pair rule and is queued.
func ExampleRegister() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "mcptool")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	meta := cloudapitest.NewServer(nil) // the fake Meta
	defer meta.Close()

	// The Client owns every limit: the outbox and the tools take them from it.
	client, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		log.Fatal(err)
	}
	wk := new(mcptool.Waker) // wakes waiting calls at each transition
	ob, err := outbox.Open(ctx, "sqlite:"+filepath.Join(dir, "outbox.db"), outbox.WithClient(client), outbox.WithObserver(wk.Observe))
	if err != nil {
		log.Fatal(err)
	}
	defer ob.Close()
	done := make(chan error, 1)
	go func() { done <- ob.Run(ctx, client) }() // the dispatcher
	defer func() { cancel(); <-done }()

	server := mcp.NewServer(&mcp.Implementation{Name: "my-agent-tools", Version: "v1.0.0"}, nil)
	if err := mcptool.Register(server, mcptool.Config{Outbox: ob, Client: client, Waker: wk, From: []string{"106540352242922"}}); err != nil {
		log.Fatal(err)
	}

	// An agent calls the tool.
	ct, st := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1.0.0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	for _, key := range []string{"order-17-shipped", "order-17-survey"} {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "send_whatsapp_message", Arguments: map[string]any{
			"to": "+237 690 00 00 01", "text": "About order 17", "idempotency_key": key, "max_delay_ms": 60000,
		}})
		if err != nil {
			log.Fatal(err)
		}
		var out mcptool.SendResult
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			log.Fatal(err)
		}
		fmt.Println(key, out.Status, out.MessageID != "", res.IsError)
	}
	// Output:
	// order-17-shipped accepted true false
	// order-17-survey queued false false
}

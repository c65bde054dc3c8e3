// Command backpressure shows a send refused at once rather than queued.
// A bot has just sent a user a 5-bubble reply, so the pair owes 30 s. A
// one-time code valid for 20 s cannot wait that long: Send gives every
// reservation back and returns a structured *BackpressureError without
// sending anything (printed here as an agent's tool result would carry it).
// A utility message with no such deadline is queued instead and goes when
// the debt is paid. Time is simulated.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/examples/internal/simworld"
)

func main() {
	w, err := simworld.New(80, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Meta.Close()
	const user = "+237 690 00 00 01"
	ctx := context.Background()
	w.Clock.Run(func() {
		reply := make([]cloudapi.Message, 5)
		for i := range reply {
			reply[i] = cloudapi.Text(user, fmt.Sprintf("Step %d of your setup guide", i+1))
		}
		if _, err := w.Client.SendBurst(ctx, simworld.NumberID, reply...); err != nil {
			log.Fatal(err)
		}

		otp := cloudapi.AuthenticationTemplate(user, "login_code", "en", "482913")
		otp.ExpiresAt = w.Clock.Now().Add(20 * time.Second) // the code's own validity
		_, err := w.Client.Send(ctx, simworld.NumberID, otp)
		var bp *cloudapi.BackpressureError
		if !errors.As(err, &bp) {
			log.Fatalf("expected backpressure, got %v", err)
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		fmt.Println("one-time code: rejected at once, nothing sent")
		enc.Encode(map[string]any{
			"code":           "WHATSAPP_BACKPRESSURE",
			"limit":          bp.Limit.String(),
			"meta_code":      int(bp.Code),
			"retryable":      true,
			"retry_after_ms": bp.RetryAfter().Milliseconds(),
			"expires_at":     bp.ExpiresAt.Format(time.RFC3339),
			"send_state":     cloudapi.StateOf(err),
		})

		asked := w.Since()
		res, err := w.Client.Send(ctx, simworld.NumberID, cloudapi.Text(user, "Your account is ready."))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("utility message: queued at +%v, accepted at +%v (%s)\n",
			asked.Round(time.Millisecond), res.SentAt.Sub(simworld.Start).Round(time.Millisecond), res.MessageID)
	})
	fmt.Printf("requests that reached Meta: %d (the 5 bubbles and the utility message); time is simulated\n", len(w.Meta.Requests()))
}

// Command multibubble shows what a 3-bubble reply does to the next message
// for the same user: the burst is accepted at once, and the pair then owes
// 3 x 6 s, so the fourth message waits for it instead of drawing a 131056.
// Time is simulated.
package main

import (
	"context"
	"fmt"
	"log"
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
		rs, err := w.Client.SendBurst(ctx, simworld.NumberID,
			cloudapi.Text(user, "Thanks for your order!"),
			cloudapi.Text(user, "It ships tomorrow."),
			cloudapi.Text(user, "Track it here: https://example.com/t/42"))
		if err != nil {
			log.Fatal(err)
		}
		for i, r := range rs {
			fmt.Printf("bubble %d      sent at +%-8v %s\n", i+1, r.SentAt.Sub(simworld.Start).Round(time.Millisecond), r.MessageID)
		}
		w.Clock.Sleep(time.Second) // the user answers at once; the bot has more to say
		asked := w.Since()
		r, err := w.Client.Send(ctx, simworld.NumberID, cloudapi.Text(user, "Anything else?"))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("4th message asked at +%v, sent at +%v: the pair owed 3 x 6 s + 250 ms margin\n",
			asked.Round(time.Millisecond), r.SentAt.Sub(simworld.Start).Round(time.Millisecond))
	})
	fmt.Printf("131056 answers: %d (simulated time)\n", w.Meta.Count(131056))
}

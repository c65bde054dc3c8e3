// Command retry compares retry schedules against a pair in debt. Another
// sender bursts 20 messages to a user at +0 s; the pair now owes until
// +120 s, and a message asked at +10 s meets 131056. Meta prescribes
// retrying after 4^X seconds; many clients double from 1 s. wapace, which
// paces the pair itself, waits out the debt and is never refused. Time is
// simulated.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/examples/internal/rawsend"
	"github.com/wapace/wapace/examples/internal/simworld"
)

const user = "237690000001"

func main() {
	for _, s := range []struct {
		name     string
		schedule backoff.Schedule
	}{
		{"Meta's 4^X", backoff.Meta},
		{"doubling from 1 s", backoff.Exponential{Max: time.Minute}},
	} {
		w, err := simworld.New(80, nil)
		if err != nil {
			log.Fatal(err)
		}
		hc := w.Meta.Client()
		var attempts []string
		var sentAt time.Duration
		w.Clock.Run(func() {
			burst(hc)
			w.Clock.Sleep(10 * time.Second)
			err := backoff.Retry(context.Background(), s.schedule, func(context.Context) error {
				err := rawsend.Text(hc, simworld.NumberID, user, "Your table is ready")
				mark := "ok"
				if errors.Is(err, errcodes.PairRateLimit) {
					mark = "131056"
				}
				attempts = append(attempts, fmt.Sprintf("+%v %s", w.Since(), mark))
				return err
			}, backoff.WithClock(w.Clock), backoff.WithMaxAttempts(0))
			if err != nil {
				log.Fatal(err)
			}
			sentAt = w.Since()
		})
		fmt.Printf("%-18s refused %d times, delivered at +%v\n  attempts: %s\n",
			s.name, w.Meta.Count(errcodes.PairRateLimit), sentAt, strings.Join(attempts, ", "))
		w.Meta.Close()
	}

	// wapace sends the burst itself, so it knows the debt and waits it out.
	w, err := simworld.New(80, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Meta.Close()
	var sentAt time.Duration
	w.Clock.Run(func() {
		ctx := context.Background()
		bubbles := make([]cloudapi.Message, 20)
		for i := range bubbles {
			bubbles[i] = cloudapi.Text(user, fmt.Sprintf("part %d", i+1))
		}
		if _, err := w.Client.SendBurst(ctx, simworld.NumberID, bubbles...); err != nil {
			log.Fatal(err)
		}
		w.Clock.Sleep(10*time.Second - w.Since())
		r, err := w.Client.Send(ctx, simworld.NumberID, cloudapi.Text(user, "Your table is ready"))
		if err != nil {
			log.Fatal(err)
		}
		sentAt = r.SentAt.Sub(simworld.Start)
	})
	fmt.Printf("%-18s refused %d times, delivered at +%v (20 x 6 s of debt + 250 ms margin)\n",
		"wapace pacing", w.Meta.Count(errcodes.PairRateLimit), sentAt)
	fmt.Println("(simulated time)")
}

// burst is the other sender's 20 messages to the user, all at once.
func burst(hc *http.Client) {
	for i := range 20 {
		if err := rawsend.Text(hc, simworld.NumberID, user, fmt.Sprintf("part %d", i+1)); err != nil {
			log.Fatal(err)
		}
	}
}

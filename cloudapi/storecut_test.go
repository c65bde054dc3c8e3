package cloudapi_test

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/throughput"
)

// TestCutWithAStoreTakesWaitingSlotsAgain (review 8's finding, wave 3
// session 6): Client.Number's doc
// promises that after SetMPSAt "the sends waiting for their slots then go
// at the new figure's pace", and throughput's SetMPSAt that "windows that
// start a second or more after t obey the new figure". With WithStore
// (the multi-process deployment, redisstore), the Client's limiters do
// not move the slots still waiting (movingSlots has no effect with a
// Store, throughput/limiter.go setLocked): two Clients sharing a store,
// 2,000 sends queued at 1,000 msg/s, both Clients cut to 80 msg/s after
// 100 ms (the best case: every process is told at once). The slots
// already handed out keep their 1,000 msg/s instants, so the seconds
// after the cut still carry hundreds of sends: Meta, at 80 msg/s, answers
// 130429. TestCutMovesQueuedSlotsLater is the same without a store, and
// holds.
//
// A Store cannot move the tickets it handed out. Now a cut makes the
// reservations made before it stale (throughput's Reservation.stale,
// through internal/slotmoves): each waiting send gives its slot back and
// takes one at the new figure, behind the old queue, in every process
// the cut was made in.
func TestCutWithAStoreTakesWaitingSlotsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(number, throughput.Upgraded))
		st := newSharedStore()
		var clients []*cloudapi.Client
		for range 2 {
			c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(srv.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL),
				cloudapi.WithNumberThroughput(number, throughput.Upgraded), cloudapi.WithStore(st))
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
		}
		start := time.Now()
		cut := start.Add(100 * time.Millisecond)
		go func() {
			time.Sleep(100 * time.Millisecond)
			for _, c := range clients {
				if err := c.Number(number).SetMPSAt(time.Now(), throughput.Default); err != nil {
					t.Error(err)
				}
			}
		}()
		var wg sync.WaitGroup
		for i := range 2000 {
			c := clients[i%2]
			wg.Go(func() {
				_, _ = c.Send(t.Context(), number, cloudapi.Text("+23769"+fmt.Sprintf("%07d", i), "hi"))
			})
		}
		wg.Wait()
		most, at := mostInASecond(srv, cut.Add(time.Second))
		from := at.Sub(start)
		if most > throughput.Default {
			t.Errorf("%d sends in the second from +%v, a second or more after both Clients cut the number to 80 msg/s", most, from)
		}
	})
}

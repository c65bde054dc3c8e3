//go:build review7 && unix

package outbox_test

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// Review 7: three sender processes dispatch one outbox at once (lease
// 300 ms, see sender) while a chaos loop pauses one of them (SIGSTOP for
// 100 to 900 ms, then SIGCONT: past its lease or not), or kills it
// (SIGKILL, restarted at once), every 50 to 250 ms, until four fifths
// of the messages are accepted; then the survivors finish. Checked as
// TestKill9 does (checkDelivery): every key accepted at most once, FIFO
// per recipient among the accepted, 0 x 131056.
func TestReview7ChaosWorkers(t *testing.T) {
	for _, mode := range []string{"kill", "pause"} {
		for _, marks := range []bool{true, false} {
			t.Run(fmt.Sprintf("sqlite/%s/marks=%v", mode, marks), func(t *testing.T) {
				chaos(t, "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"), mode, marks)
			})
			t.Run(fmt.Sprintf("postgres/%s/marks=%v", mode, marks), func(t *testing.T) { chaos(t, requirePostgres(t), mode, marks) })
		}
	}
}

// chaos runs the scenario with pauses only (mode "pause") or kills only
// ("kill").
func chaos(t *testing.T, dsn, mode string, marks bool) {
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond), cloudapitest.WithThroughput(100000))
	// Sends wait for their slots, as at a real number's pace: each
	// process's Client allows 150 msg/s, so 3,000 messages take about 7 s
	// of the three's sending, and the claims live long enough in flight
	// for the pauses and the kills to meet them.
	t.Setenv("OUTBOX_TEST_KILL_MPS", "150")
	recipients, perRecipient := 300, 10
	o, err := outbox.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	for j := range perRecipient {
		var msgs []cloudapi.Message
		for r := range recipients {
			m := cloudapi.Text(recipient(r), "x")
			m.IdempotencyKey = fmt.Sprintf("r%03d-m%d", r, j)
			msgs = append(msgs, m)
		}
		for _, m := range msgs {
			if _, err := o.Enqueue(t.Context(), from, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	o.Close()
	total := recipients * perRecipient

	type proc struct {
		cmd    *exec.Cmd
		exited chan error
		done   bool
	}
	procs := make([]*proc, 3)
	start := func(i int) {
		cmd, exited := startSender(t, dsn, meta.URL(), "", marks)
		procs[i] = &proc{cmd: cmd, exited: exited}
	}
	for i := range procs {
		start(i)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			if !p.done {
				p.cmd.Process.Kill()
				<-p.exited
			}
		}
	})
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	pauses, kills := 0, 0
	began := time.Now()
	for meta.Accepted() < 4*total/5 && time.Since(began) < 3*time.Minute {
		time.Sleep(time.Duration(50+rng.IntN(200)) * time.Millisecond)
		i := rng.IntN(len(procs))
		p := procs[i]
		if p.done {
			if procs[0].done && procs[1].done && procs[2].done {
				break
			}
			continue
		}
		select {
		case err := <-p.exited:
			p.done = true
			if err != nil {
				t.Fatalf("sender %d exited: %v", i, err)
			}
			continue
		default:
		}
		if mode == "pause" {
			p.cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(time.Duration(100+rng.IntN(800)) * time.Millisecond)
			p.cmd.Process.Signal(syscall.SIGCONT)
			pauses++
			continue
		}
		p.cmd.Process.Kill()
		<-p.exited
		kills++
		start(i)
	}
	t.Logf("chaos: %d pauses, %d kills, %d accepted, %v", pauses, kills, meta.Accepted(), time.Since(began).Round(time.Millisecond))
	for i, p := range procs {
		if p.done {
			if procs[0].done && procs[1].done && procs[2].done {
				break
			}
			continue
		}
		select {
		case err := <-p.exited:
			p.done = true
			if err != nil {
				t.Errorf("sender %d: %v", i, err)
			}
		case <-time.After(3 * time.Minute):
			t.Fatalf("sender %d did not finish (%d accepted)", i, meta.Accepted())
		}
	}
	checkDelivery(t, meta, total, true)
	o, err = outbox.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	snap, err := o.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d requests, %d accepted by Meta; outbox counts %v", len(meta.Requests()), meta.Accepted(), snap.Counts)
	if n := snap.Counts[outbox.StateQueued] + snap.Counts[outbox.StateSending]; n != 0 {
		t.Errorf("%d items still queued or sending", n)
	}
}

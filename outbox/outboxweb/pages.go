package outboxweb

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wapace/wapace/outbox"
)

var allStates = []outbox.State{outbox.StateQueued, outbox.StateSending, outbox.StateAccepted, outbox.StateSubmittedUnknown,
	outbox.StateDelivered, outbox.StateRead, outbox.StateFailed, outbox.StateExpired}

type stateCount struct {
	State outbox.State
	N     int
	Class string
}

type laneRow struct {
	outbox.Lane
	Key string // an item of the lane, to address its timeline
	Age time.Duration
}

func stateClass(s outbox.State) string {
	switch s {
	case outbox.StateFailed, outbox.StateExpired:
		return "bad"
	case outbox.StateSubmittedUnknown:
		return "warn"
	case outbox.StateAccepted, outbox.StateDelivered, outbox.StateRead:
		return "good"
	}
	return "live"
}

func (h *handler) dashboard(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, err := h.o.Snapshot(ctx)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	var counts []stateCount
	for _, st := range allStates {
		counts = append(counts, stateCount{st, s.Counts[st], stateClass(st)})
	}
	trend, err := h.o.Trend(ctx, s.At.Add(-24*time.Hour), time.Hour)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	lanes, err := h.o.DeepestLanes(ctx, 10)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	var rows []laneRow
	for _, l := range lanes {
		its, err := h.o.List(ctx, outbox.Query{From: l.From, To: l.To, Limit: 1})
		if err != nil || len(its) == 0 {
			continue
		}
		rows = append(rows, laneRow{Lane: l, Key: its[0].Key, Age: s.At.Sub(l.Oldest)})
	}
	dead, err := h.o.List(ctx, outbox.Query{States: []outbox.State{outbox.StateFailed, outbox.StateExpired}, Limit: 50})
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	unknown, err := h.o.List(ctx, outbox.Query{States: []outbox.State{outbox.StateSubmittedUnknown}, Limit: 50})
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	h.render(w, http.StatusOK, "dashboard", map[string]any{
		"Title": "Outbox", "Now": s.At, "Stats": s, "Counts": counts, "Trend": trendSVG(trend), "Lanes": rows,
		"Dead": dead, "Unknown": unknown, "Oldest": ageOf(s.At, s.OldestQueued),
	})
}

func ageOf(now, t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return now.Sub(t)
}

func (h *handler) item(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	h.showItem(w, r, key, http.StatusOK, r.URL.Query().Get("done"), nil)
}

func (h *handler) showItem(w http.ResponseWriter, r *http.Request, key string, status int, done string, actionErr error) {
	it, err := h.o.Get(r.Context(), key)
	if errors.Is(err, outbox.ErrNotFound) {
		h.fail(w, http.StatusNotFound, err)
		return
	}
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	now := time.Now()
	if s, err := h.o.Snapshot(r.Context()); err == nil {
		now = s.At
	}
	msg := ""
	switch done {
	case "requeued":
		msg = "Requeued: it goes at the head of its lane."
	case "expired":
		msg = "Expired: it will not be sent."
	}
	data := map[string]any{"Title": "Item " + it.Key, "Item": it, "Class": stateClass(it.State), "Age": now.Sub(it.UpdatedAt),
		"Done": msg, "CanRequeue": it.State.Final(), "MaySent": maySent(it), "CanExpire": it.State == outbox.StateQueued}
	if actionErr != nil {
		data["ActionError"] = actionErr.Error()
	}
	h.render(w, status, "item", data)
}

func maySent(it outbox.Item) bool {
	switch it.State {
	case outbox.StateSubmittedUnknown, outbox.StateAccepted, outbox.StateDelivered, outbox.StateRead:
		return true
	}
	return it.MessageID != ""
}

func (h *handler) requeue(w http.ResponseWriter, r *http.Request) {
	key := r.PostFormValue("key")
	opts := outbox.RequeueOptions{Reason: r.PostFormValue("reason"), Force: r.PostFormValue("force") == "on"}
	if d := strings.TrimSpace(r.PostFormValue("expires")); d != "" {
		dur, err := time.ParseDuration(d)
		if err != nil || dur <= 0 {
			h.showItem(w, r, key, http.StatusBadRequest, "", fmt.Errorf("new deadline %q: want a duration such as 30m", d))
			return
		}
		opts.ExpiresAt = time.Now().Add(dur)
	}
	if _, err := h.o.Requeue(r.Context(), key, opts); err != nil {
		h.showItem(w, r, key, http.StatusConflict, "", err)
		return
	}
	http.Redirect(w, r, "/item?done=requeued&key="+url.QueryEscape(key), http.StatusSeeOther)
}

func (h *handler) expire(w http.ResponseWriter, r *http.Request) {
	key := r.PostFormValue("key")
	if _, err := h.o.Expire(r.Context(), key, r.PostFormValue("reason")); err != nil {
		h.showItem(w, r, key, http.StatusConflict, "", err)
		return
	}
	http.Redirect(w, r, "/item?done=expired&key="+url.QueryEscape(key), http.StatusSeeOther)
}

func (h *handler) lane(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	key := r.URL.Query().Get("key")
	it, err := h.o.Get(ctx, key)
	if errors.Is(err, outbox.ErrNotFound) {
		h.fail(w, http.StatusNotFound, err)
		return
	}
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	if it.To == "" {
		h.fail(w, http.StatusBadRequest, errors.New("outboxweb: a read receipt has no pair"))
		return
	}
	s, err := h.o.Snapshot(ctx)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	evs, err := h.o.LaneHistory(ctx, it.From, it.To, s.At.Add(-24*time.Hour), outbox.MaxListLimit)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	tl := buildTimeline(evs, h.cfg.policy)
	h.render(w, http.StatusOK, "lane", map[string]any{
		"Title": "Pair " + it.From + " > " + h.mask(it.To), "Item": it, "Timeline": tl, "Chart": template.HTML(tl.svg()),
		"Policy": h.cfg.policy,
	})
}

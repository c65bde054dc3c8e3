package outboxweb_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/wapace/wapace/outbox/outboxweb"
)

func get(t *testing.T, c *http.Client, u string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestSecureByDefault(t *testing.T) {
	t.Parallel()
	s := seed(t)
	base := s.serve(t)
	c := client()
	if code, _, _ := get(t, c, base+"/"); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code, _, _ := get(t, c, base+"/?token=wrong-token-wrong-token"); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	code, _, h := get(t, c, base+"/?token="+token)
	if code != http.StatusSeeOther || strings.Contains(h.Get("Location"), token) {
		t.Fatalf("token login: %d to %q", code, h.Get("Location"))
	}
	ck := h.Get("Set-Cookie")
	if !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "SameSite=Strict") {
		t.Errorf("cookie %q", ck)
	}
	code, body, _ := get(t, c, base+"/", "Authorization", "Bearer "+token)
	if code != 200 {
		t.Fatalf("dashboard: %d %s", code, body)
	}
	for _, secret := range []string{token, "237690000001", "237690000002", "TOKEN\""} {
		if strings.Contains(body, secret) {
			t.Errorf("the dashboard shows %q", secret)
		}
	}
	if !strings.Contains(body, "dead-1") || !strings.Contains(body, "2376") {
		t.Errorf("the dashboard lacks the dead letter or the masked number")
	}

	// Actions need the CSRF token, and a same-origin request.
	post := func(form url.Values, origin string) int {
		req, _ := http.NewRequest("POST", base+"/item/requeue", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+token)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	form := url.Values{"key": {"dead-1"}, "reason": {"fixed"}}
	if code := post(form, ""); code != http.StatusForbidden {
		t.Errorf("requeue without CSRF: %d", code)
	}
	_, page, _ := get(t, c, base+"/item?key=dead-1", "Authorization", "Bearer "+token)
	i := strings.Index(page, `name="csrf" value="`)
	if i < 0 {
		t.Fatal("no CSRF field on the item page")
	}
	csrf := page[i+len(`name="csrf" value="`):]
	csrf = csrf[:strings.IndexByte(csrf, '"')]
	form.Set("csrf", csrf)
	if code := post(form, "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-origin requeue: %d", code)
	}
	if code := post(form, base); code != http.StatusSeeOther {
		t.Errorf("requeue: %d", code)
	}
	if it, _ := s.o.Get(t.Context(), "dead-1"); it.State.String() != "queued" {
		t.Errorf("dead-1 is %v after its requeue", it.State)
	}
	// A second requeue of a live item is refused, shown on the page.
	if code := post(form, base); code != http.StatusConflict {
		t.Errorf("requeue of a queued item: %d", code)
	}
}

func TestNoTokenOrRemoteRefused(t *testing.T) {
	t.Parallel()
	s := seed(t)
	for name, h := range map[string]http.Handler{
		"no token":    outboxweb.Handler(s.o),
		"short token": outboxweb.Handler(s.o, outboxweb.WithToken("short")),
	} {
		req := httptest.NewRequest("GET", "/?token=short", nil)
		req.RemoteAddr = "127.0.0.1:5000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Errorf("%s: %d", name, rec.Code)
		}
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "192.0.2.7:5000"
	req.Header.Set("Authorization", "Bearer "+token)
	for name, tc := range map[string]struct {
		h    http.Handler
		want int
	}{
		"remote refused": {outboxweb.Handler(s.o, outboxweb.WithToken(token)), http.StatusForbidden},
		"remote allowed": {outboxweb.Handler(s.o, outboxweb.WithToken(token), outboxweb.WithRemoteAllowed()), http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		tc.h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: %d, want %d", name, rec.Code, tc.want)
		}
	}
}

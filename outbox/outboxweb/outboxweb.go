// Package outboxweb is a web console for an outbox: the counts per state
// and their trend, the deepest lanes, the dead letters and unknown
// outcomes with their reason and age, an item's history, the operator's
// actions (requeue, expire), and a pair's timeline: an SVG chart of one
// lane's sends over time with the pair's debt and the 131056 refusals, so
// that the burst behind a refusal is seen at a glance.
//
// Pages are rendered on the server (html/template, embedded; no
// JavaScript, no build step). Handler is secure by default:
//
//   - every request needs the access token (WithToken): given once as
//     ?token=..., it is kept in an HttpOnly, SameSite=Strict cookie; an
//     "Authorization: Bearer" header works too. Without a token the
//     handler refuses everything;
//   - it answers only clients on a loopback address unless
//     WithRemoteAllowed (behind a proxy, which must then do TLS);
//   - actions are POSTs carrying a CSRF token derived from the access
//     token, and a cross-origin Origin is refused;
//   - phone numbers are masked (WithNumbersShown shows them), recorded
//     reasons are sanitized, and no secret is ever rendered.
package outboxweb

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/phone"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

//go:embed templates/*.html
var templateFS embed.FS

// Option configures a Handler.
type Option func(*config)

type config struct {
	token  string
	remote bool
	show   bool
	policy pairlimit.Policy
}

// WithToken sets the access token every request must present (required;
// at least 16 characters, or every request is refused).
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithRemoteAllowed answers clients that are not on a loopback address.
// Serve it behind TLS.
func WithRemoteAllowed() Option { return func(c *config) { c.remote = true } }

// WithNumbersShown shows recipients' phone numbers unmasked.
func WithNumbersShown() Option { return func(c *config) { c.show = true } }

// WithPairPolicy draws the pair's debt in the timeline with p (default
// pairlimit.Meta): give it the policy the senders pace with.
func WithPairPolicy(p pairlimit.Policy) Option { return func(c *config) { c.policy = p } }

// cookieName holds the access token in the browser.
const cookieName = "wapace_console"

// minToken is the shortest access token accepted.
const minToken = 16

type handler struct {
	o    *outbox.Outbox
	cfg  config
	csrf string
	tmpl map[string]*template.Template
	mux  *http.ServeMux
}

// Handler returns the console of o. It is safe for concurrent use; it
// reads o on each request and changes it only through the actions.
func Handler(o *outbox.Outbox, opts ...Option) http.Handler {
	cfg := config{policy: pairlimit.Meta}
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	mac := hmac.New(sha256.New, []byte(cfg.token))
	mac.Write([]byte("wapace console csrf"))
	h := &handler{o: o, cfg: cfg, csrf: hex.EncodeToString(mac.Sum(nil)), tmpl: map[string]*template.Template{}}
	funcs := template.FuncMap{"mask": h.mask, "clean": errcodes.Sanitize, "age": age, "when": when, "q": url.QueryEscape}
	for _, page := range []string{"dashboard", "item", "lane", "error"} {
		h.tmpl[page] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html"))
	}
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET /{$}", h.dashboard)
	h.mux.HandleFunc("GET /item", h.item)
	h.mux.HandleFunc("POST /item/requeue", h.requeue)
	h.mux.HandleFunc("POST /item/expire", h.expire)
	h.mux.HandleFunc("GET /lane", h.lane)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	if !h.cfg.remote && !loopback(r.RemoteAddr) {
		http.Error(w, "outboxweb: this console answers loopback clients only", http.StatusForbidden)
		return
	}
	if len(h.cfg.token) < minToken {
		http.Error(w, "outboxweb: no access token configured (WithToken, at least 16 characters)", http.StatusForbidden)
		return
	}
	if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet {
		if !h.valid(t) {
			http.Error(w, "outboxweb: wrong access token", http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
			Secure: r.TLS != nil})
		q := r.URL.Query()
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther) // the token leaves the address bar
		return
	}
	if !h.authorized(r) {
		http.Error(w, "outboxweb: open this console with ?token=<access token> once", http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodPost {
		if o := r.Header.Get("Origin"); o != "" && o != "null" && !sameOrigin(o, r) {
			http.Error(w, "outboxweb: cross-origin request refused", http.StatusForbidden)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(h.csrf)) != 1 {
			http.Error(w, "outboxweb: missing or wrong CSRF token: reload the page", http.StatusForbidden)
			return
		}
	}
	h.mux.ServeHTTP(w, r)
}

func (h *handler) valid(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(h.cfg.token)) == 1
}

func (h *handler) authorized(r *http.Request) bool {
	if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
		return h.valid(strings.TrimPrefix(a, "Bearer "))
	}
	c, err := r.Cookie(cookieName)
	return err == nil && h.valid(c.Value)
}

func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (h *handler) mask(s string) string {
	if h.cfg.show || s == "" {
		return s
	}
	return phone.Mask(s)
}

// age renders d, rounded to what a reader needs.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return d.Round(time.Minute).String()
	}
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// render executes page with data, or answers 500.
func (h *handler) render(w http.ResponseWriter, status int, page string, data map[string]any) {
	data["CSRF"] = h.csrf
	var b strings.Builder
	if err := h.tmpl[page].Execute(&b, data); err != nil {
		http.Error(w, "outboxweb: rendering failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

func (h *handler) fail(w http.ResponseWriter, status int, err error) {
	h.render(w, status, "error", map[string]any{"Title": "Error", "Error": errcodes.Sanitize(err.Error())})
}

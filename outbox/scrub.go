package outbox

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// kvPassword finds a password in a key=value DSN: quoted (with \' and \\
// escapes) or up to the next space.
var kvPassword = regexp.MustCompile(`(?i)\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']+)`)

// brokenUserinfo finds the password of a URL that url.Parse refuses.
var brokenUserinfo = regexp.MustCompile(`://[^:/@\s]*:([^@\s]+)@`)

// dsnSecrets returns every spelling of the passwords dsn carries: the URL's
// userinfo, password query parameters (any case), and key=value password
// settings, each decoded and as written, longest first.
func dsnSecrets(dsn string) []string {
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s)
		for _, e := range []string{url.QueryEscape(s), url.PathEscape(s), (&url.URL{User: url.UserPassword("", s)}).String()} {
			if e = strings.TrimPrefix(e, "//:"); e != s {
				out = append(out, strings.TrimSuffix(e, "@"))
			}
		}
	}
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if pw, ok := u.User.Password(); ok {
			add(pw)
			if _, raw, ok := strings.Cut(u.User.String(), ":"); ok {
				add(raw)
			}
		}
		for _, kv := range strings.Split(u.RawQuery, "&") {
			k, v, _ := strings.Cut(kv, "=")
			if dk, err := url.QueryUnescape(k); err == nil && strings.EqualFold(dk, "password") {
				add(v)
				if dv, err := url.QueryUnescape(v); err == nil {
					add(dv)
				}
			}
		}
	} else if m := brokenUserinfo.FindStringSubmatch(dsn); m != nil {
		add(m[1])
		if dv, err := url.PathUnescape(m[1]); err == nil {
			add(dv)
		}
	}
	for _, m := range kvPassword.FindAllStringSubmatch(dsn, -1) {
		v := m[1]
		add(v)
		if strings.HasPrefix(v, "'") {
			inner := strings.TrimSuffix(strings.TrimPrefix(v, "'"), "'")
			add(inner)
			add(strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(inner))
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// scrubbed is an error whose text had a password removed. It does not
// unwrap: the original's text repeats the password.
type scrubbed struct{ msg string }

func (e *scrubbed) Error() string { return e.msg }

// scrub removes every spelling of the DSN's passwords from err's text.
func scrubDSN(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, s := range dsnSecrets(dsn) {
		if strings.Contains(msg, s) {
			msg, changed = strings.ReplaceAll(msg, s, "[redacted]"), true
		}
	}
	if !changed {
		return err
	}
	var keep error
	for _, sentinel := range []error{ErrInvalidDSN, ErrInvalidOption} {
		if errors.Is(err, sentinel) {
			keep = sentinel
		}
	}
	if keep != nil {
		return &scrubbedIs{scrubbed{msg}, keep}
	}
	return &scrubbed{msg}
}

// scrubbedIs is a scrubbed error that still matches its sentinel.
type scrubbedIs struct {
	scrubbed
	sentinel error
}

func (e *scrubbedIs) Unwrap() error { return e.sentinel }

package outbox_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/wapace/wapace/outbox"
)

// TestOpenNeverEchoesPassword: issue 23 item 8. Open repeated a Postgres
// password given as a query parameter (?password=...) in its error; the
// URL's userinfo was the only form scrubbed. Every form is scrubbed,
// encoded or not.
func TestOpenNeverEchoesPassword(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dsn string
		secrets   []string
	}{
		{"userinfo", "postgres://app:s3cr%21t-u@127.0.0.1:1/db?sslmode=bogus", []string{"s3cr!t-u", "s3cr%21t-u"}},
		{"query", "postgres://app@127.0.0.1:1/db?password=s3cret-q&sslmode=bogus", []string{"s3cret-q"}},
		{"query, encoded", "postgresql://app@127.0.0.1:1/db?sslmode=bogus&password=s3cr%20et%2Bq", []string{"s3cr et+q", "s3cr%20et%2Bq", "s3cr+et"}},
		{"query, upper case", "postgres://app@127.0.0.1:1/db?PASSWORD=s3cret-uq&sslmode=bogus", []string{"s3cret-uq"}},
		{"both", "postgres://app:first-pw@127.0.0.1:1/db?password=second-pw&sslmode=bogus", []string{"first-pw", "second-pw"}},
		{"key=value", "host=127.0.0.1 port=1 user=app password=kv-s3cret sslmode=bogus", []string{"kv-s3cret"}},
		{"key=value, quoted", "host=127.0.0.1 user=app password='kv s3cret\\'s' sslmode=bogus", []string{"kv s3cret's", `kv s3cret\'s`}},
		{"unreachable", "postgres://app:unreach-pw@127.0.0.1:1/db?password=unreach-q&connect_timeout=1", []string{"unreach-pw", "unreach-q"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, err := outbox.Open(t.Context(), tc.dsn)
			if err == nil {
				o.Close()
				t.Fatal("Open succeeded")
			}
			for _, s := range tc.secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q repeats the password %q", err, s)
				}
			}
		})
	}
}

// FuzzScrub: whatever the password, in whatever DSN form, Open's error
// never contains it.
func FuzzScrub(f *testing.F) {
	for _, s := range []string{"s3cret", "p@ss:w/rd", "a b'c", "100%", "?&="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pw string) {
		if len(pw) < 6 || strings.ContainsAny(pw, "\x00") || strings.Contains("postgres://app@127.0.0.1:1/db?sslmode=bogus&password=", pw) {
			t.Skip()
		}
		for _, dsn := range []string{
			"postgres://" + url.UserPassword("app", pw).String() + "@127.0.0.1:1/db?sslmode=bogus",
			"postgres://app@127.0.0.1:1/db?sslmode=bogus&password=" + url.QueryEscape(pw),
		} {
			o, err := outbox.Open(t.Context(), dsn)
			if err == nil {
				o.Close()
				continue
			}
			if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), url.QueryEscape(pw)) {
				t.Errorf("error %q repeats the password %q", err, pw)
			}
		}
	})
}

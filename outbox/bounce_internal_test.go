package outbox

import "testing"

func TestBounces(t *testing.T) {
	const r = "not sent: a send with its key is in progress in this process"
	for _, c := range []struct {
		name, got string
		want      int
		ok        bool
	}{
		{"once", r, 1, true},
		{"counted", r + " (2 times)", 2, true},
		{"many", r + " (12345 times)", 12345, true},
		{"another reason", "not sent: run stopped", 0, false},
		{"a longer reason", r + " and more", 0, false},
		{"trailing text", r + " (3 times) and more", 0, false},
		{"one time", r + " (1 times)", 0, false},
		{"negative", r + " (-3 times)", 0, false},
		{"padded", r + " (03 times)", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, ok := bounces(c.got, r)
			if n != c.want || ok != c.ok {
				t.Errorf("bounces(%q) = %d, %v; want %d, %v", c.got, n, ok, c.want, c.ok)
			}
			if ok && bounceReason(r, n) != c.got {
				t.Errorf("bounceReason(%d) = %q, want %q", n, bounceReason(r, n), c.got)
			}
		})
	}
}

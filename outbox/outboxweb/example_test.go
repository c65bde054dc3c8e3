package outboxweb_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/outbox/outboxweb"
)

// Mount the console of an outbox: every request needs the token, given
// once as ?token=, then kept in a cookie.
func ExampleHandler() {
	dir, err := os.MkdirTemp("", "outboxweb")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	o, err := outbox.Open(context.Background(), "sqlite:"+filepath.Join(dir, "outbox.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer o.Close()
	h := outboxweb.Handler(o, outboxweb.WithToken("a-long-random-access-token"))

	for _, target := range []string{"/", "/?token=a-long-random-access-token"} {
		req := httptest.NewRequest("GET", target, nil)
		req.RemoteAddr = "127.0.0.1:40000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s: %d %s", target[:min(len(target), 8)], rec.Code, rec.Header().Get("Location"))))
	}
	// Output:
	// /: 401
	// /?token=: 303 /
}

package cloudapitest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

// graphError is Meta's error envelope, read field by field.
type graphError struct {
	Error struct {
		Message   string `json:"message"`
		Type      string `json:"type"`
		Code      int    `json:"code"`
		Subcode   int    `json:"error_subcode"`
		FBTraceID string `json:"fbtrace_id"`
	} `json:"error"`
}

func postRaw(t *testing.T, srv *cloudapitest.Server, path, auth string) (int, graphError) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, cloudapitest.BaseURL+path,
		strings.NewReader(`{"messaging_product":"whatsapp","to":"237690000001","type":"text","text":{"body":"x"}}`))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var g graphError
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatalf("%s: body %s: %v", path, data, err)
		}
	}
	return resp.StatusCode, g
}

// TestErrorShapes: issue 23 item 11. The fake repeated one fbtrace_id
// ("FAKE134") across responses, answered a missing token as an expired one
// ("(#190) Access token has expired"), never sent error_subcode, and
// accepted any API version. It answers as Meta does.
func TestErrorShapes(t *testing.T) {
	srv := cloudapitest.NewServer(t, cloudapitest.WithToken("right"))
	traceRE := regexp.MustCompile(`^[A-Za-z0-9_-]{20,}$`)
	traces := map[string]bool{}
	for range 5 {
		status, g := postRaw(t, srv, "/v23.0/1/messages", "")
		if status != http.StatusUnauthorized || g.Error.Code != 104 || g.Error.Type != "OAuthException" ||
			g.Error.Message != "An access token is required to request this resource." || strings.Contains(g.Error.Message, "#190") {
			t.Errorf("missing token: %d %+v", status, g.Error)
		}
		if !traceRE.MatchString(g.Error.FBTraceID) || traces[g.Error.FBTraceID] {
			t.Errorf("fbtrace_id %q: want a fresh Meta-like ID per response", g.Error.FBTraceID)
		}
		traces[g.Error.FBTraceID] = true
	}
	if status, g := postRaw(t, srv, "/v23.0/1/messages", "Bearer wrong"); status != http.StatusUnauthorized || g.Error.Code != 190 ||
		g.Error.Message != "Invalid OAuth access token - Cannot parse access token" {
		t.Errorf("wrong token: %d %+v", status, g.Error)
	}
	// An expired token (scripted) carries Meta's subcode 463.
	srv.Script(cloudapitest.Failure{Code: errcodes.AccessTokenExpired})
	if status, g := postRaw(t, srv, "/v23.0/1/messages", "Bearer right"); status != http.StatusUnauthorized || g.Error.Code != 190 || g.Error.Subcode != 463 {
		t.Errorf("expired token: %d %+v", status, g.Error)
	}
	// A version Meta has not released: Graph's unknown path.
	status, g := postRaw(t, srv, "/v99.0/1/messages", "Bearer right")
	if status != http.StatusBadRequest || g.Error.Code != 2500 || g.Error.Message != "Unknown path components: /v99.0/1/messages" {
		t.Errorf("unknown version: %d %+v", status, g.Error)
	}
	// Released versions are served.
	for _, v := range []string{"v23.0", "v26.0"} {
		if status, _ := postRaw(t, srv, "/"+v+"/1/messages", "Bearer right"); status != http.StatusOK {
			t.Errorf("%s: %d", v, status)
		}
	}
}

package cloudapitest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/wapace/wapace/errcodes"
)

// Meta's error shapes, as Graph API responses show them: the fake answers
// what Meta answers, not an approximation a client could come to rely on.

// Codes the fake answers that errcodes does not name.
const (
	// codeTokenRequired (104): no access token at all.
	codeTokenRequired errcodes.Code = 104
	// codeUnknownPath (2500): Graph's answer to a path it does not know,
	// such as an API version Meta has not released.
	codeUnknownPath errcodes.Code = 2500
)

// latestVersion is the newest Graph API version the fake serves (Meta's
// newest at the time of writing, cloudapi.DefaultAPIVersion). Older
// versions are served too: Meta upgrades calls to a retired version to the
// oldest available one rather than refusing them.
const latestVersion = 26

// detailsBadToken marks the answer to a token that does not parse.
const detailsBadToken = "\x00bad token"

// knownVersion reports whether path starts with an API version Meta has
// released (or with no version: Graph then uses the app's default). A
// version is "/v{major}.{minor}/", in ASCII digits.
func knownVersion(path string) bool {
	rest, ok := strings.CutPrefix(path, "/v")
	if !ok {
		return true
	}
	major, rest, ok := strings.Cut(rest, ".")
	if !ok || !allDigits(major) {
		return true
	}
	minor, _, ok := strings.Cut(rest, "/")
	if !ok || !allDigits(minor) {
		return true
	}
	n, err := strconv.Atoi(major)
	return err == nil && n <= latestVersion && minor == "0"
}

// authFailure returns the answer to r's credentials, or ok: no token is
// Meta's 104 ("An access token is required to request this resource."),
// a wrong one its 190 for a token that does not parse.
func (s *Server) authFailure(r *http.Request) (status int, code errcodes.Code, details string, ok bool) {
	auth := r.Header.Get("Authorization")
	tok, bearer := strings.CutPrefix(auth, "Bearer ")
	switch {
	case !bearer || strings.TrimSpace(tok) == "":
		return http.StatusUnauthorized, codeTokenRequired, "", false
	case s.token != "" && tok != s.token:
		return http.StatusUnauthorized, errcodes.AccessTokenExpired, detailsBadToken, false
	}
	return 0, 0, "", true
}

// statusFor is the HTTP status Meta answers code with: 401 for an access
// token error, 400 for the others.
func statusFor(code errcodes.Code) int {
	if code == errcodes.AccessTokenExpired || code == codeTokenRequired {
		return http.StatusUnauthorized
	}
	return http.StatusBadRequest
}

// traceID returns a fresh fbtrace_id, shaped as Meta's (23 URL-safe
// base64 characters).
func traceID() string {
	b := make([]byte, 17)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:23]
}

// metaError is the error object Meta sends for code, with details as
// error_data.details where Meta sends them.
func metaError(code errcodes.Code, details string) *errcodes.Error {
	e := &errcodes.Error{Code: code, Type: "OAuthException", FBTraceID: traceID()}
	switch {
	case code == codeTokenRequired:
		e.Message = "An access token is required to request this resource."
	case code == errcodes.AccessTokenExpired && details == detailsBadToken:
		e.Message = "Invalid OAuth access token - Cannot parse access token"
	case code == errcodes.AccessTokenExpired:
		e.Message, e.Subcode = "Error validating access token: Session has expired.", 463
	case code == codeUnknownPath:
		e.Message = details
	case code == errcodes.InvalidParameter && strings.HasPrefix(details, "Unsupported "):
		// An object or edge Graph does not have.
		e.Type, e.Message, e.Subcode = "GraphMethodException", details, 33
	default:
		e.Message = "(#" + strconv.Itoa(int(code)) + ") " + errcodes.Lookup(code).Title
		e.Details, e.MessagingProduct = details, "whatsapp"
	}
	return e
}

// writeGraphError writes Meta's error envelope for code.
func writeGraphError(w http.ResponseWriter, status int, code errcodes.Code, details string) {
	obj, _ := json.Marshal(metaError(code, details))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":`))
	_, _ = w.Write(obj)
	_, _ = w.Write([]byte("}"))
}

package cloudapitest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"

	"github.com/wapace/wapace/errcodes"
)

// MediaHost is the host of the download URLs the fake hands out, like
// Meta's own lookaside host.
const MediaHost = "lookaside.fbsbx.com"

// maxMedia caps an upload the fake keeps (Meta's largest, documents, is
// 100 MB; the fake keeps tests small).
const maxMedia = 16 << 20

var (
	uploadRE   = regexp.MustCompile(`^/(v[0-9]+\.[0-9]+)/([0-9]+)/media$`)
	mediaRE    = regexp.MustCompile(`^/(v[0-9]+\.[0-9]+)/([0-9]+)$`)
	downloadRE = regexp.MustCompile(`^/cloudapitest/media/([0-9]+)$`)
)

type mediaAsset struct {
	mime string
	data []byte
}

// handleMedia answers the media endpoints: an upload
// (POST /{version}/{phone-number-id}/media, multipart with
// messaging_product, type and file), a media URL
// (GET /{version}/{media-id}) and a download of that URL. It reports false
// for any other request. Media requests are not in Requests.
func (s *Server) handleMedia(r *http.Request) (*httptest.ResponseRecorder, bool) {
	w := httptest.NewRecorder()
	w.Header().Set("Content-Type", "application/json")
	fail := func(status int, code errcodes.Code, details string) (*httptest.ResponseRecorder, bool) {
		s.mu.Lock()
		writeError(w, status, code, details, s.seq)
		s.mu.Unlock()
		return w, true
	}
	up, info, down := uploadRE.MatchString(r.URL.Path), mediaRE.FindStringSubmatch(r.URL.Path), downloadRE.FindStringSubmatch(r.URL.Path)
	if !up && info == nil && down == nil {
		return nil, false
	}
	if status, code, details, ok := s.authFailure(r); !ok {
		return fail(status, code, details)
	}
	switch {
	case up && r.Method == http.MethodPost:
		if err := r.ParseMultipartForm(maxMedia); err != nil {
			return fail(http.StatusBadRequest, errcodes.InvalidParameter, "Upload must be multipart/form-data")
		}
		f, _, err := r.FormFile("file")
		if err != nil || r.FormValue("messaging_product") != "whatsapp" || r.FormValue("type") == "" {
			return fail(http.StatusBadRequest, errcodes.MissingParameter, "messaging_product, type and file are required")
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxMedia+1))
		if err != nil || len(data) > maxMedia || len(data) == 0 {
			return fail(http.StatusBadRequest, errcodes.MediaUpload, "File empty, unreadable or too large")
		}
		s.mu.Lock()
		s.mediaSeq++
		id := strconv.Itoa(9_000_000_000 + s.mediaSeq)
		if s.media == nil {
			s.media = map[string]mediaAsset{}
		}
		s.media[id] = mediaAsset{mime: r.FormValue("type"), data: data}
		s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]string{"id": id})
	case info != nil && r.Method == http.MethodGet:
		s.mu.Lock()
		a, ok := s.media[info[2]]
		s.mu.Unlock()
		if !ok {
			return fail(http.StatusNotFound, errcodes.InvalidParameter, "Unknown media ID")
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"messaging_product": "whatsapp", "id": info[2], "mime_type": a.mime,
			"file_size": strconv.Itoa(len(a.data)), "sha256": sha256Hex(a.data),
			"url": "https://" + MediaHost + "/cloudapitest/media/" + info[2],
		})
	case down != nil && r.Method == http.MethodGet:
		s.mu.Lock()
		a, ok := s.media[down[1]]
		s.mu.Unlock()
		if !ok {
			return fail(http.StatusNotFound, errcodes.InvalidParameter, "Unknown media")
		}
		w.Header().Set("Content-Type", a.mime)
		_, _ = w.Write(a.data)
	default:
		return fail(http.StatusBadRequest, errcodes.InvalidParameter, "Unsupported media request")
	}
	return w, true
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

package cloudapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
)

// MediaInfo describes an uploaded or received media asset, as Meta's
// GET /{media-id} answers.
type MediaInfo struct {
	// ID is the media ID.
	ID string `json:"id"`
	// URL is where the asset can be downloaded with DownloadMedia; Meta's
	// URLs expire after about 5 minutes.
	URL string `json:"url"`
	// MIMEType is the asset's type, such as "image/jpeg".
	MIMEType string `json:"mime_type"`
	// SHA256 is the hex SHA-256 of the asset.
	SHA256 string `json:"sha256"`
	// FileSize is the asset's size in bytes, as Meta sent it.
	FileSize json.Number `json:"file_size"`
}

// UploadMedia uploads an asset for business number from (its phone number
// ID) to /{phone-number-id}/media and returns its media ID, to send with
// Media{ID: id}. name is the file name Meta sees; mimeType its type, such as
// "image/jpeg" or "application/pdf". Meta's answer is classified with
// CheckResponse: a refusal is an *errcodes.Error. Nothing is retried. The
// asset is buffered in memory while the request is built (Meta accepts at
// most 100 MB, for documents).
func (c *Client) UploadMedia(ctx context.Context, from, name, mimeType string, r io.Reader) (string, error) {
	if err := c.usable(ctx); err != nil {
		return "", err
	}
	if _, err := phoneID(from); err != nil {
		return "", err
	}
	if mimeType == "" || strings.ContainsAny(mimeType, "\r\n\"") || strings.ContainsAny(name, "\r\n\"") {
		return "", invalid("media", "a MIME type is required, and neither it nor the name may hold quotes or line breaks")
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("messaging_product", "whatsapp")
	_ = mw.WriteField("type", mimeType)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+name+`"`)
	h.Set("Content-Type", mimeType)
	part, err := mw.CreatePart(h)
	if err != nil {
		return "", fmt.Errorf("cloudapi: building the upload: %w", err)
	}
	if _, err := io.Copy(part, r); err != nil {
		return "", fmt.Errorf("cloudapi: reading the media: %w", err)
	}
	if err := mw.Close(); err != nil {
		return "", fmt.Errorf("cloudapi: building the upload: %w", err)
	}
	req, err := c.graphRequest(ctx, http.MethodPost, from+"/media", &body)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	var out struct {
		ID string `json:"id"`
	}
	if err := c.doJSON(req, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", errors.New("cloudapi: upload answered without a media ID")
	}
	return out.ID, nil
}

// GetMedia returns the description of media mediaID, with the URL to
// download it from (uploaded assets, and those users send, which arrive in
// webhooks by ID).
func (c *Client) GetMedia(ctx context.Context, mediaID string) (*MediaInfo, error) {
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	if _, err := strconv.ParseUint(mediaID, 10, 64); err != nil {
		return nil, invalid("media_id", "must be digits")
	}
	req, err := c.graphRequest(ctx, http.MethodGet, mediaID, nil)
	if err != nil {
		return nil, err
	}
	var info MediaInfo
	if err := c.doJSON(req, &info); err != nil {
		return nil, err
	}
	if info.URL == "" {
		return nil, errors.New("cloudapi: media answered without a URL")
	}
	return &info, nil
}

// DownloadMedia copies the asset at mediaURL (a MediaInfo.URL) to w and
// returns the bytes written. The token is sent only to Meta's hosts
// (facebook.com, fbsbx.com, fbcdn.net, whatsapp.net and their subdomains)
// or the Client's base URL host; any other URL is refused, so that a URL
// read from an untrusted place cannot collect it.
func (c *Client) DownloadMedia(ctx context.Context, mediaURL string, w io.Writer) (int64, error) {
	if err := c.usable(ctx); err != nil {
		return 0, err
	}
	u, err := url.Parse(mediaURL)
	if err != nil || u.Scheme != "https" && u.Scheme != "http" || !c.trustedHost(u) {
		return 0, invalid("url", "not a media URL on one of Meta's hosts")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, fmt.Errorf("cloudapi: building the download: %w", err)
	}
	req.Header.Set("Authorization", c.token.header)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, c.scrub(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, err := CheckResponse(resp)
		return 0, c.scrubAny(err)
	}
	n, err := io.Copy(w, resp.Body)
	return n, c.scrub(err)
}

// trustedHost reports whether u's host may receive the token.
func (c *Client) trustedHost(u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	if base, err := url.Parse(c.baseURL); err == nil && host == strings.ToLower(base.Hostname()) && u.Scheme == base.Scheme {
		return true
	}
	if u.Scheme != "https" {
		return false
	}
	for _, d := range []string{"facebook.com", "fbsbx.com", "fbcdn.net", "whatsapp.net"} {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// graphRequest builds a Graph API request for path under the Client's
// version, with the token in the Authorization header only.
func (c *Client) graphRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+"/"+c.version+"/"+path, body)
	if err != nil {
		return nil, fmt.Errorf("cloudapi: building the request: %w", err)
	}
	req.Header.Set("Authorization", c.token.header)
	return req, nil
}

// doJSON makes req and decodes a success into out.
func (c *Client) doJSON(req *http.Request, out any) error {
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.scrub(err)
	}
	defer resp.Body.Close()
	c.observeUsage(resp.Header)
	data, err := CheckResponse(resp)
	if err != nil {
		return c.scrubAny(err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return errors.New("cloudapi: answer is not the expected JSON object")
	}
	return nil
}

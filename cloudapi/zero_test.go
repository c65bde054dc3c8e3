package cloudapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
)

// TestZeroClient: issue 23 item 10. The zero Client (and a nil one)
// panicked in Send; every exported method now returns an error matching
// ErrZeroClient, or does nothing, and never panics.
func TestZeroClient(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for name, c := range map[string]*cloudapi.Client{"zero": {}, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			m := cloudapi.Text("+237690000001", "hi")
			if _, err := c.Send(ctx, "106540352242922", m); !errors.Is(err, cloudapi.ErrZeroClient) {
				t.Errorf("Send = %v", err)
			}
			if _, err := c.SendBurst(ctx, "106540352242922", m, m); !errors.Is(err, cloudapi.ErrZeroClient) {
				t.Errorf("SendBurst = %v", err)
			}
			if _, err := c.UploadMedia(ctx, "106540352242922", "a.jpg", "image/jpeg", strings.NewReader("x")); !errors.Is(err, cloudapi.ErrZeroClient) {
				t.Errorf("UploadMedia = %v", err)
			}
			if _, err := c.GetMedia(ctx, "1"); !errors.Is(err, cloudapi.ErrZeroClient) {
				t.Errorf("GetMedia = %v", err)
			}
			if _, err := c.DownloadMedia(ctx, "https://lookaside.fbsbx.com/x", &bytes.Buffer{}); !errors.Is(err, cloudapi.ErrZeroClient) {
				t.Errorf("DownloadMedia = %v", err)
			}
			c.Forget("k")
			if l := c.Number("106540352242922"); l == nil || !l.HeldUntil().IsZero() {
				t.Errorf("Number = %v", l)
			}
			_ = c.String() + c.GoString() + fmt.Sprintf("%v %+v %#v", c, c, c)
		})
	}
}

// TestNilContext: Send(nil, ...) panicked; it is a clear error, nothing
// spent.
func TestNilContext(t *testing.T) {
	t.Parallel()
	meta := cloudapitest.NewServer(t)
	c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		t.Fatal(err)
	}
	var nilCtx context.Context
	m := cloudapi.Text("+237690000001", "hi")
	if _, err := c.Send(nilCtx, "106540352242922", m); err == nil || cloudapi.StateOf(err) != cloudapi.StateNotSubmitted {
		t.Errorf("Send(nil, ...) = %v", err)
	}
	if _, err := c.SendBurst(nilCtx, "106540352242922", m); err == nil {
		t.Errorf("SendBurst(nil, ...) = %v", err)
	}
	if _, err := c.UploadMedia(nilCtx, "106540352242922", "a.jpg", "image/jpeg", strings.NewReader("x")); err == nil {
		t.Error("UploadMedia(nil, ...) succeeded")
	}
	if _, err := c.GetMedia(nilCtx, "1"); err == nil {
		t.Error("GetMedia(nil, ...) succeeded")
	}
	if _, err := c.DownloadMedia(nilCtx, "https://lookaside.fbsbx.com/x", &bytes.Buffer{}); err == nil {
		t.Error("DownloadMedia(nil, ...) succeeded")
	}
	if n := len(meta.Requests()); n != 0 {
		t.Errorf("%d requests made", n)
	}
}

// TestZeroValues: the zero values of the other exported types answer
// without panicking.
func TestZeroValues(t *testing.T) {
	t.Parallel()
	var m cloudapi.Message
	if m.Validate() == nil {
		t.Error("the zero Message validates")
	}
	if _, err := m.MarshalJSON(); err == nil {
		t.Error("the zero Message encodes")
	}
	if err := m.UnmarshalJSON([]byte(`{}`)); err == nil {
		t.Error("an empty object decodes as a Message")
	}
	_ = m.WithFooter("f").WithHeader("h", cloudapi.KindText, nil).Kind()
	_ = m.To()
	for _, err := range []error{&cloudapi.SendError{}, &cloudapi.BackpressureError{}, &cloudapi.ValidationError{}} {
		_ = err.Error()
		_ = errors.Unwrap(err)
		_ = errors.Is(err, cloudapi.ErrDuplicate)
	}
	_ = cloudapi.StateOf(&cloudapi.SendError{})
}

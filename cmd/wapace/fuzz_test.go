package main

import (
	"bytes"
	"context"
	"io"
	"testing"
)

// FuzzReplay feeds arbitrary logs to replay: it returns an error or a
// report (with its summary line), and never panics.
func FuzzReplay(f *testing.F) {
	f.Add([]byte(`{"msg":"wapace attempt","at":"2026-12-01T10:00:00Z","pair":"p","to":"2376*****001","code":131056,"key":"k"}` + "\n"))
	f.Add([]byte(`{"msg":"wapace attempt","at":"2026-12-01T10:00:00Z","pair":"p"}` + "\n" + `{"msg":"wapace attempt","at":"2026-12-01T10:00:01Z","pair":"p","code":131056}`))
	f.Add([]byte("not json\n"))
	f.Add([]byte(`{"msg":"wapace attempt","at":"bad time","pair":"p"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		err := replay(context.Background(), bytes.NewReader(data), &out, io.Discard, false)
		if err == nil && !bytes.Contains(out.Bytes(), []byte("attempts read")) {
			t.Errorf("no summary: %q", out.String())
		}
	})
}

package cloudapitest

import (
	"net/http"
	"strings"
	"testing"
)

func BenchmarkJudge(b *testing.B) {
	s := NewServer(b)
	body := []byte(`{"messaging_product":"whatsapp","recipient_type":"individual","to":"237600001234","type":"template","template":{"name":"winter_sale","language":{"code":"en"},"components":[{"type":"body","parameters":[{"type":"text","text":"1234"}]}]},"biz_opaque_callback_data":"five-1234"}`)
	r, _ := http.NewRequest(http.MethodPost, "http://x/v26.0/106540352242931/messages", strings.NewReader(""))
	r.Header.Set("Authorization", "Bearer T")
	b.ReportAllocs()
	for b.Loop() {
		in := s.judge(r, body, nil)
		if in.code != 0 {
			b.Fatal(in.details)
		}
	}
}

package cloudapitest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/errcodes"
)

// send posts body to path and returns the status, Meta's code (0 on
// success) and the raw answer.
func send(t *testing.T, srv *cloudapitest.Server, path, body string) (int, errcodes.Code, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, cloudapitest.BaseURL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, 0, data
	}
	e, err := errcodes.Parse(resp.StatusCode, data)
	if err != nil {
		t.Fatalf("error body is not Meta's: %s", data)
	}
	return resp.StatusCode, e.Code, data
}

func templateBody(to, name, lang, extra string) string {
	return `{"messaging_product":"whatsapp","to":"` + to + `","type":"template","template":{"name":"` + name + `","language":{"code":"` + lang + `"}}` + extra + `}`
}

const (
	mm  = "/v26.0/106540352242922/marketing_messages"
	msg = "/v26.0/106540352242922/messages"
)

func TestMarketingEndpoint(t *testing.T) {
	t.Parallel()
	srv := cloudapitest.NewServer(t, cloudapitest.WithTemplate("promo", "en_US", "MARKETING"), cloudapitest.WithTemplate("receipt", "en_US", "utility"))
	tests := []struct {
		name, path, body string
		status           int
		code             errcodes.Code
	}{
		{"marketing template", mm, templateBody("237690000001", "promo", "en_US", `,"product_policy":"STRICT","message_activity_sharing":false`), 200, 0},
		{"text is not a template", mm, `{"messaging_product":"whatsapp","to":"237690000002","type":"text","text":{"body":"hi"}}`, 400, errcodes.InvalidParameter},
		{"utility template", mm, templateBody("237690000003", "receipt", "en_US", ""), 400, errcodes.MarketingAPITemplateCategory},
		{"unknown template", mm, templateBody("237690000004", "nope", "en_US", ""), 404, errcodes.TemplateNotFound},
		{"unknown translation on /messages", msg, templateBody("237690000005", "promo", "fr", ""), 404, errcodes.TemplateNotFound},
		{"bad product_policy", mm, templateBody("237690000006", "promo", "en_US", `,"product_policy":"SOMETIMES"`), 400, errcodes.InvalidParameterValue},
		{"product_policy on /messages", msg, templateBody("237690000007", "promo", "en_US", `,"product_policy":"STRICT"`), 400, errcodes.InvalidParameter},
		{"marketing template on /messages", msg, templateBody("237690000008", "promo", "en_US", ""), 200, 0},
	}
	for _, tc := range tests {
		status, code, data := send(t, srv, tc.path, tc.body)
		if status != tc.status || code != tc.code {
			t.Errorf("%s: %d %d (%s), want %d %d", tc.name, status, code, data, tc.status, tc.code)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != len(tests) || reqs[0].Path != mm || reqs[len(reqs)-1].Path != msg || !reqs[0].Accepted {
		t.Errorf("requests %+v", reqs)
	}
	var ok struct {
		Messages []struct {
			ID     string `json:"id"`
			Status string `json:"message_status"`
		} `json:"messages"`
	}
	_, _, data := send(t, srv, mm, templateBody("237690000009", "promo", "en_US", ""))
	if json.Unmarshal(data, &ok) != nil || len(ok.Messages) != 1 || ok.Messages[0].Status != "accepted" {
		t.Errorf("success body %s", data)
	}
}

// TestMarketingSharesPacing: the pair rule and the number's throughput
// count both endpoints together.
func TestMarketingSharesPacing(t *testing.T) {
	t.Parallel()
	srv := cloudapitest.NewServer(t, cloudapitest.WithPairRule(6*time.Second, 1, 6*time.Second))
	if status, _, data := send(t, srv, msg, `{"messaging_product":"whatsapp","to":"237690000001","type":"text","text":{"body":"hi"}}`); status != 200 {
		t.Fatalf("text: %d %s", status, data)
	}
	if _, code, _ := send(t, srv, mm, templateBody("237690000001", "promo", "en_US", "")); code != errcodes.PairRateLimit {
		t.Errorf("marketing right after a text to the same user: code %d, want 131056", code)
	}
}

func TestWithoutTemplatesEveryNameIsAccepted(t *testing.T) {
	t.Parallel()
	srv := cloudapitest.NewServer(t)
	for i, p := range []string{msg, mm} {
		if status, _, data := send(t, srv, p, templateBody("23769000001"+string(rune('0'+i)), "anything_at_all", "en_US", "")); status != 200 {
			t.Errorf("%s: %d %s", p, status, data)
		}
	}
}

func TestListTemplates(t *testing.T) {
	t.Parallel()
	var opts []cloudapitest.Option
	names := []string{"a", "b", "c", "d", "e"}
	for _, n := range names {
		opts = append(opts, cloudapitest.WithTemplate(n, "en_US", "UTILITY"))
	}
	srv := cloudapitest.NewServer(t, opts...)
	get := func(q string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, cloudapitest.BaseURL+"/v26.0/102290129340398/message_templates"+q, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	type page struct {
		Data   []map[string]string `json:"data"`
		Paging struct {
			Cursors struct{ After string } `json:"cursors"`
			Next    string                 `json:"next"`
		} `json:"paging"`
	}
	var got []string
	q := "?fields=name,category&limit=2"
	for i := 0; i < 10; i++ {
		status, b := get(q)
		var p page
		if status != 200 || json.Unmarshal(b, &p) != nil {
			t.Fatalf("%d %s", status, b)
		}
		for _, d := range p.Data {
			if d["category"] != "UTILITY" || d["id"] == "" || d["status"] != "" {
				t.Errorf("item %v (status was not asked for)", d)
			}
			got = append(got, d["name"])
		}
		if p.Paging.Next == "" {
			break
		}
		q = "?fields=name,category&limit=2&after=" + p.Paging.Cursors.After
	}
	if strings.Join(got, "") != strings.Join(names, "") {
		t.Errorf("listed %v", got)
	}
	if status, _ := get("?after=garbage"); status != 400 {
		t.Errorf("a bad cursor answered %d", status)
	}
	if srv.TemplateListCalls() != 4 {
		t.Errorf("%d listing calls", srv.TemplateListCalls())
	}
}

// TestRecategorize: a completed change moves the fake's template and its
// signed notice parses as Meta's template_category_update; an impending
// notice changes nothing.
func TestRecategorize(t *testing.T) {
	t.Parallel()
	srv := cloudapitest.NewServer(t, cloudapitest.WithAppSecret("s3cret"), cloudapitest.WithTemplate("order_update", "en_US", "UTILITY"))
	imp, ok := srv.ImpendingCategory("102290129340398", "order_update", "en_US", "MARKETING", time.Unix(1767830400, 0))
	if c, _ := srv.TemplateCategory("order_update", "en_US"); !ok || c != "UTILITY" {
		t.Fatalf("impending changed the category to %s", c)
	}
	done, ok := srv.Recategorize("102290129340398", "order_update", "en_US", "MARKETING")
	if c, _ := srv.TemplateCategory("order_update", "en_US"); !ok || c != "MARKETING" {
		t.Fatalf("category after Recategorize: %s", c)
	}
	if _, ok := srv.Recategorize("102290129340398", "nope", "en_US", "MARKETING"); ok {
		t.Error("an unknown template was recategorised")
	}
	var got []*webhook.TemplateCategoryUpdate
	h, err := webhook.NewHandler("s3cret", webhook.OnTemplateCategory(func(_ context.Context, ev webhook.Event, u *webhook.TemplateCategoryUpdate) error {
		if ev.WABAID != "102290129340398" || ev.Time.IsZero() {
			t.Errorf("event %+v", ev)
		}
		got = append(got, u)
		return nil
	}), webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { t.Error("OnOther"); return nil }))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{imp, done} {
		if resp := srv.PostWebhook(h, b); resp.StatusCode != 200 {
			t.Fatalf("POST = %d", resp.StatusCode)
		}
	}
	if len(got) != 2 || !got[0].Impending() || got[0].CorrectCategory != "MARKETING" || got[0].NewCategory != "UTILITY" ||
		!got[1].Completed() || got[1].PreviousCategory != "UTILITY" || got[1].NewCategory != "MARKETING" || got[1].TemplateID == "" {
		t.Errorf("updates %+v %+v", got[0], got[1])
	}
}

// TestFlowContent: the fake's own reading of an interactive flow.
func TestFlowContent(t *testing.T) {
	t.Parallel()
	srv := cloudapitest.NewServer(t)
	flow := func(params string) string {
		return `{"messaging_product":"whatsapp","to":"237690000001","type":"interactive","interactive":{"type":"flow","body":{"text":"b"},"action":{"name":"flow","parameters":` + params + `}}}`
	}
	for params, want := range map[string]errcodes.Code{
		`{"flow_message_version":"3","flow_id":"1","flow_cta":"Go","flow_action":"navigate","flow_action_payload":{"screen":"A"}}`:      0,
		`{"flow_message_version":"3","flow_name":"n","flow_cta":"Go","flow_action":"data_exchange"}`:                                    0,
		`{"flow_message_version":"2","flow_id":"1","flow_cta":"Go","flow_action_payload":{"screen":"A"}}`:                               errcodes.InvalidParameterValue,
		`{"flow_message_version":"3","flow_id":"1","flow_name":"n","flow_cta":"Go","flow_action_payload":{"screen":"A"}}`:               errcodes.InvalidParameterValue,
		`{"flow_message_version":"3","flow_id":"1","flow_cta":"Go"}`:                                                                    errcodes.InvalidParameterValue,
		`{"flow_message_version":"3","flow_id":"1","flow_cta":"Go","flow_action":"data_exchange","flow_action_payload":{"screen":"A"}}`: errcodes.InvalidParameterValue,
	} {
		if _, code, data := send(t, srv, msg, flow(params)); code != want {
			t.Errorf("%s: code %d (%s), want %d", params, code, data, want)
		}
	}
}

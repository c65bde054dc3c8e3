package outbox_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/outbox"
	"pgregory.net/rapid"
)

func TestDurableTemplateCategoriesSQLite(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "outbox.db")
	testDurableTemplateCategories(t, dsn)
}

func TestDurableTemplateCategoriesPostgres(t *testing.T) {
	testDurableTemplateCategories(t, requirePostgres(t))
}

// testDurableTemplateCategories: the registry in the outbox's database is
// filled from the Message Templates API, routes the Client's sends, is
// shared by two outboxes on one database, moves only on completed notices
// and keeps the latest change when notices arrive out of order.
func testDurableTemplateCategories(t *testing.T, dsn string) {
	const waba = "102290129340398"
	ctx := context.Background()
	a, err := outbox.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := outbox.Open(ctx, dsn) // another process on the same database
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	meta := cloudapitest.NewServer(t, cloudapitest.WithTemplate("spring_sale", "en_US", "MARKETING"), cloudapitest.WithTemplate("order_update", "en_US", "UTILITY"))
	regA, regB := a.TemplateCategories(), b.TemplateCategories()
	c := newClient(t, meta, cloudapi.WithTemplateCategories(waba, regB))
	ts, err := c.ListTemplates(ctx, waba)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1767225600, 0)
	if n, err := regA.Fill(ctx, waba, ts, t0); n != 2 || err != nil {
		t.Fatalf("Fill = %d, %v", n, err)
	}
	key := cloudapi.TemplateKey{WABAID: waba, Name: "order_update", Language: "en_US"}
	lookup := func() cloudapi.Category {
		t.Helper()
		cat, ok, err := regB.TemplateCategory(ctx, key)
		if err != nil || !ok {
			t.Fatalf("lookup: %q, %v, %v", cat, ok, err)
		}
		return cat
	}
	if got := lookup(); got != cloudapi.CategoryUtility {
		t.Fatalf("after Fill: %q", got)
	}
	if _, ok, _ := regB.TemplateCategory(ctx, cloudapi.TemplateKey{WABAID: waba, Name: "nope", Language: "en_US"}); ok {
		t.Error("an unknown template was found")
	}

	ev := func(at time.Time) webhook.Event {
		return webhook.Event{WABAID: waba, Field: webhook.FieldTemplateCategory, Time: at}
	}
	impending := &webhook.TemplateCategoryUpdate{TemplateName: key.Name, TemplateLanguage: key.Language, CorrectCategory: "MARKETING", NewCategory: "UTILITY", CategoryUpdateTimestamp: t0.Add(time.Hour).Unix()}
	toMarketing := &webhook.TemplateCategoryUpdate{TemplateName: key.Name, TemplateLanguage: key.Language, PreviousCategory: "UTILITY", NewCategory: "MARKETING"}
	stale := &webhook.TemplateCategoryUpdate{TemplateName: key.Name, TemplateLanguage: key.Language, PreviousCategory: "MARKETING", NewCategory: "UTILITY"}
	if _, ok, err := regA.ApplyCategoryUpdate(ctx, ev(t0.Add(time.Minute)), impending); ok || err != nil || lookup() != cloudapi.CategoryUtility {
		t.Fatalf("an impending notice moved the template (%v, %v)", ok, err)
	}
	if cat, ok, err := regA.ApplyCategoryUpdate(ctx, ev(t0.Add(2*time.Hour)), toMarketing); !ok || err != nil || cat != cloudapi.CategoryMarketing || lookup() != cloudapi.CategoryMarketing {
		t.Fatalf("completed notice: %q, %v, %v; lookup %q", cat, ok, err, lookup())
	}
	// A notice older than the one applied arrives late: it does not undo it.
	if _, _, err := regA.ApplyCategoryUpdate(ctx, ev(t0.Add(90*time.Minute)), stale); err != nil || lookup() != cloudapi.CategoryMarketing {
		t.Fatalf("a stale notice won: %v, %q", err, lookup())
	}

	// The Client routes through the other outbox's view of the registry
	// (Meta recategorised the template: the fake follows).
	if _, ok := meta.Recategorize(waba, "order_update", "en_US", "MARKETING"); !ok {
		t.Fatal("fake: no order_update")
	}
	for _, name := range []string{"order_update", "spring_sale"} {
		if _, err := c.Send(ctx, from, cloudapi.Template(recipient(len(name)), name, "en_US")); err != nil {
			t.Fatalf("send %s: %v", name, err)
		}
	}
	for _, r := range meta.Requests() {
		if r.Path != "/"+cloudapi.DefaultAPIVersion+"/"+from+"/marketing_messages" {
			t.Errorf("%s sent to %s", r.CallbackData, r.Path)
		}
	}
	if err := regA.Set(ctx, cloudapi.TemplateKey{WABAID: waba}, cloudapi.CategoryUtility, t0); err == nil {
		t.Error("Set accepted a key without a name")
	}
}

// TestTemplateCategoriesLatestNoticeWins: whatever order Meta's completed
// notices arrive in, the durable registry ends on the category of the
// latest one by entry time (among notices of one instant, the last
// applied), which is what an independent model of "latest change" says.
func TestTemplateCategoriesLatestNoticeWins(t *testing.T) {
	o, _ := openSQLite(t)
	reg := o.TemplateCategories()
	cats := []string{"MARKETING", "UTILITY", "AUTHENTICATION"}
	iteration := 0
	rapid.Check(t, func(rt *rapid.T) {
		iteration++
		name := fmt.Sprintf("t%d", iteration)
		n := rapid.IntRange(1, 8).Draw(rt, "notices")
		var latest time.Time
		var want string
		for i := range n {
			at := time.Unix(1767225600+int64(rapid.IntRange(0, 5).Draw(rt, fmt.Sprint("at", i))), 0)
			cat := rapid.SampledFrom(cats).Draw(rt, fmt.Sprint("cat", i))
			u := &webhook.TemplateCategoryUpdate{TemplateName: name, TemplateLanguage: "en_US", PreviousCategory: "UTILITY", NewCategory: cat}
			if _, ok, err := reg.ApplyCategoryUpdate(context.Background(), webhook.Event{WABAID: "1", Time: at}, u); !ok || err != nil {
				rt.Fatalf("apply: %v, %v", ok, err)
			}
			if !at.Before(latest) {
				latest, want = at, cat
			}
		}
		got, ok, err := reg.TemplateCategory(context.Background(), cloudapi.TemplateKey{WABAID: "1", Name: name, Language: "en_US"})
		if wantCat, _ := cloudapi.ParseCategory(want); !ok || err != nil || got != wantCat {
			rt.Fatalf("registry %q (%v, %v), model %q", got, ok, err, want)
		}
	})
}

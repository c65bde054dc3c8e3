package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/webhook"
)

// TemplateCategories is a durable template category registry kept in the
// outbox's database (table outbox_template_categories), beside the items
// it routes: the mapping Meta asks senders to persist from (account,
// template, language) to latest category. Every process on the database
// shares it, so a category update applied by the one that receives the
// webhook routes the sends of all of them. It implements
// cloudapi.TemplateCategories; give it to cloudapi.WithTemplateCategories.
//
// Each lookup is one primary-key read (the Client looks up when it
// prepares a send and again when it posts it); nothing is cached in the
// process, so no process routes on a category another one replaced. It is
// safe for concurrent use by multiple goroutines.
type TemplateCategories struct {
	o *Outbox
}

// TemplateCategories returns the outbox's durable template category
// registry.
func (o *Outbox) TemplateCategories() *TemplateCategories { return &TemplateCategories{o: o} }

// TemplateCategory implements cloudapi.TemplateCategories.
func (r *TemplateCategories) TemplateCategory(ctx context.Context, k cloudapi.TemplateKey) (cloudapi.Category, bool, error) {
	if r.o.isClosed() {
		return "", false, ErrClosed
	}
	var c string
	err := r.o.db.QueryRowContext(ctx, r.o.q(`SELECT category FROM outbox_template_categories WHERE waba_id = ? AND name = ? AND language = ?`),
		k.WABAID, k.Name, k.Language).Scan(&c)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("outbox: template category: %w", err)
	}
	cat, ok := cloudapi.ParseCategory(c)
	return cat, ok, nil
}

// Set records c as k's category as of at. A record newer than at stands:
// webhooks may arrive out of order, and the latest change wins.
func (r *TemplateCategories) Set(ctx context.Context, k cloudapi.TemplateKey, c cloudapi.Category, at time.Time) error {
	if r.o.isClosed() {
		return ErrClosed
	}
	if _, ok := cloudapi.ParseCategory(string(c)); !ok || k.WABAID == "" || k.Name == "" || k.Language == "" {
		return fmt.Errorf("outbox: template category: %w", &cloudapi.ValidationError{Field: "template", Reason: "needs an account, a name, a language and a known category"})
	}
	_, err := r.o.db.ExecContext(ctx, r.o.q(`INSERT INTO outbox_template_categories (waba_id, name, language, category, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (waba_id, name, language) DO UPDATE SET category = excluded.category, updated_at = excluded.updated_at
		WHERE excluded.updated_at >= outbox_template_categories.updated_at`), k.WABAID, k.Name, k.Language, string(c), nanos(at))
	if err != nil {
		return fmt.Errorf("outbox: template category: %w", err)
	}
	return nil
}

// Fill records, as of at, the category of every template of WhatsApp
// Business Account wabaID in ts (what cloudapi.Client.ListTemplates
// returned), in one transaction, and returns how many it recorded.
// Templates whose category cannot be read are skipped.
func (r *TemplateCategories) Fill(ctx context.Context, wabaID string, ts []cloudapi.TemplateInfo, at time.Time) (int, error) {
	if r.o.isClosed() {
		return 0, ErrClosed
	}
	tx, err := r.o.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("outbox: template categories: %w", err)
	}
	defer tx.Rollback()
	n := 0
	for _, t := range ts {
		c, ok := cloudapi.ParseCategory(t.Category)
		if !ok || t.Name == "" || t.Language == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, r.o.q(`INSERT INTO outbox_template_categories (waba_id, name, language, category, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (waba_id, name, language) DO UPDATE SET category = excluded.category, updated_at = excluded.updated_at
			WHERE excluded.updated_at >= outbox_template_categories.updated_at`), wabaID, t.Name, t.Language, string(c), nanos(at)); err != nil {
			return 0, fmt.Errorf("outbox: template categories: %w", err)
		}
		n++
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("outbox: template categories: %w", err)
	}
	return n, nil
}

// ApplyCategoryUpdate applies a template_category_update delivered with
// ev (its WABAID, and its Time orders it against other changes; a zero
// Time counts as now on the outbox's clock). As with
// cloudapi.TemplateRegistry, only a completed change moves the template;
// an impending notice, or one without a category this package reads,
// changes nothing and reports false.
func (r *TemplateCategories) ApplyCategoryUpdate(ctx context.Context, ev webhook.Event, u *webhook.TemplateCategoryUpdate) (cloudapi.Category, bool, error) {
	if u == nil || !u.Completed() || u.TemplateName == "" || u.TemplateLanguage == "" {
		return "", false, nil
	}
	c, ok := cloudapi.ParseCategory(u.NewCategory)
	if !ok {
		return "", false, nil
	}
	at := ev.Time
	if at.IsZero() {
		at = r.o.cfg.clock.Now()
	}
	if err := r.Set(ctx, cloudapi.TemplateKey{WABAID: ev.WABAID, Name: u.TemplateName, Language: u.TemplateLanguage}, c, at); err != nil {
		return "", false, err
	}
	return c, true, nil
}

package cloudapi_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
)

// Route templates by their latest category: fill a registry from the
// Message Templates API, keep it current from template_category_update,
// and let the Client pick /marketing_messages or /messages.
func ExampleWithTemplateCategories() {
	const wabaID = "102290129340398"
	meta := cloudapitest.NewServer(nil, cloudapitest.WithAppSecret("APP_SECRET"),
		cloudapitest.WithTemplate("spring_sale", "en_US", "MARKETING"),
		cloudapitest.WithTemplate("order_update", "en_US", "UTILITY"))
	defer meta.Close()
	var registry cloudapi.TemplateRegistry
	client, err := cloudapi.New("ACCESS_TOKEN",
		cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL),
		cloudapi.WithTemplateCategories(wabaID, &registry))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	templates, err := client.ListTemplates(ctx, wabaID)
	fmt.Println(registry.Fill(wabaID, templates), err)

	to := 0
	send := func(name string) {
		to++ // a user each, so that no pair waits
		_, err := client.Send(ctx, from, cloudapi.Template(fmt.Sprintf("+237 690 00 00 %02d", to), name, "en_US"))
		if err != nil {
			fmt.Println(name, errors.Is(err, cloudapi.ErrUnknownCategory), cloudapi.StateOf(err))
			return
		}
		reqs := meta.Requests()
		fmt.Println(name, reqs[len(reqs)-1].Path)
	}
	send("spring_sale")
	send("order_update")
	send("not_listed") // never guessed: nothing is sent

	// Meta recategorises order_update as MARKETING; the completed notice,
	// posted to the webhook handler, moves it.
	hook, _ := webhook.NewHandler("APP_SECRET",
		webhook.OnTemplateCategory(func(_ context.Context, ev webhook.Event, u *webhook.TemplateCategoryUpdate) error {
			registry.ApplyCategoryUpdate(ev.WABAID, u)
			return nil
		}),
		webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
	notice, _ := meta.Recategorize(wabaID, "order_update", "en_US", "MARKETING")
	fmt.Println(meta.PostWebhook(hook, notice).StatusCode)
	send("order_update")
	// Output:
	// 2 <nil>
	// spring_sale /v26.0/106540352242922/marketing_messages
	// order_update /v26.0/106540352242922/messages
	// not_listed true not_submitted
	// 200
	// order_update /v26.0/106540352242922/marketing_messages
}

// A flow message opens a WhatsApp Flow on its first screen.
func ExampleFlowMessage() {
	m := cloudapi.FlowMessage("+237 690 00 00 01", "Book a table in two taps", cloudapi.Flow{
		ID: "1234567890", CTA: "Book now", Token: "booking-42", Screen: "PARTY_SIZE",
	}).WithFooter("Takes under a minute")
	fmt.Println(m.Kind(), m.Validate())

	bad := cloudapi.FlowMessage("+237 690 00 00 01", "Book", cloudapi.Flow{ID: "1234567890", CTA: "Book now 🍽️", Screen: "PARTY_SIZE"})
	fmt.Println(bad.Validate())
	// Output:
	// interactive <nil>
	// cloudapi: invalid message: interactive.action.parameters.flow_cta: emoji are not supported
}

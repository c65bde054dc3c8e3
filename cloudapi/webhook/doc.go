// Package webhook receives what Meta posts to a WhatsApp Business Cloud API
// webhook endpoint: inbound messages, message statuses, template, quality,
// messaging-limit and account changes, and every other field of the
// whatsapp_business_account object. It is the receiving half of
// package cloudapi, and does not depend on it.
//
// # What it is for
//
// Mount a [Handler] at the callback URL configured in the Meta app:
//
//	h, err := webhook.NewHandler(appSecret,
//		webhook.WithVerifyToken(verifyToken),
//		webhook.OnMessage(func(ctx context.Context, ev webhook.Event, m *webhook.Message) error { ... }),
//		webhook.OnStatus(func(ctx context.Context, ev webhook.Event, s *webhook.Status) error { ... }),
//		webhook.OnOther(func(ctx context.Context, ev webhook.Event, c *webhook.Change) error { ... }),
//	)
//	http.Handle("/webhook", h)
//
// The handler answers Meta's GET verification challenge, checks
// X-Hub-Signature-256 in constant time ([VerifySignature]; an empty app
// secret is refused), reads bodies up to [MaxBody], decodes them with
// [Parse], drops redeliveries with a [Deduper] bounded in keys and bytes,
// and hands every item to a typed callback ([OnMessage], [OnStatus],
// [OnErrors], [OnTemplateStatus], [OnQuality], [OnCapability]) or, raw, to
// [OnOther]. [ApplyTierUpdate] feeds a portfolio's throughput.Tier from the
// messaging-limit changes.
//
// # Model
//
// A [Notification] is Meta's envelope: entries per business account, each
// with [Change] values per field. A change of field "messages" carries a
// [Value] with [Message] and [Status] items, the business number
// ([Metadata]) and the [Contact] list; other fields have their own types
// ([TemplateStatusUpdate], [TemplateCategoryUpdate], [QualityUpdate],
// [CapabilityUpdate], [AccountUpdate], [UserPreference]) or stay raw in
// [Change].Raw. The callbacks receive each item with its [Event]: where it
// came from, and when (the entry's time).
//
// Decoding is lenient and lossless. A number where Meta documents a numeric
// string is accepted; a field that does not fit its Go type is kept raw in
// the item's Extra and reported as a [*FieldError] naming the field (in the
// Problems of its [Change] and of the [Notification]), and the rest of the
// item is delivered; keys with no Go field are
// kept in Extra, and MarshalJSON re-encodes typed fields plus Extra, so
// nothing Meta sends is lost between the wire and the application.
//
// Meta delivers at least once and redelivers for up to 7 days until it gets
// a 200. The handler never answers 200 unless the callbacks took every
// item: it answers 200 once every callback accepted its items; 500 when one
// returned an error; 503 when some items are still in the callbacks of a
// concurrent delivery (Meta's retry of a slow attempt), which may yet fail;
// 401 without a signature, 403 on a bad one, 413 above [MaxBody], and 400
// only for a body that is not a JSON object. The [Deduper] records an item
// only once its delivery succeeded: the items of a delivery whose callback
// failed or panicked are new again, so the redelivery is handed over. An
// item is named by its ID and a hash of its content: a repeat of an ID with
// other content is delivered. A handler needs [OnNotification] or
// [OnOther], so that no field is ever acknowledged unseen.
//
// # Serving
//
// The Handler reads at most [MaxBody] bytes but sets no deadline: the
// http.Server in front of it must, or clients trickling a body hold their
// connections for as long as they like. Meta posts at most 3 MB from its
// data centres, so tight limits cost nothing:
//
//	srv := &http.Server{
//		Handler:           h,
//		ReadHeaderTimeout: 5 * time.Second,
//		ReadTimeout:       20 * time.Second, // headers and the whole body
//		WriteTimeout:      40 * time.Second, // the callbacks run within it
//		IdleTimeout:       60 * time.Second,
//		MaxHeaderBytes:    64 << 10,
//	}
//
// Keep the callbacks well inside WriteTimeout (and Meta's own wait for an
// answer): a callback still running when Meta gives up leads to a
// redelivery, answered 503 until the first attempt ends. A reverse proxy
// in front should buffer request bodies and have equivalent limits.
//
// # Errors
//
// Errors match the sentinels with errors.Is: [ErrNoAppSecret] (empty app
// secret, from [NewHandler] and [VerifySignature]), [ErrNoSignature],
// [ErrBadSignature], and [ErrBadNotification] (from [Parse], for a body
// that is not a JSON object). Problems inside a valid notification are
// [*FieldError] values in Problems (a change with problems also reaches
// [OnOther]), never an error that rejects the batch. Errors never contain the app secret.
//
// # Testing
//
// Package cloudapi/cloudapitest signs bodies the way Meta does
// (cloudapitest.Sign, cloudapitest.SignatureHeader) and builds and posts the
// status notifications of the messages its fake server accepted
// (Server.StatusBody, Server.PostStatus), so a Handler can be tested with
// net/http/httptest and no network. The decoder is fuzzed (FuzzParse,
// FuzzSplit) and the Deduper is checked against a model.
package webhook

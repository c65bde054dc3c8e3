package pairlimit

import (
	"strconv"

	"github.com/wapace/wapace/internal/pairkey"
	"github.com/wapace/wapace/internal/phone"
)

// NumberError reports why NewPair (or NormalizeRecipient) rejected one of
// its arguments; match it with errors.As. Its message never repeats the
// full number.
type NumberError struct {
	// Field is "from" (the business phone number ID) or "to" (the recipient).
	Field string
	// Reason says what is wrong, such as "has 5 digits, want 7 to 15".
	Reason string
}

// Error returns a message naming the field and the reason.
func (e *NumberError) Error() string {
	return "pairlimit: invalid " + e.Field + " number: " + e.Reason
}

// Pair is one business phone number and one WhatsApp recipient (a phone
// number or a business-scoped user ID): the unit Meta's pair rate limit
// applies to. It is a small comparable value that limiters key on two
// integers, so that it costs nothing to hash. A phone number and a BSUID are
// always different pairs, even of the same user: link them yourself if you
// know both. The zero Pair is invalid; build pairs with NewPair.
//
// A phone number and a BSUID whose ID is 1 to 16 digits below 2^53 without
// a leading 0 ("CO.1949266959121697") are held whole in the recipient
// integer. Other BSUIDs (Meta's example "US.13491208655302741918", IDs of
// up to 128 letters and digits, parent BSUIDs "US.ENT.…") are keyed on a
// fixed 61-bit hash of their exact string, in a range no phone number or
// packed BSUID reaches; the Pair keeps the string, so To always returns it.
// Two such BSUIDs share a key with probability 2^-61; among n of them sent
// to from one business number, some two do with probability about n^2/2^62
// (1e6: 2.2e-7, 1e8: 2.2e-3). Twins share one pair's pacing state in the
// built-in store: the cost is that one waits for the other's debt, which
// only sends later and never draws a 131056. The keys are the same in
// every process and version, so shared stores agree on them.
type Pair struct {
	from uint64 // business phone number ID
	to   uint64 // recipient key (phone.Recipient.Key)
	id   string // the BSUID when to is its hash; "" otherwise
}

// NewPair builds the pair of business phone number ID from (the numeric ID
// Meta gives the number, as used in the /{phone-number-id}/messages path)
// and recipient to.
//
// The recipient is normalised: a leading "+" or international "00" prefix,
// spaces, dashes, dots, slashes and parentheses are dropped, so
// "+237 690 00 00 01", "237-690-000-001" and "237690000001" are one pair.
// What remains must be 7 to 15 digits (E.164) not starting with 0. A
// national number ("0690000001") is rejected rather than guessed at: its
// country cannot be known.
//
// The recipient may instead be a business-scoped user ID (BSUID), the
// identifier Meta gives users who adopted a username: an ISO 3166 alpha-2
// country code in upper case, a dot and the ID, such as
// "CO.1949266959121697", or a parent BSUID with "ENT." after the country
// code ("US.ENT.11815799212886844830"); the ID is 1 to 128 ASCII letters and
// digits (Meta, "Business-scoped user IDs"). It is kept exactly, and paced
// exactly like a phone number (see [Pair] for the hashed keys of long
// BSUIDs). Anything else is rejected with a [*NumberError].
func NewPair(from, to string) (Pair, error) {
	f, err := phone.ParseFrom(from)
	if err != nil {
		return Pair{}, numberError(err)
	}
	r, err := phone.ParseTo(to)
	if err != nil {
		return Pair{}, numberError(err)
	}
	return pairOf(f, r), nil
}

// pairOf returns the pair of a business phone number ID and a recipient
// that were already parsed (internal/phone ParseFrom and ParseTo), without
// parsing them again; this module's packages reach it through
// internal/pairkey. A zero from or recipient gives the zero Pair.
func pairOf(from uint64, to phone.Recipient) Pair {
	if from == 0 || to.IsZero() {
		return Pair{}
	}
	p := Pair{from: from, to: to.Key()}
	if phone.RecipientOf(p.to).IsZero() {
		p.id = to.String() // a hashed BSUID: keep its string
	}
	return p
}

func numberError(err error) error {
	if pe, ok := err.(*phone.Error); ok {
		return &NumberError{Field: pe.Field, Reason: pe.Reason}
	}
	return err
}

// NormalizeRecipient returns the canonical form NewPair keys a recipient
// on, the one to send on the wire: E.164 digits without "+" for a phone
// number, the BSUID unchanged for a BSUID. Otherwise it returns a
// *NumberError.
func NormalizeRecipient(to string) (string, error) {
	r, err := phone.ParseTo(to)
	if err != nil {
		return "", numberError(err)
	}
	return r.String(), nil
}

// From returns the business phone number ID.
func (p Pair) From() string { return strconv.FormatUint(p.from, 10) }

// To returns the recipient in canonical form: E.164 digits without "+", or
// the BSUID ("CO.1949266959121697").
func (p Pair) To() string {
	if p.id != "" {
		return p.id
	}
	return phone.RecipientOf(p.to).String()
}

// IsZero reports whether p is the zero Pair, which no limiter accepts.
func (p Pair) IsZero() bool { return p.from == 0 || p.to == 0 }

// String returns the pair with the recipient masked, safe for logs:
// "106540352242922>2376*****001", "106540352242922>CO.*************697".
// A phone number keeps its first four and last three characters; a BSUID
// keeps its country code and, when its ID is longer than six characters,
// the ID's last three.
func (p Pair) String() string { return p.From() + ">" + phone.Mask(p.To()) }

func init() { pairkey.Of = pairOf }

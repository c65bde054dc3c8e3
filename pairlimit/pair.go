package pairlimit

import (
	"errors"
	"strconv"

	"github.com/wapace/wapace/internal/phone"
)

// ErrInvalidNumber is matched (with errors.Is) by every error NewPair
// returns.
var ErrInvalidNumber = errors.New("pairlimit: invalid phone number")

// ErrUnsupportedBSUID is matched, besides ErrInvalidNumber, by the error for
// a well-formed business-scoped user ID that cannot be keyed without loss:
// more than 16 digits, a value of 2^53 or more, letters in the ID, or a
// leading 0 (see [NewPair]). Such a recipient is rejected, never hashed, so
// that two users never share one pair's pacing.
var ErrUnsupportedBSUID = errors.New("pairlimit: BSUID cannot be keyed losslessly")

// NumberError reports why NewPair rejected one of its arguments. Its
// message never repeats the full number.
type NumberError struct {
	// Field is "from" (the business phone number ID) or "to" (the recipient).
	Field string
	// Reason says what is wrong, such as "has 5 digits, want 7 to 15".
	Reason string
	// Unsupported reports a well-formed BSUID that cannot be keyed without
	// loss; the error then also matches ErrUnsupportedBSUID.
	Unsupported bool
}

// Error returns a message naming the field and the reason.
func (e *NumberError) Error() string {
	return "pairlimit: invalid " + e.Field + " number: " + e.Reason
}

// Is reports whether target is ErrInvalidNumber, or ErrUnsupportedBSUID
// for an unsupported BSUID.
func (e *NumberError) Is(target error) bool {
	return target == ErrInvalidNumber || e.Unsupported && target == ErrUnsupportedBSUID
}

// Pair is one business phone number and one WhatsApp recipient (a phone
// number or a business-scoped user ID): the unit Meta's pair rate limit
// applies to. It is a small comparable value holding both as integers, so it
// can key a map and costs nothing to hash. A phone number and a BSUID are
// always different pairs, even of the same user: link them yourself if you
// know both. The zero Pair is invalid; build pairs with NewPair.
type Pair struct {
	from uint64 // business phone number ID
	to   uint64 // recipient key: E.164 digits, or a packed BSUID (bit 63 set)
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
// "CO.1949266959121697". It is kept exactly, and paced exactly like a phone
// number. A BSUID whose ID is not 1 to 16 digits below 2^53 without a
// leading 0 cannot be keyed losslessly and is rejected with an error
// matching ErrUnsupportedBSUID.
func NewPair(from, to string) (Pair, error) {
	f, err := phone.ParseFrom(from)
	if err != nil {
		return Pair{}, numberError(err)
	}
	r, err := phone.ParseTo(to)
	if err != nil {
		return Pair{}, numberError(err)
	}
	return Pair{from: f, to: r.Key()}, nil
}

// PairOf returns the pair of a business phone number ID and a recipient
// that were already parsed (with this module's internal/phone ParseFrom and
// ParseTo), without parsing them again. It is for this module's packages;
// other callers use NewPair. A zero from or recipient gives the zero Pair.
func PairOf(from uint64, to phone.Recipient) Pair {
	if from == 0 || to.IsZero() {
		return Pair{}
	}
	return Pair{from: from, to: to.Key()}
}

func numberError(err error) error {
	if pe, ok := err.(*phone.Error); ok {
		return &NumberError{Field: pe.Field, Reason: pe.Reason, Unsupported: pe.Unsupported}
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
func (p Pair) To() string { return phone.RecipientOf(p.to).String() }

// IsBSUID reports whether the pair's recipient is a business-scoped user ID.
func (p Pair) IsBSUID() bool { return phone.RecipientOf(p.to).IsBSUID() }

// IsZero reports whether p is the zero Pair, which no limiter accepts.
func (p Pair) IsZero() bool { return p.from == 0 || p.to == 0 }

// String returns the pair with the recipient masked, safe for logs:
// "106540352242922>2376*****001", "106540352242922>CO.*************697".
func (p Pair) String() string { return p.From() + ">" + MaskRecipient(p.To()) }

// MaskRecipient masks a recipient for logs so that it is never shown
// whole. A phone number keeps its first four and last three characters:
// "237690000001" becomes "2376*****001"; inputs of seven characters or
// fewer are masked whole. A BSUID keeps its country code and, when its ID is
// longer than six characters, the ID's last three: "CO.1949266959121697"
// becomes "CO.*************697".
func MaskRecipient(s string) string { return phone.Mask(s) }

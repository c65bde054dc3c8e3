package pairlimit

import (
	"errors"
	"strconv"

	"github.com/wapace/wapace/internal/phone"
)

// ErrInvalidNumber is matched (with errors.Is) by every error NewPair
// returns.
var ErrInvalidNumber = errors.New("pairlimit: invalid phone number")

// NumberError reports why NewPair rejected one of its arguments. Its
// message never repeats the full number.
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

// Is reports whether target is ErrInvalidNumber.
func (e *NumberError) Is(target error) bool { return target == ErrInvalidNumber }

// Pair is one business phone number and one WhatsApp recipient: the unit
// Meta's pair rate limit applies to. It is a small comparable value holding
// both numbers as integers, so it can key a map and costs nothing to hash.
// The zero Pair is invalid; build pairs with NewPair.
type Pair struct {
	from uint64 // business phone number ID
	to   uint64 // recipient, E.164 digits without the plus
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
func NewPair(from, to string) (Pair, error) {
	f, err := phone.ParseFrom(from)
	if err != nil {
		return Pair{}, numberError(err)
	}
	r, err := phone.ParseRecipient(to)
	if err != nil {
		return Pair{}, numberError(err)
	}
	return Pair{from: f, to: r}, nil
}

func numberError(err error) error {
	if pe, ok := err.(*phone.Error); ok {
		return &NumberError{Field: pe.Field, Reason: pe.Reason}
	}
	return err
}

// NormalizeRecipient returns the digits NewPair keys a recipient on, or a
// *NumberError.
func NormalizeRecipient(to string) (string, error) {
	r, err := phone.ParseRecipient(to)
	if err != nil {
		return "", numberError(err)
	}
	return strconv.FormatUint(r, 10), nil
}

// From returns the business phone number ID.
func (p Pair) From() string { return strconv.FormatUint(p.from, 10) }

// To returns the recipient in normalised form: E.164 digits without "+".
func (p Pair) To() string { return strconv.FormatUint(p.to, 10) }

// IsZero reports whether p is the zero Pair, which no limiter accepts.
func (p Pair) IsZero() bool { return p.from == 0 || p.to == 0 }

// String returns the pair with the recipient masked, safe for logs:
// "106540352242922>2376*****001".
func (p Pair) String() string { return p.From() + ">" + MaskRecipient(p.To()) }

// MaskRecipient masks the middle of a phone number for logs, keeping the
// first four and last three characters: "237690000001" becomes
// "2376*****001". Inputs of seven characters or fewer are masked whole.
func MaskRecipient(s string) string {
	if len(s) <= 7 {
		return "*******"[:max(len(s), 1)]
	}
	b := []byte(s)
	for i := 4; i < len(b)-3; i++ {
		b[i] = '*'
	}
	return string(b)
}

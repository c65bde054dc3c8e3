package pairlimit

import (
	"errors"
	"strconv"
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
	f, err := parseFrom(from)
	if err != nil {
		return Pair{}, err
	}
	r, err := parseRecipient(to)
	if err != nil {
		return Pair{}, err
	}
	return Pair{from: f, to: r}, nil
}

// NormalizeRecipient returns the digits NewPair keys a recipient on, or a
// *NumberError.
func NormalizeRecipient(to string) (string, error) {
	r, err := parseRecipient(to)
	if err != nil {
		return "", err
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

func parseFrom(s string) (uint64, error) {
	if s == "" {
		return 0, &NumberError{Field: "from", Reason: "empty phone number ID"}
	}
	if len(s) > 19 {
		return 0, &NumberError{Field: "from", Reason: "phone number ID longer than 19 digits"}
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, &NumberError{Field: "from", Reason: "phone number ID must be digits only"}
		}
		n = n*10 + uint64(c-'0')
	}
	if n == 0 {
		return 0, &NumberError{Field: "from", Reason: "phone number ID is zero"}
	}
	return n, nil
}

func parseRecipient(s string) (uint64, error) {
	var (
		n      uint64
		digits int
		seen   bool // a digit or separator came before: "+" is allowed only first
	)
	start := 0
	for start < len(s) && s[start] == ' ' {
		start++
	}
	if start < len(s) && s[start] == '+' {
		start++
	}
	for i := start; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if digits == 0 && c == '0' {
				// "00" is the international call prefix; a single leading 0
				// is a national trunk prefix and cannot be resolved.
				if i+1 < len(s) && s[i+1] == '0' && !seen {
					i++
					seen = true
					continue
				}
				return 0, &NumberError{Field: "to", Reason: "national format (leading 0); use the international format with country code"}
			}
			digits++
			if digits > 15 {
				return 0, &NumberError{Field: "to", Reason: "more than 15 digits"}
			}
			n = n*10 + uint64(c-'0')
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')' || c == '/' || c == '\t':
			// separator
		case c == '+':
			return 0, &NumberError{Field: "to", Reason: "'+' is allowed only at the start"}
		default:
			return 0, &NumberError{Field: "to", Reason: "contains a character that is not a digit or separator"}
		}
		seen = true
	}
	if digits < 7 {
		return 0, &NumberError{Field: "to", Reason: "has " + strconv.Itoa(digits) + " digits, want 7 to 15"}
	}
	return n, nil
}

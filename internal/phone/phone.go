// Package phone parses the identifiers wapace keys its limits on: the
// business phone number ID and the recipient (E.164 digits or a
// business-scoped user ID), both as integers so that hot paths never hash
// strings. Parse a recipient once with ParseTo and carry the Recipient.
package phone

import "strconv"

// Error says why a number was rejected. It never repeats the number.
type Error struct {
	// Field is "from" (the business phone number ID) or "to" (the recipient).
	Field string
	// Reason says what is wrong, such as "has 5 digits, want 7 to 15".
	Reason string
	// Unsupported reports a well-formed BSUID that cannot be keyed without
	// loss (see ParseTo).
	Unsupported bool
}

// Error returns "invalid <field> number: <reason>".
func (e *Error) Error() string { return "invalid " + e.Field + " number: " + e.Reason }

// ParseFrom parses a business phone number ID: 1 to 19 digits, not zero.
func ParseFrom(s string) (uint64, error) {
	if s == "" {
		return 0, &Error{Field: "from", Reason: "empty phone number ID"}
	}
	if len(s) > 19 {
		return 0, &Error{Field: "from", Reason: "phone number ID longer than 19 digits"}
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, &Error{Field: "from", Reason: "phone number ID must be digits only"}
		}
		n = n*10 + uint64(c-'0')
	}
	if n == 0 {
		return 0, &Error{Field: "from", Reason: "phone number ID is zero"}
	}
	return n, nil
}

// ParseRecipient parses a recipient, a phone number or a BSUID, and returns
// its key (see ParseTo and Recipient.Key).
func ParseRecipient(s string) (uint64, error) {
	r, err := ParseTo(s)
	return r.key, err
}

// parsePhone parses a phone number in international format. A leading "+"
// or "00" prefix, spaces, dashes, dots, slashes and parentheses are dropped;
// what remains must be 7 to 15 digits not starting with 0.
func parsePhone(s string) (uint64, error) {
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
				return 0, &Error{Field: "to", Reason: "national format (leading 0); use the international format with country code"}
			}
			digits++
			if digits > 15 {
				return 0, &Error{Field: "to", Reason: "more than 15 digits"}
			}
			n = n*10 + uint64(c-'0')
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')' || c == '/' || c == '\t':
			// separator
		case c == '+':
			return 0, &Error{Field: "to", Reason: "'+' is allowed only at the start"}
		default:
			return 0, &Error{Field: "to", Reason: "contains a character that is not a digit or separator"}
		}
		seen = true
	}
	if digits < 7 {
		return 0, &Error{Field: "to", Reason: "has " + strconv.Itoa(digits) + " digits, want 7 to 15"}
	}
	return n, nil
}

package phone

import "strconv"

// A recipient key is one uint64. A phone number is its E.164 digits as an
// integer (7 to 15 digits: below 10^15, so bit 63 is clear). A BSUID sets
// bit 63, keeps its country code in bits 53 to 62 (first letter x 26 +
// second letter, below 676) and its digits in bits 0 to 52. The packing is
// lossless: the canonical string is rebuilt from the key.
const (
	bsuidTag       = uint64(1) << 63
	bsuidCCShift   = 53
	bsuidDigitMask = uint64(1)<<bsuidCCShift - 1
	// MaxBSUIDDigits is the most digits a BSUID's numeric part may have to
	// be keyed losslessly; longer ones (or values of 2^53 and above) are
	// rejected with an Error whose Unsupported field is set.
	MaxBSUIDDigits = 16
)

// Recipient is a parsed recipient: an E.164 phone number or a
// business-scoped user ID (BSUID, "CO.1949266959121697"), packed into one
// integer so that it is small, comparable and free of pointers. The zero
// Recipient is invalid.
type Recipient struct{ key uint64 }

// ParseTo parses a recipient once: a BSUID (two upper-case letters of an
// ISO 3166 alpha-2 country code, a dot, 1 to 16 digits not starting with 0
// and below 2^53) or a phone number in international format (see
// ParseRecipient). A BSUID that is well formed but cannot be keyed without
// loss (longer, alphanumeric, "US.ENT." parent IDs) is rejected with an
// *Error whose Unsupported field is true; it is never hashed.
func ParseTo(s string) (Recipient, error) {
	if looksBSUID(s) {
		k, err := parseBSUID(s)
		return Recipient{k}, err
	}
	k, err := parsePhone(s)
	return Recipient{k}, err
}

// looksBSUID reports whether s starts like a BSUID: two letters and a dot.
func looksBSUID(s string) bool {
	return len(s) >= 3 && s[2] == '.' && isLetter(s[0]) && isLetter(s[1])
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func parseBSUID(s string) (uint64, error) {
	if s[0] < 'A' || s[0] > 'Z' || s[1] < 'A' || s[1] > 'Z' {
		return 0, &Error{Field: "to", Reason: "BSUID country code must be two upper-case letters"}
	}
	d := s[3:]
	if d == "" {
		return 0, &Error{Field: "to", Reason: "BSUID has no ID after the country code"}
	}
	var n uint64
	for i := 0; i < len(d); i++ {
		c := d[i]
		switch {
		case c >= '0' && c <= '9':
		case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '.':
			return 0, &Error{Field: "to", Reason: "BSUID with letters in its ID is not supported", Unsupported: true}
		default:
			return 0, &Error{Field: "to", Reason: "BSUID contains a character that is not a letter or digit"}
		}
		if i >= MaxBSUIDDigits {
			return 0, &Error{Field: "to", Reason: "BSUID longer than " + strconv.Itoa(MaxBSUIDDigits) + " digits is not supported", Unsupported: true}
		}
		n = n*10 + uint64(c-'0')
	}
	if d[0] == '0' {
		return 0, &Error{Field: "to", Reason: "BSUID ID starting with 0 is not supported", Unsupported: true}
	}
	if n > bsuidDigitMask {
		return 0, &Error{Field: "to", Reason: "BSUID ID of 2^53 or more is not supported", Unsupported: true}
	}
	cc := uint64(s[0]-'A')*26 + uint64(s[1]-'A')
	return bsuidTag | cc<<bsuidCCShift | n, nil
}

// RecipientOf returns the Recipient of a key returned by Key (or by
// ParseRecipient). A key that no parse returns gives the zero Recipient.
func RecipientOf(key uint64) Recipient {
	r := Recipient{key}
	if !r.valid() {
		return Recipient{}
	}
	return r
}

func (r Recipient) valid() bool {
	if r.key&bsuidTag == 0 {
		return r.key >= 1_000_000 && r.key < 1_000_000_000_000_000
	}
	return (r.key&^bsuidTag)>>bsuidCCShift < 26*26 && r.key&bsuidDigitMask != 0
}

// Key returns the integer the limits key the recipient on: distinct for
// every phone number and BSUID, and never zero for a valid Recipient. A
// phone number's key is its E.164 digits; a BSUID's has bit 63 set.
func (r Recipient) Key() uint64 { return r.key }

// IsZero reports whether r is the zero (invalid) Recipient.
func (r Recipient) IsZero() bool { return r.key == 0 }

// IsBSUID reports whether r is a business-scoped user ID rather than a
// phone number.
func (r Recipient) IsBSUID() bool { return r.key&bsuidTag != 0 }

// String returns the canonical form, the one to put on the wire: E.164
// digits without "+" for a phone number ("237690000001"), the BSUID as Meta
// wrote it for a BSUID ("CO.1949266959121697"), "" for the zero Recipient.
func (r Recipient) String() string {
	if r.key == 0 {
		return ""
	}
	if !r.IsBSUID() {
		return strconv.FormatUint(r.key, 10)
	}
	cc := (r.key &^ bsuidTag) >> bsuidCCShift
	b := make([]byte, 0, 3+MaxBSUIDDigits)
	b = append(b, byte('A'+cc/26), byte('A'+cc%26), '.')
	return string(strconv.AppendUint(b, r.key&bsuidDigitMask, 10))
}

// Masked returns the recipient for logs, never whole: "2376*****001",
// "CO.*************697".
func (r Recipient) Masked() string { return Mask(r.String()) }

// Mask masks a recipient for logs. A phone number keeps its first four and
// last three characters ("237690000001" becomes "2376*****001"); a BSUID
// keeps its country code and the last three characters of its ID when the
// ID is longer than six ("CO.*************697"), else none of the ID. Inputs
// of seven characters or fewer are masked whole.
func Mask(s string) string {
	if looksBSUID(s) {
		id := s[3:]
		keep := 0
		if len(id) > 6 {
			keep = 3
		}
		b := []byte(s)
		for i := 3; i < len(b)-keep; i++ {
			b[i] = '*'
		}
		if len(id) == 0 {
			b = append(b, '*')
		}
		return string(b)
	}
	if len(s) <= 7 {
		return "*******"[:max(len(s), 1)]
	}
	b := []byte(s)
	for i := 4; i < len(b)-3; i++ {
		b[i] = '*'
	}
	return string(b)
}

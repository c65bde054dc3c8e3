package phone

import (
	"strconv"
	"strings"
)

// A recipient key is one uint64, in three spaces that never meet:
//
//   - A phone number is its E.164 digits as an integer (7 to 15 digits:
//     below 10^15, so bit 63 is clear).
//   - A BSUID whose ID is 1 to 16 digits without a leading 0 and below 2^53
//     is packed: bit 63 set, its country code in bits 53 to 62 (first
//     letter x 26 + second letter, below 676) and its ID in bits 0 to 52.
//     The packing is lossless: the canonical string is rebuilt from the key.
//   - Every other BSUID (Meta's own example US.13491208655302741918 has 20
//     digits; IDs may be up to 128 letters and digits; parent BSUIDs read
//     US.ENT.…) is hashed: bits 61 to 63 set (bits 53 to 62 then read 768
//     or more, which no country code packs to) and bits 0 to 60 the top 61
//     bits of SipHash-2-4 of the canonical string under the fixed key
//     hashKey0/hashKey1. The Recipient keeps the string beside the key.
//
// The hashed key is part of the stored format: Redis keys and every
// process sharing a store must compute the same one, so the hash key is a
// constant, never a per-process seed, and must never change.
const (
	bsuidTag       = uint64(1) << 63
	bsuidCCShift   = 53
	bsuidDigitMask = uint64(1)<<bsuidCCShift - 1
	hashedTag      = uint64(7) << 61
	// MaxBSUIDDigits is the most digits a BSUID's ID may have to be packed
	// into its key losslessly; longer ones (or values of 2^53 and above,
	// leading zeros, letters) are keyed on a hash.
	MaxBSUIDDigits = 16
	// MaxBSUIDLen is the most characters Meta's BSUID ID may have after the
	// country code's period (and after "ENT." in a parent BSUID).
	MaxBSUIDLen = 128
	// hashKey0 and hashKey1 are the fixed SipHash key ("wapace-b",
	// "suid-v1\x00" read little-endian). Changing them re-keys every hashed
	// BSUID in every store.
	hashKey0 = 0x622d656361706177
	hashKey1 = 0x0031762d64697573
)

// Recipient is a parsed recipient: an E.164 phone number or a
// business-scoped user ID (BSUID, "CO.1949266959121697"), keyed on one
// integer so that it is small and comparable. Phone numbers and most
// numeric BSUIDs are held whole in the integer; other BSUIDs keep their
// string beside a hashed key (see Key). The zero Recipient is invalid.
type Recipient struct {
	key uint64
	id  string // the canonical BSUID when key is its hash; "" otherwise
}

// ParseTo parses a recipient once: a BSUID or a phone number in
// international format (see ParseRecipient).
//
// A BSUID, as Meta's "Business-scoped user IDs" page describes it, is the
// user's ISO 3166 alpha-2 country code in upper case, a period and an ID of
// 1 to 128 ASCII letters and digits ("US.13491208655302741918"); a parent
// BSUID has "ENT." between the country code and the ID
// ("US.ENT.11815799212886844830"). It is kept exactly as given (case
// included): it is what goes on the wire. Anything else that starts with
// two letters and a period is rejected with an *Error.
func ParseTo(s string) (Recipient, error) {
	if looksBSUID(s) {
		return parseBSUID(s)
	}
	k, err := parsePhone(s)
	return Recipient{key: k}, err
}

// looksBSUID reports whether s starts like a BSUID: two letters and a dot.
func looksBSUID(s string) bool {
	return len(s) >= 3 && s[2] == '.' && isLetter(s[0]) && isLetter(s[1])
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func parseBSUID(s string) (Recipient, error) {
	if s[0] < 'A' || s[0] > 'Z' || s[1] < 'A' || s[1] > 'Z' {
		return Recipient{}, &Error{Field: "to", Reason: "BSUID country code must be two upper-case letters"}
	}
	id := s[3:]
	if len(id) > 4 && id[:4] == "ENT." {
		id = id[4:] // a parent BSUID
	}
	if id == "" {
		return Recipient{}, &Error{Field: "to", Reason: "BSUID has no ID after the country code"}
	}
	if len(id) > MaxBSUIDLen {
		return Recipient{}, &Error{Field: "to", Reason: "BSUID ID longer than " + strconv.Itoa(MaxBSUIDLen) + " characters"}
	}
	digits := true
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9':
		case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			digits = false
		default:
			return Recipient{}, &Error{Field: "to", Reason: "BSUID ID must be ASCII letters and digits only"}
		}
	}
	if k, ok := packBSUID(s); ok && digits {
		return Recipient{key: k}, nil
	}
	return Recipient{key: hashedKey(s), id: strings.Clone(s)}, nil
}

// packBSUID returns the lossless key of a BSUID already checked by
// parseBSUID whose ID is digits, if it fits: 1 to 16 digits, no leading 0,
// below 2^53, and not a parent BSUID.
func packBSUID(s string) (uint64, bool) {
	d := s[3:]
	if len(d) > MaxBSUIDDigits || d[0] == '0' || d[0] > '9' {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return 0, false
		}
		n = n*10 + uint64(d[i]-'0')
	}
	if n > bsuidDigitMask {
		return 0, false
	}
	cc := uint64(s[0]-'A')*26 + uint64(s[1]-'A')
	return bsuidTag | cc<<bsuidCCShift | n, true
}

// hashedKey returns the key of a BSUID that cannot be packed: the hashed
// space's tag and the top 61 bits of SipHash-2-4 of s under the fixed key.
func hashedKey(s string) uint64 {
	return hashedTag | sipHash24(hashKey0, hashKey1, s)>>3
}

// RecipientOf returns the Recipient of a key returned by Key (or by
// ParseRecipient) that holds its recipient whole: a phone number or a
// packed BSUID. A hashed BSUID's key cannot be turned back into its
// string, so it gives the zero Recipient, as does a key no parse returns.
func RecipientOf(key uint64) Recipient {
	r := Recipient{key: key}
	if !r.packedValid() {
		return Recipient{}
	}
	return r
}

// packedValid reports whether r's key is a phone number or a packed BSUID.
func (r Recipient) packedValid() bool {
	if r.key&bsuidTag == 0 {
		return r.key >= 1_000_000 && r.key < 1_000_000_000_000_000
	}
	return (r.key&^bsuidTag)>>bsuidCCShift < 26*26 && r.key&bsuidDigitMask != 0
}

// Key returns the integer the limits key the recipient on, never zero for a
// valid Recipient. A phone number's key is its E.164 digits; a BSUID's has
// bit 63 set. Keys of phone numbers and packed BSUIDs are distinct and
// lossless. A BSUID that cannot be packed is keyed on a 61-bit hash of its
// canonical string, in a space that phone numbers and packed BSUIDs never
// reach: two such BSUIDs share a key with probability 2^-61, so among n of
// them some two do with probability about n^2/2^62 (1e6 BSUIDs: 2.2e-7;
// 1e8: 2.2e-3). Such twins share pacing state and count as one recipient
// (see the pairlimit and throughput docs).
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
	if r.id != "" {
		return r.id
	}
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

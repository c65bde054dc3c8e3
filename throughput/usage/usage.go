// Package usage reads Meta's X-Business-Use-Case-Usage response header: how
// much of each Business Use Case rate limit an app has used, in percent.
// [github.com/wapace/wapace/throughput.Budget.Observe] takes what [Parse]
// returns; a Client feeds its Budget from every response itself, so only a
// program that calls the Graph API on its own needs this package.
//
// # Errors
//
// Every error [Parse] returns matches [ErrMalformed].
package usage

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"time"
)

// Header is the response header in which Meta reports an app's use of
// its Business Use Case rate limits.
const Header = "X-Business-Use-Case-Usage"

// TypeManagement is the type of the X-Business-Use-Case-Usage entries
// of the WhatsApp Business Management API: the management endpoints (the
// WABA, its phone numbers, message templates, subscribed apps, assigned
// users) that the API call budget counts. Meta's sample header reports it
// beside entries of other types ("whatsapp") for the same object.
const TypeManagement = "whatsapp_business_management"

// ErrMalformed is matched by every error Parse returns.
var ErrMalformed = errors.New("usage: malformed " + Header + " header")

// Usage is one entry of the X-Business-Use-Case-Usage header: how much of
// one rate limit a business has used, in percent.
type Usage struct {
	// BusinessID is the object (WABA or business) the entry is about.
	BusinessID string
	// Type is the rate limit's use case, such as "whatsapp_business_management".
	Type string
	// CallCount, TotalCPUTime and TotalTime are percentages of the limit used
	// (100 means the limit is reached).
	CallCount    int
	TotalCPUTime int
	TotalTime    int
	// RegainAccess is estimated_time_to_regain_access: how long until calls
	// are accepted again (zero when not throttled).
	RegainAccess time.Duration
}

// MaxPercent returns the largest of the three percentages.
func (u Usage) MaxPercent() int { return max(u.CallCount, u.TotalCPUTime, u.TotalTime) }

// Parse parses the value of the X-Business-Use-Case-Usage header: a
// JSON object keyed by business ID, each holding an array of entries with
// type, call_count, total_cputime, total_time (percentages) and
// estimated_time_to_regain_access (minutes). An empty value yields no
// entries and no error. Entries are returned sorted by business ID, then
// type. Errors match ErrMalformed and never quote the header.
func Parse(header string) ([]Usage, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(header))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return nil, ErrMalformed
	}
	var out []Usage
	for id, arr := range raw {
		var entries []map[string]json.RawMessage
		if err := json.Unmarshal(arr, &entries); err != nil {
			return nil, ErrMalformed
		}
		for _, e := range entries {
			u := Usage{BusinessID: id}
			var ok bool
			if u.Type, ok = jsonString(e["type"]); !ok {
				return nil, ErrMalformed
			}
			fields := []struct {
				key string
				dst *int
			}{{"call_count", &u.CallCount}, {"total_cputime", &u.TotalCPUTime}, {"total_time", &u.TotalTime}}
			for _, f := range fields {
				if *f.dst, ok = jsonInt(e[f.key]); !ok {
					return nil, ErrMalformed
				}
			}
			mins, ok := jsonInt(e["estimated_time_to_regain_access"])
			if !ok {
				return nil, ErrMalformed
			}
			u.RegainAccess = time.Duration(min(mins, 7*24*60)) * time.Minute
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b Usage) int {
		if c := strings.Compare(a.BusinessID, b.BusinessID); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	return out, nil
}

// Select returns the entries of usage about the business object
// businessID (a WABA ID) and of type typ, such as [TypeManagement],
// in their order; "" matches any object or any type. usage is not modified.
func Select(usage []Usage, businessID, typ string) []Usage {
	var out []Usage
	for _, u := range usage {
		if (businessID == "" || u.BusinessID == businessID) && (typ == "" || u.Type == typ) {
			out = append(out, u)
		}
	}
	return out
}

// jsonString reads an optional JSON string ("" when absent).
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// jsonInt reads an optional non-negative JSON number (0 when absent),
// clamped to a sane range; fractions are rounded up.
func jsonInt(raw json.RawMessage) (int, bool) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, true
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	return int(math.Ceil(min(f, 1e6))), true
}

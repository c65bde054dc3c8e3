package cloudapitest

import (
	"encoding/json"
	"time"
)

// upgradedMPS is the throughput Meta upgrades eligible numbers to.
const upgradedMPS = 1000

// UpgradeThroughput upgrades business number phoneNumberID as Meta does
// (the "Throughput" page): for d (up to about a minute at Meta) the
// number answers 131057, then it takes 1,000 messages per second. It
// returns the phone_number_quality_update notice with event
// THROUGHPUT_UPGRADE for WhatsApp Business Account wabaID, dated at the
// end of the upgrade, to post with PostWebhook once it is over.
func (s *Server) UpgradeThroughput(wabaID, phoneNumberID string, d time.Duration) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := s.clock.Now().Add(d)
	s.maint[phoneNumberID] = done
	s.mpsFor[phoneNumberID] = upgradedMPS
	body, _ := json.Marshal(map[string]any{
		"object": "whatsapp_business_account",
		"entry": []any{map[string]any{
			"id":   wabaID,
			"time": done.Unix(),
			"changes": []any{map[string]any{
				"field": "phone_number_quality_update",
				"value": map[string]any{"display_phone_number": "15550783881", "event": "THROUGHPUT_UPGRADE"},
			}},
		}},
	})
	return body
}
